"""Who may use the coordinator: the team's roster, the invites that add to it, and revocation.

The roster lives in the coordinator's store file (:mod:`memmesh.coordinator._members`) and is
read on every request, so that what one worker process changes holds in every other at once.
While it is empty it is not enforced: any signer is admitted (a team set up before rosters;
the team token, if there is one, is then the gate). From its first member on, only members
that are not revoked are admitted.

Admins put keys on the roster directly or with invites: an invite is the SHA-256 of a secret,
for one name, until a time; whoever presents the secret first, with a signed request, joins
under that name, and nobody after. Revoking a member keeps its entry (with the time), refuses
its key from then on and, with ``purge``, erases its live publications from search and storage;
the last admin cannot be revoked. Admins promote members to admins and demote them; the last
admin cannot be demoted, and a revoked member's role no longer changes.

Once the team's roster is signed (:mod:`memmesh.coordinator.signed_roster`: the first admin's
code starts it, or an admin signs the table as it stands), the table is what the chain says:
the admins' routes here and the invites the coordinator holds refuse as :class:`RosterSigned`,
and members join by the join statements of invites on the chain.

A name is checked here, against :data:`~memmesh.coordinator.protocol.MEMBER_NAME`, so that
one breaking the rule is refused as :class:`BadMemberName` (400, the rule in words). Every
refusal of an admin's change has its own code (:mod:`memmesh.coordinator.errors`).
"""

import datetime
import re
import time
from collections.abc import Callable

from memmesh.coordinator import _chain, _members, _tables
from memmesh.coordinator.errors import (
    AlreadyAdmin,
    BadMemberName,
    LastAdmin,
    MemberRevoked,
    NoAdminToDemote,
    NoSuchMember,
    NotAnAdmin,
    RosterRefused,
    RosterSigned,
)
from memmesh.coordinator.holdings import erase_publications
from memmesh.coordinator.invites import new_secret, secret_digest
from memmesh.coordinator.protocol import (
    MEMBER_NAME,
    Invite,
    InviteRequest,
    JoinRequest,
    JoinResponse,
    MemberAdd,
    MemberAdmin,
    MemberRevoke,
    RevokeResponse,
)
from memmesh.coordinator.signed_roster import SignedRoster
from memmesh.coordinator.storage import CoordinatorStore, Tx
from memmesh.net.errors import BadRequest, Conflict, Forbidden, Revoked
from memmesh.net.presence import Roster, RosterMember
from memmesh.net.signing import Caller
from memmesh.registry.errors import BadSignature
from memmesh.registry.identity import key_id, public_key_from_text

__all__ = ["BOOTSTRAP_TTL", "MAX_INVITE_TTL", "Membership", "when"]

# How long the first admin's invite lasts; a restart after it expired makes a new one.
BOOTSTRAP_TTL = 7 * 24 * 3600.0
# The longest an invite may last from when it is made: a code leaked in a chat log stops
# joining anyone within a month.
MAX_INVITE_TTL = 30 * 24 * 3600.0
_NAME = re.compile(MEMBER_NAME)


def when(moment: float) -> str:
    """A time as messages show it: ``2025-01-31 14:05 UTC``."""
    return datetime.datetime.fromtimestamp(moment, datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


class Membership:
    """The roster rules of one coordinator (``team``), on its store."""

    def __init__(
        self,
        store: CoordinatorStore,
        *,
        team: str,
        coordinator_key: str,
        open_without_roster: bool = True,
        clock: Callable[[], float] = time.time,
    ) -> None:
        store.migrate(_members.ROSTER_SCHEMA)
        self.store = store
        self.team = team
        self.open_without_roster = open_without_roster
        self.coordinator_key = coordinator_key
        self._clock = clock
        self.signed = SignedRoster(store, team=team, admit=self.admit, clock=clock)

    # -- admission -------------------------------------------------------------------------

    def admit(self, caller: Caller) -> None:
        """Return if ``caller`` may use the members' routes; :class:`Forbidden` otherwise."""
        with self.store.read() as tx:
            entry = _members.member(tx, caller.key)
            # A member's own row says the roster has one: the second read is a stranger's.
            enforced = entry is not None or _members.enforced(tx)
        if entry is None and not enforced:
            if self.open_without_roster:
                return
            raise Forbidden(
                f"team {self.team!r} has no members yet: the first joins with the admin code "
                "`mem coordinator serve` printed (also in DATA/admin-join-code)"
            )
        if entry is None:
            raise Forbidden(f"this key is not a member of team {self.team!r}")
        if entry.revoked_at is not None:
            raise Revoked(when(entry.revoked_at))

    def roster(self) -> Roster:
        """Every member ever admitted (revoked ones with their time), whether the roster is
        enforced, and the head of the signed roster it was derived from (-1: not signed)."""
        with self.store.read() as tx:
            entries = _members.members(tx)
            head = _chain.head(tx)
        return Roster(
            members=entries,
            enforced=bool(entries),
            head_seq=-1 if head is None else head.seq,
            head_hash="" if head is None else head.hash,
        )

    def enforced(self) -> bool:
        """Whether the roster has a member (and so admits members only)."""
        with self.store.read() as tx:
            return _members.enforced(tx)

    def _admin(self, tx: Tx, caller: Caller) -> RosterMember:
        """The caller's entry, an active admin's; :class:`RosterSigned` once the roster is
        signed (the coordinator no longer changes it on its own: admins sign each change)."""
        if _chain.head(tx) is not None:
            raise RosterSigned(self.team)
        entry = _members.member(tx, caller.key)
        if entry is None or entry.revoked_at is not None or not entry.admin:
            raise NotAnAdmin(self.team)
        return entry

    def _found(self, tx: Tx, member: str) -> RosterMember:
        """The member ``member`` names (see :func:`_members.find`); :class:`NoSuchMember`."""
        entry = _members.find(tx, member)
        if entry is None:
            raise NoSuchMember(self.team, member)
        return entry

    # -- the admins' routes ----------------------------------------------------------------

    def add(self, caller: Caller, request: MemberAdd) -> RosterMember:
        """Put ``request.key`` on the roster under ``request.name`` (an admin only)."""
        _check_name(request.name)
        try:
            raw = public_key_from_text(request.key)
        except BadSignature as exc:
            raise BadRequest(f"the key cannot be used: {exc.message}") from None
        entry = RosterMember(
            name=request.name,
            key=request.key,
            key_id=key_id(raw),
            admin=request.admin,
            added_at=self._clock(),
        )
        with self.store.transaction() as tx:
            self._admin(tx, caller)
            self._check_free(tx, entry.key, entry.name)
            _members.add_member(tx, entry)
        return entry

    def revoke(self, caller: Caller, request: MemberRevoke) -> RevokeResponse:
        """Refuse a member's key from now on and, with ``purge``, erase its live publications
        (an admin only). Revoking a member already revoked keeps its first time (and purges,
        if asked)."""
        now = self._clock()
        with self.store.transaction() as tx:
            self._admin(tx, caller)
            entry = self._found(tx, request.member)
            if entry.revoked_at is None and entry.admin and _members.active_admins(tx) == 1:
                raise LastAdmin(self.team, entry.name)
            _members.revoke(tx, entry.key, now)
            _tables.drop_presence(tx, entry.key_id)
            purged = 0
            if request.purge:
                purged = erase_publications(self.store, tx, entry.key)
            revoked = _members.member(tx, entry.key)
        if purged:
            self.store.scrub()  # what is left of their texts on disk, once for all of them
        assert revoked is not None
        return RevokeResponse(member=revoked, purged=purged)

    def promote(self, caller: Caller, request: MemberAdmin) -> RosterMember:
        """Make the member ``request.member`` names an admin (an admin only)."""
        return self._set_admin(caller, request.member, admin=True)

    def demote(self, caller: Caller, request: MemberAdmin) -> RosterMember:
        """Make the admin ``request.member`` names a member who is no admin (an admin only,
        themselves included); never the last admin."""
        return self._set_admin(caller, request.member, admin=False)

    def _set_admin(self, caller: Caller, member: str, *, admin: bool) -> RosterMember:
        with self.store.transaction() as tx:
            self._admin(tx, caller)
            entry = self._found(tx, member)
            if entry.revoked_at is not None:
                raise MemberRevoked(self.team, entry.name, entry.revoked_at, when(entry.revoked_at))
            if admin and entry.admin:
                raise AlreadyAdmin(self.team, entry.name)
            if not admin and not entry.admin:
                raise NoAdminToDemote(self.team, entry.name)
            if not admin and _members.active_admins(tx) == 1:
                raise LastAdmin(self.team, entry.name)
            _members.set_admin(tx, entry.key, admin)
            changed = _members.member(tx, entry.key)
        assert changed is not None
        return changed

    def invite(self, caller: Caller, request: InviteRequest) -> Invite:
        """Store a single-use invite for ``request.name`` (an admin only), lasting at most
        :data:`MAX_INVITE_TTL`."""
        now = self._clock()
        _check_name(request.name)
        if request.expires_at <= now:
            raise BadRequest(
                f"the invite would expire before it is made ({when(request.expires_at)})"
            )
        if request.expires_at > now + MAX_INVITE_TTL:
            raise BadRequest(
                f"an invite lasts at most {MAX_INVITE_TTL / 86400:.0f} days, not until "
                f"{when(request.expires_at)}"
            )
        with self.store.transaction() as tx:
            admin = self._admin(tx, caller)
            if _members.active_named(tx, request.name) is not None:
                raise Conflict(f"team {self.team!r} already has a member named {request.name!r}")
            if _members.invite(tx, request.digest) is not None:
                raise Conflict("an invite with this secret exists already")
            _members.add_invite(
                tx,
                _members.InviteRow(
                    request.digest,
                    request.name,
                    request.admin,
                    request.expires_at,
                    admin.key_id,
                    None,
                ),
            )
            # A revoked member's key stays refused: the admin is told the code admits a new key.
            revoked = _members.revoked_named(tx, request.name)
        return Invite(
            name=request.name,
            expires_at=request.expires_at,
            admin=request.admin,
            revoked_at=revoked.revoked_at if revoked is not None else None,
        )

    # -- joining ---------------------------------------------------------------------------

    def join(self, caller: Caller, request: JoinRequest) -> JoinResponse:
        """Put the signer's key on the roster, in one of the forms of :class:`JoinRequest`:
        the first admin's code with a ``genesis`` (the signed roster starts), a ``join``
        statement of an invite on the chain, or a coordinator-held invite's secret alone (a
        team whose roster is not signed).

        :class:`Revoked` for a revoked key, :class:`Conflict` if the key is a member already
        (the invite stays unused) or the name is taken; :class:`Forbidden` for an unknown, used
        or expired invite; :class:`RosterRefused` for a statement the chain refuses (a
        bootstrap secret without its genesis: ``genesis_required``), :class:`StaleRosterHead`
        for a join signed after an older head, :class:`RosterSigned` for a coordinator-held
        invite once the roster is signed.
        """
        if request.statement is not None and (request.genesis is not None or request.secret):
            raise BadRequest("a join sends a statement alone, or a secret (and a genesis)")
        with self.store.transaction() as tx:
            existing = _members.member(tx, caller.key)
            if existing is not None and existing.revoked_at is not None:
                raise Revoked(when(existing.revoked_at))
            if existing is not None:
                raise Conflict(
                    f"this key is a member of team {self.team!r} already, as {existing.name}"
                )
            if request.statement is not None:
                entry = self.signed.join(tx, caller, request.statement)
            else:
                entry = self._join_invite(tx, caller, request)
        return JoinResponse(
            member=entry,
            team=self.team,
            coordinator_key=self.coordinator_key,
            embedder=self.store.embedder.name,
        )

    def _join_invite(self, tx: Tx, caller: Caller, request: JoinRequest) -> RosterMember:
        """Use up the invite whose secret the request carries: the first admin's starts the
        signed roster with the request's genesis; another (made before the roster was
        signed) puts the caller in the table."""
        now = self._clock()
        digest = secret_digest(request.secret)
        invite = _members.invite(tx, digest)
        if invite is None:
            raise Forbidden(f"this invite is not one of team {self.team!r}'s")
        if invite.used_at is not None:
            raise Forbidden(f"this invite was used on {when(invite.used_at)}; ask for a new one")
        if invite.expires_at <= now:
            raise Forbidden(f"this invite expired on {when(invite.expires_at)}; ask for a new one")
        bootstrap = invite.created_by == _members.BOOTSTRAP
        signed = _chain.head(tx) is not None
        if request.genesis is not None:
            if not bootstrap or signed or _members.enforced(tx):
                raise Forbidden(
                    f"only the first admin's code starts team {self.team!r}'s signed roster"
                )
            self.signed.start(tx, caller, request.genesis, invite.name)
            _members.use_invite(tx, digest, now)
            entry = _members.member(tx, caller.key)
            assert entry is not None, "the genesis put the root on the roster"
            return entry
        if signed:
            raise RosterSigned(self.team)
        if bootstrap:
            raise RosterRefused(
                self.team,
                "genesis_required",
                None,
                "the first admin starts the signed roster: the join carries its genesis "
                "(update memmesh)",
            )
        self._check_free(tx, caller.key, invite.name)
        entry = RosterMember(
            name=invite.name,
            key=caller.key,
            key_id=caller.key_id,
            admin=invite.admin,
            added_at=now,
        )
        # One transaction: the invite is used up exactly when its member is added.
        _members.use_invite(tx, digest, now)
        _members.add_member(tx, entry)
        return entry

    def bootstrap(self, name: str, *, reuse: str | None = None) -> tuple[str, float] | None:
        """The secret and expiry of the first admin's invite (for ``name``), or ``None`` once
        the roster has a member (the unused bootstrap invites are then deleted).

        ``reuse`` is the secret of an earlier bootstrap invite: while it is unused, unexpired
        and for ``name``, it is the answer. Otherwise a new invite is made, and every other unused
        bootstrap invite is deleted, so that only one code ever makes the first admin.
        """
        now = self._clock()
        with self.store.transaction() as tx:
            if _members.enforced(tx) or _chain.head(tx) is not None:
                _members.drop_unused_invites(tx, _members.BOOTSTRAP)
                return None
            if reuse is not None:
                for kept in _members.open_invites(tx, now, _members.BOOTSTRAP):
                    if kept.digest == secret_digest(reuse) and kept.name == name:
                        return reuse, kept.expires_at
            _members.drop_unused_invites(tx, _members.BOOTSTRAP)
            secret, expires = new_secret(), now + BOOTSTRAP_TTL
            _members.add_invite(
                tx,
                _members.InviteRow(
                    secret_digest(secret), name, True, expires, _members.BOOTSTRAP, None
                ),
            )
        return secret, expires

    def _check_free(self, tx: Tx, key: str, name: str) -> None:
        """:class:`Conflict` unless ``key`` was never on the roster and no active member is
        called ``name``."""
        existing = _members.member(tx, key)
        if existing is not None:
            revoked = (
                "" if existing.revoked_at is None else f", revoked on {when(existing.revoked_at)}"
            )
            raise Conflict(
                f"this key is on team {self.team!r}'s roster already, as {existing.name}{revoked}"
            )
        if _members.active_named(tx, name) is not None:
            raise Conflict(f"team {self.team!r} already has a member named {name!r}")


def _check_name(name: str) -> None:
    """:class:`BadMemberName` unless ``name`` keeps the rule."""
    if not _NAME.fullmatch(name):
        raise BadMemberName(name)
