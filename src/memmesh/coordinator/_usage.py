"""How much the coordinator keeps for each member key, in its store file.

``coord_usage`` holds one row per author key: how many rows of ``coord_envelopes`` are the
key's (its live publications and its tombstones: a tombstone is kept for good, and the item's
searchable copy stays behind as a husk with a place in the vector index) and how many bytes
of text (UTF-8) its live publications hold: what the in-memory lexicon grows with. Triggers
on ``coord_envelopes`` keep the figures in step with every write, whichever code makes it (a
publication, a retraction, a revocation that purges), so that a publish reads them in one
lookup instead of counting the table. They are checked at every start
(:func:`keep_counting`): a table rebuilt by a later migration loses its triggers, and the
figures are then counted again.

Every function runs on the transaction or read the caller holds.
"""

from typing import NamedTuple

from memmesh.coordinator.storage import Dialect, Tables, Tx

__all__ = [
    "USAGE_SCHEMA",
    "Held",
    "Usage",
    "held",
    "keep_counting",
    "keys",
    "of",
    "recount",
    "total",
]

_V1 = """
CREATE TABLE coord_usage (
    author_key  TEXT PRIMARY KEY,
    items       INTEGER NOT NULL,
    text_bytes  INTEGER NOT NULL
);
"""


# A row's share: one item, and its text's bytes if it is a live publication. The payload is
# the signed body's JSON, kept as a BLOB: read as text (a BLOB would be taken for JSONB).
_SHARE: dict[Dialect, str] = {
    "sqlite": (
        "CASE WHEN {row}.kind = 'publication' THEN "
        "length(CAST(json_extract(CAST({row}.payload AS TEXT), '$.text') AS BLOB)) ELSE 0 END"
    ),
    "postgresql": "coord_share({row}.kind, {row}.payload)",
}
_SQLITE_SHARE = _SHARE["sqlite"]
# A key's row in coord_usage, made when missing. Never with a conflict clause: inside a trigger
# the statement that fired it (INSERT OR REPLACE) would impose its own.
_ENSURE = """
    INSERT INTO coord_usage (author_key, items, text_bytes)
    SELECT {row}.author_key, 0, 0
    WHERE NOT EXISTS (SELECT 1 FROM coord_usage WHERE author_key = {row}.author_key);
"""
_TRIGGERS = {
    # INSERT OR REPLACE removes the row it replaces without firing the delete trigger (unless
    # recursive triggers are on, which memmesh never turns on): its share is taken off here.
    "coord_usage_insert": f"""
CREATE TRIGGER coord_usage_insert BEFORE INSERT ON coord_envelopes BEGIN
    {_ENSURE.format(row="NEW")}
    UPDATE coord_usage SET
        items = items + 1 - (
            SELECT count(*) FROM coord_envelopes AS old
            WHERE old.author_key = NEW.author_key AND old.item_id = NEW.item_id),
        text_bytes = text_bytes + {_SQLITE_SHARE.format(row="NEW")} - coalesce((
            SELECT {_SQLITE_SHARE.format(row="old")} FROM coord_envelopes AS old
            WHERE old.author_key = NEW.author_key AND old.item_id = NEW.item_id), 0)
    WHERE author_key = NEW.author_key;
END""",
    "coord_usage_delete": f"""
CREATE TRIGGER coord_usage_delete AFTER DELETE ON coord_envelopes BEGIN
    UPDATE coord_usage SET items = items - 1,
        text_bytes = text_bytes - {_SQLITE_SHARE.format(row="OLD")}
    WHERE author_key = OLD.author_key;
END""",
    "coord_usage_update": f"""
CREATE TRIGGER coord_usage_update AFTER UPDATE ON coord_envelopes BEGIN
    UPDATE coord_usage SET items = items - 1,
        text_bytes = text_bytes - {_SQLITE_SHARE.format(row="OLD")}
    WHERE author_key = OLD.author_key;
    {_ENSURE.format(row="NEW")}
    UPDATE coord_usage SET items = items + 1,
        text_bytes = text_bytes + {_SQLITE_SHARE.format(row="NEW")}
    WHERE author_key = NEW.author_key;
END""",
}
# On PostgreSQL the upsert that replaces a row updates it: one trigger after each change.
_PG_TRIGGER = "coord_usage_count"
_PG_V1 = f"""
CREATE TABLE coord_usage (
    author_key  text PRIMARY KEY,
    items       bigint NOT NULL,
    text_bytes  bigint NOT NULL
);
CREATE FUNCTION coord_share(kind text, payload bytea) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN kind = 'publication'
        THEN octet_length(convert_to(convert_from(payload, 'UTF8')::json ->> 'text', 'UTF8'))
        ELSE 0 END
$$;
CREATE FUNCTION {_PG_TRIGGER}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        UPDATE coord_usage SET items = items - 1,
            text_bytes = text_bytes - coord_share(OLD.kind, OLD.payload)
        WHERE author_key = OLD.author_key;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO coord_usage AS u (author_key, items, text_bytes)
        VALUES (NEW.author_key, 1, coord_share(NEW.kind, NEW.payload))
        ON CONFLICT (author_key) DO UPDATE
        SET items = u.items + 1, text_bytes = u.text_bytes + excluded.text_bytes;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER {_PG_TRIGGER} AFTER INSERT OR UPDATE OR DELETE ON coord_envelopes
FOR EACH ROW EXECUTE FUNCTION {_PG_TRIGGER}();
"""

USAGE_SCHEMA = Tables(owner="usage", sqlite=(_V1,), postgresql=(_PG_V1,))


def _counted(tx: Tx) -> str:
    share = _SHARE[tx.dialect].format(row="coord_envelopes")
    return (
        f"SELECT author_key, count(*), coalesce(sum({share}), 0) "
        "FROM coord_envelopes GROUP BY author_key"
    )


class Usage(NamedTuple):
    """What the coordinator keeps for a key, or for everyone: rows, and bytes of live text."""

    items: int = 0
    text_bytes: int = 0

    def plus(self, other: "Usage") -> "Usage":
        """Both together."""
        return Usage(self.items + other.items, self.text_bytes + other.text_bytes)


class Held(NamedTuple):
    """One row the coordinator keeps for a key: a live publication or a tombstone, with the
    bytes of its text (none for a tombstone)."""

    item_id: str
    kind: str
    version: int
    text_bytes: int
    applied_at: float
    payload: bytes
    signature: bytes


def keep_counting(tx: Tx) -> bool:
    """Make the triggers that keep ``coord_usage`` in step where they are missing, counting
    every key's figures anew if any was; returns whether it had to."""
    if tx.dialect == "postgresql":
        # Made with the table by the migrations; a later one that rebuilds it makes it again.
        return False
    present = {
        name
        for (name,) in tx.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ?",
            ("coord_envelopes",),
        )
    }
    missing = [name for name in _TRIGGERS if name not in present]
    if not missing:
        return False
    for name in missing:
        tx.execute(_TRIGGERS[name])
    tx.execute("DELETE FROM coord_usage")
    tx.execute(f"INSERT INTO coord_usage (author_key, items, text_bytes) {_counted(tx)}")
    return True


def of(tx: Tx, author_key: str) -> Usage:
    """What the coordinator keeps for ``author_key``."""
    row = tx.execute(
        "SELECT items, text_bytes FROM coord_usage WHERE author_key = ?", (author_key,)
    ).fetchone()
    return Usage() if row is None else Usage(int(row[0]), int(row[1]))


def total(tx: Tx) -> Usage:
    """What the coordinator keeps for every key together."""
    items, size = tx.execute(
        "SELECT coalesce(sum(items), 0), coalesce(sum(text_bytes), 0) FROM coord_usage"
    ).fetchone()
    return Usage(int(items), int(size))


def recount(tx: Tx) -> dict[str, Usage]:
    """Every key's figures counted from ``coord_envelopes`` itself (what the triggers keep)."""
    return {key: Usage(int(items), int(size)) for key, items, size in tx.execute(_counted(tx))}


def keys(tx: Tx) -> dict[str, Usage]:
    """Every key the coordinator keeps rows for, and its figures."""
    rows = tx.execute(
        "SELECT author_key, items, text_bytes FROM coord_usage WHERE items > 0 ORDER BY author_key"
    )
    return {key: Usage(int(items), int(size)) for key, items, size in rows}


def held(tx: Tx, author_key: str) -> list[Held]:
    """Every row kept for ``author_key``, oldest applied first."""
    rows = tx.execute(
        f"SELECT item_id, kind, version, {_SHARE[tx.dialect].format(row='coord_envelopes')}, "
        "applied_at, "
        "payload, signature "
        "FROM coord_envelopes WHERE author_key = ? ORDER BY applied_at, item_id",
        (author_key,),
    )
    return [
        Held(str(row[0]), str(row[1]), int(row[2]), int(row[3]), float(row[4]), row[5], row[6])
        for row in rows
    ]
