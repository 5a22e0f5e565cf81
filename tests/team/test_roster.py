"""Invites, joining with a code, and the roster, end to end against a real server: a stand-in
serving the coordinator's documented roster routes behind the real signing check."""

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
import yaml

from memmesh.coordinator.errors import BadJoinCode
from memmesh.coordinator.invites import JoinCode, new_secret, secret_digest
from memmesh.coordinator.protocol import Disclosure
from memmesh.net.errors import BadResponse, InsecureUrl, PinMismatch, Refused, Unreachable
from memmesh.policy import POLICY_FILENAME, load_policy, parse_policy
from memmesh.policy.errors import PolicyInvalid, PolicyNotEditable
from memmesh.registry import create_identity, load_identity
from memmesh.registry.identity import KEY_FILENAME
from memmesh.team import roster
from memmesh.team.disclosures import merged
from tests.cli._standin import StandIn, serving

MINE = """\
# Ada's own notes: keep them.
version: 1
team: old-team   # the team I was in
identity:
  name: ada
share:
  kinds: [decision, gotcha]   # only these
never:
  tags: [private]
auto_sync: true
"""


@pytest.fixture
def standin() -> Iterator[StandIn]:
    with serving(StandIn()) as running:
        yield running


@pytest.fixture
def admin(standin: StandIn, tmp_path: Path) -> Path:
    """A home that joined with the coordinator's first admin code."""
    return standin.join_admin(tmp_path / "admin")


def _invite(home: Path, name: str, *, admin: bool = False) -> roster.Invited:
    return roster.invite(load_policy(home), load_identity(home), name, admin=admin)


# -- invite and join -------------------------------------------------------------------------


def test_the_first_admin_joins_with_the_coordinators_code(standin: StandIn, admin: Path) -> None:
    policy = load_policy(admin)
    assert (policy.team, policy.coordinator) == ("acme", standin.url)
    assert policy.identity is not None
    assert policy.identity.name == "admin"
    assert policy.coordinator_key == standin.key.public_key_text
    (member,) = standin.roster.values()
    assert (member.key, member.admin) == (load_identity(admin).public_key_text, True)


def test_an_invite_lets_a_new_laptop_join_under_its_name(
    standin: StandIn, admin: Path, tmp_path: Path
) -> None:
    invited = _invite(admin, "bob")
    assert invited.code.startswith("memmesh-join:")
    assert (invited.name, invited.team, invited.admin) == ("bob", "acme", False)
    bob = tmp_path / "bob"
    joined = roster.join(bob, invited.code)
    assert joined.identity_created
    assert joined.policy_created
    assert joined.member.key == load_identity(bob).public_key_text
    assert (joined.member.name, joined.member.admin) == ("bob", False)
    policy = load_policy(bob)
    assert policy.identity is not None
    assert (policy.identity.name, policy.team, policy.coordinator) == ("bob", "acme", standin.url)
    # A fresh team.yaml shares nothing until its member says what.
    assert policy.share.kinds == ()
    names = {m.name for m in roster.members(policy, load_identity(bob)).members}
    assert names == {"admin", "bob"}


def test_a_new_member_takes_the_embedder_the_coordinator_names(
    standin: StandIn, admin: Path, tmp_path: Path
) -> None:
    standin.embedder = "hashing"
    written = tmp_path / "bob"
    roster.join(written, _invite(admin, "bob").code)
    # Over a team.yaml naming another: the coordinator's space is the team's.
    over = tmp_path / "carol"
    over.mkdir()
    (over / POLICY_FILENAME).write_text("team: acme\nembedder: wordllama\n", encoding="utf-8")
    roster.join(over, _invite(admin, "carol").code)

    assert load_policy(written).embedder == load_policy(over).embedder == "hashing"


def test_a_coordinator_naming_an_unknown_embedder_is_refused_and_team_yaml_not_written(
    standin: StandIn, admin: Path, tmp_path: Path
) -> None:
    standin.embedder = "word2vec\x1b[2J"
    mallory = tmp_path / "mallory"
    with pytest.raises(BadResponse) as refused:
        roster.join(mallory, _invite(admin, "mallory").code)
    # Named, with its escape shown as text: it never reaches the terminal raw.
    assert "does not know: word2vec\\x1b[2J; team.yaml was not written" in str(refused.value)
    assert not (mallory / POLICY_FILENAME).exists()


def test_only_the_secrets_digest_reaches_the_coordinator(standin: StandIn, admin: Path) -> None:
    invited = _invite(admin, "bob")
    secret = JoinCode.decode(invited.code).secret
    (sent,) = standin.invite_requests
    assert secret not in msgspec.json.encode(sent).decode()
    assert list(standin.invites) == [secret_digest(secret)]


def test_an_invite_works_once(standin: StandIn, admin: Path, tmp_path: Path) -> None:
    code = _invite(admin, "bob").code
    roster.join(tmp_path / "bob", code)
    mallory = tmp_path / "mallory"
    with pytest.raises(Refused) as refused:
        roster.join(mallory, code)
    assert refused.value.http_status == 403
    assert not (mallory / POLICY_FILENAME).exists()
    assert len(standin.roster) == 2


def test_joining_over_a_team_yaml_changes_only_the_teams_keys(
    standin: StandIn, admin: Path, tmp_path: Path
) -> None:
    home = tmp_path / "ada"
    home.mkdir()
    (home / POLICY_FILENAME).write_text(MINE, encoding="utf-8")
    create_identity(home)
    joined = roster.join(home, _invite(admin, "ada").code)
    assert not joined.identity_created
    assert not joined.policy_created
    text = (home / POLICY_FILENAME).read_text(encoding="utf-8")
    assert text.startswith("# Ada's own notes: keep them.\n")
    assert 'team: "acme"   # the team I was in\n' in text
    assert "  kinds: [decision, gotcha]   # only these\n" in text
    policy = parse_policy(text)
    assert (policy.auto_sync, policy.never.tags) == (True, ("private",))
    assert policy.coordinator_key == standin.key.public_key_text
    assert yaml.safe_load(text)["coordinator"] == standin.url


def test_a_name_asked_for_is_the_name_in_team_yaml(admin: Path, tmp_path: Path) -> None:
    joined = roster.join(tmp_path / "bob", _invite(admin, "bob").code, name="Bob.B")
    policy = load_policy(tmp_path / "bob")
    assert policy.identity is not None
    assert (policy.identity.name, joined.member.name) == ("Bob.B", "bob")


def test_a_damaged_code_creates_nothing(admin: Path, tmp_path: Path) -> None:
    code = _invite(admin, "bob").code
    home = tmp_path / "bob"
    with pytest.raises(BadJoinCode):
        roster.join(home, code[:-12])
    assert not home.exists()


def test_an_expired_code_creates_nothing(standin: StandIn, tmp_path: Path) -> None:
    home = tmp_path / "bob"
    with pytest.raises(BadJoinCode, match="expired"):
        roster.join(home, standin.code("bob"), now=time.time() + 7200)
    assert not home.exists()
    assert standin.joins == 0


def test_a_refused_join_keeps_the_new_key_and_writes_no_team_yaml(
    standin: StandIn, tmp_path: Path
) -> None:
    code = standin.code("bob", ttl=3600)
    standin.invites.clear()  # the coordinator forgot it: it will refuse
    home = tmp_path / "bob"
    with pytest.raises(Refused):
        roster.join(home, code)
    assert (home / KEY_FILENAME).exists()
    assert not (home / POLICY_FILENAME).exists()


def _code_for(url: str, name: str = "bob") -> str:
    return JoinCode(
        url=url, team="acme", name=name, secret=new_secret(), expires_at=time.time() + 60
    ).encode()


def test_a_coordinator_that_cannot_be_reached_leaves_team_yaml_alone(tmp_path: Path) -> None:
    home = tmp_path / "bob"
    with pytest.raises(Unreachable):
        roster.join(home, _code_for("http://127.0.0.1:9"))  # nothing listens on discard
    assert not (home / POLICY_FILENAME).exists()


def test_plain_http_beyond_loopback_is_refused_unless_team_yaml_allows_it(
    tmp_path: Path,
) -> None:
    here = _own_address()
    code = _code_for(f"http://{here}:9")
    home = tmp_path / "bob"
    with pytest.raises(InsecureUrl):
        roster.join(home, code)
    assert not (home / POLICY_FILENAME).exists()
    (home / POLICY_FILENAME).write_text("insecure_http: true\n", encoding="utf-8")
    with pytest.raises(Unreachable):  # allowed now: it was tried, and nothing listens there
        roster.join(home, code)
    assert (home / POLICY_FILENAME).read_text(encoding="utf-8") == "insecure_http: true\n"


def _own_address() -> str:
    """An address of this machine beyond loopback (no packet is sent to find it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("198.51.100.1", 9))
        except OSError:
            pytest.skip("this machine has no address beyond loopback")
        address: str = probe.getsockname()[0]
    if address.startswith("127."):
        pytest.skip("this machine has no address beyond loopback")
    return address


def test_a_team_yaml_the_join_cannot_edit_is_found_before_the_invite_is_spent(
    standin: StandIn, tmp_path: Path
) -> None:
    home = tmp_path / "bob"
    home.mkdir()
    awkward = "team: >\n  old\nidentity:\n  name: bob\n"
    (home / POLICY_FILENAME).write_text(awkward, encoding="utf-8")
    with pytest.raises(PolicyNotEditable) as refused:
        roster.join(home, standin.code("bob"))
    assert refused.value.keys == ["team"]
    assert standin.joins == 0
    assert len(standin.invites) == 1
    assert (home / POLICY_FILENAME).read_text(encoding="utf-8") == awkward
    assert not (home / KEY_FILENAME).exists()


def test_an_invalid_team_yaml_stops_the_join_before_anything(
    standin: StandIn, tmp_path: Path
) -> None:
    home = tmp_path / "bob"
    home.mkdir()
    (home / POLICY_FILENAME).write_text("share:\n  kinds: [gotchas]\n", encoding="utf-8")
    with pytest.raises(PolicyInvalid):
        roster.join(home, standin.code("bob"))
    assert standin.joins == 0
    assert not (home / KEY_FILENAME).exists()


def test_a_coordinator_answering_for_another_team_is_not_believed(
    standin: StandIn, tmp_path: Path
) -> None:
    code = standin.code("bob")
    standin.team = "other"  # the same server now claims another team in its answers
    home = tmp_path / "bob"
    with pytest.raises(BadResponse, match="answered for team 'other', but the join code is for"):
        roster.join(home, code)
    assert not (home / POLICY_FILENAME).exists()


def test_join_trusts_only_the_certificate_the_code_pins(tmp_path: Path) -> None:
    with serving(StandIn(), tls_folder=tmp_path / "tls") as standin:
        assert standin.url.startswith("https://")
        good = JoinCode.decode(standin.code("bob"))
        forged = msgspec.structs.replace(good, pin="sha256:" + "0" * 64)
        home = tmp_path / "bob"
        with pytest.raises(PinMismatch):
            roster.join(home, forged.encode())
        assert standin.joins == 0
        assert not (home / POLICY_FILENAME).exists()
        roster.join(home, good.encode())
    assert load_policy(home).coordinator_pin == good.pin


# -- the roster ------------------------------------------------------------------------------


def test_only_an_admin_may_invite(standin: StandIn, admin: Path, tmp_path: Path) -> None:
    bob = tmp_path / "bob"
    roster.join(bob, _invite(admin, "bob").code)
    with pytest.raises(Refused) as refused:
        _invite(bob, "mallory")
    assert refused.value.http_status == 403
    assert len(standin.invites) == 0


def test_an_invite_for_an_admin_makes_an_admin(admin: Path, tmp_path: Path) -> None:
    joined = roster.join(tmp_path / "carol", _invite(admin, "carol", admin=True).code)
    assert joined.member.admin
    _invite(tmp_path / "carol", "dave")  # an admin may invite in turn


def test_add_from_policy_adds_full_keys_and_reports_member_ids(
    standin: StandIn, admin: Path, tmp_path: Path
) -> None:
    carol = create_identity(tmp_path / "carol")
    dave = create_identity(tmp_path / "dave")
    policy = load_policy(admin)
    entries = [
        {"name": "carol", "key": carol.public_key_text},
        {"name": "dave", "key": dave.key_id},
        {"name": "admin", "key": load_identity(admin).public_key_text},
    ]
    text = (
        (admin / POLICY_FILENAME)
        .read_text(encoding="utf-8")
        .replace(
            "members: []", "members: " + yaml.safe_dump(entries, default_flow_style=True).strip()
        )
    )
    policy = parse_policy(text)
    report = roster.add_from_policy(policy, load_identity(admin))
    assert [m.name for m in report.added] == ["carol"]
    assert [m.name for m in report.already] == ["admin"]
    assert [(n.name, n.key) for n in report.not_addable] == [("dave", dave.key_id)]
    assert "member id" in report.not_addable[0].reason
    assert carol.public_key_text in standin.roster
    again = roster.add_from_policy(policy, load_identity(admin))
    assert (again.added, [m.name for m in again.already]) == ([], ["carol", "admin"])


def test_a_revoked_member_is_refused_from_then_on(
    standin: StandIn, admin: Path, tmp_path: Path
) -> None:
    bob = tmp_path / "bob"
    roster.join(bob, _invite(admin, "bob").code)
    standin.published[load_identity(bob).public_key_text] = 3
    revoked = roster.revoke(load_policy(admin), load_identity(admin), "bob", purge=True)
    assert revoked.member.revoked_at is not None
    assert revoked.purged == 3
    with pytest.raises(Refused) as refused:
        roster.members(load_policy(bob), load_identity(bob))
    assert refused.value.http_status == 403


# -- disclosures -----------------------------------------------------------------------------


def _disclosure(item_id: str, at: float, asker: str = "bob") -> Disclosure:
    return Disclosure(item_id=item_id, asker_key_id=f"{asker:x<16}", asker_name=asker, served_at=at)


def test_disclosures_from_both_logs_come_newest_first_within_the_limit() -> None:
    coordinator = [_disclosure("A", 30.0), _disclosure("B", 10.0)]
    peer = [_disclosure("A", 20.0, "carol"), _disclosure("C", 40.0)]
    rows = merged(coordinator, peer, limit=3)
    assert [(r.item_id, r.served_at, r.source) for r in rows] == [
        ("C", 40.0, "peer"),
        ("A", 30.0, "coordinator"),
        ("A", 20.0, "peer"),
    ]


def test_disclosures_of_one_item_keep_only_that_item_whatever_a_log_sends() -> None:
    rows = merged([_disclosure("A", 1.0), _disclosure("B", 2.0)], [], item_id="A")
    assert [r.item_id for r in rows] == ["A"]


def test_disclosures_cut_per_asker_across_both_logs_keep_every_asker() -> None:
    coordinator = [_disclosure("A", float(n)) for n in range(50, 30, -1)]
    peer = [_disclosure("B", 60.0), _disclosure("A", 1.0, "carol")]
    rows = merged(coordinator, peer, limit=100, per_asker=3)
    assert [(r.asker_name, r.served_at) for r in rows] == [
        ("bob", 60.0), ("bob", 50.0), ("bob", 49.0), ("carol", 1.0),
    ]  # fmt: skip
