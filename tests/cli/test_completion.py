"""`mem completion bash|zsh|fish`: scripts made from the parser, run in the real shells."""

import shutil
import subprocess
from pathlib import Path

import pytest

from memmesh.cli.completion import specs
from memmesh.cli.main import build_parser
from tests.cli._output import error_line
from tests.conftest import MemRunner

# (words typed, the last one being completed) -> what the shell offers
CASES = [
    (["mem", "te"], ["team"]),
    (["mem", "team", "p"], ["peers", "policy", "publish"]),
    (["mem", "team", "policy", ""], ["check", "path", "show"]),
    (["mem", "hook", "install", "c"], ["claude", "codex", "cursor"]),
    (["mem", "team", "init", "--share", "d"], ["decision"]),
    (["mem", "--home", "team", "te"], ["team"]),  # an option's value is no command
    (["mem", "team", "publish", "--d"], ["--dry-run"]),
    (["mem", "completion", ""], ["bash", "fish", "zsh"]),
]


def _script(mem: MemRunner, shell: str, tmp_path: Path) -> Path:
    result = mem("completion", shell)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    path = tmp_path / f"mem.{shell}"
    path.write_text(result.stdout, encoding="utf-8")
    return path


def _run(argv: list[str]) -> list[str]:
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return sorted(result.stdout.split())


# What each script must hold, checked even where its shell is not installed.
SHAPES = {
    "bash": ["# mem completion for bash\n", "complete -F _mem mem\n"],
    "zsh": ["#compdef mem\n", "compdef _mem mem\n"],
    "fish": [
        "# mem completion for fish\n",
        "complete -c mem -n \"__mem_at 'team'\" -a 'init policy publish",
    ],
}


def _completer(shell: str, script: Path, words: list[str]) -> list[str]:
    """A command line in which ``shell`` loads ``script`` and prints what it offers for
    ``words`` (the last being completed), one per line."""
    if shell == "bash":
        complete = f'source {script}; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _mem; '
        return ["bash", "-c", complete + 'printf "%s\\n" "${COMPREPLY[@]}"', "_", *words]
    if shell == "zsh":
        # compadd (zsh's completion builtin) stands in for the menu: it prints what it is
        # offered that starts with the word being completed, as zsh would show.
        complete = (
            f"compdef() {{ }}; source {script}; "
            "compadd() { [[ $1 == -- ]] && shift; print -rl -- ${(M)@:#${words[CURRENT]}*} }; "
            'words=("$@"); CURRENT=$#; _mem'
        )
        return ["zsh", "-c", complete, "_", *words]
    return ["fish", "-c", f"source {script}; complete -C '{' '.join(words)}'"]


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
@pytest.mark.parametrize(("words", "offered"), CASES)
def test_each_script_completes_commands_subcommands_options_and_choices(
    mem: MemRunner, tmp_path: Path, shell: str, words: list[str], offered: list[str]
) -> None:
    script = _script(mem, shell, tmp_path)
    text = script.read_text(encoding="utf-8")
    assert text.startswith(SHAPES[shell][0])
    assert SHAPES[shell][1] in text
    if shutil.which(shell) is None:
        assert shell != "bash", "bash is needed to test the bash script"
        return  # the script's shape is all that can be checked here

    assert _run(_completer(shell, script, words)) == offered


def test_the_bash_script_registers_itself_for_mem(mem: MemRunner, tmp_path: Path) -> None:
    script = _script(mem, "bash", tmp_path)

    assert _run(["bash", "-c", f"source {script}; complete -p mem"]) == [
        "-F",
        "_mem",
        "complete",
        "mem",
    ]


def test_the_bash_script_offers_files_for_an_option_value_without_choices(
    mem: MemRunner, tmp_path: Path
) -> None:
    script = _script(mem, "bash", tmp_path)
    (tmp_path / "homes").mkdir()
    complete = f"cd {tmp_path}; source {script}; COMP_WORDS=(mem --home ho); COMP_CWORD=2; _mem; "
    complete += 'printf "%s\\n" "${COMPREPLY[@]}"'

    assert _run(["bash", "-c", complete]) == ["homes"]


def test_every_command_path_is_in_each_script(mem: MemRunner, tmp_path: Path) -> None:
    paths = [spec.path for spec in specs(build_parser()) if spec.path]
    assert "team members add" in paths
    for shell in ("bash", "zsh"):
        text = _script(mem, shell, tmp_path).read_text(encoding="utf-8")
        assert [path for path in paths if f'        "{path}") subs=' not in text] == []
    fish = _script(mem, "fish", tmp_path).read_text(encoding="utf-8")
    assert [path for path in paths if f"__mem_at '{path}'" not in fish] == []


def test_an_unknown_shell_is_a_usage_error(mem: MemRunner) -> None:
    result = mem("completion", "powershell")

    assert result.returncode == 2
    assert error_line(result) == (
        "mem completion: error: argument shell: invalid choice: 'powershell' "
        "(choose from 'bash', 'zsh', 'fish') (see `mem completion --help`)"
    )
