"""`[limits.<name>]` and `[envelopes]` in signoff.toml, as the runtime reads them.

A limit counts calls of its tools by a key (CEL: `args.customer_id`, `run.agent`, or `all`
for one counter) and an amount (CEL: `args.amount_cents`, or 1 to count calls) over a window
(`30d`, `1h`, or `day`: the calendar day in `timezone`), and says what happens past its
`max`: `ask` under a named policy, or `deny` with a reason. In `mode = "shadow"` it decides
nothing and records what it would have done. Expressions are compiled when the file is read;
what they name is checked against the tools at start-up (`runtime.spend.checks`).
"""

from __future__ import annotations

import json
import math
import re
from datetime import timedelta
from typing import Literal
from zoneinfo import ZoneInfo
from zoneinfo import ZoneInfoNotFoundError

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import field_validator
from pydantic import model_validator

from runtime.approvals import PositiveDuration
from runtime.approvals import parse_duration
from runtime.approvals import rule_program
from store.records import SpendWindow

BUCKETS = 30
"""A sliding window is counted in this many buckets (a day each for `30d`)."""
ALL = "all"
"""The key of a limit with one counter for every call."""
DAY = "day"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_NUMBER = re.compile(r"^\d+$")
Mode = Literal["enforce", "shadow"]


class LimitConfig(BaseModel):
    """One `[limits.<name>]` table."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tools: tuple[str, ...] = Field(min_length=1)
    """The tools whose calls it counts."""
    key: str = ALL
    """CEL over the call (`args`, `tool`, `run`, `now`): one counter per value; `all`: one."""
    amount: str = "1"
    """CEL: what a call adds (a whole number, e.g. cents); 1 counts calls."""
    max: int = Field(ge=0)
    window: str
    """`30d`, `1h`, ... (sliding), or `day` (the calendar day in `timezone`)."""
    timezone: str | None = None
    ask: str | None = None
    """Past the limit, ask under this policy (`default` or a `[policies.tools.<name>]`)."""
    deny: str | None = Field(None, min_length=1)
    """Past the limit, decline at once with this reason."""
    mode: Mode = "enforce"
    money: str | None = Field(None, pattern=r"^[A-Z]{3}$")
    """The currency the amounts are cents of (`USD`): cards say "$420", not 42000."""
    each: str | None = Field(None, max_length=40)
    """What the key names (`customer`): cards say "for this customer"."""
    label: str | None = Field(None, max_length=100)

    @field_validator("key", "amount")
    @classmethod
    def _compiles(cls, expression: str) -> str:
        if expression != ALL and not _NUMBER.match(expression):
            rule_program(expression)
        return expression

    @field_validator("window")
    @classmethod
    def _window(cls, window: str) -> str:
        if window != DAY:
            length = parse_duration(window, unit_required=True)
            if length < timedelta(seconds=1):
                raise ValueError(f"{window!r} is shorter than a second")
        return window

    @field_validator("timezone")
    @classmethod
    def _zone(cls, zone: str | None) -> str | None:
        if zone is not None:
            try:
                ZoneInfo(zone)
            except (ZoneInfoNotFoundError, ValueError):
                raise ValueError(f"{zone!r} is not a time zone (e.g. Europe/Paris)") from None
        return zone

    @model_validator(mode="after")
    def _one_outcome(self) -> LimitConfig:
        if (self.ask is None) == (self.deny is None):
            raise ValueError(
                'say what happens past the limit: ask = "<policy>" or deny = "<reason>"'
            )
        if self.timezone is not None and self.window != DAY:
            raise ValueError('timezone is for window = "day" (a calendar day)')
        return self

    @property
    def spend_window(self) -> SpendWindow:
        if self.window == DAY:
            return SpendWindow(timezone=self.timezone or "UTC")
        seconds = int(parse_duration(self.window).total_seconds())
        return SpendWindow(seconds=seconds, width=max(1, math.ceil(seconds / BUCKETS)))

    def definition(self) -> str:
        """What decides its counting, as JSON (a change of it is audited)."""
        return json.dumps(self.model_dump(mode="json"), sort_keys=True)


class EnvelopesConfig(BaseModel):
    """`[envelopes]`: how long the budgets approvers hand out may last, and when a second
    writer confirms one."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    default_expiry: PositiveDuration = timedelta(hours=8)
    max_expiry: PositiveDuration = timedelta(days=7)
    second_writer: Literal["irreversible", "always", "never"] = "irreversible"
    """Which envelopes wait for a second writer: those for a tool whose effect cannot be
    compensated (as learned rules do), every one, or none."""
    mode: Mode = "enforce"
    """`shadow`: envelopes approve nothing and record what they would have approved."""

    @model_validator(mode="after")
    def _expiry_within_max(self) -> EnvelopesConfig:
        if self.default_expiry > self.max_expiry:
            raise ValueError("default_expiry is longer than max_expiry")
        return self


def check_names(limits: dict[str, LimitConfig]) -> dict[str, LimitConfig]:
    """Limit names are CEL identifiers (rules read `limits.<name>.used`)."""
    for name in limits:
        if not _NAME.match(name):
            raise ValueError(f"limit name {name!r} is not a word (letters, digits, _)")
    return limits


class SpendConfig(BaseModel):
    """The limits (`[limits.<name>]`) and `[envelopes]` a runtime counts calls against."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    limits: dict[str, LimitConfig] = Field(default_factory=dict)
    envelopes: EnvelopesConfig = EnvelopesConfig()

    @field_validator("limits")
    @classmethod
    def _names(cls, limits: dict[str, LimitConfig]) -> dict[str, LimitConfig]:
        return check_names(limits)
