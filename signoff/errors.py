"""What the client raises.

SignoffError
 ├── ApiError      the server refused or failed (`status`, `reason`, the JSON `body`)
 ├── Unreachable   no answer from the server after every retry
 └── NotApproved   a gated call did not get an approval; the function was not called
      ├── Declined   a human (or a rule, or the deadline) declined it: `reason`, `decided_by`
      └── TimedOut   nobody decided before the caller's timeout; the approval is still pending
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

if TYPE_CHECKING:  # the models load with the client, not with an error class
    from signoff.models import Approval


class SignoffError(Exception):
    """Signoff could not do what was asked."""


class ApiError(SignoffError):
    """The server refused the request or failed."""

    def __init__(self, status: int, reason: str, body: dict[str, Any] | None = None) -> None:
        super().__init__(f"{status}: {reason}")
        self.status = status
        self.reason = reason
        self.body = body or {}


class Unreachable(SignoffError):
    """The server did not answer (after every retry)."""


class NotApproved(SignoffError):
    """The call was not approved, so it was not made."""

    def __init__(self, message: str, approval: Approval) -> None:
        super().__init__(message)
        self.approval = approval


class Declined(NotApproved):
    """Declined: `reason` says why (`expired` when its deadline passed), `decided_by` who."""

    def __init__(self, approval: Approval) -> None:
        self.reason = approval.reason
        self.decided_by = approval.decided_by
        why = f": {self.reason}" if self.reason else ""
        super().__init__(f"{approval.tool} was declined by {self.decided_by}{why}", approval)


class TimedOut(NotApproved):
    """Nobody decided in time; the approval is still pending (and is not acted on)."""

    def __init__(self, approval: Approval, waited: float) -> None:
        self.waited = waited
        super().__init__(
            f"{approval.tool}: no decision on approval {approval.id} within {waited:g} s",
            approval,
        )
