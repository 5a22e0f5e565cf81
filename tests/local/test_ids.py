"""Item ids in the store: the short id shown for each, and what a prefix naming several items
says about them."""

from pathlib import Path

import pytest

from memmesh.local.errors import AmbiguousId
from memmesh.local.ids import SHOWN_LENGTH, new_id, shortest_unique
from memmesh.local.store import Store
from tests._clock import START, FakeClock


def test_a_shown_id_is_ten_characters_unless_a_neighbour_shares_more() -> None:
    item_id = "01HF8ZJ4M0ABCDEFGHJKMNPQRS"
    assert SHOWN_LENGTH == 10
    assert shortest_unique(item_id, []) == "01HF8ZJ4M0"
    assert shortest_unique(item_id, ["01HF8ZJ4M1ABCDEFGHJKMNPQRS", None]) == "01HF8ZJ4M0"
    assert shortest_unique(item_id, ["01HF8ZJ4M0ABZZZZZZZZZZZZZZ"]) == "01HF8ZJ4M0ABC"
    neighbours = ["01HF8ZJ4M0A" + "0" * 15, "01HF8ZJ4M0ABCD" + "0" * 12]
    assert shortest_unique(item_id, neighbours) == "01HF8ZJ4M0ABCDE"


def test_items_made_seconds_apart_differ_within_ten_characters() -> None:
    # A ULID's first 10 characters are its time in milliseconds: 7 of them are shared by
    # everything made within about 33 seconds, which is why ids are shown by 10.
    first, later = new_id(START), new_id(START + 5.0)
    assert first[:7] == later[:7]
    assert first[:10] != later[:10]


def test_short_ids_are_unique_among_all_the_stores_items(home: Path) -> None:
    clock = FakeClock()
    with Store(home, author="tester", clock=clock) as store:
        same_moment = [store.remember(f"Build step {n} caches layer {n}")[0] for n in range(5)]
        clock.now += 60
        alone, _ = store.remember("Deploys go out on Tuesdays")
        store.forget(same_moment[0].id)  # archived items still take their prefix
        ids = [item.id for item in [*same_moment, alone]]

        short = store.short_ids([*ids, "01ZZZZZZZZZZZZZZZZZZZZZZZZ"])

    assert set(short) == set(ids)  # an id the store does not hold has no short form
    assert short[alone.id] == alone.id[:10]
    for item_id, shown in short.items():
        assert item_id.startswith(shown)
        assert len(shown) >= 10
        assert [other for other in ids if other.startswith(shown)] == [item_id]
        # and no shorter prefix of at least 10 would do
        assert len(shown) == 10 or sum(o.startswith(shown[:-1]) for o in ids) > 1


def test_an_ambiguous_prefix_names_at_most_ten_candidates(home: Path) -> None:
    with Store(home, author="tester", clock=FakeClock()) as store:
        made = [store.remember(f"Rule {n} of the linter config")[0] for n in range(13)]
        prefix = made[0].id[:8]
        with pytest.raises(AmbiguousId) as caught:
            store.get(prefix)
        short = store.short_ids([item.id for item in made])
    error = caught.value
    assert (error.prefix, error.count) == (prefix, 13)
    ordered = sorted(made, key=lambda item: item.id)[:10]
    assert error.candidates == tuple(f'{short[i.id]} fact "{i.text}"' for i in ordered)
    assert error.message.endswith(" | and 3 more")
