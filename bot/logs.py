"""Logging for the `signoff` command: one line per thing that happens to an approval or a
run (Signoff's own loggers, under `signoff`), and the libraries' chatter only when asked.

Two formats: for people (the default) and JSON, one object per line, for a log pipeline
(`--log-format json` or `SIGNOFF_LOG_FORMAT=json`), carrying `run_id`, `approval_id`,
`step` and `event` when the line is about them. In both, the message is made inert as the
CLI's tables are (`bot.inert.plain` after `flat`): what an agent, a request or a user
wrote cannot start a forged line, move the cursor or clear an operator's terminal.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from collections.abc import Iterable
from datetime import UTC
from datetime import datetime
from typing import Any
from typing import Literal

from bot.inert import flat
from bot.inert import plain

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
LIBRARIES = ("apscheduler", "aiohttp.access", "slack_bolt", "slack_sdk")
"""Loggers that report every job run, request or API call at INFO: WARNING unless verbose."""
LogFormat = Literal["human", "json"]
LOG_FORMATS: tuple[LogFormat, ...] = ("human", "json")


IDS = ("run_id", "approval_id", "step", "event")
HANDLER = "signoff-stderr"
REDACTED = "[redacted]"
SECRET_SHAPES = re.compile(
    r"xox[abeoprs]-[A-Za-z0-9-]+"  # Slack bot, user, app-config and refresh tokens
    r"|xapp-[A-Za-z0-9-]+"  # Slack app-level tokens (Socket Mode)
    r"|sk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}"  # model providers' API keys
    r"|AKIA[0-9A-Z]{16}"  # AWS access key ids
    r"|gh[pousr]_[A-Za-z0-9]{30,}"  # GitHub tokens
    r"|(?<=Bearer )[^\s'\",;\\]+"  # whatever a client sent as its bearer token
    r"|(?<=v0=)[0-9a-f]{64}"  # a Slack request signature
)
"""Secrets recognisable by their shape, wherever they appear in a line or a traceback."""
SECRET_NAMES = re.compile(r"(TOKEN|SECRET|KEY|PASSWORD|PASSWD)S?$")
"""Environment variables whose values are redacted from every line, whatever their shape."""
MIN_SECRET = 8


class Redactor:
    """Removes secrets from log records as they are made, so every handler (ours, pytest's,
    a library's) and every traceback (a third party's included) sees them redacted."""

    def __init__(self) -> None:
        self._known: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self._formatter = logging.Formatter()

    def add(self, values: Iterable[str | None]) -> None:
        """Redact these exact values too (settings' secrets, keys from the environment)."""
        fresh = {v for v in values if v and len(v) >= MIN_SECRET} - self._known
        if fresh:
            self._known |= fresh
            longest_first = sorted(self._known, key=len, reverse=True)
            self._pattern = re.compile("|".join(re.escape(v) for v in longest_first))

    def __call__(self, text: str) -> str:
        if self._pattern is not None:
            text = self._pattern.sub(REDACTED, text)
        return SECRET_SHAPES.sub(REDACTED, text)

    def record(self, record: logging.LogRecord) -> logging.LogRecord:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: leave it to the handler to report
            return record
        clean = self(message)
        if clean != message or record.args:
            record.msg, record.args = clean, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self(record.exc_text)
        if record.stack_info:
            record.stack_info = self(record.stack_info)
        return record


REDACT = Redactor()


def redact_secrets(values: Iterable[str | None] = ()) -> None:
    """Make every log record from now on free of secrets: `values`, the environment's
    tokens, secrets and keys, and anything shaped like one (SECRET_SHAPES). Idempotent."""
    REDACT.add(values)
    REDACT.add(v for k, v in os.environ.items() if SECRET_NAMES.search(k.upper()))
    factory = logging.getLogRecordFactory()
    if getattr(factory, "redacts", False):
        return

    def redacted(*args: object, **kwargs: object) -> logging.LogRecord:
        return REDACT.record(factory(*args, **kwargs))

    redacted.redacts = True  # type: ignore[attr-defined]  # a mark to find the factory by
    logging.setLogRecordFactory(redacted)


def inert(text: str) -> str:
    """One line with every control character written out: safe in any log line."""
    return plain(flat(text))


class ContextIds(logging.Filter):
    """Give every record the ids of what is being worked on (`runtime.runs.telemetry`), unless
    the line named them itself (`extra={...}`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        # Looked up, not imported: a command that never loads the runtime has no ids to add
        # and does not pay for importing it.
        telemetry = sys.modules.get("runtime.runs.telemetry")
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
        if record.exc_text:  # already redacted (`Redactor.record`)
            line["exception"] = record.exc_text
        elif record.exc_info:
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
    redact_secrets()
    root = logging.getLogger()
    if not root.handlers:  # a stderr handler, unless the root has one already (pytest's)
        handler = logging.StreamHandler()
        handler.set_name(HANDLER)
        handler.addFilter(ContextIds())
        root.addHandler(handler)
    for existing in root.handlers:
        if existing.get_name() == HANDLER:
            existing.setFormatter(JsonFormatter() if log_format == "json" else HumanFormatter())
    root.setLevel(logging.INFO if verbose else logging.WARNING)
    for name in LIBRARIES:
        logging.getLogger(name).setLevel(logging.NOTSET if verbose else logging.WARNING)
