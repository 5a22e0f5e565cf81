"""Reading a form post: the CSRF token first, then each field by its rule.

Every change the page makes goes through :func:`read_form`, which refuses a post without this
run's CSRF token (403) before any field is read; a field that breaks its rule is a
:class:`~memmesh.web.errors.BadForm` naming it (400), and nothing is changed.
"""

from collections.abc import Iterable

from starlette.datastructures import FormData
from starlette.formparsers import MultiPartException
from starlette.requests import Request

from memmesh.web.errors import BadForm, PageRefused
from memmesh.web.security import csrf_token

__all__ = ["choice", "read_form", "text", "texts"]

# The most a form may hold: the fields of a page's largest form (an inbox of candidates), and
# an item's text (8 KiB) several times over.
_MOST_FIELDS = 1000
_MOST_PART = 256 * 1024


async def read_form(request: Request, token: str) -> FormData:
    """The form ``request`` posted, once its CSRF token is this run's (``token``: the
    sign-in token it derives from)."""
    try:
        form = await request.form(max_files=0, max_fields=_MOST_FIELDS, max_part_size=_MOST_PART)
    except (MultiPartException, UnicodeDecodeError, ValueError) as exc:
        raise BadForm("form", f"cannot be read ({exc})") from None
    given = form.get("csrf")
    if not isinstance(given, str) or given != csrf_token(token):
        raise PageRefused("the form carries no CSRF token of this page (reload the page)")
    return form


def text(form: FormData, name: str, *, most: int = 8192, required: bool = True) -> str:
    """The text field ``name``, stripped; ``""`` when absent and not ``required``."""
    value = form.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise BadForm(name, "is required")
        return ""
    if not isinstance(value, str):
        raise BadForm(name, "must be text")
    if len(value) > most:
        raise BadForm(name, f"is {len(value)} characters long; at most {most} are taken")
    return value.strip()


def texts(form: FormData, name: str, *, most: int = 1000) -> list[str]:
    """Every non-empty value of the field ``name`` (checkboxes, a multiple select)."""
    values = [v for v in form.getlist(name) if isinstance(v, str) and v.strip()]
    if len(values) > most:
        raise BadForm(name, f"has {len(values)} values; at most {most} are taken")
    return [v.strip() for v in values]


def choice(form: FormData, name: str, choices: Iterable[str]) -> str:
    """The field ``name``, which must be one of ``choices``."""
    allowed = list(choices)
    value = text(form, name, most=200)
    if value not in allowed:
        raise BadForm(name, f"must be one of {', '.join(allowed)}")
    return value
