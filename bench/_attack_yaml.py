"""Hostile team.yaml files against the real `mem` command: outcome and time per case.

Run from the repository root::

    .venv/bin/python bench/_attack_yaml.py                 # every case, 30 s limit each
    .venv/bin/python bench/_attack_yaml.py --limit 10

Each case writes one team.yaml into a fresh home holding one remembered item, then runs two
real commands in a subprocess (``python -m memmesh``), each under ``--limit`` seconds: ``mem
list`` (which must keep working: it needs no policy) and ``mem team policy check`` (which must
refuse the file in one line, exit 3, without hanging or eating memory). The cases: an alias
bomb (billion laughs), nesting 5,000 deep, 10^7 nodes on disk, a 20 MB string, 1,800 anchors
each used once, and unsound URLs (an unclosed IPv6 bracket, a path, user info, a query).

Each row: the case, the file's size, and per command its exit code, milliseconds and the first
line it printed on stderr (cut to 70 characters). Files are made in a temporary folder that is
removed at the end; the largest is about 20 MB.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from _common import log, table

HEADER: list[str] = [
    "case", "bytes", "list exit", "list ms", "check exit", "check ms", "check says",
]  # fmt: skip
_BASE = "version: 1\nteam: acme\nidentity:\n  name: ada\n"


def _alias_bomb() -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for n in range(1, 10):
        prev, this = chr(ord("a") + n - 1), chr(ord("a") + n)
        lines.append(f"{this}: &{this} [{', '.join(['*' + prev] * 9)}]")
    return _BASE + "\n".join(lines) + "\n"


def _deep() -> str:
    return _BASE + "share: " + "[" * 5000 + "]" * 5000 + "\n"


def _ten_million_nodes() -> str:
    return _BASE + "share: [" + "0," * 10_000_000 + "0]\n"


def _huge_string() -> str:
    return _BASE + "coordinator: '" + "a" * 20_000_000 + "'\n"


def _many_anchors() -> str:
    return _BASE + "".join(f"x{n}: &x{n} {n}\ny{n}: *x{n}\n" for n in range(1800))


def _bad_urls() -> str:
    peers = ["http://[::1", "http://127.0.0.1:8410/collect", "http://ada:pw@127.0.0.1:8410",
             "http://127.0.0.1:8410?x=1"]  # fmt: skip
    listed = "".join(f"  - '{p}'\n" for p in peers)
    return _BASE + "coordinator: 'http://[::1'\npeers:\n" + listed


CASES: dict[str, Callable[[], str]] = {
    "alias bomb (9^10 nodes)": _alias_bomb,
    "nesting 5,000 deep": _deep,
    "10^7 nodes on disk": _ten_million_nodes,
    "a 20 MB string": _huge_string,
    "1,800 anchors, each used once": _many_anchors,
    "unsound URLs": _bad_urls,
}


def _mem(home: Path, *args: str, limit: float) -> tuple[object, float, str]:
    """Exit code (``timeout`` past ``limit``), milliseconds, first stderr line."""
    env = {**os.environ, "MEM_AUTHOR": "ada"}
    started = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "memmesh", "--home", str(home), *args],
            capture_output=True, text=True, timeout=limit, env=env, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return "timeout", (time.perf_counter() - started) * 1000, ""
    said = (done.stderr.splitlines() or [""])[0].replace(f"{home}/", "")
    return done.returncode, (time.perf_counter() - started) * 1000, said[:70]


def run_yaml(limit: float = 30.0, cases: Sequence[str] | None = None) -> list[list[object]]:
    """The table's rows (see the module docstring)."""
    rows: list[list[object]] = []
    with tempfile.TemporaryDirectory(prefix="memmesh-yaml-") as root:
        for name in cases or list(CASES):
            home = Path(root) / f"case-{len(rows)}"
            seeded = _mem(home, "remember", "The deploy freezes on Fridays", limit=limit)
            assert seeded[0] == 0, seeded
            text = CASES[name]()
            (home / "team.yaml").write_text(text, encoding="utf-8")
            listed = _mem(home, "list", limit=limit)
            checked = _mem(home, "team", "policy", "check", limit=limit)
            log(f"{name}: list {listed[0]}, check {checked[0]}")
            rows.append([
                name, len(text.encode()), listed[0], round(listed[1]), checked[0],
                round(checked[1]), checked[2],
            ])  # fmt: skip
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=float, default=30.0, help="seconds per command (30)")
    args = parser.parse_args(argv)
    print(table(HEADER, run_yaml(min(args.limit, 120.0))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
