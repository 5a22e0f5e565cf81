"""Errors of the coordinator's own concepts (its routes answer with the net layer's errors).

MemmeshError
└── CoordinatorError
    ├── AlreadyAdmin          exit 1, 409: the member to promote is an admin already
    ├── BadJoinCode           exit 2, 400: a join code is malformed or expired
    ├── BadMemberName         exit 2, 400: a member's name breaks the rule (the error says it)
    ├── LastAdmin             exit 1, 409: the change would leave the team without an admin
    ├── MemberRevoked         exit 1, 409: the member named was revoked; their key stays so
    ├── NoAdminToDemote       exit 1, 409: the member to demote is no admin
    ├── NoSuchMember          exit 1, 404: the roster has no member of that name, id or key
    ├── NotAnAdmin            exit 3, 403: the caller is no admin, and only admins may do this
    ├── QuotaExceeded         exit 1, 413: a publish would take a member (or the team) past
    │                         what the coordinator stores; nothing of it was stored
    ├── RosterRefused         exit 3, 400 (403: not_admin, signer_revoked; 409: not_started):
    │                         a signed roster statement breaks a rule; ``reason`` says which
    ├── RosterSigned          exit 1, 409: a change the coordinator would make to its own table,
    │                         refused: the team's roster is signed, its admins sign each change
    └── StaleRosterHead       exit 1, 409: the statements do not follow the chain's head now
                              (another admin's change landed first): read it and sign again

The roster's refusals carry what they refer to: ``team`` and ``member`` (as the request named
them), so that a client acts on the code and its fields, never on the sentence.
"""

from memmesh.errors import ExitCode, MemmeshError
from memmesh.local.errors import StoreError

__all__ = [
    "AlreadyAdmin",
    "BadJoinCode",
    "BadMemberName",
    "CoordinatorError",
    "DatabaseUnavailable",
    "LastAdmin",
    "MemberRevoked",
    "NoAdminToDemote",
    "NoSuchMember",
    "NotAnAdmin",
    "QuotaExceeded",
    "RosterRefused",
    "RosterSigned",
    "StaleRosterHead",
]

# What a member's name may be, in words (the pattern is memmesh.coordinator.protocol's).
_NAME_RULE = "1-64 letters, digits, '.', '-' or '_', starting with a letter or digit, no spaces"


class CoordinatorError(MemmeshError):
    """Something about the team host and joining it went wrong."""


class DatabaseUnavailable(StoreError):
    """The coordinator's PostgreSQL database cannot be reached or used now; nothing was
    changed. ``database`` is its URL without the password; ``reason`` what failed."""

    exit_code = ExitCode.UNREACHABLE
    status = 503

    def __init__(self, database: str, reason: str) -> None:
        super().__init__(f"the coordinator's database {database} cannot be used: {reason}")
        self.database = database
        self.reason = reason


class BadJoinCode(CoordinatorError):
    """A join code that cannot be used; the message says why."""

    exit_code = ExitCode.USAGE
    status = 400

    def __init__(self, problem: str) -> None:
        super().__init__(f"this join code cannot be used: {problem}")
        self.problem = problem


class BadMemberName(CoordinatorError):
    """A member's name that breaks the rule ; ``name`` is what was sent."""

    exit_code = ExitCode.USAGE
    status = 400

    def __init__(self, name: str) -> None:
        # Hostile text may be long or hold control characters: a short, escaped excerpt.
        shown = name if len(name) <= 70 else name[:64] + "..."
        super().__init__(f"{shown!r} is not a member name: {_NAME_RULE}")
        self.name = name


class NotAnAdmin(CoordinatorError):
    """The caller asked for an admin's change of ``team``'s roster, and is no admin."""

    exit_code = ExitCode.REFUSED
    status = 403

    def __init__(self, team: str) -> None:
        super().__init__(f"only an admin of team {team!r} may do this")
        self.team = team


class NoSuchMember(CoordinatorError):
    """``team``'s roster has no member that ``member`` (a name, member id or key) names."""

    status = 404

    def __init__(self, team: str, member: str) -> None:
        super().__init__(f"team {team!r} has no member {member!r}")
        self.team = team
        self.member = member


class AlreadyAdmin(CoordinatorError):
    """The member ``member`` (their name) to promote is an admin of ``team`` already."""

    status = 409

    def __init__(self, team: str, member: str) -> None:
        super().__init__(f"{member} is an admin of team {team!r} already")
        self.team = team
        self.member = member


class NoAdminToDemote(CoordinatorError):
    """The member ``member`` (their name) to demote is no admin of ``team``."""

    status = 409

    def __init__(self, team: str, member: str) -> None:
        super().__init__(f"{member} is not an admin of team {team!r}: nothing to demote")
        self.team = team
        self.member = member


class MemberRevoked(CoordinatorError):
    """The member ``member`` (their name) was revoked from ``team`` at ``revoked_at`` (shown as
    ``when``): their key is refused for good, so their role no longer changes."""

    status = 409

    def __init__(self, team: str, member: str, revoked_at: float, when: str) -> None:
        super().__init__(
            f"{member} was revoked from team {team!r} on {when}: their key stays refused (to "
            "take them back, invite them again: they join with a new key)"
        )
        self.team = team
        self.member = member
        self.revoked_at = revoked_at


class LastAdmin(CoordinatorError):
    """``member`` (their name) is ``team``'s last admin, whom the change would take away."""

    status = 409

    def __init__(self, team: str, member: str) -> None:
        super().__init__(f"{member} is the team's last admin; make another admin first")
        self.team = team
        self.member = member


class QuotaExceeded(CoordinatorError):
    """A publish would take the member's key or the team past what the coordinator stores.

    ``scope`` is ``"member"`` or ``"team"``, ``what`` is ``"items"`` or ``"bytes"`` (of text):
    it holds ``held``, the request adds ``adding``, the limit is ``limit``. The request is
    refused whole, as 413: its content is more than the coordinator will store. A member's
    `mem team sync` shows this one line (exit 1) and keeps the entries queued.
    """

    status = 413

    def __init__(self, scope: str, what: str, held: int, adding: int, limit: int) -> None:
        whose = "this member's share of the coordinator" if scope == "member" else "the coordinator"
        flag = f"--{'member' if scope == 'member' else 'total'}-{what}"
        super().__init__(
            f"{whose} is full: it holds {held:,} {what} and this batch adds {adding:,}, past "
            f"the limit of {limit:,}; nothing of the batch was stored. Retract items no longer "
            f"needed, or ask the coordinator's operator to raise {flag}"
        )
        self.scope = scope
        self.what = what
        self.held = held
        self.adding = adding
        self.limit = limit


class RosterRefused(CoordinatorError):
    """A statement for ``team``'s signed roster breaks a rule: ``reason`` is the chain's code
    (``not_admin``, ``prev_mismatch``, ``invite_used``, ... see docs/architecture.md) or one of
    the coordinator's own (``not_started``, ``join_elsewhere``, ``genesis_required``,
    ``migration_mismatch``, ``not_a_join``); ``seq`` is the statement's, ``None`` for the
    request as a whole. Nothing of the request was stored.

    The status follows the reason: 403 when the signer may not make the change
    (``not_admin``, ``signer_revoked``), 409 when the roster is not signed yet
    (``not_started``), 400 otherwise.
    """

    exit_code = ExitCode.REFUSED
    status = 400

    def __init__(self, team: str, reason: str, seq: int | None, detail: str) -> None:
        where = "the signed roster" if seq is None else f"statement {seq} of the signed roster"
        super().__init__(f"team {team!r} refuses {where} ({reason}): {detail}")
        self.team = team
        self.reason = reason
        self.seq = seq
        self.detail = detail
        self.status = _REFUSAL_STATUS.get(reason, 400)


# The refusals that are not about the statement's form (400).
_REFUSAL_STATUS = {"not_admin": 403, "signer_revoked": 403, "not_started": 409}


class StaleRosterHead(CoordinatorError):
    """The statements sent for ``team``'s signed roster do not follow its head, now at
    ``head_seq``: another change landed first. Nothing was stored; read the chain, check the
    change still applies and sign it again."""

    status = 409

    def __init__(self, team: str, head_seq: int, sent_seq: int) -> None:
        super().__init__(
            f"team {team!r}'s signed roster has moved on: its head is statement {head_seq}, "
            f"and this change was signed as statement {sent_seq}; read it and sign again"
        )
        self.team = team
        self.head_seq = head_seq
        self.sent_seq = sent_seq


class RosterSigned(CoordinatorError):
    """``team``'s roster is signed: the coordinator no longer changes its members on an
    admin's request (add, revoke, promote, demote, invite, a coordinator-held invite's join);
    an admin's memmesh signs each change. An older memmesh asked."""

    status = 409

    def __init__(self, team: str) -> None:
        super().__init__(
            f"team {team!r}'s roster is signed: an admin's memmesh signs each change; "
            "update memmesh"
        )
        self.team = team
