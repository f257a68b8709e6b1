"""Logging for the `signoff` command: one line per thing that happens to an approval or a
run (Signoff's own loggers, under `signoff`), and the libraries' chatter only when asked.

Two formats: for people (the default) and JSON, one object per line, for a log pipeline
(`--log-format json` or `SIGNOFF_LOG_FORMAT=json`), carrying `run_id`, `approval_id`,
`step` and `event` when the line is about them. In both, the message is made inert as the
CLI's tables are (`bot.slack.escape.plain` after `flat`): what an agent, a request or a user
wrote cannot start a forged line, move the cursor or clear an operator's terminal.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

from bot.slack.escape import flat, plain

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
LIBRARIES = ("apscheduler", "aiohttp.access", "slack_bolt", "slack_sdk")
"""Loggers that report every job run, request or API call at INFO: WARNING unless verbose."""
LogFormat = Literal["human", "json"]
LOG_FORMATS: tuple[LogFormat, ...] = ("human", "json")


class LogFormatChoice(StrEnum):
    """The formats as a command-line choice."""

    human = "human"
    json = "json"


IDS = ("run_id", "approval_id", "step", "event")
HANDLER = "signoff-stderr"


def inert(text: str) -> str:
    """One line with every control character written out: safe in any log line."""
    return plain(flat(text))


class ContextIds(logging.Filter):
    """Give every record the ids of what is being worked on (`runtime.telemetry`), unless
    the line named them itself (`extra={...}`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        # Looked up, not imported: a command that never loads the runtime has no ids to add
        # and does not pay for importing it.
        telemetry = sys.modules.get("runtime.telemetry")
        ids = telemetry.LOG_CONTEXT.get() if telemetry is not None else None
        for name, value in (ids or {}).items():
            if getattr(record, name, None) is None:
                setattr(record, name, value)
        return True


class HumanFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__(FORMAT)

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = inert(record.message)
        return super().formatMessage(record)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time (UTC), level, logger, message, the ids, and the
    exception's traceback as one string field."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": inert(record.getMessage()),
        }
        for name in IDS:
            value = getattr(record, name, None)
            if value is not None:
                line[name] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=True, default=str)


def configure_logging(verbose: bool, log_format: str = "human") -> None:
    """Log to stderr: INFO and up when `verbose` (-v), else WARNING and up.

    Signoff's own loggers follow the root level (`signoff serve` raises `signoff` to INFO);
    the libraries in LIBRARIES stay at WARNING unless `verbose`, so a scheduler polling every
    few seconds or every HTTP request does not bury what happened to the approvals.
    """
    if log_format not in LOG_FORMATS:
        raise ValueError(f"log format must be one of {', '.join(LOG_FORMATS)}, not {log_format!r}")
    root = logging.getLogger()
    if not root.handlers:  # a stderr handler, unless the root has one already (pytest's)
        handler = logging.StreamHandler()
        handler.set_name(HANDLER)
        handler.addFilter(ContextIds())
        root.addHandler(handler)
    for handler in root.handlers:
        if handler.get_name() == HANDLER:
            handler.setFormatter(JsonFormatter() if log_format == "json" else HumanFormatter())
    root.setLevel(logging.INFO if verbose else logging.WARNING)
    for name in LIBRARIES:
        logging.getLogger(name).setLevel(logging.NOTSET if verbose else logging.WARNING)
