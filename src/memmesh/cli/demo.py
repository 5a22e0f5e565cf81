"""`mem demo`: the product end to end in a throw-away home, then cleaned up."""

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from memmesh.cli._common import add_common
from memmesh.local.recall import recall
from memmesh.local.store import Store

__all__ = ["register", "run_demo"]

_FACTS = [
    ("The billing service retries failed webhooks 5 times with exponential backoff", "fact"),
    ("We chose Postgres advisory locks over Redis for the job scheduler", "decision"),
    ("npm install fails with node-gyp error E1234 unless python3-dev is installed", "gotcha"),
    ("Run the integration tests with `make test-int`; they need Docker", "command"),
    ("Always squash-merge feature branches into main", "convention"),
]


def register(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add `mem demo` to the parser."""
    parser = commands.add_parser(
        "demo",
        help="Walk through memmesh end to end in a temporary home, then clean up.",
        description="Walk through memmesh end to end in a temporary home, then clean up: "
        "remember, recall, revise, report an outcome, forget.",
        epilog="example:\n  mem demo",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common(parser, json_output=False)
    parser.add_argument("--keep", action="store_true", help="keep the temporary home afterwards")
    parser.set_defaults(handler=_demo)


def _demo(args: argparse.Namespace) -> int:
    home = Path(tempfile.mkdtemp(prefix="memmesh-demo-"))
    try:
        run_demo(home)
    finally:
        if args.keep:
            print(f"\nthe demo home is kept at {home}")
        else:
            shutil.rmtree(home, ignore_errors=True)
    return 0


def _say(line: str = "") -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _ask(store: Store, query: str, project: str) -> None:
    answer = recall(store, query, k=3, project=project)
    _say(f'\n$ mem recall "{query}" --project {project}')
    if answer.abstained:
        _say("  nothing relevant (abstained)")
    for hit in answer.hits:
        _say(f"  {hit.score:.3f}  {hit.item.id[:10]}  [{hit.item.kind}]  {hit.item.text}")


def run_demo(home: Path) -> None:
    """The local loop: remember, recall, revise, outcome, forget, in ``home``."""
    _say(f"memmesh demo: a private store in {home}\n")
    with Store(home, author="ada") as store:
        ids = {}
        for text, kind in _FACTS:
            item, _ = store.remember(text, kind=kind, project="shop")
            ids[kind] = item.id
            _say(f"$ mem remember {text[:48]!r}... --kind {kind}   -> {item.id}")
        again, status = store.remember(_FACTS[0][0].lower(), kind="fact", project="shop")
        _say(f"\nthe same fact again is not a copy: {status} ({again.reinforcements}x)")

        _ask(store, "how often are webhooks retried?", "shop")
        _ask(store, "E1234", "shop")
        _ask(store, "what is the capital of France", "shop")

        old, new = store.revise(
            ids["fact"], "The billing service retries failed webhooks 8 times since March"
        )
        _say(f"\n$ mem revise {old.id[:10]} ...   -> {new.id} supersedes it")
        _ask(store, "how often are webhooks retried?", "shop")

        for _ in range(2):
            item = store.outcome(ids["command"], "failed")
        _say(f"\n$ mem outcome {item.id[:10]} failed  (twice) -> score {item.outcome_score:+.2f}")
        _ask(store, "how do I run the integration tests", "shop")

        store.forget(ids["convention"])
        _say(f"\n$ mem forget {ids['convention'][:10]}")
        _ask(store, "how do we merge feature branches", "shop")
        counts = store.counts()["by_status"]
        _say(f"\n$ mem stats -> {counts}")
    _say("\ndone; the temporary home is removed.")
