"""Anchors on files of a git repository: what may be anchored, and how far a file moved since
(moving or surrounding the lines is no change; rewriting a quarter of them is; a deleted file
is gone), without the repository's folder ever shown."""

import os
from pathlib import Path

import msgspec
import pytest

from memmesh.local import InvalidInput
from memmesh.local._db import connection_of
from memmesh.local.anchors import (
    MAX_FILE_BYTES,
    STALE_SHARE,
    Anchor,
    anchor_file,
    anchors_of,
    check,
    parse_about,
    save,
    staleness,
)
from memmesh.local.merge import merge
from memmesh.local.store import Store

NOW = 1_700_000_000.0
# Twelve different lines; the tests anchor lines 3-10, eight of them.
LINES = [f"def step_{n}(value):  return value * {n} + {n * n}" for n in range(1, 13)]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository's work tree (a `.git` folder is what marks one) with ``src/app.py``."""
    top = tmp_path / "checkout"
    (top / ".git").mkdir(parents=True)
    (top / "src").mkdir()
    _write(top / "src" / "app.py", LINES)
    return top


def _write(path: Path, lines: list[str]) -> None:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _anchor(repo: Path, spec: str = "src/app.py:3-10") -> Anchor:
    root, path, first, last = parse_about(spec, repo)
    return anchor_file(root, path, first, last, NOW)


def _rewritten(lines: list[str], *numbers: int) -> list[str]:
    """``lines`` with the lines numbered (1-based) ``numbers`` said otherwise."""
    return [f"# rewritten: {line}" if n in numbers else line for n, line in enumerate(lines, 1)]


def test_a_spec_is_read_as_the_repository_its_path_from_the_top_and_the_lines(
    repo: Path,
) -> None:
    assert parse_about("src/app.py:3-10", repo) == (repo, "src/app.py", 3, 10)
    assert parse_about("app.py:7", repo / "src") == (repo, "src/app.py", 7, 7)
    assert parse_about("./src/../src/app.py", repo) == (repo, "src/app.py", 0, 0)


def test_an_unchanged_file_is_fresh(repo: Path) -> None:
    anchor = _anchor(repo)
    found = check(anchor)
    assert (found.changed, found.gone, found.stale) == (0.0, False, False)
    assert (found.path, found.anchored_at) == ("src/app.py:3-10", NOW)


@pytest.mark.parametrize(
    "moved",
    [
        ["# a new header", "import os", "", *LINES, "# a new footer"],  # lines added around
        [*LINES[10:], *LINES[:10]],  # the block moved to the end
        [*LINES[:2], "", *LINES[2:6], "    # a comment", *LINES[6:]],  # a line slipped in
        [*LINES[:2], *(f"    {line}  " for line in LINES[2:10]), *LINES[10:]],  # indented
    ],
)
def test_lines_moved_or_added_around_are_fresh(repo: Path, moved: list[str]) -> None:
    anchor = _anchor(repo)
    _write(repo / "src" / "app.py", moved)
    found = check(anchor)
    assert (found.changed, found.gone, found.stale) == (0.0, False, False)


def test_a_quarter_of_the_anchored_lines_rewritten_is_stale(repo: Path) -> None:
    anchor = _anchor(repo)
    _write(repo / "src" / "app.py", _rewritten(LINES, 4, 9))

    found = check(anchor)

    assert found.changed == STALE_SHARE == 0.25
    assert found.stale
    assert not found.gone


def test_one_line_in_eight_rewritten_is_not_yet_stale(repo: Path) -> None:
    anchor = _anchor(repo)
    _write(repo / "src" / "app.py", _rewritten(LINES, 5, 11))  # line 11 is not anchored

    found = check(anchor)

    assert found.changed == 0.125
    assert not found.stale


def test_a_deleted_file_is_gone(repo: Path) -> None:
    anchor = _anchor(repo)
    (repo / "src" / "app.py").unlink()

    found = check(anchor)

    assert (found.changed, found.gone, found.stale) == (1.0, True, True)
    assert found.path == "src/app.py:3-10"


def test_a_whole_file_anchor_covers_every_line(repo: Path) -> None:
    anchor = _anchor(repo, "src/app.py")
    assert (anchor.first_line, anchor.last_line, anchor.shown) == (0, 0, "src/app.py")
    _write(repo / "src" / "app.py", ["# header", *LINES])
    assert check(anchor).changed == 0.0

    _write(repo / "src" / "app.py", _rewritten(LINES, 1, 2, 3))

    found = check(anchor)
    assert found.changed == 0.25
    assert found.stale
    assert found.path == "src/app.py"


def test_a_single_line_anchor_is_shown_as_that_line(repo: Path) -> None:
    anchor = _anchor(repo, "src/app.py:12")
    assert anchor.shown == "src/app.py:12"
    _write(repo / "src" / "app.py", _rewritten(LINES, 12))
    assert check(anchor).changed == 1.0


def test_lines_beyond_the_end_of_the_file_are_refused(repo: Path) -> None:
    root, path, first, last = parse_about("src/app.py:10-13", repo)
    with pytest.raises(InvalidInput, match="it has 12 lines, not 13"):
        anchor_file(root, path, first, last, NOW)


@pytest.mark.parametrize("spec", ["src/app.py:0", "src/app.py:5-3", "src/app.py:0-2"])
def test_lines_that_are_no_range_are_refused(repo: Path, spec: str) -> None:
    with pytest.raises(InvalidInput, match="give N or N-M, from line 1"):
        parse_about(spec, repo)


@pytest.mark.parametrize("spec", ["src/app.py:1-2-3", "src/app.py:-4", "src/app.py:²", "x.py"])
def test_a_spec_naming_no_file_is_refused(repo: Path, spec: str) -> None:
    with pytest.raises(InvalidInput, match="no such file"):
        parse_about(spec, repo)


def test_a_folder_is_refused(repo: Path) -> None:
    with pytest.raises(InvalidInput, match="--about src: no such file"):
        parse_about("src", repo)


def test_a_path_outside_any_git_repository_is_refused(tmp_path: Path) -> None:
    loose = tmp_path / "loose"
    loose.mkdir()
    _write(loose / "notes.py", LINES)
    with pytest.raises(InvalidInput, match="not in a git repository"):
        parse_about("notes.py:1-2", loose)


def test_a_binary_file_is_refused(repo: Path) -> None:
    (repo / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    root, path, first, last = parse_about("logo.png", repo)
    with pytest.raises(InvalidInput, match="cannot be read as text"):
        anchor_file(root, path, first, last, NOW)


def test_a_file_over_4_mib_is_refused(repo: Path) -> None:
    line = b"x = 1\n"
    (repo / "big.py").write_bytes(line * (MAX_FILE_BYTES // len(line) + 1))
    root, path, first, last = parse_about("big.py:1", repo)
    with pytest.raises(InvalidInput, match="at most 4 MiB"):
        anchor_file(root, path, first, last, NOW)


def test_a_file_of_exactly_4_mib_is_anchored(repo: Path) -> None:
    (repo / "big.py").write_bytes(b"x" * (MAX_FILE_BYTES - 1) + b"\n")
    assert check(_anchor(repo, "big.py")).changed == 0.0


def test_a_file_grown_past_4_mib_or_made_binary_since_counts_as_gone(repo: Path) -> None:
    anchor = _anchor(repo)
    (repo / "src" / "app.py").write_bytes(b"\x00" + "\n".join(LINES).encode())
    assert check(anchor).gone


def test_anchors_are_kept_and_read_back_and_anchoring_again_takes_the_lines_as_now(
    store: Store, repo: Path
) -> None:
    item, _ = store.remember("step_5 multiplies by five and adds twenty-five")
    first = _anchor(repo)
    whole = _anchor(repo, "src/app.py")
    with store.transaction() as tx:
        save(tx, item.id, [first, whole])
    _write(repo / "src" / "app.py", _rewritten(LINES, 3, 4, 5))
    again = anchor_file(repo, "src/app.py", 3, 10, NOW + 60)
    with store.transaction() as tx:
        save(tx, item.id, [again])
        held = anchors_of(connection_of(tx), [item.id, item.id, "01HF7YAT00WX3YFXPJCCJT364X"])

    assert held == {item.id: [whole, again]}
    stands = staleness(store)[item.id]
    assert [(s.path, s.stale) for s in stands] == [("src/app.py", True), ("src/app.py:3-10", False)]


def test_staleness_reads_only_active_items_unless_asked_for_others(
    store: Store, repo: Path
) -> None:
    kept, _ = store.remember("step_5 multiplies by five and adds twenty-five")
    dropped, _ = store.remember("step_3 multiplies by three")
    plain, _ = store.remember("nothing anchored here")
    with store.transaction() as tx:
        save(tx, kept.id, [_anchor(repo)])
        save(tx, dropped.id, [_anchor(repo)])
    store.forget(dropped.id)

    assert list(staleness(store)) == [kept.id]
    assert sorted(staleness(store, [dropped.id, plain.id])) == [dropped.id]


def test_the_repositorys_folder_is_never_in_what_is_shown(store: Store, repo: Path) -> None:
    item, _ = store.remember("step_5 multiplies by five and adds twenty-five")
    anchor = _anchor(repo)
    with store.transaction() as tx:
        save(tx, item.id, [anchor, _anchor(repo, "src/app.py")])
    fresh = staleness(store)
    (repo / "src" / "app.py").unlink()
    gone = staleness(store)

    assert anchor.repo == str(repo)  # kept in the store, to find the file again
    for found in (fresh, gone):
        shown = msgspec.json.encode(found).decode()
        assert str(repo) not in shown
        assert repo.name not in shown
        assert [s.path for s in found[item.id]] == ["src/app.py", "src/app.py:3-10"]


def test_a_revision_and_a_merge_keep_the_anchors_and_a_purge_drops_them(
    store: Store, repo: Path
) -> None:
    item, _ = store.remember("step_5 multiplies by five and adds twenty-five")
    other, _ = store.remember("step_6 multiplies by six and adds thirty-six, in the pipeline")
    with store.transaction() as tx:
        save(tx, item.id, [_anchor(repo)])
        save(tx, other.id, [_anchor(repo, "src/app.py")])

    _, revised = store.revise(item.id, "step_5 multiplies its value by 5, then adds 25")
    merged = merge(store, [revised.id, other.id]).merged

    with store.read() as tx:
        held = anchors_of(connection_of(tx), [revised.id, merged.id])
    assert [a.shown for a in held[revised.id]] == ["src/app.py:3-10"]
    assert sorted(a.shown for a in held[merged.id]) == ["src/app.py", "src/app.py:3-10"]

    store.purge(merged.id)
    with store.read() as tx:
        assert anchors_of(connection_of(tx), [merged.id]) == {}


def test_a_link_out_of_the_checkout_or_to_a_fifo_is_gone_and_never_waited_on(
    repo: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    _write(outside, LINES)
    anchor = _anchor(repo, "src/app.py")
    (repo / "src" / "app.py").unlink()
    (repo / "src" / "app.py").symlink_to(outside)  # a link committed in a shared checkout

    assert check(anchor).gone

    (repo / "src" / "app.py").unlink()
    os.mkfifo(repo / "src" / "app.py")

    assert check(anchor).gone  # returned at once: nothing is read from a FIFO
