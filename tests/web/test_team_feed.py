"""The team's feed and the disclosures of the member's items on the page, as `mem team feed`
and `mem team disclosures` read them; a teammate's hostile text is shown as text."""

import re

from tests.team._signed import SignedTeam
from tests.team._team import LOCKS, LOCKS_QUERY, ask
from tests.web._page import serving

HOSTILE = (
    "Deploy notes <script>alert('feed')</script> see <img src=x onerror=alert(1)> "
    'and <a href="javascript:alert(2)">the runbook</a>'
)


def _entry(html: str, key_id: str, nth: int = 0) -> str:
    found = re.findall(rf'<li data-action="(\w+)" data-author="{key_id}">(.*?)</li>', html, re.S)
    assert len(found) > nth, f"no entry by {key_id}"
    action, body = found[nth]
    return f"{action}: {body}"


def test_the_feed_shows_who_published_and_retracted_what(signed: SignedTeam) -> None:
    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    locks = bob.share(LOCKS)
    gone = bob.share("We pin Node to the LTS release", kind="convention", project="web")
    bob.retract(gone)
    bob.sync()
    mine = ada.share("Invoices go out on the first workday", project="billing")
    with serving(ada.home) as page:
        answer = page.get("/team/feed")
    assert answer.status_code == 200
    text = answer.text
    published = _entry(text, bob.key_id, 1)
    assert published.startswith("published: ")
    assert "<strong>bob</strong>" in published
    assert LOCKS in published
    assert locks in published
    retracted = _entry(text, bob.key_id, 0)
    assert retracted.startswith("retracted: ")
    assert "taken back" in retracted
    own = _entry(text, ada.key_id)
    assert f'href="/items/{mine}"' in own
    assert "(yours)" in own


def test_a_republished_item_shows_as_revised(signed: SignedTeam) -> None:
    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    item = bob.share(LOCKS)
    bob.retract(item)
    bob.publish(item, again=True)
    bob.sync()
    with serving(ada.home) as page:
        answer = page.get("/team/feed", limit="5")
    entry = _entry(answer.text, bob.key_id)
    assert entry.startswith("revised: ")
    assert "v2" in entry


def test_a_teammate_s_hostile_text_is_escaped_in_the_feed(signed: SignedTeam) -> None:
    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    bob.share(HOSTILE)
    with serving(ada.home) as page:
        answer = page.get("/team/feed")
    assert answer.status_code == 200
    assert "&lt;script&gt;alert(&#39;feed&#39;)&lt;/script&gt;" in answer.text
    assert "<script>alert" not in answer.text
    assert "<img" not in answer.text
    assert 'href="javascript:' not in answer.text
    assert "&lt;img src=x onerror=alert(1)&gt;" in answer.text


def test_disclosures_show_who_was_served_my_items(signed: SignedTeam) -> None:
    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    item = ada.share(LOCKS)
    assert [hit.id for hit in ask(bob, LOCKS_QUERY).hits] == [item]
    with serving(ada.home) as page:
        answer = page.get("/team/disclosures")
        one = page.get("/team/disclosures", item=item[:12], limit="5", per_asker="0")
    assert answer.status_code == 200
    row = re.search(rf'<tr data-asker="{bob.key_id}">(.*?)</tr>', answer.text, re.S)
    assert row
    assert "<strong>bob</strong>" in row.group(1)
    assert f'href="/items/{item}"' in row.group(1)
    assert ">coordinator<" in row.group(1)
    assert f'data-asker="{bob.key_id}"' in one.text


def test_no_disclosures_yet_says_so(signed: SignedTeam) -> None:
    ada = signed.team.members["ada"]
    ada.share(LOCKS)
    with serving(ada.home) as page:
        answer = page.get("/team/disclosures")
    assert answer.status_code == 200
    assert "None of your items has been served." in answer.text
