"""How much of a request body a route reads, and how long it waits for it; and which rows a
bounded log drops, so that whoever floods it evicts their own rows first."""

import heapq
from collections.abc import Hashable, Iterable
from typing import TypeVar

import anyio
import msgspec
from starlette.requests import Request

from memmesh.net.errors import BadRequest, BodyTooLarge, RequestTimeout

__all__ = [
    "DEFAULT_BODY_DEADLINE",
    "PUBLISH_BODY_LIMIT",
    "QUERY_BODY_LIMIT",
    "BodyLimit",
    "check_declared_length",
    "read_body",
    "shares_to_drop",
]

K = TypeVar("K", bound=Hashable)

QUERY_BODY_LIMIT = 64 * 1024
PUBLISH_BODY_LIMIT = 4 * 1024 * 1024
DEFAULT_BODY_DEADLINE = 10.0


class BodyLimit(msgspec.Struct, frozen=True, kw_only=True):
    """Most bytes one route reads, and the seconds the whole body may take to arrive."""

    max_bytes: int = QUERY_BODY_LIMIT
    deadline: float = DEFAULT_BODY_DEADLINE


def check_declared_length(limit: BodyLimit, content_length: str) -> None:
    """Reject an over-limit Content-Length up front; chunked bodies are counted while streaming."""
    # ASCII digits only: "²".isdigit() is true, yet int("²") raises, and that would be a 500.
    if not (content_length.isascii() and content_length.isdigit()):
        raise BadRequest("Content-Length must be a non-negative integer")
    if int(content_length) > limit.max_bytes:
        raise BodyTooLarge(limit.max_bytes)


async def read_body(request: Request, limit: BodyLimit) -> bytes:
    """The whole body, never reading past the limit, within the deadline."""
    declared = request.headers.get("content-length")
    if declared is not None:
        check_declared_length(limit, declared)
    chunks: list[bytes] = []
    size = 0
    try:
        with anyio.fail_after(limit.deadline):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit.max_bytes:
                    raise BodyTooLarge(limit.max_bytes)
                chunks.append(chunk)
    except TimeoutError:
        raise RequestTimeout(limit.deadline) from None
    return b"".join(chunks)


def shares_to_drop(sizes: Iterable[tuple[int, K]], limit: int) -> dict[K, int]:
    """How many rows (the oldest) to drop from each group of a log holding ``sizes`` (rows,
    group) to keep ``limit`` rows: each row dropped comes from the group that has the most
    then, so that one group's flood shrinks that group alone until it is no bigger than the
    others."""
    heap = [(-count, index, group) for index, (count, group) in enumerate(sizes) if count > 0]
    excess = -sum(count for count, _, _ in heap) - limit
    heapq.heapify(heap)
    drops: dict[K, int] = {}
    while excess > 0 and heap:
        count, index, group = heapq.heappop(heap)
        # Down to the next group's size in one step (at least one row).
        level = -heap[0][0] if heap else 0
        drop = min(excess, max(1, -count - level))
        drops[group] = drops.get(group, 0) + drop
        excess -= drop
        if -count - drop > 0:
            heapq.heappush(heap, (count + drop, index, group))
    return drops
