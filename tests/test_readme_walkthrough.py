"""The README's walk-through, run command by command: a real coordinator on loopback and the
laptops of Alice and Bob, each a fresh home, with the ids the README shows replaced by the ids
the commands printed (the conventions: tests/_walkthrough.py)."""

from pathlib import Path

import pytest

from tests._walkthrough import (
    ALLOWED,
    ONE_MACHINE,
    ONE_MACHINE_RULES,
    Step,
    Walk,
    WalkthroughError,
    in_section,
    shown_pattern,
    steps_of,
)

README = Path(__file__).resolve().parent.parent / "README.md"


def _walk(text: str, root: Path, steps: list[Step] | None = None) -> Walk:
    """Run ``steps`` (default: every step of ``text``); the walk, its daemons stopped."""
    steps = steps_of(text)[0] if steps is None else steps
    walk = Walk(root)
    try:
        for step in steps:
            walk.run(step)
    finally:
        broken = walk.close()
    assert not broken, "\n".join(broken)
    return walk


def test_every_command_of_the_readme_runs_as_written_and_prints_what_it_shows(
    tmp_path: Path,
) -> None:
    text = README.read_text(encoding="utf-8")
    steps, allowed = steps_of(text)
    # The one-machine trial runs on its own (below).
    steps = [step for step in steps if step.section != ONE_MACHINE]

    walk = _walk(text, tmp_path, steps)

    # Every allowed line is still in the README, every rewrite was needed, and the walk went
    # through the three machines.
    assert allowed == set(ALLOWED)
    assert walk.used == set(walk.rules) - set(ONE_MACHINE_RULES)
    assert set(walk.machines) == {"alice", "bob", "team host"}
    assert sum(bool(step.shown) for step in steps) >= 10


def test_the_readme_s_team_on_one_machine_runs_as_written_and_prints_what_it_shows(
    tmp_path: Path,
) -> None:
    # A coordinator and two homes on loopback: the whole team a new user tries first, with
    # nothing rewritten but the coordinator's fixed port (8400) for a free one.
    text = README.read_text(encoding="utf-8")
    steps = in_section(steps_of(text)[0], ONE_MACHINE)

    walk = _walk(text, tmp_path, steps)

    assert walk.used == set(ONE_MACHINE_RULES)
    assert set(walk.machines) == {"one machine"}
    commands = [step.command for step in steps]
    assert commands[0].startswith("mem coordinator serve ")
    assert "--tls" not in commands[0]
    for asked in ("team join", "team invite bob", "team publish", "team sync", "recall-team",
                  "team retract"):  # fmt: skip
        assert any(asked in command for command in commands), asked
    assert [step.shown[-2] for step in steps if "recall-team" in step.command] == [
        "sources: coordinator ok, 1 hit",
        "sources: coordinator ok, 0 hits",
    ]


def test_a_section_without_commands_fails_the_walkthrough() -> None:
    steps, _ = steps_of("## Here\n\n```sh\n# on alice's laptop\nmem stats\n```\n")
    assert [step.section for step in steps] == ["Here"]
    with pytest.raises(WalkthroughError, match="no commands under the heading 'Elsewhere'"):
        in_section(steps, "Elsewhere")


def test_a_cd_holds_for_the_machine_s_next_commands(tmp_path: Path) -> None:
    block = "mkdir -p ~/trial && cd ~/trial\npwd\n#> …/alice/trial\n"
    _walk(f"```sh\n# on alice's laptop\n{block}```\n", tmp_path)


def test_a_block_that_names_no_machine_fails_the_walkthrough() -> None:
    with pytest.raises(WalkthroughError, match=r"README.md:2: its block names no machine"):
        steps_of("```sh\nmem stats\n```\n")


def test_a_machine_named_mid_block_fails_the_walkthrough() -> None:
    with pytest.raises(WalkthroughError, match=r"README.md:3: a machine named mid-block"):
        steps_of("```sh\n# on alice's laptop\n# on bob's laptop\nmem stats\n```\n")


def test_an_id_used_before_any_command_printed_it_fails_the_walkthrough(tmp_path: Path) -> None:
    with pytest.raises(WalkthroughError, match="01J9ZC4XQM is used before any shown output"):
        _walk("```sh\n# on alice's laptop\nmem forget 01J9ZC4XQM\n```\n", tmp_path)


@pytest.mark.parametrize(
    ("block", "why"),
    [
        pytest.param("echo hello\n#> hullo\n", "shown:\nhullo\nbut exit 0", id="other-output"),
        pytest.param("echo hello; echo there\n#> hello\n", "but exit 0", id="more-output"),
        pytest.param("false\n", "exit 1", id="exit-code"),
        pytest.param("mem tell-me\n", "exit 2", id="no-such-command"),
    ],
)
def test_a_command_that_prints_or_exits_otherwise_than_shown_fails_the_walkthrough(
    tmp_path: Path, block: str, why: str
) -> None:
    with pytest.raises(WalkthroughError, match=why):
        _walk(f"```sh\n# on alice's laptop\n{block}```\n", tmp_path)


def test_shown_output_binds_each_placeholder_id_once_and_lets_scores_and_times_vary() -> None:
    shown = ["1.559  01J9ZC4XQM  x…", "01J9ZC4XQM at 2026-01-05T09:30:00+00:00"]
    pattern, binds = shown_pattern(shown, {})

    printed = "0.802  01K0AAAAAA  x and more\n01K0AAAAAA at 2027-03-01T10:00:00Z\n"
    matched = pattern.fullmatch(printed)
    assert matched is not None
    assert (binds, matched.group("g0")) == (["01J9ZC4XQM"], "01K0AAAAAA")
    assert pattern.fullmatch("0.802  01K0AAAAAA  x\n01K0BBBBBB at 2027-03-01T10:00:00Z\n") is None
    bound, _ = shown_pattern(shown[:1], {"01J9ZC4XQM": "01K0CCCCCC"})
    assert bound.fullmatch("0.1  01K0AAAAAA  x\n") is None


def test_a_step_says_where_it_is_in_the_readme() -> None:
    step = Step(12, "bob", "mem stats", "")
    assert step.where() == "README.md:12 (bob): mem stats"
