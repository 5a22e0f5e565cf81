"""The prompt hook's own pieces: the lines and the note a warm server answers with are read
strictly."""

import pytest

from memmesh.agents.prompt import Line, lines_of, note_of


def test_the_warm_servers_lines_are_read_back_as_they_were_sent() -> None:
    sent = [
        Line(score=1.5, kind="gotcha", text="Staging needs the VPN", ref="01J"),
        Line(score=1, kind="fact", text="Ports", ref="abc/01K", author="bob"),
    ]

    assert lines_of([line._asdict() for line in sent]) == sent
    assert lines_of([{"score": 2, "kind": "fact", "text": "t", "ref": "r"}])[0].author == ""


@pytest.mark.parametrize(
    "answer",
    [
        None,
        {"score": 1.0},
        ["not a line"],
        [{"score": "1.0", "kind": "fact", "text": "t", "ref": "r"}],
        [{"score": True, "kind": "fact", "text": "t", "ref": "r"}],
        [{"kind": "fact", "text": "t", "ref": "r"}],
        [{"score": 1.0, "kind": 7, "text": "t", "ref": "r"}],
        [{"score": 1.0, "kind": "fact", "text": "t", "ref": "r", "extra": "x"}],
        [{"score": 1.0, "kind": "fact", "text": "t"}],
        [{"score": 1.0, "kind": "fact", "text": "t", "ref": ""}],
    ],
)
def test_an_answer_that_is_not_lines_is_refused(answer: object) -> None:
    with pytest.raises(ValueError, match="warm server's"):
        lines_of(answer)


def test_the_note_is_one_line_of_text() -> None:
    assert note_of("as of 2 hours ago") == "as of 2 hours ago"
    for bad in (None, 3, "as of\nnow", "a\rb"):
        with pytest.raises(ValueError, match="note"):
            note_of(bad)
