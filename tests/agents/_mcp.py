"""Driving `mem mcp` with the MCP SDK's own client: the real server over stdio (``options``
are `mem mcp`'s own, such as ``--read-only``)."""

import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio


@asynccontextmanager
async def _session(home: Path, cwd: Path, *options: str) -> AsyncIterator[Any]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    env = {k: v for k, v in os.environ.items() if k.startswith(("MEM_", "PYTHON"))}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memmesh", "--home", str(home), "mcp", *options],
        env=env,
        cwd=cwd,
    )
    async with Client(params) as client:
        yield client


def _with_session(
    home: Path, cwd: Path, scenario: Callable[[Any], Awaitable[None]], *options: str
) -> None:
    async def main() -> None:
        async with _session(home, cwd, *options) as client:
            await scenario(client)

    anyio.run(main)


async def _call(client: Any, tool: str, **arguments: Any) -> dict[str, Any]:
    """A successful call's compact JSON answer."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    answer: dict[str, Any] = json.loads(result.content[0].text)
    return answer


async def _fail(client: Any, tool: str, **arguments: Any) -> str:
    """A failing call's error text (the call must be a tool error, not a crash)."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.content[0].text
    text: str = result.content[0].text
    return text
