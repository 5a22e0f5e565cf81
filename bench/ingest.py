"""Benchmark of `mem ingest`: candidates per second and wall time over 100 transcripts.

Run from the repository root::

    .venv/bin/python bench/ingest.py                    # 100 Claude Code + 100 Codex sessions
    .venv/bin/python bench/ingest.py --sessions 20 --turns 100

Each synthetic session (invented text) has ``--turns`` turns: a user prompt (one in four
states a rule or a decision), assistant prose, shell commands with outputs of a few hundred
to a few thousand characters, one in six failing and then fixed by another command or an edit,
as Claude Code and Codex write them on disk (about 1 MB a session at the default 300 turns).
Every session is proposed to a fresh store's inbox through the function the command calls,
then once more (nothing new: all already pending); each pass is timed in this process.
"""

import argparse
import json
import random
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _common import cpu_count, cpu_model, load_average, log, source_revision, table
from memmesh.agents.transcripts import propose_transcript
from memmesh.local.store import Store

_WORDS = (
    "cache deploy webhook retry billing token queue index migration schema worker timeout "
    "shard replica lock backoff config cron alert pager build release docker node"
).split()
_RULES = (
    "We always run {w} checks before merging.", "Never restart the {w} worker by hand.",
    "Use {w} not {v} for new services.", "From now on, tag every {w} release.",
    "We decided to keep {w} in the {v} service because it owns the data.",
)  # fmt: skip


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choices(_WORDS, k=n))


def _turns(rng: random.Random, turns: int, tag: int) -> Iterator[tuple[str, Any]]:
    """("user", text), ("prose", text), ("call", (id, command, output, failed)), ("edit", path)."""
    for t in range(turns):
        if t % 4 == 0:
            rule = rng.choice(_RULES).format(w=rng.choice(_WORDS), v=rng.choice(_WORDS))
            yield "user", f"{_words(rng, 12)}. {rule} (session {tag} turn {t})"
        else:
            yield "user", _words(rng, rng.randint(8, 40))
        yield "prose", _words(rng, rng.randint(30, 120))
        command = f"make {rng.choice(_WORDS)}-{t}"
        output = "\n".join(_words(rng, 12) for _ in range(rng.randint(3, 50)))
        if t % 6 == 0:
            yield "call", (f"c{t}a", command, output + "\nRuntimeError: boom", True)
            if t % 12 == 0:
                yield "edit", f"src/{rng.choice(_WORDS)}.py"
            else:
                yield "call", (f"c{t}b", f"pip install {rng.choice(_WORDS)}", "ok", False)
        yield "call", (f"c{t}c", command, output, False)


def _claude(path: Path, rng: random.Random, turns: int, tag: int) -> None:
    base = {"sessionId": f"bench-{tag}", "cwd": f"/home/dev/proj{tag % 10}", "type": "user"}
    with path.open("w") as out:
        for what, value in _turns(rng, turns, tag):
            if what == "user":
                line = {**base, "message": {"role": "user", "content": value}}
            elif what == "prose":
                line = {**base, "type": "assistant", "message": {"role": "assistant",
                        "content": [{"type": "text", "text": value}]}}  # fmt: skip
            elif what == "edit":
                block = {
                    "type": "tool_use",
                    "id": "e",
                    "name": "Edit",
                    "input": {"file_path": value},
                }
                line = {**base, "type": "assistant", "message": {"content": [block]}}
            else:
                call_id, command, output, failed = value
                use = {"type": "tool_use", "id": call_id, "name": "Bash",
                       "input": {"command": command}}  # fmt: skip
                out.write(json.dumps({**base, "type": "assistant",
                                      "message": {"content": [use]}}) + "\n")  # fmt: skip
                result = {"type": "tool_result", "tool_use_id": call_id, "is_error": failed,
                          "content": ("Exit code 1\n" if failed else "") + output}  # fmt: skip
                line = {**base, "message": {"role": "user", "content": [result]}}
            out.write(json.dumps(line) + "\n")


def _codex(path: Path, rng: random.Random, turns: int, tag: int) -> None:
    def item(payload: dict[str, Any]) -> str:
        return json.dumps({"timestamp": "2026-03-03T09:00:00Z", "type": "response_item",
                           "payload": payload}) + "\n"  # fmt: skip

    with path.open("w") as out:
        meta = {"id": f"bench-{tag}", "cwd": f"/home/dev/proj{tag % 10}"}
        out.write(json.dumps({"type": "session_meta", "payload": meta}) + "\n")
        for what, value in _turns(rng, turns, tag):
            if what in ("user", "prose"):
                role, kind = (
                    ("user", "input_text") if what == "user" else ("assistant", "output_text")
                )
                out.write(item({"type": "message", "role": role,
                                "content": [{"type": kind, "text": value}]}))  # fmt: skip
            elif what == "edit":
                patch = f"*** Begin Patch\n*** Update File: {value}\n*** End Patch\n"
                out.write(item({"type": "custom_tool_call", "name": "apply_patch", "input": patch}))
            else:
                call_id, command, output, failed = value
                arguments = json.dumps({"command": ["bash", "-lc", command]})
                out.write(item({"type": "function_call", "name": "shell", "call_id": call_id,
                                "arguments": arguments}))  # fmt: skip
                result = {"output": output, "metadata": {"exit_code": 1 if failed else 0}}
                out.write(item({"type": "function_call_output", "call_id": call_id,
                                "output": json.dumps(result)}))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=100, help="sessions of each client")
    parser.add_argument("--turns", type=int, default=300, help="turns a session")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    log(f"load average before: {load_average()}")
    rows: list[list[object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for client, write in (("claude", _claude), ("codex", _codex)):
            rng = random.Random(args.seed)
            folder = root / client
            folder.mkdir()
            files = [folder / f"s{n:03d}.jsonl" for n in range(args.sessions)]
            for n, path in enumerate(files):
                write(path, rng, args.turns, n)
            megabytes = sum(p.stat().st_size for p in files) / 1e6
            with Store(root / f"home-{client}", embedder="hashing", author="bench") as store:
                for label in ("first pass", "again (all already pending)"):
                    started = time.perf_counter()
                    reports = [propose_transcript(store, client, p) for p in files]
                    seconds = time.perf_counter() - started
                    assert not any(r.error for r in reports)
                    found = sum(len(r.proposed) + r.already_pending for r in reports)
                    rows.append([f"{client}: {label}", len(files), f"{megabytes:.0f}", found,
                                 f"{seconds:.2f}", f"{found / seconds:,.0f}"])  # fmt: skip
                    log(f"{client} {label}: {seconds:.2f} s")
    log(f"load average after: {load_average()}")
    print(f"machine: {cpu_model()}, {cpu_count()} CPUs; source {source_revision()}")
    print(table(["pass", "sessions", "MB", "candidates", "seconds", "candidates/s"], rows))


if __name__ == "__main__":
    main()
