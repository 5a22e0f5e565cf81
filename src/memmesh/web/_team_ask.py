"""Asking the team from the page: recall-team as `mem team recall-team` runs it.

The query is checked as every recall checks it before anything is sent; the coordinator and
every live peer are asked at once, each within :data:`TIMEOUT` seconds (the whole ask a
second more), and the teammates' items shown are noted as given, so that `mem outcome` can
credit them. The answer keeps each hit's authors, its source, the projects searched and, per
answering source, what it returned and what became of each hit; a hit that another author's
hit contradicts names them (:func:`memmesh.team.contradictions.flag_answer`).
"""

import msgspec
from starlette.datastructures import FormData

from memmesh.local.items import GLOBAL, MAX_K, check_name, check_query
from memmesh.local.store import Store
from memmesh.policy import Policy
from memmesh.registry.identity import Identity
from memmesh.team.contradictions import flag_answer
from memmesh.team.fates import fate_words
from memmesh.team.recall import TeamAnswer, recall_team
from memmesh.team.tallies import note_answer
from memmesh.web.errors import BadForm
from memmesh.web.forms import text

__all__ = ["ALL", "DEFAULT_K", "TIMEOUT", "Asked", "ask", "asked", "cut_words"]

TIMEOUT = 2.0  # seconds each source has, as `mem team recall-team` gives by default
DEFAULT_K = 5
ALL = "*"  # the scope field's value for every project


class Asked(msgspec.Struct, frozen=True, kw_only=True):
    """What the form asks: the ``query``, at most ``k`` hits, the ``project`` (plus global;
    ``""`` with ``all_projects``), and only items by ``author`` when given."""

    query: str
    k: int = DEFAULT_K
    project: str = ""
    all_projects: bool = True
    author: str = ""

    @property
    def scope(self) -> str:
        """The scope field's value."""
        return ALL if self.all_projects else self.project


def asked(form: FormData) -> Asked:
    """The ask the form posted; :class:`BadForm` or
    :class:`~memmesh.local.errors.InvalidInput` (400) for a field no recall takes."""
    query = text(form, "q", most=16384)
    k_text = text(form, "k", most=4, required=False) or str(DEFAULT_K)
    if not (k_text.isascii() and k_text.isdigit()):
        raise BadForm("k", "must be a whole number")
    k = int(k_text)
    if not 1 <= k <= MAX_K:
        raise BadForm("k", f"must be between 1 and {MAX_K}, not {k}")
    query = check_query(query, k)  # refused in recall's own words, before anything is sent
    scope = text(form, "scope", most=64, required=False) or ALL
    project = "" if scope == ALL else check_name(scope, "project")
    author = text(form, "author", most=64, required=False)
    if author:
        check_name(author, "author")
    return Asked(query=query, k=k, project=project, all_projects=scope == ALL, author=author)


def ask(store: Store, policy: Policy, identity: Identity, question: Asked) -> TeamAnswer:
    """recall-team for ``question``, noting what it showed (blocking: asks the team).

    Raises :class:`~memmesh.net.errors.Unreachable` when no source answered, and what
    recall-team raises for a member the coordinator refuses."""
    answer = recall_team(
        store,
        policy,
        question.query,
        identity=identity,
        k=question.k,
        project=GLOBAL if question.all_projects else question.project,
        all_projects=question.all_projects,
        author=question.author or None,
        timeout=TIMEOUT,
        deadline=TIMEOUT + 1.0,
    )
    note_answer(store, identity, answer)  # so that `mem outcome` can credit them
    return flag_answer(answer)


def cut_words(fate: str) -> str:
    """What a hit's fate means by itself, in the words `mem team recall-team --explain` begins
    with (the page shows the rank, the scores and the copy kept beside them)."""
    return fate_words(fate)
