"""Publishing and retracting: the policy decides, the registry records.

A batch is all or nothing: if the policy refuses any item, nothing is appended. Publishing an
item whose live publication already says the same thing is a no-op. Retracting covers every
version up to the live one; a retraction is meant for good, so publishing the item again must
be asked for (``again``), and makes a new version that teammates see like any new item.

Two things retract without being asked, each for its own reason and never both for one item:
:func:`reconcile` takes back what the member forgot or revised, and :func:`withdraw` what the
policy no longer allows (a tightened team.yaml). Neither is undone by anything automatic: once
taken back, an item is shared again only by publishing it again.
"""

from collections.abc import Callable
from typing import Literal

import msgspec

from memmesh.local import Transaction
from memmesh.local.anchors import anchors_of, shareable
from memmesh.local.errors import ItemNotFound
from memmesh.local.items import Item
from memmesh.policy.config import Policy
from memmesh.policy.decide import Decision, decide
from memmesh.policy.errors import PublishRefused
from memmesh.policy.secrets import find_secrets
from memmesh.registry.envelopes import (
    Audience,
    Publication,
    PublishedAnchor,
    Retraction,
    open_envelope,
    text_hash,
)
from memmesh.registry.errors import NotPublished, NotYourItem, RetractedBefore
from memmesh.registry.log import Entry, Live, Registry

__all__ = [
    "AudienceOf",
    "Planned",
    "eligible",
    "kept_audience",
    "plan",
    "publish",
    "reconcile",
    "retract",
    "withdraw",
    "withdrawals",
    "withheld",
]

Action = Literal["publish", "unchanged", "refused", "retracted"]
# Whom an item is published for, given its latest publication, live or retracted (``None``
# when it has none): the caller's choice (``--to``, team.yaml's default). ``None`` is the
# whole team.
AudienceOf = Callable[[Item, Publication | None], Audience | None]


class Planned(msgspec.Struct, frozen=True, kw_only=True):
    """What publishing one item would do, and the rule that decides it: ``retracted`` is an
    item retracted before, which is published again only when asked (``again``). ``audience``
    is whom it is (or would be) published for (``None``: the whole team)."""

    item: Item
    decision: Decision
    action: Action
    version: int
    audience: Audience | None = None


def kept_audience(item: Item, latest: Publication | None) -> Audience | None:
    """The audience when none is chosen: the latest publication's (so that an item revised,
    or retracted and published again, is never widened unasked), else the whole team."""
    del item
    return None if latest is None else latest.audience


def plan(
    registry: Registry,
    policy: Policy,
    item_ids: list[str],
    *,
    force: bool = False,
    again: bool = False,
    audience: AudienceOf = kept_audience,
) -> list[Planned]:
    """What ``publish`` would do for each item, without doing it (``--dry-run``)."""
    with registry.store.read() as tx:
        return _plan(registry, tx, policy, item_ids, force, again, audience)


def publish(
    registry: Registry,
    policy: Policy,
    item_ids: list[str],
    *,
    force: bool = False,
    again: bool = False,
    audience: AudienceOf = kept_audience,
) -> list[Planned]:
    """Publish the items, all or nothing; ``again`` publishes retracted ones anew; each for
    the audience ``audience`` chooses (by default, the live publication's, else the team):
    publishing an item for another audience is a new version.

    Raises :class:`PublishRefused` naming each refusal, else :class:`RetractedBefore` naming
    each retracted item when not ``again``.
    """
    with registry.store.transaction() as tx:
        planned = _plan(registry, tx, policy, item_ids, force, again, audience)
        refused = [(p.item.id, p.decision.rule) for p in planned if p.action == "refused"]
        if refused:
            raise PublishRefused(refused)
        retracted = [(p.item.id, p.version - 1) for p in planned if p.action == "retracted"]
        if retracted:
            raise RetractedBefore(retracted)
        for entry in planned:
            if entry.action != "publish":
                continue
            item = entry.item
            registry.record(
                tx, Publication, team=registry.team, item_id=item.id, version=entry.version,
                forced_rule=entry.decision.rule if entry.decision.forced else None,
                author=item.author, published_at=registry.store.clock(), text=item.text,
                kind=item.kind, project=item.project, tags=item.tags,
                content_hash=text_hash(item.text), embedder=registry.store.embedder.fingerprint,
                anchors=_anchors(tx, item.id), audience=entry.audience,
            )  # fmt: skip
        return planned


def _holds_secret(text: str) -> bool:
    """Whether a built-in secret detector fires on ``text`` (an anchored file's)."""
    return bool(find_secrets(text))


def _anchors(tx: Transaction, item_id: str) -> tuple[PublishedAnchor, ...]:
    """The item's anchors as they travel (:func:`memmesh.local.anchors.shareable`): the path
    from the repository's top and the hashes, never the repository's folder."""
    return tuple(
        PublishedAnchor(
            path=a.path,
            first_line=a.first_line,
            last_line=a.last_line,
            digest=a.digest,
            line_hashes=a.line_hashes.hex(),
        )
        for a in shareable(anchors_of(tx, [item_id]).get(item_id, []), secret=_holds_secret)
    )


def eligible(registry: Registry, policy: Policy) -> tuple[list[str], list[str]]:
    """The active items ``policy`` allows that were never published, oldest first (to publish
    in one step), and those it allows that were published and retracted before (which only a
    publish with ``again`` shares anew). Live publications are neither."""
    with registry.store.read() as tx:
        live = registry.live(tx)
        ever = {entry.item_id for entry in registry.entries(tx)}
    fresh: list[str] = []
    retracted: list[str] = []
    for item in reversed(registry.store.items(status="active")):
        if item.id in live or not decide(item, policy).allowed:
            continue
        (retracted if item.id in ever else fresh).append(item.id)
    return fresh, retracted


def retract(registry: Registry, item_ids: list[str]) -> list[Entry]:
    """Retract each item's live publication, all or nothing."""
    with registry.store.transaction() as tx:
        live = registry.live(tx)
        targets: list[Live] = []
        for raw in item_ids:
            item_id = _resolve(registry, tx, raw)
            current = live.get(item_id)
            if current is None:
                raise NotPublished(item_id)
            if current.publication.author_key != registry.identity.public_key_text:
                raise NotYourItem(item_id)
            targets.append(current)
        return [_retract(registry, tx, target) for target in dict.fromkeys(targets)]


def reconcile(registry: Registry) -> list[Entry]:
    """Retract live publications whose local item was forgotten or revised since."""
    with registry.store.transaction() as tx:
        live = registry.live(tx)
        if not live:
            return []
        items = _items(registry, tx, list(live))
        stale = [
            target
            for item_id, target in live.items()
            if target.publication.author_key == registry.identity.public_key_text
            and (item_id not in items or items[item_id].status != "active")
        ]
        return [_retract(registry, tx, target) for target in stale]


def withheld(
    registry: Registry, policy: Policy, live: dict[str, Live] | None = None
) -> dict[str, Decision]:
    """Live publications the policy (or a local change) would withhold now, with the reason;
    ``live`` is the folded log when the caller has it already (else it is folded here)."""
    with registry.store.read() as tx:
        return {k: d for k, (d, _) in _held(registry, tx, policy, live).items()}


def withdrawals(
    registry: Registry, policy: Policy, live: dict[str, Live] | None = None
) -> dict[str, Decision]:
    """The publications :func:`withdraw` would retract now, with the rule refusing each."""
    with registry.store.read() as tx:
        return _withdrawals(registry, tx, policy, live)


def withdraw(registry: Registry, policy: Policy) -> list[tuple[Entry, str]]:
    """Retract this key's live publications that ``policy`` no longer allows; returns each
    retraction with the rule that refuses its item.

    An item published with ``--force`` keeps passing the rule it overrode (never a detected
    secret). A forgotten or revised item is left to :func:`reconcile`, and nothing is taken
    back while team.yaml names no coordinator: the kill switch stops sending, it is no verdict
    on what was shared. The retractions are committed before this returns, so a sync killed
    after it still finds them queued.
    """
    with registry.store.transaction() as tx:
        live = registry.live(tx)
        refused = _withdrawals(registry, tx, policy, live)
        return [(_retract(registry, tx, live[k]), d.rule) for k, d in refused.items()]


def _withdrawals(
    registry: Registry, tx: Transaction, policy: Policy, live: dict[str, Live] | None
) -> dict[str, Decision]:
    if policy.coordinator is None:
        return {}
    if live is None:
        live = registry.live(tx)
    mine = registry.identity.public_key_text
    return {
        item_id: decision
        for item_id, (decision, local) in _held(registry, tx, policy, live).items()
        if not local and live[item_id].publication.author_key == mine
    }


def _held(
    registry: Registry, tx: Transaction, policy: Policy, live: dict[str, Live] | None
) -> dict[str, tuple[Decision, bool]]:
    """Each live publication withheld now: the decision, and whether a local change (the item
    gone, no longer active, or its text changed) rather than the policy is the reason."""
    if live is None:
        live = registry.live(tx)
    items = _items(registry, tx, list(live))
    out: dict[str, tuple[Decision, bool]] = {}
    for item_id, target in live.items():
        item = items.get(item_id)
        if item is None:
            out[item_id] = Decision(item_id=item_id, allowed=False, rule="item is gone"), True
            continue
        decision = decide(item, policy, forced_rule=target.forced_rule)
        if not decision.allowed:
            out[item_id] = decision, item.status != "active"
        elif text_hash(item.text) != target.publication.content_hash:
            changed = Decision(item_id=item_id, allowed=False, rule="text changed since publish")
            out[item_id] = changed, True
    return out


def _retract(registry: Registry, tx: Transaction, target: Live) -> Entry:
    publication = target.publication
    return registry.record(
        tx,
        Retraction,
        team=publication.team,
        item_id=publication.item_id,
        version=publication.version,
        retracted_at=registry.store.clock(),
    )


def _plan(
    registry: Registry,
    tx: Transaction,
    policy: Policy,
    item_ids: list[str],
    force: bool,
    again: bool,
    audience_of: AudienceOf,
) -> list[Planned]:
    live = registry.live(tx)
    latest = _latest_publications(registry, tx, item_ids)
    out: list[Planned] = []
    seen: set[str] = set()
    for raw in item_ids:
        item = registry.store.get(raw, tx)
        if item.id in seen:
            continue
        seen.add(item.id)
        decision = decide(item, policy, force=force)
        version = registry.latest_version(tx, item.id) + 1
        current = live.get(item.id)
        audience = audience_of(item, latest.get(item.id))
        if not decision.allowed:
            action: Action = "refused"
        elif current is not None and _same(current.publication, item, audience, registry, tx):
            action, version = "unchanged", current.publication.version
        elif current is None and version > 1 and not again:
            action = "retracted"  # every version so far was taken back
        else:
            action = "publish"
        out.append(
            Planned(item=item, decision=decision, action=action, version=version, audience=audience)
        )
    return out


def _same(
    publication: Publication,
    item: Item,
    audience: Audience | None,
    registry: Registry,
    tx: Transaction,
) -> bool:
    """Whether publishing ``item`` again, for ``audience``, would say nothing new."""
    return (
        publication.audience == audience
        and publication.content_hash == text_hash(item.text)
        and publication.kind == item.kind
        and publication.project == item.project
        and publication.tags == item.tags
        and publication.embedder == registry.store.embedder.fingerprint
        and publication.anchors == _anchors(tx, item.id)
    )


def _latest_publications(
    registry: Registry, tx: Transaction, item_ids: list[str]
) -> dict[str, Publication]:
    """Each item's newest publication this member signed, live or retracted since."""
    ids = [registry.store.get(raw, tx).id for raw in item_ids]
    latest: dict[str, Publication] = {}
    for entry in registry.entries_for(ids, tx):
        body = open_envelope(entry.envelope)
        if isinstance(body, Publication):
            latest[body.item_id] = body
    return latest


def _resolve(registry: Registry, tx: Transaction, raw: str) -> str:
    """The full item id for an id or prefix; a published id that is gone locally still counts."""
    try:
        return registry.store.get(raw, tx).id
    except ItemNotFound:
        if registry.latest_version(tx, raw):
            return raw
        raise


def _items(registry: Registry, tx: Transaction, item_ids: list[str]) -> dict[str, Item]:
    return registry.store.items_by_id(item_ids, tx)
