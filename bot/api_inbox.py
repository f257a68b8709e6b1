"""What waits and how runs ended, over HTTP: the list endpoints and the outcome a run's view
adds (its final answer and every approval it asked for).

    GET /v1/approvals?state=&run_id=&tool=&requested_by=&cursor=&limit=
        oldest first                  approvals:request, approvals:decide or runs:read
    GET /v1/runs?status=&agent=&requested_by=&cursor=&limit=
        newest first                  runs:read

Each answers `{"approvals"|"runs": [...], "next_cursor": str | null}`: ask again with
`cursor=<next_cursor>` for the next page; null means this was the last. An unknown query
parameter, state, status or cursor is a 400 naming it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from aiohttp import web

from bot import words
from bot.api_body import refuse_unknown
from bot.http_auth import requires
from bot.http_errors import BadRequest
from bot.http_keys import RUNTIME
from bot.json_views import approval_view
from runtime.history import INBOX_PAGE
from runtime.records import Run

APPROVAL_FILTERS = ("state", "run_id", "tool", "requested_by")
RUN_FILTERS = ("status", "agent", "requested_by")
DEFAULT_PAGE = 100


@requires("approvals:request", "approvals:decide", "runs:read")
async def list_approvals(request: web.Request) -> web.Response:
    filters, cursor, limit = _query(request.query, APPROVAL_FILTERS)
    listed = await request.app[RUNTIME].page_approvals(**filters, cursor=cursor, limit=limit)
    return web.json_response(
        {
            "approvals": [approval_view(a) for a in listed.items],
            "next_cursor": listed.next_cursor,
        }
    )


@requires("runs:read")
async def list_runs(request: web.Request) -> web.Response:
    filters, cursor, limit = _query(request.query, RUN_FILTERS)
    listed = await request.app[RUNTIME].page_runs(**filters, cursor=cursor, limit=limit)
    return web.json_response(
        {"runs": [run_summary(run) for run in listed.items], "next_cursor": listed.next_cursor}
    )


def run_summary(run: Run) -> dict[str, Any]:
    """A run as a list shows it: its record without the worker's lease."""
    view = run.model_dump(mode="json", exclude={"lease_owner", "lease_expires_at"})
    return view | {"outcome": words.outcome_of(run)}


def _query(
    query: Mapping[str, str], filters: tuple[str, ...]
) -> tuple[dict[str, str | None], str | None, int]:
    refuse_unknown(query, {*filters, "cursor", "limit"}, name_known=True)
    chosen = {name: query.get(name) or None for name in filters}
    limit = page_limit(query.get("limit"), default=DEFAULT_PAGE, most=INBOX_PAGE)
    return chosen, query.get("cursor") or None, limit


def page_limit(text: str | None, *, default: int, most: int) -> int:
    """The `limit` query parameter: `default` when absent, else a number from 1 to `most`."""
    if text is None:
        return default
    if not re.fullmatch(r"[0-9]{1,6}", text) or not 1 <= int(text) <= most:
        raise BadRequest(f"limit: {text[:20]!r} is not a number from 1 to {most}")
    return int(text)


def add_list_routes(app: web.Application) -> None:
    app.router.add_get("/v1/approvals", list_approvals)
    app.router.add_get("/v1/runs", list_runs)
