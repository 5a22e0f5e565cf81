"""`mem team publish --force` on items an older store kept with a secret in words: the
publish check runs the same detectors as the redaction at write time, so nothing leaves."""

from pathlib import Path

import pytest

from tests.cli._output import error_line
from tests.cli.test_team import _log, _member, _remember, _run
from tests.conftest import MemRunner

AWS_SECRET = "Hq3mZ8xLp2/Wv9Rt4Kc7+Bn1Yd6Fs0Gj5Ua8Ie3o"


@pytest.mark.parametrize(
    ("text", "secret", "detector"),
    [
        (f"aws secret access key is {AWS_SECRET}", AWS_SECRET, "aws-secret-access-key"),
        ("login to grafana with admin / Gr4f@na-Pr0d", "Gr4f@na-Pr0d", "password-in-prose"),
        ("redis AUTH Zq8vLm2Xp9Rt4Wn7", "Zq8vLm2Xp9Rt4Wn7", "cli-password-flag"),
        (
            "use token 9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c for the webhook",
            "9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c",
            "secret-in-prose",
        ),
    ],
)
def test_force_never_publishes_a_secret_named_in_words_from_an_old_store(
    mem: MemRunner, home: Path, text: str, secret: str, detector: str
) -> None:
    _member(home)
    item = _remember(home, text)  # put in through the store, as an old store may hold it

    refused = _run(mem, "team", "publish", item, "--force", code=3)
    assert error_line(refused) == (
        "mem: error: refused by policy, nothing was published "
        f"({item}: secret detected: {detector})"
    )
    assert secret not in refused.stdout + refused.stderr
    assert _log(mem) == []
