"""``team.yaml``: the typed, fail-closed team policy.

The file is decoded into frozen structs. Broken YAML, an unknown key, a wrong type or a bad
regex is a :class:`PolicyInvalid` naming the file, the line and the key. An explicit ``0`` or
``[]`` is a value; only an absent key takes the default.
"""

import os
import re
import tempfile
from pathlib import Path
from typing import Any

import msgspec
import yaml

from memmesh._urls import UnsoundUrl, normalised_url
from memmesh.local.items import KINDS, Kind
from memmesh.policy.errors import PolicyInvalid, PolicyMissing

__all__ = [
    "DEFAULT_SHARE_KINDS",
    "DEFAULT_TOKEN_ENV",
    "POLICY_FILENAME",
    "Identity",
    "Member",
    "Never",
    "Policy",
    "ProjectRule",
    "Share",
    "load_policy",
    "parse_policy",
    "read_policy_source",
    "write_policy_source",
]

POLICY_FILENAME = "team.yaml"
DEFAULT_TOKEN_ENV = "MEM_TEAM_TOKEN"
DEFAULT_SHARE_KINDS: tuple[Kind, ...] = ("decision", "convention", "gotcha", "command", "incident")


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


class Share(_Strict, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What is eligible to leave: kinds, a reinforcement floor, and per-project rules.

    A project mapped to ``false`` is never shared; ``true`` uses the team-wide settings.
    """

    kinds: tuple[Kind, ...] = DEFAULT_SHARE_KINDS
    min_reinforcements: int = 0
    projects: dict[str, bool | ProjectRule] = {}


class Never(_Strict, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The user's never rules; they add to the built-in secret detectors."""

    tags: tuple[str, ...] = ("private", "secret", "personal")
    patterns: tuple[str, ...] = ()


class Policy(_Strict, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The whole of ``team.yaml``."""

    version: int = 1
    team: str = "default"
    identity: Identity | None = None
    coordinator: str | None = None
    # The SHA-256 pin of the coordinator's TLS certificate (``sha256:`` + 64 hex digits).
    coordinator_pin: str | None = None
    # The coordinator's own public key, which signs retraction receipts.
    coordinator_key: str | None = None
    # Allow plain http:// beyond loopback (everything sent can then be read on the way).
    insecure_http: bool = False
    token_env: str = DEFAULT_TOKEN_ENV
    peers: tuple[str, ...] = ()
    discovery: bool = False
    members: tuple[Member, ...] = ()
    share: Share = Share()
    never: Never = Never()
    auto_sync: bool = False

    def patterns(self) -> list[re.Pattern[str]]:
        """The user's never patterns, compiled (they were checked at load)."""
        return [re.compile(p) for p in self.never.patterns]


def load_policy(home: Path) -> Policy:
    """The policy in ``home/team.yaml``; raises if it is missing or invalid."""
    return parse_policy(read_policy_source(home), str(home / POLICY_FILENAME))


def read_policy_source(home: Path) -> str:
    """The text of ``home/team.yaml``, unchecked; :class:`PolicyMissing` when there is none,
    :class:`PolicyInvalid` when it cannot be read."""
    path = home / POLICY_FILENAME
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PolicyMissing(str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyInvalid(str(path), None, "(file)", f"cannot be read: {exc}") from None


def write_policy_source(home: Path, text: str) -> Path:
    """Replace ``home/team.yaml`` with ``text`` at once (a reader sees the old file or the new,
    never half of one), keeping the old file's permissions; returns its path.

    The caller has checked ``text`` (:func:`parse_policy`).
    """
    path = home / POLICY_FILENAME
    home.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        mode = 0o644
    handle, temporary = tempfile.mkstemp(prefix=f".{POLICY_FILENAME}.", dir=home)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        Path(temporary).chmod(mode)
        Path(temporary).replace(path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def parse_policy(source: str, path: str = POLICY_FILENAME) -> Policy:
    """Decode and check policy text; ``path`` is only used in error messages."""
    try:
        node = yaml.compose(source, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        line, problem = _yaml_problem(exc)
        raise PolicyInvalid(path, line, "(yaml)", f"broken YAML: {problem}") from None
    lines: dict[str, int] = {}
    data: Any = {}
    if node is not None:
        try:
            data = _plain(node, "$", lines, path)
        except yaml.YAMLError as exc:
            line, problem = _yaml_problem(exc)
            raise PolicyInvalid(path, line, "(yaml)", f"unsupported YAML: {problem}") from None
    if not isinstance(data, dict):
        raise PolicyInvalid(path, 1, "(top level)", "the file must be a mapping of keys to values")
    _check_project_rules(data, path, lines)
    try:
        policy = msgspec.convert(data, Policy, strict=True)
    except msgspec.ValidationError as exc:
        key, problem = _validation_problem(exc, "$")
        raise PolicyInvalid(path, _line_of(lines, key), _dotted(key), problem) from None
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
            raise PolicyInvalid(path, _line_of(lines, key), _dotted(key), problem)
        try:
            msgspec.convert(rule, ProjectRule, strict=True)
        except msgspec.ValidationError as exc:
            full, problem = _validation_problem(exc, key)
            raise PolicyInvalid(path, _line_of(lines, full), _dotted(full), problem) from None


def _yaml_problem(exc: yaml.YAMLError) -> tuple[int | None, str]:
    """The 1-based line and the problem PyYAML reports."""
    mark = getattr(exc, "problem_mark", None)
    line = mark.line + 1 if mark is not None else None
    return line, getattr(exc, "problem", None) or str(exc)


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

    def fail(key: str, problem: str) -> None:
        raise PolicyInvalid(path, _line_of(lines, key), _dotted(key), problem)

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
    urls = {f"$.peers[{index}]": peer for index, peer in enumerate(policy.peers)}
    if policy.coordinator is not None:
        urls = {"$.coordinator": policy.coordinator, **urls}
    for key, url in urls.items():
        try:
            normalised_url(url)  # the check every contacted URL passes (memmesh.net.urls)
        except UnsoundUrl as exc:
            fail(key, f"must be an http:// or https:// URL naming only a host and port: {exc}")
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
    for kind in policy.share.kinds:
        assert kind in KINDS  # msgspec checked the Literal


def _plain(node: yaml.Node, key: str, lines: dict[str, int], path: str) -> Any:
    """Python values from a YAML node, recording the line of every key path."""
    lines[key] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            name = yaml.SafeLoader(  # scalar keys only; construct them the YAML way
                ""
            ).construct_object(key_node)
            if not isinstance(name, str):
                line = key_node.start_mark.line + 1
                raise PolicyInvalid(path, line, _dotted(key), "keys must be text")
            if name in out:
                raise PolicyInvalid(
                    path, key_node.start_mark.line + 1, _dotted(f"{key}.{name}"), "duplicate key"
                )
            child = f"{key}.{name}"
            lines[child] = key_node.start_mark.line + 1
            out[name] = _plain(value_node, child, lines, path)
            lines[child] = key_node.start_mark.line + 1
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_plain(item, f"{key}[{i}]", lines, path) for i, item in enumerate(node.value)]
    try:
        return yaml.SafeLoader("").construct_object(node)
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc)
        raise PolicyInvalid(
            path, lines[key], _dotted(key), f"unsupported YAML: {problem}"
        ) from None


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


def _dotted(key: str) -> str:
    """``$.share.kinds[1]`` as a user reads it: ``share.kinds[1]``."""
    return key.removeprefix("$.").removeprefix("$") or "(top level)"
