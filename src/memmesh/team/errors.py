"""Errors of a member at work with the team: the coordinator does not accept this member.

Each reason has a class of its own, and one line saying what to do (:mod:`memmesh.team.access`
tells them apart); all exit 3. A coordinator that cannot be reached is
:class:`~memmesh.net.errors.Unreachable` (or :class:`~memmesh.net.errors.PinMismatch`), exit 4.

MemmeshError
└── AccessError
    ├── TokenMissing          exit 3: the coordinator asks for a team token; none is set here
    ├── TokenRejected         exit 3: the team token set here is not the coordinator's
    ├── SignatureRejected     exit 3: signed requests refused (the clock, or another team)
    ├── NotOnRoster           exit 3: this key is not on the team's roster
    ├── KeyRevoked            exit 3: this key was revoked from the team
    └── RosterNotTrusted      exit 3: the coordinator's signed roster does not verify
"""

from memmesh.errors import ExitCode, MemmeshError

__all__ = [
    "AccessError",
    "KeyRevoked",
    "NotOnRoster",
    "RosterNotTrusted",
    "SignatureRejected",
    "TokenMissing",
    "TokenRejected",
]


class AccessError(MemmeshError):
    """The coordinator does not accept this member; the message says why and what to do."""

    exit_code = ExitCode.REFUSED


class TokenMissing(AccessError):
    """The coordinator wants the team token, and the variable team.yaml names is unset."""

    def __init__(self, token_env: str) -> None:
        super().__init__(
            f"the coordinator asks for the team token, and ${token_env} is not set on this "
            "computer: set it to the token your team's admin gave you"
        )
        self.token_env = token_env


class TokenRejected(AccessError):
    """The team token set here is not the one the coordinator demands."""

    def __init__(self, token_env: str) -> None:
        super().__init__(
            f"the coordinator refused the team token in ${token_env}: it is not this team's "
            "token (ask your team's admin for it)"
        )
        self.token_env = token_env


class SignatureRejected(AccessError):
    """The coordinator refused this member's signed requests: this computer's clock is more
    than the replay window off, or the coordinator serves another team than ``team``."""

    def __init__(self, team: str) -> None:
        super().__init__(
            "the coordinator refused this computer's signed requests: check that this "
            "computer's clock is within 2 minutes of the coordinator's, and that it serves "
            f"team {team!r} as team.yaml says"
        )
        self.team = team


class NotOnRoster(AccessError):
    """The key ``key_id`` is not on ``team``'s roster."""

    def __init__(self, key_id: str, team: str) -> None:
        super().__init__(
            f"this key ({key_id}) is not a member of team {team} "
            "(ask an admin for an invite: mem team invite)"
        )
        self.key_id = key_id
        self.team = team


class KeyRevoked(AccessError):
    """The key ``key_id`` was revoked from ``team`` (``when``: as the coordinator says, or
    ``""``)."""

    def __init__(self, key_id: str, team: str, when: str) -> None:
        on = f" on {when}" if when else ""
        super().__init__(
            f"this key ({key_id}) was revoked from team {team}{on}: the coordinator refuses it "
            "from now on"
        )
        self.key_id = key_id
        self.team = team
        self.when = when


class RosterNotTrusted(AccessError):
    """The coordinator's signed roster of ``team`` does not verify against the root this member
    pinned: ``reason`` is the chain's reason code (``not_admin``, ``rollback``, ``fork``,
    ``unsigned``, ...; docs/architecture.md lists them), ``seq`` the statement that breaks
    (``None``: the chain as a whole). Nothing the coordinator says about members is used."""

    def __init__(self, team: str, reason: str, seq: int | None, detail: str) -> None:
        where = "" if seq is None else f" at statement {seq}"
        super().__init__(
            f"team {team!r}'s roster, as the coordinator serves it, is not the one its admins "
            f"signed ({reason}{where}: {detail}); nothing it says about members is believed. "
            "Tell your team's admins: the coordinator, or someone between, changed it"
        )
        self.team = team
        self.reason = reason
        self.seq = seq
        self.detail = detail
