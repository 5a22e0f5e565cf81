"""What a store imports: the in-memory lexicon (BM25 over numpy postings, with its allocator
settings) only for a serving store; one opened for a command, as `mem recall` opens it,
leaves BM25 to SQLite and pays nothing for the lexicon's modules."""

import subprocess
import sys
from pathlib import Path

import pytest

_LEXICON = ("memmesh.local._lexicon", "memmesh.local._postings", "memmesh.local._allocator")

# Remembers a fact, recalls it, and names the lexicon's modules the process imported.
_CHILD = """
import sys
from pathlib import Path
from memmesh.local import recall
from memmesh.local.store import Store

with Store(Path(sys.argv[1]), author="t", lexicon=sys.argv[2] == "serving") as store:
    store.remember("the staging deploy needs the VPN", project="global")
    hits = recall(store, "staging deploy").hits
print(len(hits), *sorted(name for name in sys.modules if name in {lexicon!r}))
"""


@pytest.mark.parametrize(("kind", "imported"), [("command", ()), ("serving", _LEXICON)])
def test_only_a_serving_store_imports_the_lexicon(
    tmp_path: Path, kind: str, imported: tuple[str, ...]
) -> None:
    child = subprocess.run(
        [sys.executable, "-c", _CHILD.format(lexicon=set(_LEXICON)), str(tmp_path), kind],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert child.returncode == 0, child.stderr
    hits, *modules = child.stdout.split()
    assert (hits, modules) == ("1", sorted(imported))
