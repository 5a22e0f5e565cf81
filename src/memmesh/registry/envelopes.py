"""Signed publications and retractions: the only things that ever leave a laptop.

An envelope is the canonical msgspec JSON of a :class:`Publication` or :class:`Retraction`
(or a :class:`Presence`, :class:`Receipt` or :class:`Tally`: the *payload*, exact bytes) and
the author's Ed25519 signature over those bytes. Whoever receives one - the coordinator, a
teammate's client - calls :func:`open_envelope`, which checks the signature against the key
inside the payload and the key id against that key, then decodes the payload strictly.
Vectors travel beside envelopes, never inside the signature.
"""

import functools
import hashlib
from collections.abc import Iterable
from typing import Annotated

import msgspec

from memmesh.local.outcomes import MAX_TALLY
from memmesh.registry.errors import BadSignature
from memmesh.registry.identity import Identity, key_id, public_key_from_text, verify_signature

__all__ = [
    "FORMAT_VERSION",
    "MAX_AUDIENCE",
    "MAX_TALLY",
    "MAX_TIMESTAMP",
    "Audience",
    "Envelope",
    "Presence",
    "Publication",
    "PublishedAnchor",
    "Receipt",
    "Retraction",
    "Tally",
    "Timestamp",
    "open_envelope",
    "seal",
    "text_hash",
]

FORMAT_VERSION = 1
# 8 KiB of text can grow six-fold as JSON escapes (control characters become \u00XX).
_MAX_PAYLOAD = 64 * 1024


# Counters stay within what SQLite and JSON carry exactly.
Counter = Annotated[int, msgspec.Meta(ge=0, le=2**53)]
# Seconds since 1970 that a date can show: up to the last second of year 9999. Anything a
# message or listing formats as a date comes through this type, so none can overflow there.
MAX_TIMESTAMP = 253_402_300_799.0
Timestamp = Annotated[float, msgspec.Meta(ge=0, le=MAX_TIMESTAMP)]
TallyCount = Annotated[int, msgspec.Meta(ge=0, le=MAX_TALLY)]


class _Body(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    format: int
    team: str
    item_id: str
    version: Counter
    author_key: str
    key_id: str
    seq: Counter


# A path from a repository's top: relative, "/"-separated, never climbing out of it.
RepoPath = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=512,
        pattern=r"^(?!/)(?![A-Za-z]:)(?!.*(^|/)\.\.(/|$))[^\\\x00-\x1f\x7f]+\Z",
    ),
]
Line = Annotated[int, msgspec.Meta(ge=0, le=10_000_000)]


class PublishedAnchor(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A file the published item speaks of (memmesh.local.anchors), as it travels: the path
    from the repository's top, the lines meant (0, 0: all of it), a digest of them and a
    short hash of each (hex). Never where the repository lies on its author's disk."""

    path: RepoPath
    first_line: Line = 0
    last_line: Line = 0
    digest: Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{64}\Z")]
    line_hashes: Annotated[str, msgspec.Meta(max_length=8 * 4096, pattern=r"^([0-9a-f]{8})*\Z")]


# A group's or a project's name: the rule of member names (1-64 letters, digits, '.', '-', '_').
GroupName = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")]
# A member id: 16 lower-case base32 characters (memmesh.registry.identity.key_id).
MemberId = Annotated[str, msgspec.Meta(pattern=r"^[a-z2-7]{16}\Z")]
# The most groups, and the most members, one audience names.
MAX_AUDIENCE = 64


class Audience(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True
):
    """Whom something is for: the members of ``groups`` (as the signed roster has them when
    it is served) and the members ``members`` names by member id. An audience naming nobody
    is for its author alone. Both are sorted and without repeats (:meth:`of` makes them so)."""

    groups: Annotated[tuple[GroupName, ...], msgspec.Meta(max_length=MAX_AUDIENCE)] = ()
    members: Annotated[tuple[MemberId, ...], msgspec.Meta(max_length=MAX_AUDIENCE)] = ()

    @classmethod
    def of(cls, groups: Iterable[str] = (), members: Iterable[str] = ()) -> "Audience":
        """The audience of ``groups`` and ``members``, in its one canonical order."""
        return cls(groups=tuple(sorted(set(groups))), members=tuple(sorted(set(members))))


class Publication(
    _Body,
    frozen=True,
    kw_only=True,
    forbid_unknown_fields=True,
    tag="publication",
    omit_defaults=True,
):
    """One version of a published item, as signed by its author. ``anchors`` is left out of
    the payload when there are none, and ``audience`` when the item is for the whole team
    (``None``), so that such an item is signed as before."""

    author: str
    published_at: Timestamp
    text: str
    kind: str
    project: str
    tags: tuple[str, ...]
    content_hash: str
    embedder: str
    anchors: Annotated[tuple[PublishedAnchor, ...], msgspec.Meta(max_length=16)] = ()
    audience: Audience | None = None


class Retraction(_Body, frozen=True, kw_only=True, forbid_unknown_fields=True, tag="retraction"):
    """A tombstone: beats every publication of ``item_id`` with version <= ``version``."""

    retracted_at: Timestamp


class Presence(_Body, frozen=True, kw_only=True, forbid_unknown_fields=True, tag="presence"):
    """A signed, short-lived "I am online here": ``item_id`` is empty, version and seq are 1."""

    name: str
    peer_url: str
    embedder: str
    expires_at: Timestamp
    # The SHA-256 pin of the peer's TLS certificate (``sha256:`` and 64 hex digits) when
    # ``peer_url`` is https: askers pin the peer from this signed statement.
    tls_pin: str = ""


class Receipt(_Body, frozen=True, kw_only=True, forbid_unknown_fields=True, tag="receipt"):
    """The coordinator's signed word that it applied a retraction and purged the text.

    Signed by the coordinator's own key (``author_key``); ``member_key`` is the key whose
    item ``item_id`` was retracted at ``version``.
    """

    member_key: str
    purged_at: Timestamp


class Tally(_Body, frozen=True, kw_only=True, forbid_unknown_fields=True, tag="tally"):
    """A member's word on how a teammate's item worked for them: counts, never text.

    Signed by the *reporter* (``author_key``, ``key_id``); ``item_id`` at ``version`` is the
    item of the member whose key id is ``subject_key_id``. The counts are raw (undecayed)
    and each at most :data:`MAX_TALLY`; they only grow, so ``seq`` is their sum and the
    latest tally is the one with the highest ``seq``.
    """

    subject_key_id: Annotated[str, msgspec.Meta(min_length=16, max_length=16)]
    worked: TallyCount
    failed: TallyCount
    partial: TallyCount
    reported_at: Timestamp


Body = Publication | Retraction | Presence | Receipt | Tally


class Envelope(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The signed form on disk and on the wire (bytes are base64 in JSON)."""

    payload: Annotated[bytes, msgspec.Meta(min_length=2, max_length=_MAX_PAYLOAD)]
    signature: Annotated[bytes, msgspec.Meta(min_length=64, max_length=64)]

    @property
    def digest(self) -> str:
        """SHA-256 of payload and signature: the envelope's identity."""
        return hashlib.sha256(self.payload + self.signature).hexdigest()


def text_hash(text: str) -> str:
    """The content hash carried in a publication: SHA-256 of the exact text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def seal(body: Body, identity: Identity) -> Envelope:
    """Sign ``body`` with ``identity``; the body must carry that identity's key."""
    assert body.author_key == identity.public_key_text, "signing another member's body"
    payload = msgspec.json.encode(body)
    return Envelope(payload=payload, signature=identity.sign(payload))


_decoder = msgspec.json.Decoder(Body, strict=True)


def open_envelope(envelope: Envelope) -> Body:
    """The verified body of ``envelope``; raises :class:`BadSignature` on any defect.

    The same envelope reaches a member again and again (a publication from the coordinator
    and from its author's peer, in one recall-team and the next): the bodies of the last
    :data:`_OPENED_MAX` envelopes of at most :data:`_OPENED_PAYLOAD` bytes that opened are
    kept, by their exact payload and signature, and given again without a second check (a
    body is frozen; a defect is never kept, so it is checked, and refused, each time).
    """
    if len(envelope.payload) <= _OPENED_PAYLOAD:
        return _opened(envelope.payload, envelope.signature)
    return _open(envelope.payload, envelope.signature)


# Envelopes kept opened: at most 2,048 of at most 4 KiB (a publication's payload is some
# hundreds of bytes), so that the cache holds at most 8 MiB whoever sends them.
_OPENED_MAX = 2048
_OPENED_PAYLOAD = 4096


@functools.lru_cache(maxsize=_OPENED_MAX)
def _opened(payload: bytes, signature: bytes) -> Body:
    return _open(payload, signature)


def _open(payload: bytes, signature: bytes) -> Body:
    """:func:`open_envelope` itself."""
    if len(payload) > _MAX_PAYLOAD:
        raise BadSignature("the payload is too large")
    try:
        body = _decoder.decode(payload)
    except msgspec.DecodeError as exc:
        raise BadSignature(f"the payload is malformed: {exc}") from None
    if body.format != FORMAT_VERSION:
        raise BadSignature(f"unsupported envelope format {body.format}")
    public_key = public_key_from_text(body.author_key)
    if key_id(public_key) != body.key_id:
        raise BadSignature("the key id does not match the author's key")
    verify_signature(public_key, signature, payload)
    if isinstance(body, Publication) and text_hash(body.text) != body.content_hash:
        raise BadSignature("the content hash does not match the text")
    if isinstance(body, Tally) and body.seq != body.worked + body.failed + body.partial:
        raise BadSignature("a tally's sequence number must be the sum of its counts")
    if body.version < 1 or body.seq < 1:
        raise BadSignature("version and sequence numbers start at 1")
    if not isinstance(body, Presence) and not 1 <= len(body.item_id) <= 64:
        raise BadSignature("the item id must be 1 to 64 characters")
    return body
