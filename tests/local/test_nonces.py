"""The nonces file: a pair is new once, for every process that opens the file and after any of
them closes; what is past is forgotten; a damaged file is started afresh."""

from pathlib import Path

from memmesh.local.nonces import NONCES_FILENAME, NonceFile

KEY = "k" * 43


def test_a_nonce_is_new_once_for_every_opener_of_the_file(tmp_path: Path) -> None:
    first, second = NonceFile(tmp_path), NonceFile(tmp_path)  # as two worker processes
    try:
        assert first.remember(KEY, "a" * 32, 100.0) is True
        assert second.remember(KEY, "a" * 32, 101.0) is False
        assert second.remember("other" + KEY[5:], "a" * 32, 101.0) is True  # another key's
        first.close()
        assert NonceFile(tmp_path).remember(KEY, "a" * 32, 102.0) is False  # after a restart
    finally:
        first.close()
        second.close()


def test_pruned_nonces_are_forgotten_and_fresh_ones_kept(tmp_path: Path) -> None:
    nonces = NonceFile(tmp_path)
    try:
        nonces.remember(KEY, "old".ljust(32, "0"), 100.0)
        nonces.remember(KEY, "new".ljust(32, "0"), 500.0)
        nonces.prune(before=300.0)
        assert nonces.remember(KEY, "old".ljust(32, "0"), 600.0) is True
        assert nonces.remember(KEY, "new".ljust(32, "0"), 600.0) is False
    finally:
        nonces.close()


def test_a_file_that_is_not_sqlite_is_started_afresh(tmp_path: Path) -> None:
    (tmp_path / NONCES_FILENAME).write_bytes(b"not a database at all" * 100)
    nonces = NonceFile(tmp_path)
    try:
        assert nonces.remember(KEY, "a" * 32, 100.0) is True
        assert nonces.remember(KEY, "a" * 32, 100.0) is False
    finally:
        nonces.close()
    assert (tmp_path / NONCES_FILENAME).stat().st_mode & 0o777 == 0o600
