"""An agent reads teammates' tallies on its member's items in each hit's track record."""

from pathlib import Path

from memmesh.agents.tools import Tools
from memmesh.local import tallies
from memmesh.local.store import Store
from memmesh.local.tallies import Received

TEXT = "Restart the ingest worker after rotating the Kafka credentials"


def test_a_hit_s_record_says_what_teammates_reported_beside_the_owner_s_own(
    home: Path, store: Store
) -> None:
    item, _ = store.remember(TEXT)
    tools = Tools(home, store)
    assert "record" not in tools.recall("restart ingest worker kafka")["hits"][0]

    tallies.fold(store, [Received("b" * 16, item.id, 3, 2, 1, 0, 1.0)])
    store.outcome(item.id, "worked")

    (hit,) = tools.recall("restart ingest worker kafka")["hits"]
    assert hit["record"] == "has worked once; teammates: worked twice, failed once"


def test_outcome_on_a_teammate_s_item_it_was_given_is_kept_as_a_tally(
    home: Path, store: Store
) -> None:
    tallies.note_given(store, [("b" * 16, "01TEAMMATEITEM0000000000AA", "bob", 1)], own_key_id="")
    tools = Tools(home, store)

    first = tools.outcome("01TEAMMATE", "worked")
    second = tools.outcome("01teammate", "failed")

    assert (first["author"], first["teammate"], first["sent"]) == ("bob", True, False)
    assert second["tally"] == {"worked": 1, "failed": 1, "partial": 0}
    (given,) = tallies.unsent(store)
    assert (given.item_id, given.worked, given.failed) == ("01TEAMMATEITEM0000000000AA", 1, 1)
    assert store.items() == []  # nothing of the teammate's became an item of this member's
