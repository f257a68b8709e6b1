"""The Signoff client: ask a human before an agent acts, from any Python stack.

    from signoff import Client, requires_signoff

    @requires_signoff(policy="refunds")
    def issue_refund(order_id: str, amount_cents: int) -> dict: ...

Importing it imports only pydantic (aiohttp when an `AsyncClient` first sends): none of the
server's modules or dependencies.
"""

from signoff.client import AsyncClient, Client
from signoff.decorator import requires_signoff
from signoff.errors import ApiError, Declined, NotApproved, SignoffError, TimedOut, Unreachable
from signoff.models import Approval, ApprovalList, Run, RunList

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
