"""A member at work: their store, their key and their policy, with the registry over them.

Every front end that acts for a member (the `mem` command, the MCP server) goes through
:class:`Member`, so a publish or a retraction is decided and recorded the same way wherever it
was asked for.
"""

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from memmesh.errors import MemmeshError
from memmesh.local.store import Store
from memmesh.policy import Policy, PolicyError, load_policy
from memmesh.registry import (
    Entry,
    Planned,
    Registry,
    eligible,
    load_identity,
    plan,
    publish,
    reconcile,
    retract,
    withdrawals,
)
from memmesh.registry.access import Access
from memmesh.registry.identity import KEY_FILENAME, Identity
from memmesh.text import counted

if TYPE_CHECKING:
    from memmesh.team.recall import TeamAnswer
    from memmesh.team.sync import SyncReport

__all__ = [
    "Member",
    "auto_sync",
    "reported_action",
    "retract_changed",
    "try_policy",
    "withholding",
]


class Member:
    """A member working on ``store`` (which the caller owns) with their key and policy.

    ``policy`` is ``None`` for operations that work without a usable team.yaml (retract, log,
    verify). ``reconcile_first`` retracts what was forgotten or revised before anything else.
    """

    def __init__(
        self,
        store: Store,
        identity: Identity,
        policy: Policy | None,
        *,
        reconcile_first: bool = True,
    ) -> None:
        self.store = store
        self.identity = identity
        self.policy = policy
        self.registry = Registry(
            store,
            identity,
            policy.team if policy else "default",
            coordinator_key=policy.coordinator_key if policy else None,
        )
        if reconcile_first:
            reconcile(self.registry)

    def publish(
        self,
        item_ids: list[str],
        *,
        force: bool = False,
        dry_run: bool = False,
        again: bool = False,
        progress: Callable[[int, int], None] | None = None,
        to: Sequence[str] | None = None,
        access: Access | None = None,
    ) -> tuple[list[Planned], str | None]:
        """Publish the items through the policy (all or nothing), then auto-sync (its
        ``progress`` as for :meth:`sync`); ``again`` publishes items retracted before anew.
        Each is for the audience ``to`` names, else as :mod:`memmesh.team.audience` chooses,
        by the roster's rules ``access`` (:meth:`access_for` when not given).

        With ``dry_run`` nothing is recorded or sent: the plan says what would happen. Returns
        the plan and a warning, if any: the auto-sync's, else :func:`withholding` (published
        items the policy now withholds, which only a sync takes back). Raises
        :class:`PolicyError` subclasses when the policy is unusable or refuses an item,
        :class:`~memmesh.registry.errors.RetractedBefore` for a retracted item without
        ``again``, :class:`~memmesh.registry.errors.UnknownAudience` and
        :class:`~memmesh.registry.errors.PublishNotAllowed` when the roster refuses.
        """
        from memmesh.team.audience import choose

        # Without a policy in hand, reading it again raises why it cannot be used.
        policy = self.policy or load_policy(self.store.home)
        if access is None:
            access = self.access_for(policy)
        name = policy.identity.name if policy.identity else self.store.author
        audience = choose(access, policy, self.identity, name, to)
        if dry_run:
            planned = plan(
                self.registry, policy, item_ids, force=force, again=again, audience=audience
            )
            return planned, None
        planned = publish(
            self.registry, policy, item_ids, force=force, again=again, audience=audience
        )
        warning = auto_sync(self, progress)
        return planned, warning or withholding(len(withdrawals(self.registry, policy)))

    def access_for(self, policy: Policy | None = None) -> Access:
        """The roster's rules a publish is decided by: whom its audience names, and whether
        this member may publish (:func:`memmesh.team.audience.member_access`)."""
        from memmesh.team.audience import member_access

        policy = policy or self.policy or load_policy(self.store.home)
        return member_access(policy, self.identity, self.store.home)

    def eligible(self) -> tuple[list[str], list[str]]:
        """The ids of the active items the policy allows that were never published (oldest
        first), and of those it allows that were retracted before (see
        :func:`~memmesh.registry.publish.eligible`)."""
        # Without a policy in hand, reading it again raises why it cannot be used.
        return eligible(self.registry, self.policy or load_policy(self.store.home))

    def retract(self, item_ids: list[str]) -> tuple[list[Entry], str | None]:
        """Retract the items' live publications (all or nothing), then auto-sync.

        Works without a usable policy. Returns the retraction entries and the auto-sync
        warning, if any.
        """
        entries = retract(self.registry, item_ids)
        return entries, auto_sync(self)

    def sync(self, progress: Callable[[int, int], None] | None = None) -> "SyncReport":
        """Push every entry the coordinator has not acknowledged (see :func:`sync`), calling
        ``progress(sent, to send)`` as the batches go, then exchange tallies
        (:func:`~memmesh.team.tallies.exchange`).

        Raises :class:`PolicyError` when the policy is unusable or names no coordinator, a
        :class:`~memmesh.team.errors.AccessError` when the coordinator does not accept this
        member (:func:`~memmesh.team.access.explained` says why).
        """
        from memmesh.net.connect import coordinator_client
        from memmesh.team.access import accepted
        from memmesh.team.sync import sync
        from memmesh.team.tallies import exchange

        # Without a policy in hand, reading it again raises why it cannot be used.
        policy = self.policy or load_policy(self.store.home)
        with accepted(policy, self.identity), coordinator_client(policy, self.identity) as client:
            report = sync(self.registry, policy, client, progress=progress)
            home = self.store.home
            report.tallies = exchange(self.store, self.identity, policy, client, home=home)
            return report

    def ask_team(
        self,
        query: str,
        *,
        k: int,
        project: str,
        author: str | None = None,
        timeout: float = 2.0,
        interfaces: list[str] | None = None,
    ) -> "TeamAnswer":
        """recall-team for this member, who signs every request: every source gets
        ``timeout``, the whole ask a second more; each hit names the other hits by another
        author that contradict it (:func:`memmesh.team.contradictions.flag_answer`). Raises
        :class:`Unreachable` when no source answered."""
        from memmesh.team.contradictions import flag_answer
        from memmesh.team.recall import recall_team
        from memmesh.team.tallies import note_answer

        # Without a policy in hand, reading it again raises why it cannot be used.
        policy = self.policy or load_policy(self.store.home)
        answer = recall_team(
            self.store,
            policy,
            query,
            k=k,
            project=project,
            author=author,
            timeout=timeout,
            deadline=timeout + 1.0,
            identity=self.identity,
            interfaces=interfaces,
        )
        note_answer(self.store, self.identity, answer)  # so that `mem outcome` can credit them
        return flag_answer(answer)


def reported_action(planned: Planned, *, dry_run: bool) -> str:
    """What to call a planned item's fate in a report: "published" once it has been."""
    if planned.action == "publish" and not dry_run:
        return "published"
    return planned.action


def try_policy(home: Path) -> Policy | None:
    """The policy in ``home``, or ``None`` when it is missing or invalid."""
    try:
        return load_policy(home)
    except PolicyError:
        return None


def retract_changed(store: Store, home: Path) -> tuple[list[str], str | None]:
    """After a forget or revise: retract the publications whose item changed (if we have a
    key), and push the retractions at once when the policy asks for it.

    Returns the ids of the items retracted, and a warning when the retractions did not reach
    the coordinator (the push failed, or the policy does not push: teammates keep seeing the
    old text until `mem team sync`), or when the push also took items back.
    """
    if not (home / KEY_FILENAME).exists():
        return [], None
    policy = try_policy(home)
    member = Member(store, load_identity(home), policy, reconcile_first=False)
    retracted = [entry.item_id for entry in reconcile(member.registry)]
    if not retracted:
        return [], None
    unpushed = _unpushed(policy)
    if unpushed is not None:
        return retracted, f"teammates keep seeing the old text until `mem team sync` ({unpushed})"
    return retracted, auto_sync(member)


def auto_sync(member: Member, progress: Callable[[int, int], None] | None = None) -> str | None:
    """Push at once after a publish or retract when the policy asks for it (``progress`` as
    for :meth:`Member.sync`).

    Returns a warning when the push failed (the entries stay queued for `mem team sync`) or
    took back items the policy no longer allows, else ``None``.
    """
    policy = member.policy
    if _unpushed(policy) is not None:
        return None
    try:
        report = member.sync(progress)
    except MemmeshError as exc:
        return f"auto-sync failed ({exc.message}); run `mem team sync`"
    if report.withdrawn:
        ids = ", ".join(item_id for item_id, _ in report.withdrawn)
        taken = counted(len(report.withdrawn), "item")
        return f"auto-sync retracted {taken} the policy no longer allows: {ids}"
    return None


def withholding(count: int) -> str | None:
    """What to tell a member about ``count`` published items the policy now withholds (which
    the next sync retracts), or ``None`` when there are none."""
    if not count:
        return None
    return f"{counted(count, 'published item')} the policy now withholds: run `mem team sync`"


def _unpushed(policy: Policy | None) -> str | None:
    """Why changes are not pushed at once under ``policy``, or ``None`` when they are."""
    if policy is None:
        return "team.yaml is unusable"
    if policy.coordinator is None:
        return "team.yaml names no coordinator"
    if not policy.auto_sync:
        return "auto_sync is off"
    return None
