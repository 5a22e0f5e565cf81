"""A member's name that breaks the rule, sent over the wire to a real coordinator: a clean 400
with its own code and the rule in words, and nothing stored."""

from typing import Any

import httpx
import pytest

from memmesh.coordinator.invites import new_secret, secret_digest
from memmesh.coordinator.protocol import InviteRequest, MemberAdd
from memmesh.net.signing import coordinator_audience
from memmesh.net.wire import encode
from memmesh.registry import Identity
from tests._clock import START
from tests._signed import SignedAuth
from tests.coordinator._served import TOKEN, Served
from tests.registry._helpers import TEAM

RULE = "1-64 letters, digits, '.', '-' or '_', starting with a letter or digit"


def _post(served: Served, signer: Identity, path: str, body: Any) -> httpx.Response:
    return httpx.post(
        f"{served.url}{path}",
        content=encode(body),
        headers={"Authorization": f"Bearer {TOKEN}"},
        auth=SignedAuth(signer, coordinator_audience(TEAM)),
        timeout=10,
    )


@pytest.mark.parametrize("name", ["Dave Jones", "-dave", "d" * 65, "dave\x1b[2J", "dävé"])
@pytest.mark.parametrize("route", ["/v1/invites", "/v1/members/add"])
def test_a_badly_formed_name_is_a_400_with_its_code_and_the_rule(
    served: Served, ada: Identity, route: str, name: str
) -> None:
    body: Any = (
        InviteRequest(name=name, digest=secret_digest(new_secret()), expires_at=START + 600)
        if route == "/v1/invites"
        else MemberAdd(name=name, key=served.key("dave").public_key_text)
    )
    answer = _post(served, ada, route, body)

    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == "bad_member_name"
    assert RULE in error["message"]
    assert "regex" not in error["message"]
    assert [m.name for m in served.coordinator.membership.roster().members] == ["ada"]
    with served.coordinator.store.read() as tx:
        assert tx.execute("SELECT count(*) FROM coord_invites").fetchone()[0] == 1  # ada's own
