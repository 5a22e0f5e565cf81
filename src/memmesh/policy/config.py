"""``team.yaml``: the typed, fail-closed team policy.

The file is decoded into frozen structs. Broken YAML, an unknown key, a wrong type or a bad
regex is a :class:`PolicyInvalid` naming the file, the line and the key; so is a file past the
limits of :mod:`memmesh.policy.yaml_limits` (size, nesting, values). An explicit ``0`` or
``[]`` is a value; only an absent key takes the default, and no default shares anything: an
absent ``share.kinds`` lists no kinds, an absent ``coordinator`` sends nothing, and the default
never rules hold items back. An empty file is such a policy (valid, sharing nothing). A file
that cannot be read or written is a :class:`PolicyFileError`.
"""

import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, NoReturn

import msgspec

from memmesh._files import FILE_MODE, private_folder, reason, write_atomically
from memmesh._policy_names import DEFAULT_TOKEN_ENV, POLICY_FILENAME
from memmesh._urls import UnsoundUrl, normalised_url
from memmesh.local.errors import InvalidInput
from memmesh.local.items import KINDS, Kind, check_name, suggested_name
from memmesh.policy.errors import PolicyFileError, PolicyInvalid, PolicyMissing
from memmesh.policy.yaml_limits import MAX_BYTES, check_size, dotted, read_yaml

__all__ = [
    "DEFAULT_SHARE_KINDS",
    "DEFAULT_TOKEN_ENV",
    "EMBEDDER_WHEN_ABSENT",
    "POLICY_FILENAME",
    "AudienceRule",
    "Identity",
    "Member",
    "Never",
    "Policy",
    "ProjectRule",
    "Share",
    "load_policy",
    "parse_policy",
    "read_policy_source",
    "suggested_url",
    "write_policy_source",
]

# Absent means nothing: a kind is shared only once team.yaml lists it.
DEFAULT_SHARE_KINDS: tuple[Kind, ...] = ()
# The team's embedder when team.yaml has no ``embedder`` key: the default of the release that
# brought the key (a team from before it, whose stores are hashing's, is told to switch; its
# answers hold meanwhile, each source ranking in its own space). Not necessarily the default
# for new teams, which `mem team init` writes out (memmesh.embed.DEFAULT_EMBEDDER, which may
# change); this one must never change.
EMBEDDER_WHEN_ABSENT = "minilm-static"


class _Strict(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Base of the policy structs: frozen, keyword-only, unknown keys refused."""


class Identity(_Strict, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Who this member is called (keys, not names, are identity)."""

    name: str


class Member(_Strict, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A roster entry: a teammate's name and public key (base64 or member id)."""

    name: str
    key: str


class ProjectRule(_Strict, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Share settings for one project that override the team-wide ones."""

    kinds: tuple[Kind, ...] | None = None
    min_reinforcements: int | None = None


# A group's or member's name, or a member id, as an audience names it (checked against the
# signed roster when an item is published: a name it lacks refuses the publish).
_AudienceName = Annotated[
    str, msgspec.Meta(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z", max_length=64)
]


class AudienceRule(_Strict, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Whom items are published for when `mem team publish` is given no ``--to``: those of
    ``project`` (every project when absent) and of ``kind`` (every kind when absent) go to
    ``to``: groups and members of the signed roster, or ``everyone``. The first rule that
    matches an item decides; an item no rule matches goes to the whole team."""

    to: Annotated[tuple[_AudienceName, ...], msgspec.Meta(min_length=1, max_length=64)]
    project: _AudienceName | None = None
    kind: Kind | None = None

    def matches(self, project: str, kind: str) -> bool:
        """Whether the rule is for an item of ``project`` and ``kind``."""
        return self.project in (None, project) and self.kind in (None, kind)


class Share(_Strict, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What is eligible to leave: kinds, a reinforcement floor, per-project rules, and whom
    items go to by default (``audiences``).

    No kind is eligible until ``kinds`` lists it. A project mapped to ``false`` is never
    shared; ``true`` uses the team-wide settings.
    """

    kinds: tuple[Kind, ...] = DEFAULT_SHARE_KINDS
    min_reinforcements: int = 0
    projects: dict[str, bool | ProjectRule] = {}
    audiences: tuple[AudienceRule, ...] = ()

    def audience_for(self, project: str, kind: str) -> tuple[str, ...] | None:
        """The names the first matching rule sends an item to (``None``: no rule matches)."""
        return next((r.to for r in self.audiences if r.matches(project, kind)), None)


class Never(_Strict, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The user's never rules; they add to the built-in secret detectors."""

    tags: tuple[str, ...] = ("private", "secret", "personal")
    patterns: tuple[str, ...] = ()


class Policy(_Strict, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The whole of ``team.yaml``."""

    version: int = 1
    team: str = "default"
    identity: Identity | None = None
    # The coordinator's URL; when team.yaml lists the URLs of its processes, the first: its
    # name, which requests are bound to when no pin is held (memmesh.net.audience).
    coordinator: str | None = None
    # The further URLs of that list, in order: tried in turn when one cannot be reached. No
    # key of team.yaml (which writes them under ``coordinator:``): the loader fills it.
    coordinator_fallbacks: tuple[str, ...] = ()
    # The SHA-256 pin of the coordinator's TLS certificate (``sha256:`` + 64 hex digits).
    coordinator_pin: str | None = None
    # The coordinator's own public key, which signs retraction receipts.
    coordinator_key: str | None = None
    # The member id of the team's root key (its first admin), pinned at join: the signed
    # roster is trusted only if it starts there (memmesh.team.chain).
    roster_root: str | None = None
    # Allow plain http:// beyond loopback (everything sent can then be read on the way).
    insecure_http: bool = False
    token_env: str = DEFAULT_TOKEN_ENV
    peers: tuple[str, ...] = ()
    discovery: bool = False
    # The embedder every member's store and the coordinator's cache use: one vector space.
    embedder: str = EMBEDDER_WHEN_ABSENT
    members: tuple[Member, ...] = ()
    share: Share = Share()
    never: Never = Never()
    auto_sync: bool = False

    def patterns(self) -> list[re.Pattern[str]]:
        """The user's never patterns, compiled (they were checked at load)."""
        return [re.compile(p) for p in self.never.patterns]

    def coordinator_addresses(self) -> tuple[str, ...]:
        """Every URL of the coordinator, in the order they are tried (none without one)."""
        return () if self.coordinator is None else (self.coordinator, *self.coordinator_fallbacks)


def load_policy(home: Path) -> Policy:
    """The policy in ``home/team.yaml``; raises if it is missing or invalid."""
    return parse_policy(read_policy_source(home), str(home / POLICY_FILENAME))


def read_policy_source(home: Path) -> str:
    """The text of ``home/team.yaml``, unchecked; :class:`PolicyMissing` when there is none,
    :class:`PolicyInvalid` when it is larger than the limit or not UTF-8, and
    :class:`PolicyFileError` when it cannot be read (or is no regular file: a FIFO would block).
    """
    path = home / POLICY_FILENAME
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise PolicyMissing(str(path)) from None
    except OSError as exc:
        raise PolicyFileError(str(path), "read", reason(exc)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise PolicyFileError(str(path), "read", "it is not a regular file")
        check_size(info.st_size, str(path))
        raw = os.read(fd, MAX_BYTES + 1)  # it may have grown since
    except OSError as exc:
        raise PolicyFileError(str(path), "read", reason(exc)) from None
    finally:
        os.close(fd)
    check_size(len(raw), str(path))
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PolicyInvalid(str(path), None, "(file)", f"cannot be read: {exc}") from None


def write_policy_source(home: Path, text: str) -> Path:
    """Replace ``home/team.yaml`` with ``text`` at once (a reader sees the old file or the new,
    never half of one), keeping the old file's permissions (a new one is ``0600``, in a home
    made ``0700``); returns its path. :class:`PolicyFileError` when it cannot be written.

    The caller has checked ``text`` (:func:`parse_policy`).
    """
    path = home / POLICY_FILENAME
    try:
        private_folder(home)
        try:
            mode = path.stat().st_mode & 0o777
        except FileNotFoundError:
            mode = FILE_MODE
        write_atomically(path, text, mode)
    except OSError as exc:
        raise PolicyFileError(str(path), "write", reason(exc)) from None
    return path


def parse_policy(source: str, path: str = POLICY_FILENAME) -> Policy:
    """Decode and check policy text; ``path`` is only used in error messages."""
    data, lines = read_yaml(source, path)
    if not isinstance(data, dict):
        raise PolicyInvalid(path, 1, "(top level)", "the file must be a mapping of keys to values")
    _check_project_rules(data, path, lines)
    data = _coordinator_split(data, path, lines)
    try:
        policy = msgspec.convert(data, Policy, strict=True)
    except msgspec.ValidationError as exc:
        key, problem = _validation_problem(exc, "$")
        raise PolicyInvalid(path, _line_of(lines, key), dotted(key), problem) from None
    _check(policy, path, lines)
    return policy


def _check_project_rules(data: dict[str, Any], path: str, lines: dict[str, int]) -> None:
    """Check each ``share.projects`` entry on its own, so an error names the project's key."""
    share = data.get("share")
    projects = share.get("projects") if isinstance(share, dict) else None
    if not isinstance(projects, dict):
        return
    for name, rule in projects.items():
        key = f"$.share.projects.{name}"
        if isinstance(rule, bool):
            continue
        if not isinstance(rule, dict):
            kind = {int: "int", float: "float", str: "str", list: "array"}.get(type(rule), "null")
            problem = f"Expected `bool | object`, got `{kind}`"
            raise PolicyInvalid(path, _line_of(lines, key), dotted(key), problem)
        try:
            msgspec.convert(rule, ProjectRule, strict=True)
        except msgspec.ValidationError as exc:
            full, problem = _validation_problem(exc, key)
            raise PolicyInvalid(path, _line_of(lines, full), dotted(full), problem) from None


def _coordinator_split(data: dict[str, Any], path: str, lines: dict[str, int]) -> dict[str, Any]:
    """``data`` with ``coordinator`` checked, as one URL or a list of the URLs of one
    coordinator (not empty, one scheme, no address twice), and split into the first
    (``coordinator``) and the others (``coordinator_fallbacks``)."""

    def fail(key: str, problem: str) -> NoReturn:
        raise PolicyInvalid(path, _line_of(lines, key), dotted(key), problem)

    if _FALLBACKS in data:
        fail(f"$.{_FALLBACKS}", "unknown key")
    written = data.get("coordinator")
    if written is None:
        return data
    try:
        urls: str | tuple[str, ...] = msgspec.convert(written, str | tuple[str, ...], strict=True)
    except msgspec.ValidationError as exc:
        key, problem = _validation_problem(exc, "$.coordinator")
        fail(key, problem.replace("`str | array`", "`str | array | null`"))
    if isinstance(urls, str):
        _check_url(urls, "$.coordinator", fail)
        return data
    if not urls:
        fail("$.coordinator", _NO_ADDRESS)
    sound = [_check_url(url, f"$.coordinator[{i}]", fail) for i, url in enumerate(urls)]
    scheme = sound[0].partition(":")[0]
    for index, url in enumerate(sound):
        if not url.startswith(f"{scheme}:"):
            fail(f"$.coordinator[{index}]", _ONE_SCHEME.format(scheme))
        if (earlier := sound.index(url)) < index:
            fail(f"$.coordinator[{index}]", f"the same address as coordinator[{earlier}]")
    return {**data, "coordinator": urls[0], _FALLBACKS: urls[1:]}


_FALLBACKS = "coordinator_fallbacks"
_NO_ADDRESS = (
    "an empty list names no coordinator: give its URL, or the URLs of its processes; "
    "without the key nothing is sent"
)
_ONE_SCHEME = (
    "every address of the coordinator uses one scheme, the first's ({}://): "
    "its processes serve the same certificate, or all plain http"
)
_SOUND = "must be an http:// or https:// URL naming only a host and port"


def _check_url(url: str, key: str, fail: Callable[[str, str], NoReturn]) -> str:
    """``url`` made sound (the check every contacted URL passes: memmesh.net.urls), else
    ``fail`` at ``key``, suggesting what to write instead."""
    try:
        return normalised_url(url)
    except UnsoundUrl as exc:
        fail(key, f"{_SOUND}: {exc}{suggested_url(url) or _suggested_list(url)}")


def _suggested_list(text: str) -> str:
    """``; write several addresses as a list: [...]`` for sound URLs joined by commas."""
    parts = [part.strip() for part in text.split(",")]
    if len(parts) < 2:
        return ""
    try:
        listed = [normalised_url(part) for part in parts]
    except UnsoundUrl:
        return ""
    return f"; write several addresses as a list: [{', '.join(listed)}]"


def _validation_problem(exc: msgspec.ValidationError, root: str) -> tuple[str, str]:
    """The key path (under ``root``) and the problem of a msgspec error, with an unknown field
    named as the key itself: "Object contains unknown field `x` - at `$.a`" -> ``root.a.x``."""
    message, _, where = str(exc).rpartition(" - at `")
    key = root + (where.rstrip("`").removeprefix("$") if message else "")
    problem = message or str(exc)
    unknown = re.match(r"Object contains unknown field `([^`]+)`", problem)
    if unknown:
        return f"{key}.{unknown.group(1)}", "unknown key"
    return key, problem


def _check(policy: Policy, path: str, lines: dict[str, int]) -> None:
    """Rules the types alone cannot say."""

    def fail(key: str, problem: str) -> NoReturn:
        raise PolicyInvalid(path, _line_of(lines, key), dotted(key), problem)

    if policy.identity is not None:
        _check_name(policy.identity.name, "$.identity.name", fail)
    for index, member in enumerate(policy.members):
        _check_name(member.name, f"$.members[{index}].name", fail)
    if policy.version != 1:
        fail("$.version", f"unsupported version {policy.version}; this memmesh reads version 1")
    if policy.share.min_reinforcements < 0:
        fail("$.share.min_reinforcements", "must be 0 or more")
    for name, rule in policy.share.projects.items():
        if isinstance(rule, ProjectRule) and (rule.min_reinforcements or 0) < 0:
            fail(f"$.share.projects.{name}.min_reinforcements", "must be 0 or more")
    for index, pattern in enumerate(policy.never.patterns):
        try:
            re.compile(pattern)
        except re.error as exc:
            fail(f"$.never.patterns[{index}]", f"bad regular expression: {exc}")
    for index, peer in enumerate(policy.peers):
        _check_url(peer, f"$.peers[{index}]", fail)
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", policy.token_env):
        fail("$.token_env", "must be an environment variable name")
    if policy.coordinator_pin is not None and not re.fullmatch(
        r"sha256:[0-9a-f]{64}", policy.coordinator_pin
    ):
        fail("$.coordinator_pin", "must be sha256: and 64 hex digits, as the coordinator prints")
    if policy.coordinator_key is not None and not re.fullmatch(
        r"[A-Za-z0-9_-]{43}", policy.coordinator_key
    ):
        fail("$.coordinator_key", "must be the coordinator's public key, as `mem team join` wrote")
    if policy.roster_root is not None and not re.fullmatch(r"[a-z2-7]{16}", policy.roster_root):
        fail("$.roster_root", "must be a member id (16 characters), as `mem team join` wrote")
    if policy.embedder != EMBEDDER_WHEN_ABSENT:
        from memmesh.embed import EMBEDDER_NAMES  # numpy: only for a file that names one

        if policy.embedder not in EMBEDDER_NAMES:
            known = ", ".join(EMBEDDER_NAMES)
            fail("$.embedder", f"unknown embedder {policy.embedder!r}; choose one of: {known}")
    for kind in policy.share.kinds:
        assert kind in KINDS  # msgspec checked the Literal


def _check_name(name: str, key: str, fail: Callable[[str, str], None]) -> None:
    """A member's name (``identity.name`` signs this member's items as their author; a
    ``members`` entry names a teammate) must be a name the store takes as one
    (:func:`memmesh.local.items.check_name`), as the coordinator's roster does."""
    problem = _name_problem(name)
    if problem:
        fixed = suggested_name(name)
        fail(key, problem + (f"; write it as {fixed!r}" if fixed else ""))


def _name_problem(name: str) -> str:
    try:
        check_name(name, "author")
    except InvalidInput as exc:
        return exc.message
    return ""


def suggested_url(url: str) -> str:
    """``; did you mean https://host:port?`` for a URL written without its scheme (which would
    then be sound), else nothing."""
    if "://" in url:
        return ""
    try:
        return f"; did you mean {normalised_url('https://' + url)}?"
    except UnsoundUrl:
        return ""


def _line_of(lines: dict[str, int], key: str) -> int | None:
    """The line of ``key``, or of its nearest recorded parent."""
    while key:
        if key in lines:
            return lines[key]
        parent = re.sub(r"(\.[^.\[]+|\[[^\]]*\])$", "", key)
        if parent == key:
            return lines.get("$")
        key = parent
    return None
