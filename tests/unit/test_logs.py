"""Logging set-up of the `signoff` command: Signoff's lines, not the libraries' chatter."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest

from bot.logs import LIBRARIES
from bot.logs import ContextIds
from bot.logs import HumanFormatter
from bot.logs import JsonFormatter
from bot.logs import configure_logging
from runtime.runs.telemetry import log_context
from runtime.runs.telemetry import set_log_step

NAMES = ("", "signoff", *LIBRARIES)


@pytest.fixture(autouse=True)
def restore_levels() -> Iterator[None]:
    levels = {name: logging.getLogger(name).level for name in NAMES}
    yield
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


def shown(name: str, level: int) -> bool:
    return logging.getLogger(name).isEnabledFor(level)


def test_library_chatter_is_quiet_and_signoff_lines_show_under_serve() -> None:
    configure_logging(verbose=False)
    logging.getLogger("signoff").setLevel(logging.INFO)  # what `signoff serve` does
    assert shown("signoff.approvals", logging.INFO)
    assert shown("signoff.callbacks", logging.INFO)
    for name in ("apscheduler.executors.default", "aiohttp.access", "slack_bolt.App", "slack_sdk"):
        assert not shown(name, logging.INFO), name
        assert shown(name, logging.WARNING), name


def test_verbose_shows_the_libraries_too() -> None:
    configure_logging(verbose=False)
    configure_logging(verbose=True)
    for name in ("apscheduler.executors.default", "aiohttp.access", "slack_bolt.App", "signoff"):
        assert shown(name, logging.INFO), name
    assert not shown("apscheduler", logging.DEBUG)


def test_without_verbose_the_cli_prints_warnings_only() -> None:
    configure_logging(verbose=False)
    assert not shown("some.library", logging.INFO)
    assert shown("some.library", logging.WARNING)


# formats


def record(message: str, *args: object, **extra: object) -> logging.LogRecord:
    made = logging.LogRecord("signoff.test", logging.INFO, __file__, 1, message, args, None)
    made.__dict__.update(extra)
    return made


def test_json_lines_parse_and_carry_the_ids_a_line_names() -> None:
    line = JsonFormatter().format(
        record("approval %s decided", "ap_1", approval_id="ap_1", run_id="r1", event="decided")
    )
    parsed = json.loads(line)
    assert parsed["message"] == "approval ap_1 decided"
    assert (parsed["approval_id"], parsed["run_id"], parsed["event"]) == ("ap_1", "r1", "decided")
    assert parsed["level"] == "INFO"
    assert parsed["logger"] == "signoff.test"
    assert "step" not in parsed


def test_lines_written_while_a_run_is_driven_carry_its_ids() -> None:
    made = record("tool failed")
    with log_context(run_id="r9"):
        set_log_step(3)
        ContextIds().filter(made)
    parsed = json.loads(JsonFormatter().format(made))
    assert (parsed["run_id"], parsed["step"]) == ("r9", 3)
    after = record("later")
    ContextIds().filter(after)
    assert getattr(after, "run_id", None) is None  # the context ended with the block


HOSTILE = "task \x1b[2J\x1b]0;owned\x07 done\nFAKE 2026 INFO signoff: approved\x00\u202e"


def test_untrusted_text_is_inert_in_both_formats() -> None:
    human = HumanFormatter().format(record("run r1 task %s", HOSTILE))
    as_json = JsonFormatter().format(record("run r1 task %s", HOSTILE))
    for text in (human, json.loads(as_json)["message"]):
        assert "\n" not in text
        assert not any(ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0 for ch in text), text
        assert "\u202e" not in text
        assert "\\x1b[2J" in text  # written out, as the CLI tables do
    assert "\n" not in as_json
    assert "\x1b" not in as_json


def test_an_unknown_log_format_is_refused() -> None:
    with pytest.raises(ValueError, match="human, json"):
        configure_logging(verbose=False, log_format="xml")
