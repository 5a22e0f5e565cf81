"""The store's own tables and their forward migrations.

``PRAGMA user_version`` holds the store's schema version and ``PRAGMA application_id`` marks
the file as memmesh's. Migration N takes a version N-1 database to version N; each runs in one
transaction after a backup (see :mod:`memmesh.local.schema`).
"""

from memmesh.local.schema import STORE_OWNER, Schema

__all__ = [
    "APPLICATION_ID",
    "FTS_TOKENIZE",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "STORE_SCHEMA",
    "WORDS_FUNCTION",
]

APPLICATION_ID = 0x6D656D6D  # "memm"
# The full-text index holds memmesh.text.words of each text and tags (folded, CJK runs as
# character pairs), which this SQL function, registered on the store's connection, makes;
# FTS5 splits them at the spaces and Porter-stems them. The in-memory lexicon tokenizes with
# the same function and settings.
WORDS_FUNCTION = "memmesh_words"
FTS_TOKENIZE = "porter ascii"

_V1 = """
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE items (
    seq            INTEGER PRIMARY KEY,
    id             TEXT NOT NULL UNIQUE,
    text           TEXT NOT NULL,
    kind           TEXT NOT NULL,
    project        TEXT NOT NULL,
    tags           TEXT NOT NULL DEFAULT '[]',
    author         TEXT NOT NULL,
    created_at     REAL NOT NULL,
    updated_at     REAL NOT NULL,
    reinforcements INTEGER NOT NULL DEFAULT 0,
    worked         REAL NOT NULL DEFAULT 0,
    failed         REAL NOT NULL DEFAULT 0,
    partial        REAL NOT NULL DEFAULT 0,
    outcomes_at    REAL,
    status         TEXT NOT NULL DEFAULT 'active'
                   CHECK (status IN ('active', 'archived', 'superseded')),
    superseded_by  TEXT,
    supersedes     TEXT,
    content_hash   TEXT NOT NULL,
    vector         BLOB NOT NULL,
    rev            INTEGER NOT NULL
);
CREATE INDEX items_rev ON items (rev);
CREATE INDEX items_hash ON items (content_hash, project);
CREATE INDEX items_scope ON items (project, status);
CREATE VIRTUAL TABLE items_fts USING fts5 (
    text, tags,
    content = 'items', content_rowid = 'seq',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER items_ai AFTER INSERT ON items BEGIN
    INSERT INTO items_fts (rowid, text, tags) VALUES (new.seq, new.text, new.tags);
END;
CREATE TRIGGER items_ad AFTER DELETE ON items BEGIN
    INSERT INTO items_fts (items_fts, rowid, text, tags)
    VALUES ('delete', old.seq, old.text, old.tags);
END;
CREATE TRIGGER items_au AFTER UPDATE OF text, tags ON items BEGIN
    INSERT INTO items_fts (items_fts, rowid, text, tags)
    VALUES ('delete', old.seq, old.text, old.tags);
    INSERT INTO items_fts (rowid, text, tags) VALUES (new.seq, new.text, new.tags);
END;
CREATE TABLE events (
    seq     INTEGER PRIMARY KEY,
    at      REAL NOT NULL,
    kind    TEXT NOT NULL,
    item_id TEXT,
    data    TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX events_kind ON events (kind, at);
CREATE TABLE reindex_vectors (
    seq    INTEGER PRIMARY KEY,
    vector BLOB NOT NULL
);
"""

# Version 2 created the registry's table; the registry now creates it with its own migrations
# (memmesh.registry._schema), which adopt the table where this step once made it.
_V2 = ""


def _full_text_index(tokenize: str, words: str) -> str:
    """The script that makes ``items_fts`` again, with its triggers, and fills it from the
    active items: FTS5's ``tokenize`` setting, and ``words``, what it is given of a column
    (``{}``: the column itself)."""

    def row(prefix: str) -> str:
        text, tags = words.format(prefix + "text"), words.format(prefix + "tags")
        return f"{text}, {tags}, 'p' || hex({prefix}project)"

    new, old, items = row("new."), row("old."), row("")
    return f"""
DROP TRIGGER items_ai;
DROP TRIGGER items_ad;
DROP TRIGGER items_au;
DROP TABLE items_fts;
CREATE VIRTUAL TABLE items_fts USING fts5 (
    text, tags, scope,
    content = '',
    tokenize = '{tokenize}'
);
CREATE TRIGGER items_ai AFTER INSERT ON items WHEN new.status = 'active' BEGIN
    INSERT INTO items_fts (rowid, text, tags, scope) VALUES (new.seq, {new});
END;
CREATE TRIGGER items_ad AFTER DELETE ON items WHEN old.status = 'active' BEGIN
    INSERT INTO items_fts (items_fts, rowid, text, tags, scope)
    VALUES ('delete', old.seq, {old});
END;
-- One trigger, so the old entry is always deleted before the new one is added.
CREATE TRIGGER items_au AFTER UPDATE OF text, tags, project, status ON items BEGIN
    INSERT INTO items_fts (items_fts, rowid, text, tags, scope)
    SELECT 'delete', old.seq, {old} WHERE old.status = 'active';
    INSERT INTO items_fts (rowid, text, tags, scope)
    SELECT new.seq, {new} WHERE new.status = 'active';
END;
INSERT INTO items_fts (rowid, text, tags, scope)
SELECT seq, {items} FROM items WHERE status = 'active';
"""


# The full-text index holds only active items and knows each one's project (as the single
# token "p" + hex of its UTF-8 name), so a recall scores only the matches in its own scope
# instead of every match in the store. It is contentless: the triggers hand it the exact old
# values to delete, which the items table still has.
_V3 = _full_text_index("porter unicode61 remove_diacritics 2", "{}")

# The session brief reads a project's most reinforced and most successful items, and the
# global preferences, straight from these indexes instead of scanning the store.
_V4 = """
CREATE INDEX items_useful
    ON items (project, status, reinforcements DESC, worked DESC, updated_at DESC);
CREATE INDEX items_preferences ON items (reinforcements DESC, worked DESC, updated_at DESC)
    WHERE kind = 'preference' AND status = 'active' AND project = 'global';
"""

# Every other owner of tables in the file records its schema version here.
_V5 = """
CREATE TABLE schema_versions (
    owner   TEXT PRIMARY KEY,
    version INTEGER NOT NULL
);
"""

# The last recalls' queries and hits, for `mem why --trace` (the journal keeps the newest
# KEPT_TRACES of them; memmesh.local.journal).
_V6 = """
CREATE TABLE recall_traces (
    seq      INTEGER PRIMARY KEY,
    id       TEXT NOT NULL UNIQUE,
    at       REAL NOT NULL,
    query    TEXT NOT NULL,
    project  TEXT NOT NULL,
    mode     TEXT NOT NULL,
    k        INTEGER NOT NULL,
    item_ids TEXT NOT NULL DEFAULT '[]'
);
"""

# The full-text index holds the words of memmesh.text (accents, case and width folded, CJK
# runs as their character pairs), the words recall's gate, the team's ranking and the hashing
# embedder see, instead of what FTS5's own tokenizer made of the raw text. It is rebuilt from
# the items in this one transaction: a kill leaves the version-6 index whole. Any change to
# those words needs a migration like this one, since the triggers delete an entry by handing
# FTS5 the words it was indexed with, made again from the old row.
_V7 = _full_text_index(FTS_TOKENIZE, WORDS_FUNCTION + "({})")

# Teammates' items this member was given by recall-team, with its own tallies on them and
# what of those it last sent; and the tallies teammates sent on this member's own items, with
# where their feed was read up to (memmesh.local.tallies).
_V8 = """
CREATE TABLE team_given (
    author_key_id TEXT NOT NULL,
    item_id       TEXT NOT NULL,
    author        TEXT NOT NULL,
    version       INTEGER NOT NULL,
    seen_at       REAL NOT NULL,
    worked        INTEGER NOT NULL DEFAULT 0,
    failed        INTEGER NOT NULL DEFAULT 0,
    partial       INTEGER NOT NULL DEFAULT 0,
    sent_seq      INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (author_key_id, item_id)
);
CREATE INDEX team_given_seen ON team_given (worked + failed + partial > 0, seen_at);
CREATE TABLE team_tallies (
    reporter_key_id TEXT NOT NULL,
    item_id         TEXT NOT NULL,
    seq             INTEGER NOT NULL,
    worked          INTEGER NOT NULL,
    failed          INTEGER NOT NULL,
    partial         INTEGER NOT NULL,
    at              REAL NOT NULL,
    PRIMARY KEY (item_id, reporter_key_id)
);
CREATE TABLE team_tally_cursor (
    coordinator TEXT PRIMARY KEY,
    cursor      INTEGER NOT NULL
);
"""

# Candidate memories waiting for the member's review (memmesh.local.inbox): what a notes file
# proposed, never an item until accepted. ``content_hash`` is the items' own (case, spacing
# and final punctuation ignored), so the same candidate is not proposed twice.
_V9 = """
CREATE TABLE inbox (
    seq          INTEGER PRIMARY KEY,
    id           TEXT NOT NULL UNIQUE,
    text         TEXT NOT NULL,
    kind         TEXT NOT NULL,
    project      TEXT NOT NULL DEFAULT '',
    source_path  TEXT NOT NULL DEFAULT '',
    source_line  INTEGER,
    session_id   TEXT NOT NULL DEFAULT '',
    context      TEXT NOT NULL DEFAULT '',
    created_at   REAL NOT NULL,
    status       TEXT NOT NULL DEFAULT 'pending'
                 CHECK (status IN ('pending', 'accepted', 'rejected')),
    item_id      TEXT,
    decided_at   REAL,
    content_hash TEXT NOT NULL
);
CREATE INDEX inbox_text ON inbox (content_hash, project, status);
CREATE INDEX inbox_status ON inbox (status, seq);
"""

# What keeps an item true (memmesh.local.validity, memmesh.local.anchors, memmesh.local.merge):
# the dates between which it holds (Unix seconds, either open), the other members whose
# items were merged into it, the files it speaks of (each as its repository-relative path,
# the lines meant, a digest of them and a short hash of each line, to tell how much changed;
# ``repo`` is the repository's folder on this machine and never leaves it), and when a recall
# last returned it; a candidate in the inbox keeps the anchors its item will get (``about``,
# JSON: the files a captured fix edited, as they were when it was captured).
_V10 = """
ALTER TABLE items ADD COLUMN valid_from REAL;
ALTER TABLE items ADD COLUMN valid_until REAL;
ALTER TABLE items ADD COLUMN coauthors TEXT NOT NULL DEFAULT '[]';
CREATE TABLE item_anchors (
    item_id     TEXT NOT NULL,
    path        TEXT NOT NULL,
    first_line  INTEGER NOT NULL DEFAULT 0,
    last_line   INTEGER NOT NULL DEFAULT 0,
    repo        TEXT NOT NULL,
    digest      TEXT NOT NULL,
    line_hashes BLOB NOT NULL,
    anchored_at REAL NOT NULL,
    PRIMARY KEY (item_id, path, first_line, last_line)
);
CREATE INDEX events_item ON events (item_id, seq) WHERE item_id IS NOT NULL;
ALTER TABLE inbox ADD COLUMN about TEXT NOT NULL DEFAULT '[]';
CREATE TABLE item_recalls (
    item_id TEXT PRIMARY KEY,
    last_at REAL NOT NULL,
    times   INTEGER NOT NULL DEFAULT 1
);
"""
MIGRATIONS: dict[int, str] = {
    1: _V1, 2: _V2, 3: _V3, 4: _V4, 5: _V5, 6: _V6, 7: _V7, 8: _V8, 9: _V9, 10: _V10,
}  # fmt: skip
SCHEMA_VERSION = max(MIGRATIONS)
STORE_SCHEMA = Schema(
    owner=STORE_OWNER, migrations=tuple(MIGRATIONS[n] for n in range(1, SCHEMA_VERSION + 1))
)
