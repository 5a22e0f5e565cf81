"""The schema objects memmesh's migrations make in a store file: any other is foreign.

A store file is trusted with the code it runs: a trigger fires inside every write, and a view
or table of the same name as one of ours changes what a statement means. A file from
elsewhere (a backup to restore) may hold only what the migrations of its owners make, to the
versions it records; :func:`foreign_objects` names the rest, comparing each object's SQL with
the one the migrations give in a scratch database.
"""

import sqlite3
from collections.abc import Iterable

from memmesh.local._db import _statements
from memmesh.local._fts5_tokens import register
from memmesh.local._schema import STORE_SCHEMA
from memmesh.local.schema import STORE_OWNER, Schema

__all__ = ["foreign_objects"]

# SQLite's own objects (sqlite_sequence, sqlite_stat1, autoindexes) cannot be made by SQL.
_OBJECTS = r"SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite\_%' ESCAPE '\'"


def foreign_objects(conn: sqlite3.Connection, schemas: Iterable[Schema]) -> list[str]:
    """Each object in ``conn``'s database (as "type name", sorted) that neither the store's
    migrations nor those of ``schemas`` make, to the versions the file records for each."""
    versions = {STORE_OWNER: int(conn.execute("PRAGMA user_version").fetchone()[0])}
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'schema_versions'").fetchone():
        versions.update(conn.execute("SELECT owner, version FROM schema_versions").fetchall())
    scratch = sqlite3.connect(":memory:", isolation_level=None)
    try:
        register(scratch)
        for schema in (STORE_SCHEMA, *schemas):
            for script in schema.migrations[: versions.get(schema.owner, 0)]:
                for statement in _statements(script):
                    scratch.execute(statement)
        made = set(scratch.execute(_OBJECTS).fetchall())
    finally:
        scratch.close()
    found = set(conn.execute(_OBJECTS).fetchall())
    return sorted(f"{kind} {name}" for kind, name, _ in found - made)
