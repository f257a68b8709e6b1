"""Spending limits and envelopes: what a tool may spend in a window, checked when an
approval is asked and counted in its transaction.

`__all__` names what the other packages may import, each loaded on first use
(`runtime.exports.lazy`); a module path is private to the package."""

from __future__ import annotations

from typing import TYPE_CHECKING

from runtime.exports import lazy

if TYPE_CHECKING:
    from runtime.spend.checks import check_limits
    from runtime.spend.checks import counted
    from runtime.spend.config import EnvelopesConfig
    from runtime.spend.config import LimitConfig
    from runtime.spend.config import SpendConfig
    from runtime.spend.config import check_names
    from runtime.spend.desk import SpendDesk
    from runtime.spend.envelopes import EnvelopeNotAllowed
    from runtime.spend.envelopes import EnvelopeNotFound
    from runtime.spend.envelopes import EnvelopeRefused
    from runtime.spend.envelopes import budget
    from runtime.spend.envelopes import currency_of
    from runtime.spend.envelopes import lasting
    from runtime.spend.words import envelope_line
    from runtime.spend.words import envelope_used
    from runtime.spend.words import line as limit_line

__all__ = [
    "EnvelopeNotAllowed",
    "EnvelopeNotFound",
    "EnvelopeRefused",
    "EnvelopesConfig",
    "LimitConfig",
    "SpendConfig",
    "SpendDesk",
    "budget",
    "check_limits",
    "check_names",
    "counted",
    "currency_of",
    "envelope_line",
    "envelope_used",
    "lasting",
    "limit_line",
]

_HOME = {
    "check_limits": "runtime.spend.checks",
    "check_names": "runtime.spend.config",
    "counted": "runtime.spend.checks",
    "limit_line": "runtime.spend.words:line",
    "EnvelopesConfig": "runtime.spend.config",
    "LimitConfig": "runtime.spend.config",
    "SpendConfig": "runtime.spend.config",
    "SpendDesk": "runtime.spend.desk",
    "EnvelopeNotAllowed": "runtime.spend.envelopes",
    "EnvelopeNotFound": "runtime.spend.envelopes",
    "EnvelopeRefused": "runtime.spend.envelopes",
    "budget": "runtime.spend.envelopes",
    "currency_of": "runtime.spend.envelopes",
    "lasting": "runtime.spend.envelopes",
    "envelope_line": "runtime.spend.words",
    "envelope_used": "runtime.spend.words",
}

__getattr__, __dir__ = lazy(__name__, _HOME)
