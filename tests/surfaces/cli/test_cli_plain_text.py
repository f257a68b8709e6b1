"""A command's plain text prints without rich, exactly as rich would print it: what rich
would change (tabs, the control codes it drops) still goes through rich."""

import pytest
from rich.console import Console

from bot.cli import base

SAMPLES = [
    "",
    "plain",
    "  leading and trailing spaces  ",
    "lines\n\nwith a blank one\n",
    "[bold]not markup[/bold] :smile: [link=x]y[/link]",
    "emoji 🎉, wide 漢字, combining e\u0301, zero\u200bwidth, right-to-left \u202e",
    "x" * 500,
    "an escape \x1b[31mred\x1b[0m, a null \x00, a delete \x7f, a next line \x85",
    "a separator\u2028 and a paragraph\u2029",
    "http://example.com/ 1.5 True None 'quoted' <tag>",
    "a tab\there, and\tagain",
    "漢字\ttab after wide characters",
    "a bell \a, a backspace \b, a vertical tab \v, a form feed \f",
    "carriage return\r\nline",
]


@pytest.mark.parametrize("terminal", [False, True], ids=["piped", "terminal"])
@pytest.mark.parametrize("text", SAMPLES)
def test_say_prints_text_as_rich_does(
    text: str, terminal: bool, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rich = Console(
        force_terminal=terminal,
        width=None if terminal else 200,
        markup=False,
        emoji=False,
        highlight=False,
    )
    monkeypatch.setattr(base, "console", lambda: rich)
    rich.print(text, soft_wrap=True)
    expected = capsys.readouterr().out

    base.say(text)

    assert capsys.readouterr().out == expected
