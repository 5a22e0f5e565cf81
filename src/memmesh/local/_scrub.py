"""What a purge leaves on disk after its row is blanked, and the scrub that removes it.

With ``secure_delete`` (see :mod:`memmesh.local._db`) SQLite zeroes the bytes a blanked or
deleted row held in its pages, but two other copies of the text outlive the row:

* The full-text index is contentless: deleting a row from it only writes a delete marker into
  a new segment, and the row's terms stay in the older segments until a merge rewrites them.
  ``optimize`` merges every segment into one, in which deleted rows have no entry left. It
  rewrites the whole index, about 20 ms at 10,000 items, so it runs once per batch of purges.
  (SQLite 3.42's ``secure-delete`` option would do it at each delete; builds before it, as
  Debian 12's 3.40, have no such option.)
* The WAL keeps every page image written since the log was last reset, the pages before the
  purge among them, and a checkpoint only copies the newest ones into the file: the log is
  emptied to zero bytes (``wal_checkpoint(TRUNCATE)``) once no reader is left on an older
  snapshot.
* The index's vector file beside the store (``HOME/index``, :mod:`memmesh.local._vector_file`)
  keeps each row's vector as it was when the file was written: the scrub zeroes the purged
  items' rows in it, in place.

A purge records that a scrub is owed in its own transaction (:func:`owe`); :func:`scrub` pays
it, and a store that opens with one still owed pays it then, so that a process dying between
the purge and its scrub leaves the text behind only until the store is next opened. Copies
outside the file's reach stay where they are: backups and filesystem snapshots taken before,
and disk blocks the filesystem freed.
"""

import sqlite3

from memmesh.local import _vector_file
from memmesh.local._db import Database
from memmesh.local._embedding import SCRUB_OWED, meta, set_meta

__all__ = ["owe", "owed", "scrub"]


def owe(conn: sqlite3.Connection) -> None:
    """Record, inside the purge's transaction, that its leftovers await a scrub."""
    set_meta(conn, SCRUB_OWED, "1")


def owed(db: Database) -> bool:
    """Whether a purge's leftovers still await a scrub."""
    with db.read() as conn:
        return meta(conn, SCRUB_OWED) == "1"


def scrub(db: Database) -> bool:
    """Merge the deleted rows out of the full-text index if a purge owes it, then empty the
    WAL; whether the WAL was emptied (if a reader held it, the scrub stays owed)."""
    with db.write() as conn:
        if meta(conn, SCRUB_OWED) == "1":
            conn.execute("INSERT INTO items_fts (items_fts) VALUES ('optimize')")
            set_meta(conn, SCRUB_OWED, "0")
    with db.read() as conn:  # the purged items' vectors, zeroed in the index's file
        _vector_file.erase(conn)
    if db.truncate_wal():
        return True
    with db.write() as conn:
        owe(conn)
    return False
