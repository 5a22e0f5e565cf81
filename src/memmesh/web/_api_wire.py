"""The shapes of the local REST API (:mod:`memmesh.web.api`): what each route takes and answers.

Requests are decoded strictly: a field of the wrong type, one out of its bounds or one the route
does not know is refused (400) before anything runs. Answers are what the MCP server's tools
answer (:class:`~memmesh.agents.tools.Tools`), as plain JSON; the structs here describe them
for the OpenAPI document, and the tests hold every answer to its struct. A field that is only
sometimes there (``warning``, ``trace``) is left out when it has nothing to say.
"""

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

from memmesh.local.items import MAX_K, MAX_TAGS, MAX_TEXT_BYTES, Kind
from memmesh.net.wire import Request

__all__ = [
    "ForgetRequest",
    "ForgetResponse",
    "ItemResponse",
    "OutcomeRequest",
    "OutcomeResponse",
    "PublishRequest",
    "PublishResponse",
    "RecallRequest",
    "RecallResponse",
    "RecallTeamRequest",
    "RecallTeamResponse",
    "RememberRequest",
    "RememberResponse",
]

# The bounds the MCP server's tools take (memmesh.agents.server), so that a tool and an agent
# are refused the same arguments.
Query = Annotated[str, Meta(min_length=1, max_length=2000, description="what you want to know")]
K = Annotated[int, Meta(ge=1, le=MAX_K, description="at most this many hits")]
Name = Annotated[str, Meta(min_length=1, max_length=64)]
Project = Annotated[
    Name | None,
    Meta(
        description="project name; default: MEM_PROJECT, else the git repository `mem ui` was "
        "started in, else global"
    ),
]
ItemId = Annotated[str, Meta(min_length=4, max_length=64, description="item id (or a prefix)")]
# The longest a recall_team may wait on each source: longer ties up one of the page's workers.
MOST_TEAM_TIMEOUT = 30.0


class _Answer(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """An answer: a field the struct does not describe fails the tests that hold answers to it."""


class RememberRequest(Request, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Remember one self-contained fact; the same fact again reinforces it."""

    text: Annotated[str, Meta(min_length=1, max_length=MAX_TEXT_BYTES)]
    kind: Kind = "fact"
    project: Project = None
    tags: Annotated[list[Name], Meta(max_length=MAX_TAGS)] = msgspec.field(default_factory=list)


class RememberResponse(_Answer, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The item remembered: ``status`` is ``created`` or ``reinforced``; ``redacted`` names
    the secrets stored as ``[redacted: KIND]``."""

    id: str
    status: Literal["created", "reinforced"]
    project: str
    reinforcements: int
    redacted: list[str] | UnsetType = UNSET
    warning: str | UnsetType = UNSET


class RecallRequest(Request, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Recall from this member's memory: the project's items and the global ones."""

    query: Query
    k: K = 5
    project: Project = None


class Hit(_Answer, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One of the member's own items: ``record`` is its track record in words, ``stale`` says
    which anchored file changed since it was written."""

    id: str
    text: str
    kind: str
    score: float
    project: str | UnsetType = UNSET
    record: str | UnsetType = UNSET
    stale: str | UnsetType = UNSET


class TeamHit(_Answer, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A teammate's item: their words, their name and member id, and the source that gave it
    (``team cache``, ``coordinator``, a peer); ``also`` and ``contradicted_by`` name the
    other members who stated the fact, or contradict it."""

    id: str
    text: str
    author: str
    author_id: str
    kind: str
    project: str
    score: float
    source: str
    also: list[dict[str, Any]] | UnsetType = UNSET
    contradicted_by: list[dict[str, Any]] | UnsetType = UNSET


class RecallResponse(_Answer, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The hits, best first, or ``abstained`` when nothing is relevant; ``trace`` is the id
    the recall is kept under (`mem why --trace`). In a team, ``team`` holds teammates' items
    from the team cache on this laptop, under ``notice``."""

    hits: list[Hit]
    abstained: bool
    projects: list[str]
    trace: str | UnsetType = UNSET
    notice: str | UnsetType = UNSET
    team: list[TeamHit] | UnsetType = UNSET
    team_note: str | UnsetType = UNSET


class ItemResponse(_Answer, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """An item whole, as `mem show --json` prints it."""

    item: dict[str, Any]


class OutcomeRequest(Request, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How following an item went. A teammate's item (from recall_team) is credited as a
    tally, which reaches its author at the next sync."""

    id: ItemId
    result: Literal["worked", "failed", "partial"]


class OutcomeResponse(_Answer, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The member's own item: its outcome score, and whether recall now leaves it out. A
    teammate's: ``teammate``, its author, the tally and whether it was ``sent``."""

    id: str
    outcome_score: float | UnsetType = UNSET
    excluded_from_recall: bool | UnsetType = UNSET
    author: str | UnsetType = UNSET
    teammate: bool | UnsetType = UNSET
    sent: bool | UnsetType = UNSET
    tally: dict[str, int] | UnsetType = UNSET
    warning: str | UnsetType = UNSET


class ForgetRequest(Request, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Archive an item; a published one is retracted too."""

    id: ItemId


class ForgetResponse(_Answer, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The item archived, and whether its publication was retracted."""

    id: str
    status: str
    retracted: bool
    warning: str | UnsetType = UNSET


class PublishRequest(Request, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Share items with the team as `mem team publish` does (never forced): the policy
    decides each item; ``dry_run`` only says what would leave; ``to`` names the groups or
    teammates it is for, as ``--to`` does."""

    ids: Annotated[list[ItemId], Meta(min_length=1, max_length=100)]
    dry_run: bool = False
    to: Annotated[list[Name], Meta(max_length=64)] | None = None


class Published(_Answer, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One item of a publish: what was (or would be) done, the version, the rule that
    decided it, and whom it is for (``null``: the whole team)."""

    id: str
    action: str
    version: int
    rule: str
    audience: dict[str, Any] | None


class PublishResponse(_Answer, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Each item's fate."""

    dry_run: bool
    items: list[Published]
    warning: str | UnsetType = UNSET


class RecallTeamRequest(Request, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Ask the team: the coordinator and every live peer, within ``timeout`` seconds."""

    query: Query
    k: K = 5
    project: Project = None
    author: Name | None = None
    timeout: Annotated[float, Meta(gt=0, le=MOST_TEAM_TIMEOUT)] = 2.0


class RecallTeamResponse(_Answer, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Teammates' hits under ``notice``, what each source answered, and the warnings."""

    notice: str
    hits: list[TeamHit]
    abstained: bool
    sources: dict[str, str]
    warnings: list[str]
