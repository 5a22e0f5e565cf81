"""The coordinator's wire protocol, version 1: the request and response structs of its own
routes (the search it shares with the peer daemon lives in :mod:`memmesh.net.search`).

Requests are strict: unknown fields are refused, strings and lists are bounded, floats must be
finite. docs/protocol.md shows each endpoint with these shapes.
"""

from typing import Annotated, Literal

import msgspec

from memmesh.net.presence import OutcomeStatus, Roster, RosterMember
from memmesh.net.search import Vector
from memmesh.net.wire import MAX_BATCH
from memmesh.net.wire import Request as _Request
from memmesh.registry.envelopes import MAX_TIMESTAMP, Counter, Envelope, Timestamp
from memmesh.registry.roster_chain import SignedStatement

__all__ = [
    "MEMBER_NAME",
    "TALLY_NOT_LIVE",
    "ChainRequest",
    "ChainResponse",
    "Change",
    "ChangesRequest",
    "ChangesResponse",
    "Disclosure",
    "DisclosuresRequest",
    "DisclosuresResponse",
    "Info",
    "Invite",
    "InviteProof",
    "InviteRequest",
    "JoinRequest",
    "JoinResponse",
    "MemberAdd",
    "MemberAdmin",
    "MemberRevoke",
    "MyTalliesRequest",
    "MyTalliesResponse",
    "Outcome",
    "PresenceList",
    "PublishItem",
    "PublishRequest",
    "PublishResponse",
    "RetractRequest",
    "RetractResponse",
    "RevokeResponse",
    "Roster",
    "RosterMember",
    "StatementsRequest",
    "StatementsResponse",
    "TalliesRequest",
    "TalliesResponse",
    "TallyChange",
]


class PublishItem(_Request, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A signed publication and, beside it, the item's vector (not signed)."""

    envelope: Envelope
    vector: Vector | None = None


class PublishRequest(_Request, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``POST /v1/publish``: up to 256 publications."""

    items: Annotated[list[PublishItem], msgspec.Meta(min_length=1, max_length=MAX_BATCH)]


class RetractRequest(_Request, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``POST /v1/retract``: up to 256 signed retractions."""

    envelopes: Annotated[list[Envelope], msgspec.Meta(min_length=1, max_length=MAX_BATCH)]


class Outcome(msgspec.Struct, frozen=True, kw_only=True):
    """What happened to one envelope. ``accepted``, ``duplicate`` and ``stale`` are final and
    idempotent (the sender may stop sending it); ``rejected`` says why in ``reason``, and a
    publication the signed roster refuses says it in ``code`` too: ``reader`` (the caller is a
    reader, who publishes nothing), ``not_granted`` (the project's publish grant leaves the
    caller out) or ``unknown_audience`` (its audience names a group the roster lacks or a
    member id that is not an active member, or the roster is not signed). Empty otherwise.

    An applied (or already applied) retraction carries ``receipt``: a
    :class:`~memmesh.registry.envelopes.Receipt` signed by the coordinator's key.
    """

    item_id: str
    version: int
    status: OutcomeStatus
    reason: str = ""
    receipt: Envelope | None = None
    code: str = ""


class PublishResponse(msgspec.Struct, frozen=True, kw_only=True):
    """One outcome per publication, in request order."""

    results: list[Outcome]


class RetractResponse(msgspec.Struct, frozen=True, kw_only=True):
    """One outcome per retraction, in request order."""

    results: list[Outcome]


class PresenceList(msgspec.Struct, frozen=True, kw_only=True):
    """``GET /v1/presence/list``: every unexpired signed heartbeat, and the roster (so that one
    call tells a member who the team's peers and members are)."""

    members: list[Envelope]
    roster: Roster | None = None


# A member's name is printed on every member's terminal and becomes the author of its items:
# the store's name rule (ASCII letters, digits, '.', '-', '_'), so that no name holds control,
# invisible or direction-flipping characters, or letters of another script that look alike.
# The route checks the rule (MEMBER_NAME) itself, so that a name breaking it is refused with
# its own code and the rule in words (bad_member_name), not the decoder's regular expression;
# the decoder bounds only the length of what it reads.
MEMBER_NAME = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
Name = Annotated[
    str,
    msgspec.Meta(
        max_length=1024,
        description="1-64 letters, digits, '.', '-' or '_', starting with a letter or digit "
        "(else 400 bad_member_name)",
        extra_json_schema={"pattern": MEMBER_NAME},
    ),
]
KeyText = Annotated[str, msgspec.Meta(min_length=1, max_length=64)]


class MemberAdd(_Request, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``POST /v1/members/add`` (an admin): put a key on the roster under ``name``."""

    name: Name
    key: KeyText
    admin: bool = False


class MemberRevoke(_Request, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``POST /v1/members/revoke`` (an admin): refuse ``member`` (a name, key or member id) from
    now on; with ``purge``, remove its published items too."""

    member: KeyText
    purge: bool = False


class MemberAdmin(_Request, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``POST /v1/members/promote`` and ``/v1/members/demote`` (an admin): make ``member`` (a
    name, key or member id) an admin, or no longer one. Refusals: ``not_an_admin`` (403, the
    caller), ``no_such_member`` (404), ``already_admin``, ``no_admin_to_demote``,
    ``member_revoked`` and ``last_admin`` (409)."""

    member: KeyText


class RevokeResponse(msgspec.Struct, frozen=True, kw_only=True):
    """The revoked member, and how many of its published items were purged."""

    member: RosterMember
    purged: int


class InviteRequest(_Request, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``POST /v1/invites`` (an admin): a single-use invite for ``name``, until ``expires_at``
    (at most 30 days ahead; ``400`` otherwise). Only the SHA-256 of the secret (``digest``, 64
    hex digits) reaches the coordinator; the secret is in the code."""

    name: Name
    digest: Annotated[str, msgspec.Meta(pattern="^[0-9a-f]{64}$")]
    expires_at: Annotated[float, msgspec.Meta(gt=0, le=MAX_TIMESTAMP)]
    admin: bool = False


class Invite(msgspec.Struct, frozen=True, kw_only=True):
    """The invite as stored: whom it is for, until when, and whether it makes an admin.

    ``revoked_at`` is when the last member of that name was revoked, if one was: their key
    stays refused, so the invite admits only a new key (absent from older coordinators)."""

    name: str
    expires_at: Timestamp
    admin: bool
    revoked_at: Timestamp | None = None


class JoinRequest(_Request, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``POST /v1/join`` (any signer), in one of two forms:

    * ``secret`` and ``genesis``: the first admin, with the code ``mem coordinator serve``
      printed (its secret is the coordinator's bootstrap invite), starts the signed roster:
      ``genesis`` is statement 0, signed by the caller's own key, which becomes the team's root;
    * ``statement``: a ``join`` statement (signed by the caller's key and the invite's key,
      after the chain's head), for an invite an admin put on the chain.

    Without ``genesis``, a ``secret`` is a coordinator-held invite of a team whose roster is
    not signed yet (its first admin, or an invite made before it was signed)."""

    secret: Annotated[str, msgspec.Meta(max_length=128)] = ""
    genesis: SignedStatement | None = None
    statement: SignedStatement | None = None


# What an invite key signs to read the chain before its holder is a member: this prefix, the
# team, a NUL, then the caller's public key text (see InviteProof).
INVITE_PROOF_CONTEXT = b"memmesh-roster-invite-proof-v1\x00"


class InviteProof(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Proof that the caller holds an open invite: the invite's public key and its signature
    over :data:`INVITE_PROOF_CONTEXT` + team + ``\\x00`` + the caller's public key text."""

    invite_key: KeyText
    signature: Annotated[bytes, msgspec.Meta(min_length=64, max_length=64)]


# The most statements one chain page or one statements request carries.
MAX_CHAIN_PAGE = 1000


class ChainRequest(_Request, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``POST /v1/roster/chain``: the signed roster's statements from seq ``start`` on (at most
    :data:`MAX_CHAIN_PAGE`; ``more`` says when there are others). Members may read it; a
    caller who is not one must send ``invite`` (a joiner: it reads the chain it joins)."""

    start: Counter = 0
    invite: InviteProof | None = None


class ChainResponse(msgspec.Struct, frozen=True, kw_only=True):
    """The statements from ``start`` on, and the head's seq (-1: the roster is not signed)."""

    statements: list[SignedStatement]
    head_seq: int
    more: bool = False


class StatementsRequest(_Request, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``POST /v1/roster/statements``: signed statements that extend the chain's head, in
    order (an admin's change; several at once when an admin signs a team's unsigned roster).
    Refusals: ``stale_roster_head`` (409: the chain moved on; read it and sign again),
    ``roster_refused`` (400/403: a statement breaks a rule; the message names the reason).
    ``purge``: members these statements revoke lose their published items too."""

    statements: Annotated[
        list[SignedStatement], msgspec.Meta(min_length=1, max_length=MAX_CHAIN_PAGE)
    ]
    purge: bool = False


class StatementsResponse(msgspec.Struct, frozen=True, kw_only=True):
    """The chain's head after the statements, and how many published items were purged."""

    head_seq: int
    head_hash: str
    purged: int = 0


class JoinResponse(msgspec.Struct, frozen=True, kw_only=True):
    """The new member as the roster has it, the team, the coordinator's own public key (which
    signs retraction receipts), and the name of the embedder its cache uses: the team's one
    vector space, which the joining member's team.yaml and store take on (empty from a
    coordinator that does not say)."""

    member: RosterMember
    team: str
    coordinator_key: str
    embedder: str = ""


class DisclosuresRequest(_Request, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``POST /v1/disclosures``: who was served the signer's own items (``item_id``: one);
    ``per_asker``: at most that many of one asker's, so that one who searched often does not
    push everyone else out of the ``limit``."""

    item_id: Annotated[str, msgspec.Meta(min_length=1, max_length=64)] | None = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 100
    per_asker: Annotated[int, msgspec.Meta(ge=1, le=1000)] | None = None


class Disclosure(msgspec.Struct, frozen=True, kw_only=True):
    """One item served to one member at one time (never the query)."""

    item_id: str
    asker_key_id: str
    asker_name: str
    served_at: Timestamp


class DisclosuresResponse(msgspec.Struct, frozen=True, kw_only=True):
    """The newest disclosures first."""

    entries: list[Disclosure]


class ChangesRequest(_Request, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``POST /v1/changes``: the feed after ``cursor`` (0 = from the start)."""

    cursor: Annotated[int, msgspec.Meta(ge=0, le=2**53)] = 0
    limit: Annotated[int, msgspec.Meta(ge=1, le=500)] = 100


class Change(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One author's item's current state as the caller may see it: its live publication, or
    its tombstone (the envelope names the author's key; another key's item of the same id is
    another change), or ``hidden``: the item is no longer one the caller may read (its new
    version's audience leaves them out), so a copy of it must go. A hidden change carries no
    envelope, only the item, its version and its author's key (``author_key``).

    The feed lists for each caller only the changes of items it may read, and the hidden
    changes of items an earlier version let it read; nothing else, not even a gap it could
    count: ``next_cursor`` and ``head`` are the caller's own (docs/protocol.md)."""

    cursor: int
    kind: Literal["publication", "retraction", "hidden"]
    item_id: str
    version: int
    envelope: Envelope | None = None
    author_key: str = ""


class ChangesResponse(msgspec.Struct, frozen=True, kw_only=True):
    """A page of the feed; ask again from ``next_cursor`` while ``more`` is true.

    What a follower needs to keep a copy of the feed by asking only for what changed: ``head``
    is the cursor of the last change this caller may see (a follower's cursor past it: the
    feed was replaced); ``roster``
    changes whenever a member is added, revoked, renamed or changes role; ``purges`` whenever
    an operator's purge took rows out of the feed (neither shows in ``changes``). Empty from
    a coordinator older than them: the follower then reads the whole feed every time."""

    changes: list[Change]
    next_cursor: int
    more: bool
    head: int = 0
    roster: str = ""
    purges: str = ""


# Why a tally is refused when the coordinator holds no live item of its subject with its id:
# the reporter's client then forgets the item (its author took it back).
TALLY_NOT_LIVE = "no live item of that member has this id"


class TalliesRequest(_Request, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``POST /v1/tallies``: up to 256 of the caller's own signed tallies, each on another
    member's live item."""

    envelopes: Annotated[list[Envelope], msgspec.Meta(min_length=1, max_length=MAX_BATCH)]


class TalliesResponse(msgspec.Struct, frozen=True, kw_only=True):
    """One outcome per tally, in request order: ``stale`` for one no newer than the kept one
    of that reporter on that item."""

    results: list[Outcome]


class MyTalliesRequest(_Request, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``POST /v1/tallies/mine``: the tallies on the caller's own items after ``cursor``."""

    cursor: Annotated[int, msgspec.Meta(ge=0, le=2**53)] = 0
    limit: Annotated[int, msgspec.Meta(ge=1, le=500)] = 100


class TallyChange(msgspec.Struct, frozen=True, kw_only=True):
    """A reporter's newest tally on one of the caller's items, as the reporter signed it."""

    cursor: int
    envelope: Envelope


class MyTalliesResponse(msgspec.Struct, frozen=True, kw_only=True):
    """A page of the caller's tallies, oldest change first; ask again from ``next_cursor``
    while ``more`` is true."""

    tallies: list[TallyChange]
    next_cursor: int
    more: bool


class Info(msgspec.Struct, frozen=True, kw_only=True):
    """``GET /v1/info``: what this coordinator is. ``coordinator_key`` is its own public key
    (it signs retraction receipts); ``roster`` is whether the roster is enforced (it has a
    member, and only members not revoked are served)."""

    service: str
    protocol: str
    version: str
    team: str | None
    embedder: str
    published: int
    tombstones: int
    online: int
    coordinator_key: str = ""
    roster: bool = False
