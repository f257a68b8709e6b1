"""How a tool's arguments read to a person: declared on the tool (`tool(display=...)`),
checked against its parameters when it is defined, rendered by each surface."""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from decimal import Decimal

from runtime.errors import DefinitionError


@dataclass(frozen=True, slots=True)
class Display:
    """How a tool's arguments read to a person (approval cards, modals, pages, `/runs`, the
    CLI, the console); every part is optional, and a tool without one is shown as called.

    `money`: an argument holding an amount in the currency's minor unit (cents), and either
    the currency's ISO code (`"USD"`) or the name of the argument that holds it:
    `{"amount_cents": "currency"}` shows 2500 with currency "usd" as "$25.00".
    `links`: an argument and a URL template for it, e.g.
    `{"order_id": "https://shop.example/orders/{order_id}"}`.
    `title`: a short sentence over the arguments, shown as they read:
    `"Refund {amount_cents} on order {order_id}"` reads "Refund $25.00 on order 4471"."""

    title: str | None = None
    money: Mapping[str, str] = field(default_factory=dict)
    links: Mapping[str, str] = field(default_factory=dict)

    def check(self, tool: str, parameters: frozenset[str]) -> None:
        """Refuse a display that names arguments the tool does not take."""
        named = [*self.money, *self.links, *_placeholders(self.title)]
        named += [c for c in self.money.values() if not _CURRENCY.fullmatch(c)]
        for template in self.links.values():
            named += _placeholders(template)
        unknown = sorted(set(named) - parameters)
        if unknown:
            raise DefinitionError(
                f"tool {tool!r}: its display names {', '.join(map(repr, unknown))}, which it "
                "does not take (a currency is an ISO code like 'USD' or an argument's name)"
            )


_CURRENCY = re.compile(r"[A-Z]{3}")


def _placeholders(template: str | None) -> list[str]:
    if not template:
        return []
    try:
        return [name for _, name, _, _ in string.Formatter().parse(template) if name]
    except ValueError as exc:
        raise DefinitionError(f"display template {template!r}: {exc}") from None


SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥", "CAD": "CA$", "AUD": "A$"}
"""Currencies written with a symbol; any other is written after the amount ("25.00 CHF")."""
NO_MINOR_UNIT = frozenset({"JPY", "KRW", "ISK", "CLP", "VND"})


def money_text(amount: int, currency: str, *, whole: bool = False) -> str:
    """An amount in the currency's minor unit as people read it: 2500 USD is `$25.00`
    (`$25` with `whole`, when it has no cents)."""
    currency = currency.upper()
    digits = 0 if currency in NO_MINOR_UNIT else 2
    major = Decimal(amount).scaleb(-digits)
    if whole and major == major.to_integral_value():
        digits = 0
    number = f"{abs(major):,.{digits}f}"
    sign = "-" if amount < 0 else ""
    if currency in SYMBOLS:
        return f"{sign}{SYMBOLS[currency]}{number}"
    return f"{sign}{number} {currency}"
