"""Recall's worker threads: a call runs beside the caller, its value or error handed back."""

import threading

import pytest

from memmesh.local._workers import Workers


def test_a_call_runs_on_a_worker_and_hands_back_its_value() -> None:
    workers = Workers(2, "test")
    pending = workers.submit(lambda: threading.current_thread().name)
    assert pending.result() == "test_0"


def test_what_a_call_raises_is_raised_in_the_caller() -> None:
    def fails() -> None:
        raise KeyError("gone")

    pending = Workers(1, "test").submit(fails)
    pending.wait()
    with pytest.raises(KeyError, match="gone"):
        pending.result()


def test_no_more_threads_start_than_the_count_and_idle_ones_are_reused() -> None:
    workers = Workers(2, "capped")
    release = threading.Event()

    def held() -> str:
        release.wait()
        return threading.current_thread().name

    pending = [workers.submit(held) for _ in range(3)]  # two run; the third waits its turn
    started = [t.name for t in threading.enumerate() if t.name.startswith("capped_")]
    release.set()
    ran_on = [p.result() for p in pending]
    ran_on += [workers.submit(threading.current_thread).result().name for _ in range(5)]

    assert sorted(started) == ["capped_0", "capped_1"]
    assert set(ran_on) <= {"capped_0", "capped_1"}
    assert len(ran_on) == 8
