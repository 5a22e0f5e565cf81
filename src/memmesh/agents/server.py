"""`mem mcp`: the member's memory as an MCP server on stdio, for coding agents.

Built on the official MCP SDK (the optional ``mcp`` extra). The tools are
:class:`~memmesh.agents.tools.Tools`' methods; this module only describes them to the agent,
validates their arguments and turns errors into tool errors. A failing call answers with a
clear tool error (``isError``) and the server carries on; an argument that does not fit its
tool's schema is one sentence naming it and what it should be (not the SDK's validation dump).

The team tools (``recall_team``, ``publish``) are offered only when team.yaml names a
coordinator when the server starts; each call reads the policy again, so a policy that has
since become invalid refuses the call instead of being bypassed.

What a tool answers reaches the agent as compact JSON with every control character escaped
(C0 by JSON, C1, DEL and the direction marks by :func:`memmesh.text.json_printable`, as the
hooks' output): a teammate's text can neither drive a terminal nor reorder what is shown.

A read-only server (``mem mcp --read-only``, for sub-agents and scheduled runs) offers only
the tools that change nothing: ``recall``, ``why`` and ``recall_team``.
"""

import asyncio
import json
import logging
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Annotated, Any, Literal

from memmesh import __version__
from memmesh.agents.errors import McpUnavailable
from memmesh.agents.tools import Tools
from memmesh.errors import MemmeshError
from memmesh.local.items import KINDS, MAX_K
from memmesh.local.store import Store
from memmesh.team.member import try_policy
from memmesh.text import counted, json_printable, printable

try:
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
    from mcp.types import CallToolResult, InputRequiredResult, ToolAnnotations
    from pydantic import Field, ValidationError
    from pydantic_core import ErrorDetails
except ImportError:  # pragma: no cover - exercised by a test that hides the package
    raise McpUnavailable() from None

__all__ = ["INSTRUCTIONS", "WORKERS", "build_server", "serve"]

logger = logging.getLogger("memmesh.mcp")
WORKERS = 4  # tool calls at once

INSTRUCTIONS = """\
memmesh is this developer's long-term memory (and, when set up, their team's).
Before answering a question about this codebase, its conventions, past decisions, gotchas or
commands, call `recall` with the question. When you learn something durable (a decision, a
convention, a gotcha, a command that works), call `remember`. After acting on a recalled item,
call `outcome`: worked, failed or partial (without an id it credits what your last recall
returned). `revise` corrects an item, `forget` archives one that is wrong; `why` explains a
recall.
"""

READ_ONLY_INSTRUCTIONS = """\
memmesh is this developer's long-term memory (and, when set up, their team's), offered here
read-only. Before answering a question about this codebase, its conventions, past decisions,
gotchas or commands, call `recall` with the question; `why` explains a recall.
"""

TEAM_INSTRUCTIONS = """\
Teammates' shared knowledge is reachable with `recall_team` when your own memory has nothing.
`publish` shares an item with the team only if the team policy allows it; secrets never leave.
"""

Query = Annotated[str, Field(min_length=1, max_length=2000, description="what you want to know")]
K = Annotated[int, Field(ge=1, le=MAX_K, description="at most this many hits")]
Project = Annotated[
    str | None,
    Field(
        default=None,
        min_length=1,
        max_length=64,
        description="project name; default: the current git repository's name, else global",
    ),
]
ItemId = Annotated[
    str, Field(min_length=4, max_length=64, description="item id (or a unique prefix)")
]
Kind = Annotated[
    str,
    Field(
        description="what sort of item: " + ", ".join(KINDS),
        json_schema_extra={"enum": list(KINDS)},
    ),
]


def build_server(
    home: Path, store: Store, workers: ThreadPoolExecutor, *, read_only: bool = False
) -> MCPServer:
    """The MCP server over the member's ``store`` in ``home``; tools run on ``workers``; with
    ``read_only``, only the tools that change nothing.

    The tools run on threads that live as long as the server: they bound how many calls run
    at once, and each keeps its read connection to the store from one call to the next.
    """
    policy = try_policy(home)
    team = policy is not None and policy.coordinator is not None
    tools = Tools(home, store, read_only=read_only, team=team)

    async def run(call: Callable[[], dict[str, Any]]) -> str:
        return await asyncio.get_running_loop().run_in_executor(workers, _answer, call)

    server = _Server(
        "memmesh",
        version=__version__,
        instructions=(READ_ONLY_INSTRUCTIONS if read_only else INSTRUCTIONS)
        + (TEAM_INSTRUCTIONS if team and not read_only else ""),
    )
    reads = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    writes = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)

    async def recall(
        query: Query,
        k: K = 5,
        project: Project = None,
        explain: Annotated[
            bool,
            Field(
                description="also say why: each hit's score parts, and the near misses with "
                "the reason each was left out (below_gate, outcome_excluded, out_of_scope, "
                "ranked_below_k)"
            ),
        ] = False,
    ) -> str:
        """Search your memory for what is relevant to the current task.

        Use it before answering questions about this project's decisions, conventions,
        gotchas and commands, or when stuck. Returns hits with ids and scores, or
        abstained=true when nothing is relevant. Covers the project plus global items; in a
        team, also `team`: teammates' published items from the local team cache, each with
        its author (no network call).
        """
        return await run(lambda: tools.recall(query, k=k, project=project, explain=explain))

    async def remember(
        text: Annotated[
            str,
            Field(min_length=1, max_length=8192, description="one self-contained fact"),
        ],
        kind: Kind = "fact",
        project: Annotated[
            str | None,
            Field(
                default=None,
                min_length=1,
                max_length=64,
                description="project name, or 'global' for a preference that holds everywhere; "
                "default: the current git repository",
            ),
        ] = None,
        tags: Annotated[list[str], Field(max_length=16, description="optional tags")] = [],  # noqa: B006
    ) -> str:
        """Remember something durable for future sessions: a decision and its reason, a
        convention, a gotcha, a command that works, a preference.

        Write one self-contained sentence. Remembering the same fact again reinforces it.
        Never include secrets: a token, key or password is stored as [redacted: <kind>].
        Returns the item's id and whether it was created or reinforced.
        """
        return await run(lambda: tools.remember(text, kind=kind, project=project, tags=tags))

    async def why(
        query: Annotated[
            str | None,
            Field(default=None, min_length=1, max_length=2000, description="a query to explain"),
        ] = None,
        trace: Annotated[
            str | None,
            Field(
                default=None,
                min_length=12,
                max_length=12,
                description="or the trace id of a past recall, to run again",
            ),
        ] = None,
        k: K = 5,
        project: Project = None,
    ) -> str:
        """Explain a recall: each hit's score parts and the near misses with the reason each
        was left out. Give a query (nothing is recorded), or a past recall's trace id to see
        what became of each item it returned."""
        return await run(lambda: tools.why(query, trace=trace, k=k, project=project))

    async def outcome(
        result: Annotated[
            Literal["worked", "failed", "partial"],
            Field(description="how following the item went"),
        ],
        id: Annotated[
            str | None,
            Field(
                default=None,
                min_length=4,
                max_length=64,
                description="item id (or a unique prefix); default: every item your last "
                "recall returned",
            ),
        ] = None,
    ) -> str:
        """Report whether acting on a recalled item worked, failed or partly worked.

        Call it after using an item from recall: items that keep failing stop being recalled,
        items that work rank higher. Without an id it credits what the last recall returned.
        """
        return await run(lambda: tools.outcome(id, result))

    async def revise(
        id: ItemId,
        text: Annotated[
            str,
            Field(min_length=1, max_length=8192, description="the corrected fact, whole"),
        ],
    ) -> str:
        """Correct an item: the new text replaces it (the old one is kept as history) and is
        returned with its new id. If the old one was shared with the team, it is retracted,
        and the revision is shared only once the developer publishes it."""
        return await run(lambda: tools.revise(id, text))

    async def forget(id: ItemId) -> str:
        """Archive an item that is wrong or obsolete; it is never recalled again.

        If it had been published to the team, its publication is retracted as well.
        """
        return await run(lambda: tools.forget(id))

    server.add_tool(recall, annotations=reads, structured_output=False)
    server.add_tool(why, annotations=reads, structured_output=False)
    if not read_only:
        for change in (remember, outcome, revise, forget):
            server.add_tool(change, annotations=writes, structured_output=False)
    if not team:
        return server

    async def recall_team(
        query: Query,
        k: K = 5,
        project: Project = None,
        author: Annotated[
            str | None,
            Field(default=None, max_length=64, description="only items by this teammate"),
        ] = None,
    ) -> str:
        """Ask the whole team: the coordinator's cache and every teammate online.

        Use it when your own recall abstains or the question is about something a teammate
        owns. Hits carry the author and the source that answered; every hit is verified. A
        hit another author's hit contradicts names them in `contradicted_by`: the team does
        not agree on it, so say so rather than pick one.
        """
        return await run(lambda: tools.recall_team(query, k=k, project=project, author=author))

    async def publish(
        ids: Annotated[
            list[str],
            Field(min_length=1, max_length=100, description="ids of items to share"),
        ],
        dry_run: Annotated[
            bool, Field(description="only say what would be shared and why")
        ] = False,
        to: Annotated[
            list[str] | None,
            Field(
                max_length=64,
                description="only for these groups or teammates of the signed roster "
                "(default: as the developer's team.yaml says, else the whole team)",
            ),
        ] = None,
    ) -> str:
        """Share items with the team, exactly as the developer's team policy allows.

        Only publish what the developer asked to share, to whom they asked. The policy
        decides each item and a refusal names the rule; secrets are never published. Use
        dry_run to check first.
        """
        return await run(lambda: tools.publish(ids, dry_run=dry_run, to=to))

    server.add_tool(
        recall_team,
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True),
        structured_output=False,
    )
    if not read_only:
        server.add_tool(
            publish,
            annotations=ToolAnnotations(
                read_only_hint=False, destructive_hint=False, open_world_hint=True
            ),
            structured_output=False,
        )
    return server


class _Server(MCPServer[Any]):
    """The SDK's server, but a call whose arguments do not fit the tool's schema is refused
    with :func:`_argument_problem`."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            # Chained, so that the SDK still logs the fields refused (never their values).
            raise ToolError(_argument_problem(cause)) from cause


def _argument_problem(error: ValidationError) -> str:
    """One sentence naming each argument that does not fit and what it should be (never the
    value given: it is the caller's data)."""
    return "; ".join(_expected(detail) for detail in error.errors())


def _expected(detail: "ErrorDetails") -> str:
    """``k must be at least 1``: what one argument should be."""
    where = detail["loc"]
    name = str(where[0]) + "".join(f"[{part}]" for part in where[1:]) if where else "arguments"
    ctx: dict[str, Any] = dict(detail.get("ctx") or {})
    kind = detail["type"]
    if kind == "string_too_short" and ctx.get("min_length") == 1:
        return f"{name} must not be empty"
    known = {
        "missing": "is required",
        "string_too_short": f"must be at least {ctx.get('min_length')} characters long",
        "string_too_long": f"must be at most {ctx.get('max_length', 0):,} characters long",
        "greater_than_equal": f"must be at least {ctx.get('ge')}",
        "greater_than": f"must be more than {ctx.get('gt')}",
        "less_than_equal": f"must be at most {ctx.get('le')}",
        "less_than": f"must be less than {ctx.get('lt')}",
        "int_parsing": "must be a whole number",
        "int_type": "must be a whole number",
        "int_from_float": "must be a whole number",
        "string_type": "must be a string",
        "bool_parsing": "must be true or false",
        "bool_type": "must be true or false",
        "list_type": "must be a list",
        "too_short": f"must hold at least {counted(ctx.get('min_length', 0), 'item')}",
        "too_long": f"must hold at most {counted(ctx.get('max_length', 0), 'item')}",
        "literal_error": f"must be one of {ctx.get('expected')}",
    }
    # Any other refusal: pydantic's own sentence, which holds neither the value nor a link.
    return f"{name} {known.get(kind) or 'is not valid: ' + detail['msg'].lower()}"


def serve(home: Path, store: Store, *, read_only: bool = False) -> None:
    """Serve MCP on stdin/stdout until the client closes the connection."""
    logging.basicConfig(level=logging.WARNING, format="mem mcp: %(levelname)s: %(message)s")
    with ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="memmesh-mcp") as workers:
        build_server(home, store, workers, read_only=read_only).run("stdio")


def _answer(call: Callable[[], dict[str, Any]]) -> str:
    """Run one tool call: a compact JSON answer, or a tool error saying what went wrong."""
    try:
        result = call()
    except MemmeshError as exc:
        raise ToolError(printable(exc.message)) from None
    except Exception as exc:
        if os.environ.get("MEM_DEBUG"):
            logger.exception("internal error")
        else:
            logger.error("internal error: %s: %s", type(exc).__name__, exc)
        raise ToolError(
            f"internal error ({type(exc).__name__}); the server carries on, please report it"
        ) from None
    return json_printable(json.dumps(result, ensure_ascii=False, separators=(",", ":")))
