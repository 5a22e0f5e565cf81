"""The signed roster on the coordinator: the chain it stores, serves, and lets grow only as
its admins signed it.

The coordinator keeps the team's chain of statements (:mod:`memmesh.coordinator._chain`) and
accepts a new one only if it extends the stored head under every rule of the chain
(:func:`~memmesh.registry.roster_chain.extend`), in the write transaction that stores it: two
admins who signed after the same head get one acceptance and one :class:`StaleRosterHead`
(409: read the chain, sign again). Each accepted statement is applied, in that transaction, to
``coord_members``, which stays the coordinator's view of the verified chain: admission, the
roster it lists and the purge of a revoked member read it as before.

The chain starts with the first admin's genesis (``POST /v1/join`` with the bootstrap invite),
or, for a team whose roster was the coordinator's table before, with an admin's signing of that
table as it stands (:meth:`SignedRoster.statements`: a genesis by that admin, then statements
that make it again; nothing else is accepted). Joins come through ``POST /v1/join`` alone.

The verified state is kept in memory by its head's hash; another worker process that moved the
head makes this one verify the stored chain again, from its genesis's signer as root.
"""

import time
from collections.abc import Callable, Sequence

import msgspec

from memmesh.coordinator import _chain, _members, _tables
from memmesh.coordinator.errors import NotAnAdmin, RosterRefused, StaleRosterHead
from memmesh.coordinator.holdings import erase_publications
from memmesh.coordinator.protocol import (
    INVITE_PROOF_CONTEXT,
    MAX_CHAIN_PAGE,
    ChainRequest,
    ChainResponse,
    InviteProof,
    StatementsRequest,
    StatementsResponse,
)
from memmesh.coordinator.storage import CoordinatorStore, Tx
from memmesh.local.errors import CorruptDatabase
from memmesh.net.presence import RosterMember
from memmesh.net.signing import Caller
from memmesh.registry.errors import BadSignature, RosterChainBroken
from memmesh.registry.identity import key_id, public_key_from_text, verify_signature
from memmesh.registry.roster_chain import (
    ChainMember,
    RosterState,
    SignedStatement,
    Statement,
    extend,
    verify_chain,
)

__all__ = ["SignedRoster"]


class _Peek(msgspec.Struct, frozen=True, kw_only=True):
    """The fields of a statement the coordinator looks at before the chain's rules check it
    all."""

    op: str = ""
    seq: int = -1
    signer: str = ""
    key: str = ""
    invite_key: str = ""


class SignedRoster:
    """The signed roster of one coordinator's ``team``, on its store; ``admit`` is the
    coordinator's word on a caller (a member not revoked)."""

    def __init__(
        self,
        store: CoordinatorStore,
        *,
        team: str,
        admit: Callable[[Caller], None],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.team = team
        self._admit = admit
        self._clock = clock
        self._cached: RosterState | None = None

    def state(self, tx: Tx) -> RosterState | None:
        """The verified roster the stored chain says, ``None`` while the roster is not signed.

        Verified once per head: the chain is read and verified again only when its head is
        not the one kept in memory (this process's own changes, or another's)."""
        head = _chain.head(tx)
        if head is None:
            return None
        cached = self._cached
        if cached is not None and cached.head.hash == head.hash:
            return cached
        stored = _chain.statements(tx)
        try:
            state = verify_chain(stored, root_key_id=_signer_id(stored[0]), team=self.team)
        except (RosterChainBroken, BadSignature) as exc:
            # Only what verified was ever stored: the file was changed behind the coordinator.
            raise CorruptDatabase(self.store.where, f"its signed roster: {exc}") from None
        self._cached = state
        return state

    # -- reading the chain -----------------------------------------------------------------

    def chain(self, caller: Caller, request: ChainRequest) -> ChainResponse:
        """The statements from ``request.start`` on, a page at a time: for members, and for a
        caller holding an open invite on the chain (``request.invite``), who reads the chain it
        joins. Anyone else is refused as :meth:`Membership.admit` refuses a stranger.

        The statements are served as stored, unverified here: members verify them."""
        if request.invite is None or not self._invited(caller, request.invite):
            self._admit(caller)
        with self.store.read() as tx:
            head = _chain.head(tx)
            page = _chain.statements(tx, request.start, MAX_CHAIN_PAGE + 1)
        return ChainResponse(
            statements=page[:MAX_CHAIN_PAGE],
            head_seq=-1 if head is None else head.seq,
            more=len(page) > MAX_CHAIN_PAGE,
        )

    def _invited(self, caller: Caller, proof: InviteProof) -> bool:
        """Whether ``proof`` shows ``caller`` holds an invite on the chain that is open now."""
        try:
            invite_key = public_key_from_text(proof.invite_key)
            message = INVITE_PROOF_CONTEXT + self.team.encode() + b"\x00" + caller.key.encode()
            verify_signature(invite_key, proof.signature, message)
        except BadSignature:
            return False
        with self.store.read() as tx:
            state = self.state(tx)
        invite = None if state is None else state.invites.get(key_id(invite_key))
        if invite is None or invite.invite_key != proof.invite_key:
            return False
        return invite.used_by is None and not invite.cancelled and invite.expires_at > self._clock()

    # -- changing it -----------------------------------------------------------------------

    def statements(self, caller: Caller, request: StatementsRequest) -> StatementsResponse:
        """Append an admin's signed statements to the chain, all or none, and apply them.

        The caller is a member (the route admits it); the statements carry their signers'
        authority. With ``request.purge``, each member they revoke loses its published items
        (the caller must be an active admin once they apply). Raises :class:`StaleRosterHead`
        when they do not follow the head, and :class:`RosterRefused` when one breaks a rule,
        is a join (``join_elsewhere``: joins go to ``POST /v1/join``), or the roster is not
        signed and they do not sign the coordinator's table as it stands
        (``migration_mismatch``; ``not_started`` for a team without members).
        """
        for peek in (_peek(self.team, signed) for signed in request.statements):
            if peek.op == "join":
                raise RosterRefused(
                    self.team, "join_elsewhere", peek.seq, "a join is sent to POST /v1/join"
                )
        purged = 0
        with self.store.transaction() as tx:
            before = self.state(tx)
            if before is None:
                after = self._migrated(tx, caller, request.statements)
                revoked = self._apply(tx, None, request.statements)
            else:
                self._check_next(before, request.statements[0])
                revoked = self._apply(tx, before, request.statements)
                after = self._fresh(tx)
            if request.purge:
                signer = after.members.get(caller.key_id)
                if signer is None or not signer.active or not signer.admin:
                    raise NotAnAdmin(self.team)
                for key in revoked:
                    purged += erase_publications(self.store, tx, key)
        if purged:
            self.store.scrub()  # what is left of their texts on disk, once for all of them
        return StatementsResponse(head_seq=after.head.seq, head_hash=after.head.hash, purged=purged)

    def start(self, tx: Tx, caller: Caller, genesis: SignedStatement, name: str) -> None:
        """Start the chain with ``genesis``, which makes ``caller`` (named ``name``, as its
        invite says) the team's root and first admin; the caller checked that the roster is
        empty and the invite is the first admin's."""
        if _peek(self.team, genesis).op != "genesis":
            raise RosterRefused(self.team, "no_genesis", 0, "the roster starts with a genesis")
        state = _verified(self.team, [genesis], caller.key_id)
        root = state.members[caller.key_id]
        if root.key != caller.key:
            raise RosterRefused(self.team, "not_root", 0, "the genesis names another key")
        if root.name != name:
            raise RosterRefused(
                self.team, "name_mismatch", 0, f"the admin code is for {name!r}, not {root.name!r}"
            )
        self._apply(tx, None, [genesis])

    def join(self, tx: Tx, caller: Caller, signed: SignedStatement) -> RosterMember:
        """Append ``signed``, the caller's join by an invite on the chain, and return the new
        member (the caller checked its key was never on the roster)."""
        peek = _peek(self.team, signed)
        if peek.op != "join":
            raise RosterRefused(self.team, "not_a_join", peek.seq, f"it is a {peek.op or '?'}")
        if peek.key != caller.key:
            raise RosterRefused(
                self.team, "not_joiner", peek.seq, "a join adds the key that signs the request"
            )
        before = self.state(tx)
        if before is None:
            raise RosterRefused(self.team, "not_started", None, "the roster is not signed yet")
        self._check_next(before, signed)
        invite = before.invites.get(_key_id(peek.invite_key))
        if invite is not None and invite.expires_at <= self._clock():
            # The chain checks the join's own date; the coordinator also checks its clock.
            raise RosterRefused(self.team, "invite_expired", peek.seq, "the invite has expired")
        self._apply(tx, before, [signed])
        return _row(self._fresh(tx).members[caller.key_id])

    def _check_next(self, state: RosterState, signed: SignedStatement) -> None:
        """:class:`StaleRosterHead` unless ``signed`` is the statement after ``state``'s head."""
        seq = _peek(self.team, signed).seq
        if seq != state.head.seq + 1:
            raise StaleRosterHead(self.team, state.head.seq, seq)

    def _migrated(
        self, tx: Tx, caller: Caller, statements: Sequence[SignedStatement]
    ) -> RosterState:
        """The roster ``statements`` start, for a team whose roster is the coordinator's table:
        a genesis by the caller, an active admin there, and statements that make the table's
        active members again (same keys, names and roles; its revoked keys revoked or absent)."""
        table = _members.members(tx)
        if not table:
            raise RosterRefused(
                self.team,
                "not_started",
                None,
                "the team has no members: its first admin starts the roster by joining",
            )
        entry = next((m for m in table if m.key == caller.key), None)
        if entry is None or entry.revoked_at is not None or not entry.admin:
            raise RosterRefused(
                self.team, "not_admin", 0, "only an admin of the team signs its roster"
            )
        if _peek(self.team, statements[0]).op != "genesis":
            raise RosterRefused(
                self.team, "migration_mismatch", 0, "signing a roster starts with a genesis"
            )
        state = _verified(self.team, statements, caller.key_id)
        active = {m.key: (m.name, m.admin) for m in table if m.revoked_at is None}
        signed = {m.key: (m.name, m.admin) for m in state.members.values() if m.active}
        if signed != active:
            raise RosterRefused(self.team, "migration_mismatch", None, _differences(active, signed))
        return state

    def _apply(
        self, tx: Tx, before: RosterState | None, statements: Sequence[SignedStatement]
    ) -> list[str]:
        """Check each statement after ``before`` (the empty chain: ``None``, whose genesis
        names its root), store it, and make ``coord_members`` say what it says; returns the
        keys they revoked. The state after them is kept in memory.

        A key revoked before the roster was signed, and left off it, is refused as a key the
        chain knows (``key_known``): revoked is for good, there as on the chain."""
        state = before
        revoked = []
        for signed in statements:
            if state is None:
                after = _verified(self.team, [signed], _signer_id(signed))
            else:
                after = _extended(state, signed)
            _chain.append(tx, after.head.seq, signed)
            for member_id, member in after.members.items():
                old = None if state is None else state.members.get(member_id)
                if member == old:
                    continue
                row = _members.member(tx, member.key)
                if before is not None and old is None and row is not None:
                    raise RosterRefused(
                        self.team,
                        "key_known",
                        after.head.seq,
                        f"{member_id} was on the team's roster before it was signed, and left "
                        "off it when it was: a revoked key stays revoked",
                    )
                _members.put_member(tx, _row(member))
                if member.revoked_at is not None and (old is None or old.active):
                    _tables.drop_presence(tx, member_id)
                    revoked.append(member.key)
            state = after
        self._cached = state
        return revoked

    def _fresh(self, tx: Tx) -> RosterState:
        """The state after what this transaction appended (kept in memory by :meth:`_apply`)."""
        state = self.state(tx)
        assert state is not None, "statements were just appended"
        return state


def _verified(team: str, statements: Sequence[SignedStatement], root: str) -> RosterState:
    """The chain ``statements`` verified from the root key id ``root``; :class:`RosterRefused`."""
    try:
        return verify_chain(statements, root_key_id=root, team=team)
    except RosterChainBroken as exc:
        raise RosterRefused(team, exc.reason, exc.seq, exc.detail) from None


def _extended(state: RosterState, signed: SignedStatement) -> RosterState:
    """``state`` after ``signed``; :class:`RosterRefused` for a statement breaking a rule."""
    try:
        return extend(state, signed)
    except RosterChainBroken as exc:
        raise RosterRefused(state.team, exc.reason, exc.seq, exc.detail) from None


def _peek(team: str, signed: SignedStatement) -> _Peek:
    """The statement's op, seq and keys; :class:`RosterRefused` (``malformed``) for a body
    that is no statement (:func:`extend` checks the rest, its encoding included)."""
    try:
        statement = msgspec.json.decode(signed.body, type=Statement, strict=True)
    except msgspec.DecodeError as exc:
        raise RosterRefused(team, "malformed", None, f"the statement is malformed: {exc}") from None
    return _Peek(
        op=str(type(statement).__struct_config__.tag),
        seq=statement.seq,
        signer=statement.signer,
        key=getattr(statement, "key", ""),
        invite_key=getattr(statement, "invite_key", ""),
    )


def _signer_id(signed: SignedStatement) -> str:
    """The member id of the statement's signer (a genesis's: the chain's root); ``""`` for a
    statement that names no readable key (the chain's rules then refuse it)."""
    try:
        return _key_id(msgspec.json.decode(signed.body, type=_Peek).signer)
    except msgspec.DecodeError:
        return ""


def _key_id(text: str) -> str:
    """The member id of a public key text, ``""`` for one that is no key."""
    try:
        return key_id(public_key_from_text(text))
    except BadSignature:
        return ""


def _row(member: ChainMember) -> RosterMember:
    """A member of the chain as ``coord_members`` and the roster list it."""
    return RosterMember(
        name=member.name,
        key=member.key,
        key_id=member.key_id,
        admin=member.admin,
        added_at=member.added_at,
        revoked_at=member.revoked_at,
    )


def _differences(table: dict[str, tuple[str, bool]], signed: dict[str, tuple[str, bool]]) -> str:
    """How the active members a migration signs differ from the table's, in words."""
    parts = []
    if extra := sorted(_key_id(k) for k in signed.keys() - table.keys()):
        parts.append(f"it makes members the coordinator does not have: {', '.join(extra)}")
    if missing := sorted(_key_id(k) for k in table.keys() - signed.keys()):
        parts.append(f"it leaves out active members: {', '.join(missing)}")
    for key in sorted(table.keys() & signed.keys()):
        (name, admin), (new_name, new_admin) = table[key], signed[key]
        if name != new_name:
            parts.append(f"{_key_id(key)} is {name!r} here, {new_name!r} signed")
        if admin != new_admin:
            parts.append(
                f"{_key_id(key)} is {'an admin' if admin else 'no admin'} here, "
                f"{'an admin' if new_admin else 'no admin'} signed"
            )
    return "the signed roster is not the team's roster as it stands: " + "; ".join(parts)
