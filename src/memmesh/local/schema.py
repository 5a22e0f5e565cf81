"""Schemas of the tables in the store file, one ordered list of migrations per owner.

The store file holds the store's own tables and the tables that other components keep beside
them, so that their changes commit together with the store's (the registry's log, the
coordinator's envelopes). Each owner lists its migrations in order: migration N takes that
owner's tables from version N-1 to version N. Each runs in one transaction that also records
the new version, so a kill leaves the old version or the new one, never half of a step; before
an owner that already has tables is migrated, the whole file is backed up.

The store's own version is the file's ``PRAGMA user_version``; every other owner's is its row
in ``schema_versions``.
"""

import msgspec

__all__ = ["STORE_OWNER", "Schema"]

STORE_OWNER = "store"


class Schema(msgspec.Struct, frozen=True, kw_only=True):
    """An owner's tables: ``migrations[N - 1]`` is the SQL script of migration N."""

    owner: str
    migrations: tuple[str, ...]

    @property
    def version(self) -> int:
        """The version the last migration reaches."""
        return len(self.migrations)
