"""Join codes: a code of a signed roster names its root, and one without a root reads as it
always did."""

import base64
import time

import msgspec
import pytest

from memmesh.coordinator.errors import BadJoinCode
from memmesh.coordinator.invites import JOIN_PREFIX, JoinCode

ROOT = "abcdefghijklmnop"


def _code(**fields: object) -> JoinCode:
    values: dict[str, object] = {
        "url": "http://127.0.0.1:8400", "team": "acme", "name": "bob", "secret": "s" * 43,
        "expires_at": time.time() + 3600,
    }  # fmt: skip
    values.update(fields)
    return JoinCode(**values)  # type: ignore[arg-type]


def _body(code: str) -> dict[str, object]:
    raw = code.removeprefix(JOIN_PREFIX)
    decoded: dict[str, object] = msgspec.json.decode(
        base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4))
    )
    return decoded


def _encoded(body: dict[str, object]) -> str:
    raw = base64.urlsafe_b64encode(msgspec.json.encode(body)).decode().rstrip("=")
    return JOIN_PREFIX + raw


def test_a_code_of_a_signed_roster_carries_its_root() -> None:
    code = _code(root=ROOT, admin=True)

    read = JoinCode.decode(code.encode())

    assert read == code
    assert read.root == ROOT


def test_a_code_without_a_root_leaves_it_out_so_an_older_memmesh_still_reads_it() -> None:
    body = _body(_code().encode())

    assert "root" not in body
    assert "pin" not in body  # no pin either: absent, as an older reader takes it
    assert JoinCode.decode(_code().encode()).root is None


@pytest.mark.parametrize("root", ["ABCDEFGHIJKLMNOP", "abc", "abcdefghijklmnop1", "a" * 15 + "1"])
def test_a_root_that_is_no_member_id_makes_the_code_damaged(root: str) -> None:
    body = _body(_code().encode())
    body["root"] = root

    with pytest.raises(BadJoinCode) as caught:
        JoinCode.decode(_encoded(body))

    assert "damaged" in caught.value.message


def test_the_first_admins_code_says_it_starts_the_roster_and_others_leave_it_out() -> None:
    first = _code(admin=True, start=True)
    assert _body(first.encode())["start"] is True
    assert JoinCode.decode(first.encode()).start
    invite = _code(root=ROOT)
    assert "start" not in _body(invite.encode())
    assert not JoinCode.decode(invite.encode()).start
