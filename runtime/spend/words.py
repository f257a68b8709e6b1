"""How a limit reads to a person, the same on every surface: "$420 of $500 for this customer
in 30 days, after this refund". Plain text with nothing the agent wrote in it (the key's
value is never shown, only what it names), so a surface need not escape it."""

from __future__ import annotations

from datetime import datetime

from runtime.display import money_text
from store.records import Envelope
from store.records import LimitState
from store.records import SpendWindow

_UNITS = (("week", 604800), ("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1))


def window_text(window: SpendWindow) -> str:
    """`in 30 days`, `in 1 hour`, `today (Europe/Paris)`."""
    if window.seconds is None:
        return f"today ({window.timezone or 'UTC'})"
    for unit, size in _UNITS:
        if window.seconds % size == 0:
            count = window.seconds // size
            return f"in {count} {unit}{'s' if count != 1 else ''}"
    return f"in {window.seconds} seconds"  # pragma: no cover - every length divides by 1 s


def quantity(state: LimitState, value: int) -> str:
    return money_text(value, state.money, whole=True) if state.money else f"{value:,}"


def noun(tool: str) -> str:
    """What one call of a tool is, in a word: `issue_refund` -> refund."""
    return tool.rsplit("_", 1)[-1] or "call"


def line(state: LimitState, tool: str) -> str:
    """One limit as it stood for a call when it was asked."""
    shadow = " (shadow: decides nothing)" if state.mode == "shadow" else ""
    if state.outcome == "error":
        return f"limit {state.name}{shadow}: not counted, so asked ({state.error})"
    each = f" for this {state.each}" if state.each else ""
    used = f"{quantity(state, state.after)} of {quantity(state, state.max)}"
    said = f"{used}{each} {window_text(state.window)}, after this {noun(tool)}"
    past = f" — over limit {state.name}" if state.after > state.max else ""
    return f"{said}{past}{shadow}"


def now_line(state: LimitState) -> str:
    """A limit's key as it stands now (`used` is the window's total)."""
    each = f" for this {state.each}" if state.each else ""
    used = f"{quantity(state, state.used)} of {quantity(state, state.max)}"
    return f"{state.name}: {used}{each} {window_text(state.window)}"


def envelope_amount(value: int, currency: str | None) -> str:
    return money_text(value, currency, whole=True) if currency else f"{value:,}"


def envelope_used(envelope: Envelope, currency: str | None) -> str:
    """`$1,200 of $2,000 and 12 of 20 refunds used`."""
    parts = []
    if envelope.max_amount is not None:
        used = envelope_amount(envelope.used_amount, currency)
        parts.append(f"{used} of {envelope_amount(envelope.max_amount, currency)}")
    if envelope.max_calls is not None:
        parts.append(f"{envelope.used_calls} of {envelope.max_calls} {noun(envelope.tool)}s")
    return " and ".join(parts) + " used"


def envelope_line(envelope: Envelope, currency: str | None, now: datetime) -> str:
    """One envelope as every surface lists it (plain text; the condition is the author's)."""
    status = envelope.status(now)
    shadow = " (shadow: approves nothing)" if envelope.mode == "shadow" else ""
    until = f"until {envelope.expires_at:%Y-%m-%d %H:%M} UTC"
    return (
        f"{envelope.id} {status}{shadow}: {envelope.tool} when {envelope.condition}: "
        f"{envelope_used(envelope, currency)}, {until}; by {envelope.author}: {envelope.reason}"
    )
