"""Export and import of a store: every field of every item survives the trip into another
home, a second import changes nothing, and a bad file is refused before anything is written."""

import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memmesh.local import journal
from memmesh.local.errors import BadExport
from memmesh.local.ids import new_id
from memmesh.local.items import KINDS
from memmesh.local.store import Store
from memmesh.local.transfer import FORMAT, export_lines, import_file
from tests._clock import FakeClock

_FIELDS = (
    "id, text, kind, project, tags, author, created_at, updated_at, reinforcements, worked, "
    "failed, partial, outcomes_at, status, superseded_by, supersedes, content_hash"
)


def _rows(home: Path) -> list[tuple[object, ...]]:
    """Every stored field of every item (not the vectors, nor the row and rev numbers)."""
    conn = sqlite3.connect(home / "memory.db")
    try:
        return conn.execute(f"SELECT {_FIELDS} FROM items ORDER BY seq").fetchall()
    finally:
        conn.close()


def _exported(store: Store, path: Path) -> Path:
    path.write_text("".join(line + "\n" for line in export_lines(store)), "utf-8")
    return path


def _sample(store: Store, clock: FakeClock) -> None:
    old = store.remember("Webhooks are retried 5 times", kind="gotcha", project="billing")[0]
    clock.now += 60
    store.revise(old.id, "Webhooks are retried 8 times")
    kept = store.remember("Use uv, not pip", kind="preference", tags=["tooling", "python"])[0]
    store.remember("Use uv, not pip")  # reinforced
    store.outcome(kept.id, "worked")
    clock.now += 3600
    store.outcome(kept.id, "failed")
    gone = store.remember("Deploys freeze on Fridays", project="ops")[0]
    store.forget(gone.id)


def _sample_export(tmp_path: Path) -> Path:
    """The export of a store :func:`_sample` filled, in ``tmp_path / "a"``."""
    clock = FakeClock()
    with Store(tmp_path / "a", author="ana", clock=clock) as source:
        _sample(source, clock)
        return _exported(source, tmp_path / "out.jsonl")


def test_an_export_imported_into_a_fresh_home_holds_every_field_of_every_item(
    tmp_path: Path,
) -> None:
    path = _sample_export(tmp_path)
    with Store(tmp_path / "b", author="bo") as target:
        done = import_file(target, path)
    assert len(done.created) == 4
    assert done.reinforced == []
    assert done.skipped == []
    assert _rows(tmp_path / "b") == _rows(tmp_path / "a")


def test_the_export_starts_with_a_header_naming_format_version_and_count(store: Store) -> None:
    store.remember("Use uv, not pip")
    header, item = (json.loads(line) for line in export_lines(store))
    assert (header["format"], header["version"], header["items"]) == (FORMAT, 1, 1)
    assert item["text"] == "Use uv, not pip"
    assert item["content_hash"]


def test_a_second_import_creates_nothing_and_says_every_item_is_already_there(
    tmp_path: Path,
) -> None:
    path = _sample_export(tmp_path)
    with Store(tmp_path / "b") as target:
        import_file(target, path)
        before = _rows(tmp_path / "b")
        again = import_file(target, path)
    assert again.created == []
    assert again.reinforced == []
    assert {reason for _, reason in again.skipped} == {"already there"}
    assert _rows(tmp_path / "b") == before


def test_an_id_held_with_other_content_is_skipped_with_its_reason_not_overwritten(
    tmp_path: Path,
) -> None:
    with Store(tmp_path / "a") as source:
        item = source.remember("Use uv, not pip")[0]
        path = _exported(source, tmp_path / "out.jsonl")
    lines = path.read_text("utf-8").splitlines()
    record = json.loads(lines[1])
    record.update(text="Use poetry", content_hash=None)
    path.write_text(lines[0] + "\n" + json.dumps(record) + "\n", "utf-8")
    with Store(tmp_path / "a") as source:
        done = import_file(source, path)
        assert source.get(item.id).text == "Use uv, not pip"
    assert done.skipped == [(item.id, "its id is taken by an item saying something else "
                             "(not overwritten)")]  # fmt: skip


def test_the_same_text_under_another_id_reinforces_the_item_there_once(tmp_path: Path) -> None:
    with Store(tmp_path / "a") as source:
        source.remember("Use uv, not pip", tags=["python"])
        path = _exported(source, tmp_path / "out.jsonl")
    with Store(tmp_path / "b") as target:
        there = target.remember("Use uv, not pip")[0]
        done = import_file(target, path)
        again = import_file(target, path)
        after = target.get(there.id)
    assert done.created == []
    assert [mine for mine, _ in done.reinforced] == [there.id]
    assert (after.reinforcements, after.tags) == (1, ("python",))
    assert again.reinforced == []
    assert len(again.skipped) == 1


@pytest.mark.parametrize(
    ("content", "line", "problem"),
    [
        ("not json\n", 1, "it does not start with a memmesh-export header"),
        ('{"format": "memmesh-export", "version": 2}\n', 1, "its format version 2 is newer"),
        ('{"format": "memmesh-export", "version": 1}\n{"id": "x"}\n', 2, "Object missing"),
        ('{"format": "memmesh-export", "version": 1}\n\n{oops\n', 3, "JSON is malformed"),
    ],
)
def test_a_malformed_file_is_refused_naming_its_line_and_nothing_is_imported(
    tmp_path: Path, content: str, line: int, problem: str
) -> None:
    with Store(tmp_path / "a") as source:
        source.remember("Use uv, not pip")
        good = next(iter(export_lines(source, status=None)), "")
        item = list(export_lines(source))[1]
    path = tmp_path / "bad.jsonl"
    path.write_text(content.replace("\n", "\n" + item + "\n", 1) if line > 1 else content)
    assert good
    with Store(tmp_path / "b") as target, pytest.raises(BadExport) as raised:
        import_file(target, path)
    where = line + 1 if line > 1 else line
    assert f"bad.jsonl line {where}: " in str(raised.value)
    assert problem in str(raised.value)
    assert str(raised.value).endswith("nothing was imported")
    assert _rows(tmp_path / "b") == []


def test_a_text_the_store_would_refuse_names_its_line(tmp_path: Path) -> None:
    with Store(tmp_path / "a") as source:
        source.remember("Use uv, not pip", kind="command")
        header, item = export_lines(source)
    record = json.loads(item)
    record["kind"] = "rumour"
    path = tmp_path / "bad.jsonl"
    path.write_text(f"{header}\n{item}\n{json.dumps(record)}\n", "utf-8")
    with Store(tmp_path / "b") as target, pytest.raises(BadExport, match="line 3: unknown kind"):
        import_file(target, path)
    assert _rows(tmp_path / "b") == []


def test_the_screen_redacts_what_an_import_stores(tmp_path: Path) -> None:
    with Store(tmp_path / "a") as source:
        source.remember("the token is XYZ")
        path = _exported(source, tmp_path / "out.jsonl")

    def screen(text: str, tags: tuple[str, ...]) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        return text.replace("XYZ", "[redacted: test]"), tags, ("test",)

    with Store(tmp_path / "b") as target:
        done = import_file(target, path, screen=screen)
        (item,) = target.items()
    assert item.text == "the token is [redacted: test]"
    assert len(done.redacted) == 1


# -- the round trip, for random stores -------------------------------------------------

_WORDS = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40
).filter(lambda t: t.strip() == t and t.strip())
_NAMES = st.sampled_from(["global", "billing", "ops", "web.app"])
_TAGS = st.lists(st.sampled_from(["ci", "python", "db", "x-1"]), max_size=3, unique=True)
_STEP = st.one_of(
    st.tuples(st.just("remember"), _WORDS, st.sampled_from(KINDS), _NAMES, _TAGS),
    st.tuples(st.just("revise"), st.integers(0, 30), _WORDS),
    st.tuples(st.just("outcome"), st.integers(0, 30), st.sampled_from(["worked", "failed"])),
    st.tuples(st.just("forget"), st.integers(0, 30)),
)


def _run(store: Store, clock: FakeClock, steps: list[tuple[object, ...]]) -> None:
    for step in steps:
        clock.now += 17.5
        active = [item.id for item in store.items()]
        if step[0] == "remember":
            _, text, kind, project, tags = step
            store.remember(str(text), kind=str(kind), project=str(project), tags=list(tags))  # type: ignore[call-overload]
        elif active and step[0] in ("revise", "outcome", "forget"):
            target = active[int(step[1]) % len(active)]  # type: ignore[call-overload]
            if step[0] == "revise" and store.get(target).text != str(step[2]):
                store.revise(target, str(step[2]))
            elif step[0] == "outcome":
                store.outcome(target, str(step[2]))
            elif step[0] == "forget":
                store.forget(target)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=st.lists(_STEP, max_size=12))
def test_any_store_survives_export_and_import_field_by_field(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[object, ...]]
) -> None:
    root = tmp_path_factory.mktemp("trip")
    clock = FakeClock()
    with Store(root / "a", author="ana", clock=clock) as source:
        _run(source, clock, steps)
        path = _exported(source, root / "out.jsonl")
    with Store(root / "b", author="bo") as target:
        import_file(target, path)
        again = import_file(target, path)
    assert _rows(root / "b") == _rows(root / "a")
    assert again.created == []


def test_an_import_embeds_with_the_importing_stores_embedder(tmp_path: Path) -> None:
    with Store(tmp_path / "a") as source:
        item = source.remember("Use uv, not pip")[0]
        path = _exported(source, tmp_path / "out.jsonl")
    with Store(tmp_path / "b", embedder="hashing") as target:
        import_file(target, path)
        stored = target.vector_of(item.id)
        made = target.embedder.embed([item.text])[0].tolist()
    assert stored == pytest.approx(made)
    assert target.embedder.name == "hashing"


def test_an_import_that_fails_midway_leaves_the_store_as_it_was_and_a_retry_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _sample_export(tmp_path)
    with Store(tmp_path / "b") as target:
        target.remember("Use uv, not pip")
        before = _rows(tmp_path / "b")

        def killed(*args: object, **kwargs: object) -> None:
            raise KeyboardInterrupt  # as a Ctrl-C after the rows were written

        with monkeypatch.context() as patched:
            patched.setattr(journal, "log", killed)
            with pytest.raises(KeyboardInterrupt):
                import_file(target, path)
        assert _rows(tmp_path / "b") == before
        done = import_file(target, path)
    assert (len(done.created), len(done.reinforced)) == (3, 1)


def test_an_import_reports_its_progress_through_the_embedding(tmp_path: Path) -> None:
    with Store(tmp_path / "a") as source:
        for n in range(600):
            source.put(
                item_id=new_id(n), text=f"note number {n}", kind="fact", project="global",
                tags=(), author="ana", created_at=1.0, vector=None,
            )  # fmt: skip
        path = _exported(source, tmp_path / "out.jsonl")
    seen: list[tuple[int, int]] = []
    with Store(tmp_path / "b") as target:
        import_file(target, path, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(512, 600), (600, 600)]
