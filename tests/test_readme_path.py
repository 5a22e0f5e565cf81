"""The README says, before it first calls `mem` by name, how `mem` gets on the PATH, and that
way works."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from memmesh import __version__

README = Path(__file__).resolve().parent.parent / "README.md"


def _first_bare_mem(text: str) -> int:
    """Where the first shell line calling `mem` by name (not `.venv/bin/mem`) starts."""
    for block in re.finditer(r"```sh\n(.*?)```", text, re.DOTALL):
        line = re.search(r"^mem ", block.group(1), re.MULTILINE)
        if line:
            return block.start(1) + line.start()
    raise AssertionError("the README calls no `mem` by name")


def test_the_readme_says_how_mem_gets_on_the_path_before_it_calls_mem_by_name() -> None:
    text = README.read_text(encoding="utf-8")
    before = text[: _first_bare_mem(text)]

    assert "`. .venv/bin/activate`" in before
    assert "`pipx install .`" in before
    assert "`uv tool install .`" in before
    # The quick start's own commands stay as they are.
    assert "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/mem demo" in before


def test_activating_the_virtual_environment_puts_mem_on_the_path(tmp_path: Path) -> None:
    activate = Path(sys.executable).parent / "activate"
    if not activate.is_file():
        pytest.skip("the tests do not run in a virtual environment")
    result = subprocess.run(
        ["bash", "-c", f". {activate} && command -v mem && mem --version"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "MEM_HOME": str(tmp_path / "m")},
        timeout=60,
        check=False,
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [str(activate.parent / "mem"), f"memmesh {__version__}"]
