"""LangGraph's long-term store (:class:`langgraph.store.base.BaseStore`) over a member's memory.

``pip install 'memmesh[langgraph]'``; then ``graph.compile(store=MemmeshStore(memory))``.
How LangGraph's items live in memmesh (docs/sdk.md says it for users):

* One namespace and key is one memmesh item of the store's ``project`` and ``kind``, tagged
  ``langgraph``. Its text is the value as JSON (keys sorted), so `mem recall`, `mem list` and
  `mem team publish` see it as any other item; a search with a query is a memmesh recall
  among the items under the namespace prefix, ranked as `mem recall` ranks.
* The store file holds the adapter's own table, ``langgraph_keys``: each namespace (labels
  joined by ``.``, which LangGraph forbids inside a label) and key, the item holding its
  value, and the value's JSON as stored, which ``get`` returns exactly.
* A value that says what an active item of the project already says reinforces that item
  (memmesh's duplicate rule): two keys may then share one item. A put of a new value
  remembers it, and forgets the old item once no key holds it; a delete forgets the key's
  item once no other key holds it (forgetting retracts a publication, as `mem forget` does).
  A put of an unchanged value only marks the key updated.
* A key counts only while its item is active: an item forgotten or revised by hand
  (`mem forget`, `mem revise`) is gone from the graph too.
* A secret in a value is redacted before anything is stored, as `mem remember` does.
* No TTLs (``supports_ttl`` is false), and a put's ``index`` is ignored: the whole value is
  the item's text.
"""

import json
import operator
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple

import anyio.to_thread
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from memmesh.local import MAX_K, InvalidInput, Schema, recall
from memmesh.local.items import check_kind, check_tags
from memmesh.local.project import resolve_project
from memmesh.policy import redact
from memmesh.sdk import Memory

__all__ = ["LANGGRAPH_SCHEMA", "MemmeshStore"]

LANGGRAPH_SCHEMA = Schema(
    owner="langgraph",
    migrations=(
        """
        CREATE TABLE IF NOT EXISTS langgraph_keys (
            namespace  TEXT NOT NULL,
            key        TEXT NOT NULL,
            item_id    TEXT NOT NULL,
            value      TEXT NOT NULL,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            PRIMARY KEY (namespace, key)
        );
        CREATE INDEX IF NOT EXISTS langgraph_keys_item ON langgraph_keys (item_id);
        """,
    ),
)
_COLUMNS = "namespace, key, item_id, value, created_at, updated_at"
_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "$eq": operator.eq,
    "$ne": operator.ne,
    "$gt": operator.gt,
    "$gte": operator.ge,
    "$lt": operator.lt,
    "$lte": operator.le,
}


class _Row(NamedTuple):
    """One key of the table."""

    namespace: str
    key: str
    item_id: str
    value: str
    created_at: float
    updated_at: float

    def item(self, score: float | None = None, *, searched: bool = False) -> Item:
        """The row as LangGraph's item (a search's, with its ``score``, when ``searched``)."""
        namespace = tuple(self.namespace.split("."))
        value = json.loads(self.value)
        created, updated = _moment(self.created_at), _moment(self.updated_at)
        if searched:
            return SearchItem(namespace, self.key, value, created, updated, score)
        return Item(
            value=value, key=self.key, namespace=namespace, created_at=created, updated_at=updated
        )


class MemmeshStore(BaseStore):
    """LangGraph's store over ``memory`` (which stays the caller's to close).

    * ``project`` - the memmesh project its items go to and searches look in (plus global);
      ``None`` resolves it as `mem remember` does.
    * ``kind`` - the kind of its items (``fact`` unless said).
    * ``tags`` - more tags for its items, beside ``langgraph``.

    ``batch`` runs the operations in order; ``abatch`` runs the same in a worker thread. Bad
    namespaces raise LangGraph's ``InvalidNamespaceError``; a value that is not JSON, too
    long (8 KiB of JSON at most) or holds a secret that redaction would break raises
    :class:`~memmesh.local.errors.InvalidInput`. Neither stores anything.
    """

    supports_ttl = False

    def __init__(
        self,
        memory: Memory,
        *,
        project: str | None = None,
        kind: str = "fact",
        tags: Sequence[str] = (),
    ) -> None:
        self.memory = memory
        self.project = resolve_project(project)
        self.kind = check_kind(kind)
        self.tags = check_tags(["langgraph", *tags])
        # One writer at a time: a key's item is released only when no key holds it.
        self._writing = threading.Lock()
        memory.store.migrate(LANGGRAPH_SCHEMA)

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run each operation in order; one result per operation (``None`` for a put)."""
        return [self._run(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread."""
        listed = list(ops)
        return await anyio.to_thread.run_sync(self.batch, listed)

    def _run(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            found = self._live("namespace = ? AND key = ?", (_joined(op.namespace), op.key))
            return found[0].item() if found else None
        if isinstance(op, PutOp):
            with self._writing:
                self._put(_joined(op.namespace), op.key, op.value)
            return None
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._namespaces(op)
        raise TypeError(f"not a LangGraph store operation: {op!r}")

    # -- writes ----------------------------------------------------------------------------

    def _put(self, namespace: str, key: str, value: Mapping[str, Any] | None) -> None:
        """Store ``value`` under the key (``None``: delete the key)."""
        old = self._raw(namespace, key)
        if value is None:
            if old is not None:
                with self.memory.store.transaction() as tx:
                    tx.execute(
                        "DELETE FROM langgraph_keys WHERE namespace = ? AND key = ?",
                        (namespace, key),
                    )
                self._release(old.item_id)
            return
        text = _text(value)
        now = time.time()
        alive = old is not None and bool(self._live("item_id = ?", (old.item_id,)))
        if old is not None and alive and old.value == text:
            with self.memory.store.transaction() as tx:
                tx.execute(
                    "UPDATE langgraph_keys SET updated_at = ? WHERE namespace = ? AND key = ?",
                    (now, namespace, key),
                )
            return
        # The item first: a crash before the key is written leaves a memory without a key,
        # and the put again reinforces that item and writes the key.
        stored = self.memory.remember(text, kind=self.kind, project=self.project, tags=self.tags)
        created = old.created_at if old is not None and alive else now
        with self.memory.store.transaction() as tx:
            tx.execute(
                f"INSERT OR REPLACE INTO langgraph_keys ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
                (namespace, key, stored.item.id, text, created, now),
            )
        if old is not None and old.item_id != stored.item.id:
            self._release(old.item_id)

    def _release(self, item_id: str) -> None:
        """Forget the item once no key holds it (a no longer active one is left as it is)."""
        with self.memory.store.read() as tx:
            held = tx.execute("SELECT 1 FROM langgraph_keys WHERE item_id = ?", (item_id,))
            if held.fetchone() is not None:
                return
        item = self.memory.store.items_by_id([item_id]).get(item_id)
        if item is not None and item.status == "active":
            self.memory.forget(item_id)

    # -- reads -----------------------------------------------------------------------------

    def _raw(self, namespace: str, key: str) -> _Row | None:
        """The key's row, whatever became of its item."""
        with self.memory.store.read() as tx:
            row = tx.execute(
                f"SELECT {_COLUMNS} FROM langgraph_keys WHERE namespace = ? AND key = ?",
                (namespace, key),
            ).fetchone()
        return None if row is None else _Row(*row)

    def _live(self, where: str, parameters: tuple[Any, ...]) -> list[_Row]:
        """The rows ``where`` selects whose item is still active."""
        with self.memory.store.read() as tx:
            rows = [
                _Row(*row)
                for row in tx.execute(
                    f"SELECT {_COLUMNS} FROM langgraph_keys WHERE {where}", parameters
                ).fetchall()
            ]
        items = self.memory.store.items_by_id(list({row.item_id for row in rows}))
        return [r for r in rows if r.item_id in items and items[r.item_id].status == "active"]

    def _under(self, prefix: tuple[str, ...]) -> list[_Row]:
        """The live rows whose namespace starts with ``prefix`` (all for an empty one)."""
        if not prefix:
            return self._live("1 = 1", ())
        joined = _joined(prefix)
        return self._live(
            "namespace = ? OR substr(namespace, 1, ?) = ?",
            (joined, len(joined) + 1, joined + "."),
        )

    def _search(self, op: SearchOp) -> list[Item]:
        rows = [r for r in self._under(op.namespace_prefix) if _matches(r.value, op.filter)]
        end = op.offset + op.limit
        if op.query is None:
            rows.sort(key=lambda r: (-r.updated_at, r.namespace, r.key))
            return [r.item(searched=True) for r in rows[op.offset : end]]
        held: dict[str, list[_Row]] = {}
        for row in rows:
            held.setdefault(row.item_id, []).append(row)
        if not held or end <= 0:
            return []
        answer = recall(
            self.memory.store,
            op.query,
            k=min(MAX_K, end),
            project=self.project,
            restrict=list(held),
            record=False,
        )
        found = [
            row.item(hit.score, searched=True) for hit in answer.hits for row in held[hit.item.id]
        ]
        return found[op.offset : end]

    def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        names = {tuple(row.namespace.split(".")) for row in self._under(())}
        names = {n for n in names if all(_fits(n, c) for c in op.match_conditions or ())}
        if op.max_depth is not None:
            names = {n[: op.max_depth] for n in names}
        return sorted(names)[op.offset : op.offset + op.limit]


def _joined(namespace: tuple[str, ...]) -> str:
    """The namespace as the table keeps it; LangGraph's rules for its labels are checked."""
    if not namespace:
        raise InvalidNamespaceError("a namespace needs at least one label")
    for label in namespace:
        if not isinstance(label, str) or not label or "." in label or "\x00" in label:
            raise InvalidNamespaceError(
                f"namespace label {label!r} in {namespace} must be a non-empty string "
                "without '.' or NUL"
            )
    return ".".join(namespace)


def _text(value: Mapping[str, Any]) -> str:
    """The value as the item's text: JSON with sorted keys, any secret in it redacted."""
    try:
        text = json.dumps(dict(value), sort_keys=True, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"a LangGraph value must be JSON: {exc}") from None
    clean = redact(text, [])
    try:
        json.loads(clean.text)
    except ValueError:
        raise InvalidInput(
            "the value holds a secret that cannot be redacted without breaking its JSON; "
            "keep secrets out of memory"
        ) from None
    return clean.text


def _matches(value: str, conditions: dict[str, Any] | None) -> bool:
    """Whether the value (JSON) meets every condition of a search's ``filter``."""
    if not conditions:
        return True
    data = json.loads(value)
    for field, wanted in conditions.items():
        if field not in data:
            return False
        operators = isinstance(wanted, dict) and wanted and all(k[:1] == "$" for k in wanted)
        tests = wanted if operators else {"$eq": wanted}
        if not all(_compare(data[field], name, given) for name, given in tests.items()):
            return False
    return True


def _compare(actual: Any, name: str, given: Any) -> bool:
    """One filter test; values that cannot be ordered against each other do not match."""
    test = _OPERATORS.get(name)
    if test is None:
        raise InvalidInput(f"unknown filter operator {name!r}; use one of {', '.join(_OPERATORS)}")
    try:
        return bool(test(actual, given))
    except TypeError:
        return False


def _fits(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    """Whether the namespace matches a prefix or suffix condition (``*`` matches any label)."""
    path = tuple(condition.path)
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    return all(p in ("*", n) for p, n in zip(path, part, strict=True)) if path else True


def _moment(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)
