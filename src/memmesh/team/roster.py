"""The team's roster, which its coordinator holds: invites, joining with a code, members and
revocation.

* An admin's :func:`invite` makes a random secret, registers only its SHA-256 with the
  coordinator, and returns the one-line join code (:class:`~memmesh.coordinator.invites.
  JoinCode`): the coordinator's URL and certificate pin, the team, the name, the secret and
  the expiry. The code works once, until it expires.
* :func:`join` is all a new laptop does with it: a key (made unless the home has one), the code
  presented once to the pinned coordinator, signed by that key, and team.yaml written with the
  team, the name and the coordinator's URL, pin and key (in an existing team.yaml only those
  keys change). Until the coordinator has accepted the key, team.yaml is not touched.
* :func:`members`, :func:`add_member`, :func:`add_from_policy`, :func:`revoke`,
  :func:`promote` and :func:`demote` read and change the roster; the coordinator lets only
  admins change it.
* A revoked member's key stays refused. Inviting their name again makes a code that admits a
  new key only (:attr:`Invited.revoked_at` says so); presented by the revoked key, the
  coordinator refuses it (403, "this key was revoked on ...") and the invite stays unused, for
  the same member joining from a new home, whose new key it admits.

Every request is signed by the member's key (:func:`~memmesh.net.connect.coordinator_client`).
A refusal arrives as :class:`~memmesh.net.errors.Refused` with the coordinator's status.
"""

import time
from pathlib import Path

import msgspec

from memmesh._embedders import EMBEDDER_NAMES
from memmesh.coordinator.invites import JoinCode, new_secret, secret_digest
from memmesh.coordinator.membership import MAX_INVITE_TTL
from memmesh.coordinator.protocol import (
    Invite,
    InviteRequest,
    JoinRequest,
    JoinResponse,
    MemberAdd,
    MemberAdmin,
    MemberRevoke,
    RevokeResponse,
)
from memmesh.net.connect import coordinator_client
from memmesh.net.errors import BadResponse
from memmesh.net.presence import Roster, RosterMember
from memmesh.net.urls import peer_url
from memmesh.policy import POLICY_FILENAME, Policy, parse_policy, policy_template, update_policy
from memmesh.policy.config import DEFAULT_TOKEN_ENV, read_policy_source, write_policy_source
from memmesh.policy.errors import NoCoordinator, PolicyMissing
from memmesh.registry import Identity, create_identity, load_identity
from memmesh.registry.errors import BadSignature
from memmesh.registry.identity import KEY_FILENAME, public_key_from_text
from memmesh.text import printable

__all__ = [
    "DEFAULT_INVITE_TTL",
    "MAX_INVITE_TTL",
    "FromPolicy",
    "Invited",
    "JoinedTeam",
    "NotAddable",
    "add_from_policy",
    "add_member",
    "demote",
    "invite",
    "join",
    "members",
    "promote",
    "revoke",
]

DEFAULT_INVITE_TTL = 24 * 3600.0
# Stands in for the coordinator's key while team.yaml's edit is tried before joining.
_SOME_KEY = "A" * 43


class Invited(msgspec.Struct, frozen=True, kw_only=True):
    """An invite the coordinator has registered, and its join code (a secret).

    ``revoked_at`` is when a member of that name was revoked (``None`` if none was): their key
    stays refused, so the code admits only a new key, made in a new home."""

    code: str
    name: str
    team: str
    expires_at: float
    admin: bool
    revoked_at: float | None = None


class JoinedTeam(msgspec.Struct, frozen=True, kw_only=True):
    """A laptop that joined: the member as the roster has it, and what was written.

    ``name`` is the name team.yaml now gives (the invite's, unless another was asked for).
    """

    member: RosterMember
    team: str
    coordinator: str
    name: str
    identity_created: bool
    policy_path: Path
    policy_created: bool


class NotAddable(msgspec.Struct, frozen=True, kw_only=True):
    """A team.yaml ``members:`` entry that cannot go on the roster, and why."""

    name: str
    key: str
    reason: str


class FromPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """What :func:`add_from_policy` did with each ``members:`` entry."""

    added: list[RosterMember]
    already: list[RosterMember]
    not_addable: list[NotAddable]


def invite(
    policy: Policy,
    identity: Identity,
    name: str,
    *,
    ttl: float = DEFAULT_INVITE_TTL,
    admin: bool = False,
    now: float | None = None,
) -> Invited:
    """Register a single-use invite for ``name`` that lasts ``ttl`` seconds (at most 30 days)
    and makes an admin with ``admin``; returns it with its join code.

    Only the secret's SHA-256 reaches the coordinator. The caller checks ``ttl``. Raises
    :class:`NoCoordinator` without a coordinator, and the client's errors
    (:class:`~memmesh.net.errors.Refused` 403 when this key is no admin).
    """
    assert 0 < ttl <= MAX_INVITE_TTL, ttl
    if policy.coordinator is None:
        raise NoCoordinator()
    secret = new_secret()
    expires_at = (time.time() if now is None else now) + ttl
    request = InviteRequest(
        name=name, digest=secret_digest(secret), expires_at=expires_at, admin=admin
    )
    with coordinator_client(policy, identity) as client:
        registered = client.post("/v1/invites", request, Invite)
    code = JoinCode(
        url=peer_url(policy.coordinator),
        team=policy.team,
        name=registered.name,
        secret=secret,
        expires_at=registered.expires_at,
        pin=policy.coordinator_pin,
        admin=registered.admin,
    )
    return Invited(
        code=code.encode(),
        name=registered.name,
        team=policy.team,
        expires_at=registered.expires_at,
        admin=registered.admin,
        revoked_at=registered.revoked_at,
    )


def join(
    home: Path, code_text: str, *, name: str | None = None, now: float | None = None
) -> JoinedTeam:
    """Join the team of the join code in ``code_text`` from ``home``; ``name`` is the name
    team.yaml gives this member (default: the one the invite was made for).

    In order, each step before anything is spent or written: the code is decoded
    (:class:`~memmesh.coordinator.errors.BadJoinCode`, damaged or expired); an existing
    team.yaml must be valid and take the new values (:class:`PolicyInvalid`,
    :class:`PolicyNotEditable`); the key is made unless ``home`` has one; the code is presented
    to the coordinator, pinned as the code says. Only then is team.yaml written. When the
    coordinator refuses (:class:`~memmesh.net.errors.Refused`) or cannot be reached, team.yaml
    is left as it was; a key made for the attempt stays, for the next one.
    """
    code = JoinCode.decode(code_text, now=now)
    url = peer_url(code.url)
    path = home / POLICY_FILENAME
    try:
        existing: str | None = read_policy_source(home)
    except PolicyMissing:
        existing = None
    current = parse_policy(existing, str(path)) if existing is not None else None
    # Fails here, before the invite is spent, if the file cannot take the values.
    _policy_text(existing, code, url, name or code.name, _SOME_KEY, "", str(path))
    created = not (home / KEY_FILENAME).exists()
    identity = create_identity(home) if created else load_identity(home)
    coordinator = Policy(
        team=code.team,
        coordinator=url,
        coordinator_pin=code.pin,
        insecure_http=current.insecure_http if current else False,
        token_env=current.token_env if current else DEFAULT_TOKEN_ENV,
    )
    with coordinator_client(coordinator, identity) as client:
        answer = client.post("/v1/join", JoinRequest(secret=code.secret), JoinResponse)
    _check_answer(answer, code, url, identity)
    chosen = name or answer.member.name
    text = _policy_text(
        existing, code, url, chosen, answer.coordinator_key, answer.embedder, str(path)
    )
    write_policy_source(home, text)
    return JoinedTeam(
        member=answer.member,
        team=answer.team,
        coordinator=url,
        name=chosen,
        identity_created=created,
        policy_path=path,
        policy_created=existing is None,
    )


def _policy_text(
    existing: str | None, code: JoinCode, url: str, name: str, key: str, embedder: str, path: str
) -> str:
    """team.yaml after joining: ``existing`` with the joined team's keys set, or a new one; the
    coordinator's ``embedder`` (when it names one) is the team's, whatever the file said."""
    base = existing
    if base is None:
        base = policy_template(name=name, team=code.team, coordinator=url)
    values = {
        "team": code.team,
        "identity.name": name,
        "coordinator": url,
        "coordinator_pin": code.pin,
        "coordinator_key": key,
    }
    if embedder:
        values["embedder"] = embedder
    return update_policy(base, values, path)


def _check_answer(answer: JoinResponse, code: JoinCode, url: str, identity: Identity) -> None:
    """A coordinator's word on a join must be about this team and this key."""
    problem = ""
    if answer.team != code.team:
        problem = f"answered for team {answer.team!r}, but the join code is for {code.team!r}"
    elif answer.member.key != identity.public_key_text:
        problem = "put another key on the roster than the one that asked"
    elif answer.embedder and answer.embedder not in EMBEDDER_NAMES:
        problem = f"named an embedder this memmesh does not know: {printable(answer.embedder)}"
    else:
        try:
            public_key_from_text(answer.coordinator_key)
        except BadSignature:
            problem = "sent a coordinator key that is no public key"
    if problem:
        raise BadResponse(f"{url} {problem}; team.yaml was not written")


def members(policy: Policy, identity: Identity) -> Roster:
    """The roster, revoked members included."""
    with coordinator_client(policy, identity) as client:
        return client.get("/v1/members", Roster)


def add_member(
    policy: Policy, identity: Identity, name: str, key: str, *, admin: bool = False
) -> RosterMember:
    """Put ``key`` (a public key) on the roster as ``name`` (an admin's request)."""
    with coordinator_client(policy, identity) as client:
        return client.post(
            "/v1/members/add", MemberAdd(name=name, key=key, admin=admin), RosterMember
        )


def add_from_policy(policy: Policy, identity: Identity) -> FromPolicy:
    """Put every team.yaml ``members:`` entry with a full public key on the roster (once);
    an entry with only a member id cannot be added (a key cannot be made from its id)."""
    roster = {member.key: member for member in members(policy, identity).members}
    added: list[RosterMember] = []
    already: list[RosterMember] = []
    not_addable: list[NotAddable] = []
    for entry in policy.members:
        reason = _not_a_key(entry.key)
        if reason:
            not_addable.append(NotAddable(name=entry.name, key=entry.key, reason=reason))
        elif entry.key in roster:
            already.append(roster[entry.key])
        else:
            member = add_member(policy, identity, entry.name, entry.key)
            roster[member.key] = member
            added.append(member)
    return FromPolicy(added=added, already=already, not_addable=not_addable)


def _not_a_key(text: str) -> str:
    """Why ``text`` is no public key to add ("" when it is one)."""
    try:
        public_key_from_text(text)
    except BadSignature:
        if len(text) == 16 and text.isalnum():
            return "team.yaml holds only its member id; add its public key: mem team members add"
        return "not a public key"
    return ""


def revoke(
    policy: Policy, identity: Identity, member: str, *, purge: bool = False
) -> RevokeResponse:
    """Refuse ``member`` (a name, public key or member id) from now on; with ``purge`` the
    coordinator also removes its published items (an admin's request)."""
    with coordinator_client(policy, identity) as client:
        return client.post(
            "/v1/members/revoke", MemberRevoke(member=member, purge=purge), RevokeResponse
        )


def promote(policy: Policy, identity: Identity, member: str) -> RosterMember:
    """Make ``member`` (a name, public key or member id) an admin (an admin's request)."""
    with coordinator_client(policy, identity) as client:
        return client.post("/v1/members/promote", MemberAdmin(member=member), RosterMember)


def demote(policy: Policy, identity: Identity, member: str) -> RosterMember:
    """Make the admin ``member`` names a member who is no admin (an admin's request; the
    coordinator never demotes its last admin)."""
    with coordinator_client(policy, identity) as client:
        return client.post("/v1/members/demote", MemberAdmin(member=member), RosterMember)
