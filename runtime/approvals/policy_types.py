"""What policies and rules share: durations, approver ids and the settings themselves (a
leaf module, so `runtime.approvals.policy` and `runtime.approvals.rules` can both use them)."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated
from typing import Any
from typing import Literal

from pydantic import AfterValidator
from pydantic import BaseModel
from pydantic import BeforeValidator
from pydantic import ConfigDict
from pydantic import Field

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d|w)?\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(value: Any, *, unit_required: bool = False) -> Any:
    """`90`, `"90s"`, `"15m"`, `"2h"`, `"1d"` or a timedelta (bare numbers are seconds)."""
    if isinstance(value, timedelta) or value is None:
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return timedelta(seconds=value)
    if isinstance(value, str):
        match = _DURATION.match(value)
        if match and (match[2] or not unit_required):
            try:
                return timedelta(seconds=float(match[1]) * _UNITS[match[2] or "s"])
            except OverflowError:
                raise ValueError(f"{value!r} is longer than any date") from None
        raise ValueError(f"{value!r} is not a duration with a unit (e.g. 90s, 15m, 2h, 30d)")
    return value


def approver_ids(approvers: tuple[str, ...]) -> tuple[str, ...]:
    """Ids as the `Directory` knows them: the runtime asks only that each is one word (the
    surface that loads policies checks its own format, e.g. Slack's)."""
    for who in approvers:
        if not who or who != who.strip() or any(c.isspace() for c in who):
            raise ValueError(f"{who!r} is not an approver id (one word, no spaces)")
    return approvers


def positive(value: timedelta | None) -> timedelta | None:
    if value is not None and value <= timedelta(0):
        raise ValueError("must be a positive duration")
    return value


Duration = Annotated[timedelta, BeforeValidator(parse_duration)]
PositiveDuration = Annotated[timedelta, BeforeValidator(parse_duration), AfterValidator(positive)]
Approvers = Annotated[tuple[str, ...], AfterValidator(approver_ids)]


class Settings(BaseModel):
    """What a policy sets, and a rule may set instead for the calls it matches."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    channel: str | None = None
    approvers: Approvers = ()
    allow_self_approval: bool = False
    required_approvals: int = Field(default=1, ge=1)
    allow_edit: bool = False
    remind_every: PositiveDuration | None = None
    max_reminders: int = Field(default=3, ge=0)
    escalate_to: str | None = None
    timeout: PositiveDuration | None = None
    on_timeout: Literal["decline", "escalate"] = "decline"
    valid_for: PositiveDuration | None = None
    """How long an approval stays good: approved but not run within it (a run parked
    behind a slow worker, an outage), the call is asked again."""
    cool_off: PositiveDuration | None = None
    """An approved call of a reversible tool (one with a compensator) waits this long before
    it runs, and any of its approvers may cancel it meanwhile (issue 42.6)."""
    undo_for: PositiveDuration | None = None
    """How long after an approved reversible call ran its approvers may undo it, once,
    through the tool's compensator (recorded as a rollback of that one effect)."""
    step_up: Literal["passkey"] | None = None
    """`"passkey"`: an approval counts only once the approver confirms it with a WebAuthn
    passkey registered on the approvals page (`bot.approvers.passkeys`); a decline does not
    need one."""
    decide_within: PositiveDuration | None = None
    """The decision target ("decided within 30m"): cards, reminders and metrics say when an
    approval misses it (`runtime.approvals.slo`); it changes nothing about who decides or when."""
