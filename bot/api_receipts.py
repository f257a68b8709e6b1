"""Receipts over HTTP: Signoff's public signing keys, an approval's signed receipt, and a
receipt checked by the server (`signoff.receipts.verify` checks one anywhere, offline).

    GET  /v1/keys                      the JWKS (public: no token needed)
    GET  /v1/approvals/{id}/receipt    the decision's receipt   approvals:*, runs:read, audit:read
    POST /v1/receipts/verify  {receipt, args?, idempotency_key?}  any known token
"""

from __future__ import annotations

from aiohttp import web

from bot.api_body import parse_body
from bot.http_auth import requires
from bot.http_errors import BadRequest
from bot.http_keys import RUNTIME
from bot.requests import ReceiptCheckRequest
from bot.sections import Scope
from signoff.receipts import BadReceipt
from signoff.receipts import check_signature
from signoff.receipts import verify

KEYS_PATH = "/v1/keys"
READ_RECEIPTS: tuple[Scope, ...] = (
    "approvals:request",
    "approvals:decide",
    "runs:read",
    "audit:read",
)


async def keys(request: web.Request) -> web.Response:
    return web.json_response(request.app[RUNTIME].queries.signing_keys())


@requires(*READ_RECEIPTS)
async def receipt(request: web.Request) -> web.Response:
    found = await request.app[RUNTIME].queries.receipt(request.match_info["approval_id"])
    if found is None:
        raise BadRequest("the approval is not decided yet, or this server signs no receipts")
    return web.json_response(found)


@requires(*READ_RECEIPTS)
async def check(request: web.Request) -> web.Response:
    body = await parse_body(request, ReceiptCheckRequest)
    jwks = request.app[RUNTIME].queries.signing_keys()
    try:
        verify(body.receipt, jwks, args=body.args, idempotency_key=body.idempotency_key)
    except BadReceipt as exc:
        return web.json_response({"valid": False, "why": str(exc)})
    return web.json_response({"valid": True, "kid": check_signature(body.receipt, jwks)})


def add_key_route(app: web.Application) -> None:
    app.router.add_get(KEYS_PATH, keys)


def add_receipt_routes(app: web.Application) -> None:
    app.router.add_get("/v1/approvals/{approval_id}/receipt", receipt)
    app.router.add_post("/v1/receipts/verify", check)
