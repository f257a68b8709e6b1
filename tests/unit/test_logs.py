"""Logging set-up of the `signoff` command: Signoff's lines, not the libraries' chatter."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from bot.logs import LIBRARIES, configure_logging

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
