"""A member at work: their store, their key and their policy, with the registry over them.

Every front end that acts for a member (the `mem` command, the MCP server) goes through
:class:`Member`, so a publish or a retraction is decided and recorded the same way wherever it
was asked for.
"""

from pathlib import Path
from typing import TYPE_CHECKING

from memmesh.errors import MemmeshError
from memmesh.local.store import Store
from memmesh.policy import Policy, PolicyError, load_policy
from memmesh.registry import (
    Entry,
    Planned,
    Registry,
    load_identity,
    plan,
    publish,
    reconcile,
    retract,
)
from memmesh.registry.identity import KEY_FILENAME, Identity

if TYPE_CHECKING:
    from memmesh.team.recall import TeamAnswer
    from memmesh.team.sync import SyncReport

__all__ = ["Member", "auto_sync", "reported_action", "retract_changed", "try_policy"]


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
        self, item_ids: list[str], *, force: bool = False, dry_run: bool = False
    ) -> tuple[list[Planned], str | None]:
        """Publish the items through the policy (all or nothing), then auto-sync.

        With ``dry_run`` nothing is recorded or sent: the plan says what would happen. Returns
        the plan and the auto-sync warning, if any. Raises :class:`PolicyError` subclasses when
        the policy is unusable or refuses an item.
        """
        # Without a policy in hand, reading it again raises why it cannot be used.
        policy = self.policy or load_policy(self.store.home)
        if dry_run:
            return plan(self.registry, policy, item_ids, force=force), None
        planned = publish(self.registry, policy, item_ids, force=force)
        return planned, auto_sync(self)

    def retract(self, item_ids: list[str]) -> tuple[list[Entry], str | None]:
        """Retract the items' live publications (all or nothing), then auto-sync.

        Works without a usable policy. Returns the retraction entries and the auto-sync
        warning, if any.
        """
        entries = retract(self.registry, item_ids)
        return entries, auto_sync(self)

    def sync(self) -> "SyncReport":
        """Push every entry the coordinator has not acknowledged (see :func:`sync`).

        Raises :class:`PolicyError` when the policy is unusable or names no coordinator.
        """
        from memmesh.net.connect import coordinator_client
        from memmesh.team.sync import sync

        # Without a policy in hand, reading it again raises why it cannot be used.
        policy = self.policy or load_policy(self.store.home)
        with coordinator_client(policy, self.identity) as client:
            return sync(self.registry, policy, client)

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
        ``timeout``, the whole ask a second more. Raises :class:`Unreachable` when no source
        answered."""
        from memmesh.team.recall import recall_team

        # Without a policy in hand, reading it again raises why it cannot be used.
        policy = self.policy or load_policy(self.store.home)
        return recall_team(
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

    Returns the ids of the items retracted, and the auto-sync warning if the push failed.
    """
    if not (home / KEY_FILENAME).exists():
        return [], None
    member = Member(store, load_identity(home), try_policy(home), reconcile_first=False)
    retracted = [entry.item_id for entry in reconcile(member.registry)]
    return retracted, auto_sync(member) if retracted else None


def auto_sync(member: Member) -> str | None:
    """Push at once after a publish or retract when the policy asks for it.

    Returns a warning when the push failed (the entries stay queued for `mem team sync`),
    else ``None``.
    """
    policy = member.policy
    if policy is None or not policy.auto_sync or policy.coordinator is None:
        return None
    try:
        member.sync()
    except MemmeshError as exc:
        return f"auto-sync failed ({exc.message}); run `mem team sync`"
    return None
