"""An approval's webhook delivery history, over HTTP:

    GET /v1/approvals/{id}/deliveries    approvals:request, approvals:decide or runs:read

Every attempt at POSTing its decision to its `callback_url`, oldest first: when, the
receiver's status or the error, and when it is tried next (`bot.callbacks` audits each
attempt as it ends, so the history is the audit trail's `callback_attempt` events); and
every attempt at e-mailing an approver (`channel`: "email", `bot.email.sender`'s
`email_attempt` events).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from bot.http_auth import requires
from bot.http_keys import RUNTIME
from runtime.records import AuditEvent

ATTEMPT = "callback_attempt"
EMAIL = "email_attempt"
"""An attempt at e-mailing an approver (`bot.email.sender`)."""
PAGE = 1000
MAX_ATTEMPTS = 10_000
"""The most attempts listed (far past any retry schedule: six a round)."""


@requires("approvals:request", "approvals:decide", "runs:read")
async def list_deliveries(request: web.Request) -> web.Response:
    rt = request.app[RUNTIME]
    approval = await rt.queries.approval(request.match_info["approval_id"])  # unknown: 404
    attempts: list[dict[str, Any]] = []
    after = 0
    while len(attempts) < MAX_ATTEMPTS:
        events = await rt.queries.audit(approval_id=approval.id, after=after, limit=PAGE)
        attempts += [delivery_view(e) for e in events if e.action in (ATTEMPT, EMAIL)]
        if len(events) < PAGE:
            break
        after = events[-1].id or after
    return web.json_response({"deliveries": attempts[:MAX_ATTEMPTS]})


def delivery_view(event: AuditEvent) -> dict[str, Any]:
    detail = event.detail
    return {
        "channel": "email" if event.action == EMAIL else "callback",
        "attempt": detail.get("attempt", 1),
        "at": event.at.isoformat(),
        "url": detail.get("url", ""),
        "state": detail.get("state"),
        "delivered": detail.get("error") is None,
        "status_code": detail.get("status_code"),
        "error": detail.get("error"),
        "next_attempt_at": detail.get("next_attempt_at"),
    }


def add_deliveries_route(app: web.Application) -> None:
    app.router.add_get("/v1/approvals/{approval_id}/deliveries", list_deliveries)
