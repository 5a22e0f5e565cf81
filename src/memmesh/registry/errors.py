"""Errors of identity and the registry.

MemmeshError
└── RegistryError
    ├── IdentityExists        `mem team init` would overwrite a key
    ├── IdentityMissing       no key yet (run `mem team init`)
    ├── IdentityUnreadable    the key file cannot be read
    ├── IdentityNotCreated    the key file cannot be written (a folder it cannot write in)
    ├── IdentityInvalid       the key file holds no usable Ed25519 private key
    ├── BadSignature          an envelope does not verify (status 400)
    ├── NotPublished          retracting an item that is not published
    ├── NotYourItem           retracting an item another key published (status 403)
    ├── RetractedBefore       publishing retracted items again without --again (exit 2)
    ├── LogTailMismatch       the log does not end where its recorded head says
    ├── RosterChainBroken     the signed roster breaks a rule at one statement
    ├── UnknownAudience       an audience names a group or member the roster does not have
    └── PublishNotAllowed     the signed roster lets this member publish nothing there (403)
"""

from memmesh.errors import ExitCode, MemmeshError

__all__ = [
    "BadSignature",
    "IdentityExists",
    "IdentityInvalid",
    "IdentityMissing",
    "IdentityNotCreated",
    "IdentityUnreadable",
    "LogTailMismatch",
    "NotPublished",
    "NotYourItem",
    "PublishNotAllowed",
    "RegistryError",
    "RetractedBefore",
    "RosterChainBroken",
    "UnknownAudience",
]


class RegistryError(MemmeshError):
    """The registry or the member's identity refused or failed an operation."""


class IdentityExists(RegistryError):
    """A key pair is already there; memmesh never overwrites one."""

    def __init__(self, path: str) -> None:
        super().__init__(f"an identity key already exists at {path}; refusing to overwrite it")
        self.path = path


class IdentityMissing(RegistryError):
    """No key pair yet."""

    def __init__(self, path: str) -> None:
        super().__init__(f"no identity key at {path}; run `mem team init --name NAME` first")
        self.path = path


class BadSignature(RegistryError):
    """An envelope's signature, key or shape does not check out."""

    status = 400

    def __init__(self, reason: str) -> None:
        super().__init__(f"envelope rejected: {reason}")
        self.reason = reason


class NotPublished(RegistryError):
    """The item has no live publication to retract."""

    status = 404

    def __init__(self, item_id: str) -> None:
        super().__init__(f"item {item_id} is not published")
        self.item_id = item_id


class NotYourItem(RegistryError):
    """Only the key that published an item can retract it."""

    status = 403

    def __init__(self, item_id: str) -> None:
        super().__init__(
            f"item {item_id} was published by another key; only its author can retract it"
        )
        self.item_id = item_id


class IdentityUnreadable(RegistryError):
    """The key file is there but cannot be read."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"cannot read the identity key {path}: {reason}")
        self.path = path
        self.reason = reason


class IdentityNotCreated(RegistryError):
    """The key file cannot be written (the home cannot be made or written in, the disk is
    full); nothing is left behind."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"cannot create the identity key {path}: {reason}")
        self.path = path
        self.reason = reason


class IdentityInvalid(RegistryError):
    """The key file does not hold an Ed25519 private key memmesh can use.

    ``problem`` completes "<path> is not ...", e.g. ``"an Ed25519 private key"``.
    """

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path} is not {problem}")
        self.path = path
        self.problem = problem


class LogTailMismatch(RegistryError):
    """The log's last entry is not the head recorded beside it: an entry was removed or added.

    Nothing is appended to a log in this state.
    """

    def __init__(self) -> None:
        super().__init__(
            "the registry log does not end where it should (an entry was removed or added); "
            "run `mem team verify`"
        )


class RetractedBefore(RegistryError):
    """Items retracted before were to be published again, unasked (no ``again``): nothing was done.

    ``retracted`` holds each ``(item id, version retracted)``.
    """

    exit_code = ExitCode.USAGE
    status = 409

    def __init__(self, retracted: list[tuple[str, int]]) -> None:
        if len(retracted) == 1:
            ((item_id, version),) = retracted
            said = (
                f"{item_id} was retracted (v{version}): publishing it again shares it anew as "
                f"v{version + 1}, which teammates see like any new item"
            )
        else:
            listed = ", ".join(f"{item_id} v{version}" for item_id, version in retracted)
            said = (
                f"{len(retracted)} items were retracted ({listed}): publishing them again "
                "shares each anew as its next version, which teammates see like any new item"
            )
        super().__init__(f"{said}; give --again to do so")
        self.retracted = retracted


class RosterChainBroken(RegistryError):
    """A signed roster does not verify: one statement breaks one of the chain's rules.

    ``seq`` is that statement's (``None`` for the chain as a whole), ``reason`` a short
    stable code (``prev_mismatch``, ``not_admin``, ``invite_used``, ...; the list is in
    docs/architecture.md) and ``detail`` the break in words. No service answers with it yet,
    so it has no HTTP status of its own.
    """

    def __init__(self, seq: int | None, reason: str, detail: str) -> None:
        where = "the signed roster" if seq is None else f"statement {seq} of the signed roster"
        super().__init__(f"{where} is refused ({reason}): {detail}")
        self.seq = seq
        self.reason = reason
        self.detail = detail


class UnknownAudience(RegistryError):
    """An audience (``--to``, or team.yaml's default) names what the signed roster does not
    have: ``names`` are those names, in the order given. Nothing is published."""

    exit_code = ExitCode.REFUSED
    status = 400

    def __init__(self, names: list[str], *, signed: bool = True) -> None:
        listed = ", ".join(repr(n) for n in names)
        why = (
            "the signed roster has no such group or active member"
            if signed
            else "the team's roster is not signed, so it has no groups: an admin signs it first"
        )
        super().__init__(f"unknown audience {listed}: {why}; nothing was published")
        self.names = names


class PublishNotAllowed(RegistryError):
    """The signed roster lets ``member`` publish nothing in ``project``: ``reason`` is
    ``reader`` (a reader publishes nothing) or ``not_granted`` (the project names who may
    publish, and not them)."""

    exit_code = ExitCode.REFUSED
    status = 403

    def __init__(self, member: str, project: str, reason: str) -> None:
        why = (
            "is a reader of the team, who asks it but publishes nothing"
            if reason == "reader"
            else f"is not among those an admin let publish in project {project!r}"
        )
        super().__init__(f"{member} {why}; nothing was published")
        self.member = member
        self.project = project
        self.reason = reason
