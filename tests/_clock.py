"""A clock for tests: it says what time it is, and only a test moves it."""

START = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC


class FakeClock:
    """A clock that only moves when a test moves it."""

    def __init__(self, now: float = START) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
