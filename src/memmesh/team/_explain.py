"""recall-team explained: what each source returned, and what the asker made of each hit.

An explained recall-team (``explain=True``) gives every hit every answering source returned
one :data:`Fate`, in the order the asker decides it:

* ``bad_signature``, ``other_team``, ``outside_roster``, ``revoked`` - it does not verify, or
  its author is not an active member of the roster (:mod:`memmesh.team._checks`); nothing it
  claims is taken on trust, so only its claimed id is shown;
* ``peer_served_another_key`` - a peer sent another key's item (a peer serves its owner's only);
* ``not_in_audience``, ``author_may_not_publish`` - the verified roster says it must not reach
  this member (its audience leaves them out), or its author may not publish it (a reader, or
  left out of the project's publishers): a source that served it did not keep the rules;
* ``duplicate`` - another copy of the same item (its author's key and id) was kept: a higher
  version, or the first copy of one source that listed it twice;
* ``replaced_by_author`` - a coordinator's copy, where the author's own peer answered with its
  copy of the same version;
* ``withdrawn_by_author`` - the author's live peer no longer publishes this version of it
  (retracted, or revised since): the coordinator's copy is stale;
* ``not_by_author`` - ``author`` was asked for, and this is someone else's;
* ``below_gate``, ``below_floor``, ``far_below_best``, ``ranked_below_k`` - as in a local
  recall's explanation (:mod:`memmesh.local._explain`), on the asker's own score
  (:mod:`memmesh.team.rank`): plainly unrelated; nothing reached the floor, so the answer
  abstained; too far under the best hit; a fact past ``k``;
* ``returned`` - a hit of the answer, ``rank`` its place; ``also`` - another author's item
  stating the fact of the hit at ``rank``, shown in that hit's ``also``.
"""

from typing import Literal, get_args

import msgspec

from memmesh.net.search import SearchHit
from memmesh.peer.trust import TrustedRoster
from memmesh.team._checks import Candidate, ItemKey

__all__ = ["FATES", "Fate", "Returned", "SourceExplained", "TeamExplanation", "Trail"]

Fate = Literal[
    "returned",
    "also",
    "bad_signature",
    "other_team",
    "outside_roster",
    "revoked",
    "peer_served_another_key",
    "not_in_audience",
    "author_may_not_publish",
    "duplicate",
    "replaced_by_author",
    "withdrawn_by_author",
    "not_by_author",
    "below_gate",
    "below_floor",
    "far_below_best",
    "ranked_below_k",
]
FATES: tuple[Fate, ...] = get_args(Fate)
_BY_REASON: dict[str, Fate] = {fate: fate for fate in FATES}


class Returned(msgspec.Struct, frozen=True, kw_only=True):
    """One hit a source returned, and its fate.

    ``source_score`` and ``cosine`` are the source's own; ``score`` the asker's (``None``
    when it never scored it); ``rank`` the hit's place (for ``returned``, ``also`` and
    ``ranked_below_k``); ``kept_from`` the source whose copy was kept (``duplicate``). ``author``
    is the roster's name for the key that signed it, empty when it does not verify (``key_id``
    and ``version`` are then empty too, and ``id`` is only what it claims).
    """

    id: str
    key_id: str
    author: str
    version: int
    source_score: float
    cosine: float
    fate: Fate
    score: float | None = None
    rank: int | None = None
    kept_from: str = ""


class SourceExplained(msgspec.Struct, frozen=True, kw_only=True):
    """What one answering source returned, in its own order."""

    name: str
    returned: tuple[Returned, ...]


class TeamExplanation(msgspec.Struct, frozen=True, kw_only=True):
    """The floor, the share of the best and ``k`` the answer applied, and every answering
    source's hits with their fates."""

    k: int
    min_relevance: float
    min_share_of_best: float
    sources: tuple[SourceExplained, ...]


class _Claimed(msgspec.Struct):
    """What an envelope's payload claims, read without trusting it."""

    item_id: str = ""


# The asker's verdict on an item: its fate, its score, its rank.
_Verdict = tuple[Fate, float | None, int | None]


class Trail:
    """What recall-team decided about each hit, noted as it decides; then the explanation."""

    def __init__(self) -> None:
        self._checked: list[tuple[str, SearchHit, Candidate | Fate]] = []
        self._verdicts: dict[ItemKey, _Verdict] = {}

    def checked(self, source: str, hit: SearchHit, outcome: Candidate | str) -> None:
        """``source`` returned ``hit``: a verified candidate, or the reason it was dropped."""
        fate = outcome if isinstance(outcome, Candidate) else _fate(outcome)
        self._checked.append((source, hit, fate))

    def judged(self, item: ItemKey, fate: Fate, score: float | None, rank: int | None) -> None:
        """The asker's verdict on a candidate item, once merged."""
        self._verdicts[item] = (fate, score, rank)

    def explanation(
        self,
        sources: list[str],
        merged: dict[ItemKey, Candidate],
        kept: dict[ItemKey, Candidate],
        roster: TrustedRoster,
        *,
        k: int,
        min_relevance: float,
        min_share_of_best: float,
    ) -> TeamExplanation:
        """Every answering source of ``sources`` with what it returned and each hit's fate:
        ``merged`` holds the copy kept of each item, ``kept`` those the live authors let
        stand."""
        by_source: dict[str, list[Returned]] = {name: [] for name in sources}
        for source, hit, outcome in self._checked:
            by_source.setdefault(source, []).append(
                self._returned(hit, outcome, merged, kept, roster)
            )
        return TeamExplanation(
            k=k, min_relevance=min_relevance, min_share_of_best=min_share_of_best,
            sources=tuple(SourceExplained(name=n, returned=tuple(r)) for n, r in by_source.items()),
        )  # fmt: skip

    def _returned(
        self,
        hit: SearchHit,
        outcome: Candidate | Fate,
        merged: dict[ItemKey, Candidate],
        kept: dict[ItemKey, Candidate],
        roster: TrustedRoster,
    ) -> Returned:
        if not isinstance(outcome, Candidate):
            return Returned(
                id=_claimed_id(hit), key_id="", author="", version=0,
                source_score=hit.score, cosine=hit.cosine, fate=outcome,
            )  # fmt: skip
        body = outcome.publication
        item, held = outcome.item_key, merged.get(outcome.item_key)
        fate: Fate
        score, rank, kept_from = None, None, ""
        if held is not outcome and held is not None:
            same = held.publication.version == body.version
            replaced = same and held.from_peer and not outcome.from_peer
            fate = "replaced_by_author" if replaced else "duplicate"
            kept_from = held.source
        elif item not in kept:
            fate = "withdrawn_by_author"
        else:
            fate, score, rank = self._verdicts.get(item, ("below_gate", None, None))
        return Returned(
            id=body.item_id, key_id=body.key_id, author=roster.name_of(body.key_id),
            version=body.version, source_score=hit.score, cosine=hit.cosine, fate=fate,
            score=score, rank=rank, kept_from=kept_from,
        )  # fmt: skip


def _fate(reason: str) -> Fate:
    """The fate of a hit dropped for ``reason`` (one of :mod:`memmesh.team._checks`' counts)."""
    return _BY_REASON[reason]


def _claimed_id(hit: SearchHit) -> str:
    """The item id an envelope that does not verify claims, at most 64 characters."""
    try:
        claimed = msgspec.json.decode(hit.envelope.payload, type=_Claimed)
    except msgspec.MsgspecError:
        return ""
    return claimed.item_id[:64]
