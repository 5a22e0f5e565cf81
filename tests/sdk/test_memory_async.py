"""`memmesh.AsyncMemory`: the SDK as coroutines, each call in a worker thread over one store,
so that calls overlap and the event loop never waits on one."""

import threading
from pathlib import Path

import anyio
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from memmesh import AsyncMemory, Memory
from memmesh.local.errors import InvalidInput
from memmesh.net.errors import Unreachable
from tests._servers import running
from tests.team._team import Team

FACTS = [f"Service {n} listens on port {8000 + n}" for n in range(8)]


def test_calls_at_once_share_the_store_and_all_land(home: Path) -> None:
    async def main() -> tuple[list[str], list[list[str]]]:
        stored: list[str] = []
        found: list[list[str]] = []
        async with AsyncMemory(home) as memory:
            await memory.remember("Service 0 listens on port 8000")

            async def remember(text: str) -> None:
                stored.append((await memory.remember(text)).item.id)

            async def recall() -> None:
                answer = await memory.recall("which port does service 0 listen on", k=1)
                found.append([hit.item.text for hit in answer.hits])

            async with anyio.create_task_group() as group:
                for text in FACTS[1:]:
                    group.start_soon(remember, text)
                    group.start_soon(recall)
        return stored, found

    stored, found = anyio.run(main)

    assert len(set(stored)) == len(FACTS) - 1
    assert found == [[FACTS[0]]] * (len(FACTS) - 1)
    with Memory(home) as memory:
        assert sorted(item.text for item in memory.store.items()) == sorted(FACTS)


def test_a_slow_call_does_not_hold_up_the_others(
    home: Path, loopback_team: Team, team_token: None
) -> None:
    # A coordinator that answers nothing until the test lets it: recall-team waits on it in
    # its worker thread while a remember, awaited after it, finishes first.
    release = threading.Event()

    async def hang(request: Request) -> Response:
        await anyio.to_thread.run_sync(release.wait, 10)
        return Response(status_code=503)

    carol = loopback_team.add("carol")
    slow = Starlette(routes=[Route("/{path:path}", hang, methods=["GET", "POST"])])
    finished: list[str] = []

    async def main() -> None:
        async with AsyncMemory(carol.home) as memory:

            async def ask() -> None:
                with pytest.raises(Unreachable):
                    await memory.recall_team("anything", timeout=5)
                finished.append("recall_team")

            async def remember() -> None:
                await memory.remember("Slow sources never block the others")
                finished.append("remember")
                release.set()

            async with anyio.create_task_group() as group:
                group.start_soon(ask)
                await anyio.sleep(0.2)
                group.start_soon(remember)

    with running(slow) as url:
        carol.write_policy(coordinator=url)
        anyio.run(main)

    assert finished == ["remember", "recall_team"]


def test_errors_are_the_sync_ones(home: Path) -> None:
    async def main() -> None:
        async with AsyncMemory(home) as memory:
            with pytest.raises(InvalidInput, match="kind"):
                await memory.remember("Something", kind="rumour")

    anyio.run(main)


def test_leaving_the_block_closes_the_store(home: Path) -> None:
    async def main() -> AsyncMemory:
        async with AsyncMemory(home) as memory:
            await memory.remember("Closed stores say so")
        return memory

    memory = anyio.run(main)
    with pytest.raises(RuntimeError, match="closed"):
        memory.memory.store  # noqa: B018 - the property raises
