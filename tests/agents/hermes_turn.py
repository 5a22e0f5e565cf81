"""One turn of Hermes Agent with memmesh's memory provider, run in Hermes' own environment.

tests/agents/test_hermes_plugin.py runs this file with the Python of a virtual environment
holding ``hermes-agent`` (and not memmesh), with ``HERMES_HOME`` where `mem hook install
hermes` put the plugin. It loads the plugin with Hermes' own loader and drives it through
Hermes' own ``MemoryManager`` as the agent loop does: a primary agent's turn (turn start,
prefetch, tool calls, a write of Hermes' built-in memory tool, the end-of-turn sync, the
session's end), then a sub-agent and a cron run, which may only read. It prints one JSON
object saying what each step gave.
"""

import json
import sys
from typing import Any

from agent.memory_manager import MemoryManager  # type: ignore[import-not-found]
from plugins.memory import (  # type: ignore[import-not-found]
    discover_memory_providers,
    load_memory_provider,
)

QUERY = "why do webhooks arrive twice"


def _manager(session: str, **context: Any) -> Any:
    provider = load_memory_provider("memmesh")
    if provider is None or not provider.is_available():
        sys.exit("Hermes did not load memmesh's provider")
    manager = MemoryManager()
    manager.add_provider(provider)
    manager.initialize_all(session_id=session, **context)
    return manager


def main() -> None:
    report: dict[str, Any] = {"discovered": [name for name, _, _ in discover_memory_providers()]}
    primary = _manager("session-1", platform="cli", agent_context="primary")
    (provider,) = primary.providers
    report["module"] = type(provider).__module__
    report["backup_paths"] = provider.backup_paths()
    report["tools"] = sorted(primary.get_all_tool_names())
    primary.on_turn_start(1, QUERY)
    report["prefetch"] = primary.prefetch_all(QUERY, session_id="session-1")
    report["outcome"] = json.loads(
        primary.handle_tool_call("memmesh_outcome", {"result": "worked"})
    )
    report["remember"] = json.loads(
        primary.handle_tool_call(
            "memmesh_remember",
            {"text": "Deploys freeze on Fridays after 3pm", "kind": "convention"},
        )
    )
    report["recall"] = json.loads(
        primary.handle_tool_call("memmesh_recall", {"query": "when do deploys freeze"})
    )
    primary.notify_memory_tool_write(
        json.dumps({"success": True}),
        {"action": "add", "target": "user", "content": "The user wants answers in French"},
    )
    primary.sync_all(QUERY, "the retry queue replays them", session_id="session-1")
    primary.on_session_end([{"role": "user", "content": QUERY}])
    primary.shutdown_all()

    for name, context in (
        ("subagent", {"agent_context": "subagent", "parent_session_id": "session-1"}),
        ("cron", {"agent_context": "cron", "platform": "cron"}),
    ):
        manager = _manager(f"session-{name}", platform=context.pop("platform", "cli"), **context)
        manager.on_turn_start(1, QUERY)
        report[name] = {
            "prefetch": manager.prefetch_all(QUERY),
            "remember": json.loads(
                manager.handle_tool_call("memmesh_remember", {"text": f"written by the {name}"})
            ),
        }
        manager.on_memory_write("add", "memory", f"mirrored from the {name}")
        manager.shutdown_all()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
