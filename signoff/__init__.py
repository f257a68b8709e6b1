"""The Signoff client: ask a human before an agent acts, from any Python stack.

    from signoff import Client, requires_signoff

    @requires_signoff(policy="refunds")
    def issue_refund(order_id: str, amount_cents: int) -> dict: ...

Importing it imports only pydantic (aiohttp when an `AsyncClient` first sends): none of the
server's modules or dependencies. Each name loads its module when first used (PEP 562), so
importing one module of the package (`signoff.receipts`) loads the client only if asked.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING
from typing import Any

if TYPE_CHECKING:
    from signoff.client import AsyncClient
    from signoff.client import Client
    from signoff.decorator import requires_signoff
    from signoff.errors import ApiError
    from signoff.errors import Declined
    from signoff.errors import NotApproved
    from signoff.errors import SignoffError
    from signoff.errors import TimedOut
    from signoff.errors import Unreachable
    from signoff.models import Approval
    from signoff.models import ApprovalList
    from signoff.models import Run
    from signoff.models import RunList

__all__ = [
    "ApiError",
    "Approval",
    "ApprovalList",
    "AsyncClient",
    "Client",
    "Declined",
    "NotApproved",
    "Run",
    "RunList",
    "SignoffError",
    "TimedOut",
    "Unreachable",
    "requires_signoff",
]

_HOME = {
    **dict.fromkeys(("AsyncClient", "Client"), "signoff.client"),
    "requires_signoff": "signoff.decorator",
    **dict.fromkeys(
        ("ApiError", "Declined", "NotApproved", "SignoffError", "TimedOut", "Unreachable"),
        "signoff.errors",
    ),
    **dict.fromkeys(("Approval", "ApprovalList", "Run", "RunList"), "signoff.models"),
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'signoff' has no attribute {name!r}")
    value = getattr(import_module(_HOME[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
