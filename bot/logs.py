"""Logging for the `signoff` command: one line per thing that happens to an approval or a
run (Signoff's own loggers, under `signoff`), and the libraries' chatter only when asked."""

from __future__ import annotations

import logging

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
LIBRARIES = ("apscheduler", "aiohttp.access", "slack_bolt", "slack_sdk")
"""Loggers that report every job run, request or API call at INFO: WARNING unless verbose."""


def configure_logging(verbose: bool) -> None:
    """Log to stderr: INFO and up when `verbose` (-v), else WARNING and up.

    Signoff's own loggers follow the root level (`signoff serve` raises `signoff` to INFO);
    the libraries in LIBRARIES stay at WARNING unless `verbose`, so a scheduler polling every
    few seconds or every HTTP request does not bury what happened to the approvals.
    """
    logging.basicConfig(format=FORMAT)  # a stderr handler, unless the root has one already
    logging.getLogger().setLevel(logging.INFO if verbose else logging.WARNING)
    for name in LIBRARIES:
        logging.getLogger(name).setLevel(logging.NOTSET if verbose else logging.WARNING)
