"""A tool that raised, in the log: one warning with its traceback, the run, call and step it
was in. The values of the arguments the tool marks sensitive are masked in the line and in
the traceback (an exception's text often repeats what it was given); secrets recognisable
anywhere are removed by the log's own redaction (`bot.logs`)."""

from __future__ import annotations

import logging

from runtime.tools import Tool
from store import Effect
from store.records import SENSITIVE_MASK

log = logging.getLogger("signoff.tools")
MIN_MASKED = 3
"""Shorter values are not masked: "1" or "ok" would blot out the whole traceback."""


def sensitive_values(effect: Effect) -> list[str]:
    """The values of the effect's sensitive arguments, as they may appear in a text."""
    values = (str(v) for name, v in effect.args.items() if name in effect.sensitive)
    return sorted((v for v in values if len(v) >= MIN_MASKED), key=len, reverse=True)


def masked(text: str, values: list[str]) -> str:
    """`text` with each of `values` (longest first) replaced by the mask."""
    for value in values:
        text = text.replace(value, SENSITIVE_MASK)
    return text


def tool_raised(tool: Tool, effect: Effect, exc: BaseException) -> None:
    hidden = sensitive_values(effect)
    log.warning(
        "tool %s raised in run %s (call %s, step %d): %s: %s",
        tool.name,
        effect.run_id,
        effect.call_id,
        effect.step,
        type(exc).__name__,
        exc,
        exc_info=exc,
        extra={
            "run_id": effect.run_id,
            "step": effect.step,
            "event": "tool_raised",
            "masked": hidden,
        },
    )


class _MaskSensitive(logging.Filter):
    """Runs once per record, before any handler sees it."""

    def filter(self, record: logging.LogRecord) -> bool:
        hidden = getattr(record, "masked", None) or []
        if not hidden:
            return True
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        record.msg, record.args = masked(record.getMessage(), hidden), ()
        record.exc_text = masked(record.exc_text or "", hidden) or None
        return True


log.addFilter(_MaskSensitive())
