"""The audit event an HTTP API change adds beside the runtime's own: it names the token the
request came with (`actor`: the token's actor; `detail.token`: its name)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from bot.http_auth import CALLER
from bot.http_keys import RUNTIME
from runtime.records import AuditEvent


async def audited(
    request: web.Request,
    action: str,
    *,
    run_id: str | None = None,
    approval_id: str | None = None,
    **detail: Any,
) -> None:
    """One audit event naming the token the request came with."""
    rt = request.app[RUNTIME]
    caller = request[CALLER]
    await rt.record_event(
        AuditEvent(
            action=action,
            actor=caller.actor,
            run_id=run_id,
            approval_id=approval_id,
            detail={"token": caller.name, **detail},
            at=rt.clock(),
        )
    )
