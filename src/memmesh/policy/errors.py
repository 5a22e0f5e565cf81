"""Errors of the team policy.

MemmeshError
└── PolicyError                 exit 3: refused by policy
    ├── PolicyInvalid           team.yaml is broken; names file, line and key
    ├── PolicyMissing           no team.yaml yet (run `mem team init`)
    ├── PolicyFileError         exit 1: team.yaml cannot be read or written (names it and why)
    ├── PolicyNotEditable       keys of team.yaml cannot be changed in place (names them)
    ├── NoCoordinator           team.yaml names no coordinator to send to
    └── PublishRefused          the policy withholds an item (names the rule)
"""

from memmesh.errors import ExitCode, MemmeshError

__all__ = [
    "NoCoordinator",
    "PolicyError",
    "PolicyFileError",
    "PolicyInvalid",
    "PolicyMissing",
    "PolicyNotEditable",
    "PublishRefused",
]


class PolicyError(MemmeshError):
    """The team policy refuses, or cannot be read; nothing was sent or published."""

    exit_code = ExitCode.REFUSED
    status = 403


class PolicyInvalid(PolicyError):
    """``team.yaml`` cannot be used; while it is invalid no team command sends anything."""

    def __init__(self, path: str, line: int | None, key: str, problem: str) -> None:
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {key}: {problem}")
        self.path = path
        self.line = line
        self.key = key
        self.problem = problem


class PolicyMissing(PolicyError):
    """There is no ``team.yaml`` in the memmesh home."""

    def __init__(self, path: str) -> None:
        super().__init__(f"no team policy at {path}; run `mem team init --name NAME` first")
        self.path = path


class PolicyFileError(PolicyError):
    """``team.yaml`` (or the home folder it is in) cannot be read or written: a file error,
    not a refusal (exit 1). The message names the file and the system's reason."""

    exit_code = ExitCode.ERROR
    status = 500

    def __init__(self, path: str, action: str, reason: str) -> None:
        super().__init__(f"cannot {action} {path}: {reason}")
        self.path = path
        self.action = action
        self.reason = reason


class PolicyNotEditable(PolicyError):
    """Keys of ``team.yaml`` cannot be set without rewriting more of it; nothing was changed.

    They are written over several lines, or through an alias; ``keys`` names them.
    """

    def __init__(self, path: str, keys: list[str]) -> None:
        listed = ", ".join(keys)
        super().__init__(
            f"{path}: cannot set {listed} without rewriting more of the file (a value written "
            "over several lines, or an alias?); nothing was changed. Write them on one line "
            "each, or set them by hand"
        )
        self.path = path
        self.keys = keys


class NoCoordinator(PolicyError):
    """``team.yaml`` names no coordinator, so the team has nowhere to send to."""

    def __init__(self) -> None:
        super().__init__("team.yaml names no coordinator, so nothing is ever sent")


class PublishRefused(PolicyError):
    """One or more items may not leave; the message names each item's deciding rule."""

    def __init__(self, refusals: list[tuple[str, str]]) -> None:
        listed = "; ".join(f"{item_id}: {rule}" for item_id, rule in refusals)
        super().__init__(f"refused by policy, nothing was published ({listed})")
        self.refusals = refusals
