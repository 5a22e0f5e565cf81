"""Joining a team with a join code (:func:`memmesh.team.roster.join`, which is this module's
:func:`join`): see :mod:`memmesh.team.roster`."""

from pathlib import Path

import msgspec

from memmesh._embedders import EMBEDDER_NAMES
from memmesh.coordinator.invites import JoinCode
from memmesh.coordinator.protocol import JoinRequest, JoinResponse
from memmesh.net.client import Client
from memmesh.net.connect import coordinator_client
from memmesh.net.errors import BadResponse
from memmesh.net.presence import RosterMember
from memmesh.net.urls import peer_url
from memmesh.policy import POLICY_FILENAME, Policy, parse_policy, policy_template, update_policy
from memmesh.policy.config import DEFAULT_TOKEN_ENV, read_policy_source, write_policy_source
from memmesh.policy.errors import PolicyMissing
from memmesh.registry import Identity, create_identity, load_identity
from memmesh.registry import roster_chain as chain
from memmesh.registry.errors import BadSignature
from memmesh.registry.identity import KEY_FILENAME, public_key_from_text
from memmesh.registry.roster_chain import SignedStatement
from memmesh.team import _roster_signed as signed
from memmesh.team.chain import CHAIN_FILENAME, keep_chain, roster_of
from memmesh.text import printable

__all__ = ["JoinedTeam", "join"]

# Stands in for the coordinator's key while team.yaml's edit is tried before joining.
_SOME_KEY = "A" * 43


class JoinedTeam(msgspec.Struct, frozen=True, kw_only=True):
    """A laptop that joined: the member as the roster has it, and what was written.

    ``name`` is the name team.yaml now gives (the invite's, unless another was asked for);
    ``root`` the member id of the signed roster's root, which team.yaml now pins (``None``:
    a team whose roster is not signed).
    """

    member: RosterMember
    team: str
    coordinator: str
    name: str
    identity_created: bool
    policy_path: Path
    policy_created: bool
    root: str | None = None


def join(
    home: Path, code_text: str, *, name: str | None = None, now: float | None = None
) -> JoinedTeam:
    """Join the team of the join code in ``code_text`` from ``home``; ``name`` is the name
    team.yaml gives this member (default: the one the invite was made for).

    In order, each step before anything is spent or written: the code is decoded
    (:class:`~memmesh.coordinator.errors.BadJoinCode`, damaged or expired); an existing
    team.yaml must be valid and take the new values (:class:`PolicyInvalid`,
    :class:`PolicyNotEditable`); the key is made unless ``home`` has one; the code is used at
    the coordinator, pinned as the code says: a code naming the chain's root has the chain
    read and verified first (:class:`~memmesh.team.errors.RosterNotTrusted`: nothing is
    sent). Only then are team.yaml and the chain written (a code without a root drops a chain
    kept before: its root decides nothing in a team whose roster is not signed). When the
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
    root_shape = code.root or ("a" * 16 if code.admin else None)
    _policy_text(existing, code, url, name or code.name, _SOME_KEY, "", root_shape, str(path))
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
        answer, root, statements = _use_code(client, code, identity)
    _check_answer(answer, code, url, identity)
    # On a signed roster the member is as the chain with this join says (name and role),
    # never as the coordinator's answer does.
    member = answer.member if root is None else _on_chain(statements, root, code.team, identity)
    # The invite's name, which a signed join carries (the coordinator's answer may show the
    # member as output does, with their member id beside the name).
    chosen = name or (code.name if root is not None else answer.member.name)
    text = _policy_text(
        existing, code, url, chosen, answer.coordinator_key, answer.embedder, root, str(path)
    )
    write_policy_source(home, text)
    if root is not None:
        keep_chain(home, code.team, root, statements)
    else:  # a chain kept before is another team's now: its root must decide nothing here
        (home / CHAIN_FILENAME).unlink(missing_ok=True)
    return JoinedTeam(
        member=member,
        team=answer.team,
        coordinator=url,
        name=chosen,
        identity_created=created,
        policy_path=path,
        policy_created=existing is None,
        root=root,
    )


def _use_code(
    client: Client, code: JoinCode, identity: Identity
) -> tuple[JoinResponse, str | None, list[SignedStatement]]:
    """Present ``code`` to the coordinator: the coordinator's answer, the root team.yaml is to
    pin (``None``: the roster is not signed) and the chain to keep.

    The first admin's code (``start``) starts the chain, with this key as its root; a code
    without a root is an invite of a team whose roster is not signed."""
    if code.root is not None:
        answer, statements = signed.join_with_invite(client, code, identity)
        return answer, code.root, statements
    if not code.start:
        return client.post("/v1/join", JoinRequest(secret=code.secret), JoinResponse), None, []
    genesis = chain.genesis(identity, code.team, name=code.name)
    request = JoinRequest(secret=code.secret, genesis=genesis)
    return client.post("/v1/join", request, JoinResponse), identity.key_id, [genesis]


def _on_chain(
    statements: list[SignedStatement], root: str, team: str, identity: Identity
) -> RosterMember:
    """This key as the chain it joined (``statements``, verified from ``root``) lists it."""
    state = chain.verify_chain(statements, root_key_id=root, team=team)
    return next(m for m in roster_of(state).members if m.key_id == identity.key_id)


def _policy_text(
    existing: str | None,
    code: JoinCode,
    url: str,
    name: str,
    key: str,
    embedder: str,
    root: str | None,
    path: str,
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
        "roster_root": root,
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
