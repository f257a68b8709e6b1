"""The OpenAPI 3.1 document of `/v1`, generated from the models the API reads and answers
with: the request bodies of `bot.requests` (what the server validates) and the responses of
`signoff.models` (what the client parses). Served at `/v1/openapi.json`; checked in as
`docs/openapi.json` (`python -m bot.openapi > docs/openapi.json` writes it again, and a test
says when it is stale).
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from aiohttp import web
from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode
from pydantic.json_schema import models_json_schema

from bot.requests import ApprovalRequest
from bot.requests import CancelRequest
from bot.requests import DecisionRequest
from bot.requests import EnvelopeChangeRequest
from bot.requests import EnvelopeRequest
from bot.requests import PersonRequest
from bot.requests import ReceiptCheckRequest
from bot.requests import ResolveRequest
from bot.requests import RunRequest
from signoff import models

REQUESTS: tuple[type[BaseModel], ...] = (
    RunRequest,
    ApprovalRequest,
    DecisionRequest,
    CancelRequest,
    ResolveRequest,
    ReceiptCheckRequest,
    EnvelopeRequest,
    EnvelopeChangeRequest,
    PersonRequest,
)
REF = "#/components/schemas/{model}"
Json = dict[str, Any]

READ_APPROVALS = ["approvals:request", "approvals:decide", "runs:read"]
ERRORS = {
    "400": "malformed: the reason says what is wrong; nothing changed",
    "401": "no known bearer token",
    "403": "the token lacks the scope (or the person may not decide, or did not ask)",
    "404": "no such run, approval or endpoint",
    "409": "decided already, the run is finished or busy, or other runs rely on what it would undo",
    "413": "the body is over 1 MiB",
    "429": "over the token's rate; Retry-After says when to retry",
    "503": "the database's disk is full (writes), the API is off, or this worker stepped "
    "aside for a newer Signoff (writes; a row only a newer one reads): Retry-After says when",
}


@cache
def document() -> Json:
    """The whole document (built once; callers must not change it)."""
    inputs: list[tuple[type[BaseModel], JsonSchemaMode]] = [(m, "validation") for m in REQUESTS]
    outputs: list[tuple[type[BaseModel], JsonSchemaMode]] = [
        (m, "serialization") for m in models.RESPONSES
    ]
    _, schemas = models_json_schema([*inputs, *outputs], ref_template=REF)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Signoff",
            "version": "1",
            "description": "Durable runs for AI agents, and human sign-off for agents on any "
            "stack: ask for an approval, wait for the decision, act on what was approved.",
        },
        "servers": [{"url": "/"}],
        "security": [{"bearer": []}],
        "paths": _paths(),
        "components": {
            "schemas": schemas["$defs"],
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }


def _paths() -> Json:
    run_id = _path_param("run_id")
    approval_id = _path_param("approval_id")
    return {
        "/v1/runs": {
            "post": _op(
                "startRun",
                "Start a run (idempotent by run_id)",
                ["runs:write"],
                body="RunRequest",
                ok={"200": "Run", "201": "Run"},
            ),
            "get": _op(
                "listRuns",
                "Runs, newest first, a page at a time",
                ["runs:read"],
                params=_list_params("status", "agent", "requested_by"),
                ok={"200": "RunList"},
            ),
        },
        "/v1/runs/{run_id}": {
            "get": _op(
                "getRun",
                "A run: status, usage, what it waits for, its answer and decisions",
                ["runs:read"],
                params=[run_id],
                ok={"200": "Run"},
            ),
        },
        "/v1/runs/{run_id}/cancel": {
            "post": _op(
                "cancelRun",
                "Stop a run for good",
                ["runs:write"],
                params=[run_id],
                body="CancelRequest",
                body_required=False,
                ok={"200": "Run", "202": "Run"},
            ),
        },
        "/v1/runs/{run_id}/effects/{call_id}/resolve": {
            "post": _op(
                "resolveEffect",
                "Settle an in-doubt effect and its page (the run then goes on)",
                ["runs:write"],
                params=[run_id, _path_param("call_id")],
                body="ResolveRequest",
                ok={"200": "Resolved"},
            ),
        },
        "/v1/approvals": {
            "post": _op(
                "requestApproval",
                "Ask for an approval (idempotent by approval_id)",
                ["approvals:request"],
                body="ApprovalRequest",
                ok={"200": "Approval", "201": "Approval"},
            ),
            "get": _op(
                "listApprovals",
                "Approvals, oldest first, a page at a time",
                READ_APPROVALS,
                params=_list_params("state", "run_id", "tool", "requested_by"),
                ok={"200": "ApprovalList"},
            ),
        },
        "/v1/approvals/{approval_id}": {
            "get": _on_approval(
                "getApproval",
                "An approval and who decided it",
                READ_APPROVALS,
            ),
        },
        "/v1/approvals/{approval_id}/wait": {
            "get": _op(
                "waitForDecision",
                "The approval once decided, or still pending after `timeout` seconds",
                READ_APPROVALS,
                params=[approval_id, _timeout_param()],
                ok={"200": "Approval"},
            ),
        },
        "/v1/approvals/{approval_id}/events": {"get": _events_op(approval_id)},
        "/v1/approvals/{approval_id}/deliveries": {
            "get": _op(
                "listDeliveries",
                "Every attempt at POSTing the decision to its callback_url or e-mailing it",
                READ_APPROVALS,
                params=[approval_id],
                ok={"200": "DeliveryList"},
            ),
        },
        "/v1/approvals/{approval_id}/decision": {
            "post": _on_approval(
                "decide",
                "A human's decision, under the policy's rules",
                ["approvals:decide"],
                body="DecisionRequest",
            ),
        },
        "/v1/approvals/{approval_id}/withdraw": {
            "post": _on_approval(
                "withdraw",
                "The asker stopped waiting: withdraw its approval (only the token that asked)",
                ["approvals:request"],
            ),
        },
        "/v1/approvals/{approval_id}/cancel-cool-off": {
            "post": _on_approval(
                "cancelCoolOff",
                "Cancel an approved call in its cool-off (an approver of it, `by`): it never runs",
                ["approvals:decide"],
                body="PersonRequest",
            ),
        },
        "/v1/approvals/{approval_id}/undo": {
            "post": _undo_failed(
                _on_approval(
                    "undoApprovedCall",
                    "Undo the call an approval let run, once, within its policy's undo_for",
                    ["approvals:decide"],
                    body="PersonRequest",
                )
            ),
        },
        "/v1/openapi.json": {
            "get": {
                "operationId": "getDocument",
                "summary": "This document",
                "description": "Any known token.",
                "responses": {
                    "200": {
                        "description": "OK",
                        "content": {"application/json": {"schema": {"type": "object"}}},
                    },
                }
                | {code: _response("Error", text) for code, text in ERRORS.items()},
            },
        },
        "/v1/approvals/{approval_id}/receipt": {
            "get": _op(
                "getReceipt",
                "The decision's signed receipt (400 while pending)",
                [*READ_APPROVALS, "audit:read"],
                params=[approval_id],
                ok={"200": "Receipt"},
            ),
        },
        "/v1/receipts/verify": {
            "post": _op(
                "verifyReceipt",
                "Check a receipt's signature (and the call it approves) with this server's keys",
                [*READ_APPROVALS, "audit:read"],
                body="ReceiptCheckRequest",
                ok={"200": "ReceiptCheck"},
            ),
        },
        "/v1/keys": {
            "get": _op("getKeys", "The public keys receipts are signed with (JWKS)", [], ok={})
            | {
                "description": "No token needed.",
                "security": [],
                "responses": {"200": _response("KeySet", "OK")},
            },
        },
        **_envelope_paths(),
        "/v1/audit": {
            "get": _op(
                "listAudit",
                "Audit events oldest first",
                ["audit:read"],
                params=_audit_params(),
                ok={"200": "AuditPage"},
            ),
        },
    }


def _envelope_paths() -> Json:
    envelope_id = _path_param("envelope_id")
    read = ["approvals:decide", "runs:read"]

    def change(name: str, summary: str) -> Json:
        return _op(
            name,
            summary,
            ["approvals:decide"],
            params=[envelope_id],
            body="EnvelopeChangeRequest",
            ok={"200": "Envelope"},
        )

    return {
        "/v1/envelopes": {
            "post": _op(
                "createEnvelope",
                "Hand out a budget: calls like these are approved at once while it lasts",
                ["approvals:decide"],
                body="EnvelopeRequest",
                ok={"201": "Envelope"},
            ),
            "get": _op(
                "listEnvelopes",
                "Budgets handed out, newest first",
                read,
                params=[_query("tool", {"type": "string"}, "only this tool's")],
                ok={"200": "EnvelopeList"},
            ),
        },
        "/v1/envelopes/{envelope_id}": {
            "get": _op(
                "getEnvelope",
                "A budget and what is used of it",
                read,
                params=[envelope_id],
                ok={"200": "Envelope"},
            ),
        },
        "/v1/envelopes/{envelope_id}/confirm": {
            "post": change("confirmEnvelope", "A second writer's confirmation of a budget")
        },
        "/v1/envelopes/{envelope_id}/revoke": {
            "post": change("revokeEnvelope", "End a budget now (its author or a rule-writer)")
        },
    }


# What a client (or a stateful fuzzer) may do next with what an operation answered.
LINKS: dict[str, dict[str, tuple[str, str]]] = {
    "requestApproval": {
        "GetApproval": ("getApproval", "approval_id"),
        "WaitForDecision": ("waitForDecision", "approval_id"),
        "Decide": ("decide", "approval_id"),
        "Withdraw": ("withdraw", "approval_id"),
        "ListDeliveries": ("listDeliveries", "approval_id"),
    },
    "createEnvelope": {
        "GetEnvelope": ("getEnvelope", "envelope_id"),
        "RevokeEnvelope": ("revokeEnvelope", "envelope_id"),
    },
    "startRun": {
        "GetRun": ("getRun", "run_id"),
        "CancelRun": ("cancelRun", "run_id"),
        "ListItsApprovals": ("listApprovals", "run_id"),
    },
}


def _links(operation_id: str) -> Json:
    return {
        name: {"operationId": target, "parameters": {param: "$response.body#/id"}}
        for name, (target, param) in LINKS.get(operation_id, {}).items()
    }


def _on_approval(
    operation_id: str, summary: str, scopes: list[str], body: str | None = None
) -> Json:
    """An operation on one approval (by its id in the path) that answers with the approval."""
    params = [_path_param("approval_id")]
    return _op(operation_id, summary, scopes, params=params, body=body, ok={"200": "Approval"})


def _undo_failed(op: Json) -> Json:
    """An undo whose compensator failed answers 502: not undone, and why."""
    why = (
        "the compensator failed or ended in doubt: the call is not undone (`error` and the "
        "approval's `undo_error` say why), on-call was paged; undo it again once it is fixed"
    )
    op["responses"]["502"] = _response("Error", why)
    return op


def _op(
    operation_id: str,
    summary: str,
    scopes: list[str],
    *,
    ok: dict[str, str],
    params: list[Json] | None = None,
    body: str | None = None,
    body_required: bool = True,
) -> Json:
    links = _links(operation_id)
    responses: Json = {
        code: _response(ref, "OK") | ({"links": links} if links else {}) for code, ref in ok.items()
    }
    responses |= {code: _response("Error", text) for code, text in ERRORS.items()}
    op: Json = {
        "operationId": operation_id,
        "summary": summary,
        "description": f"Scopes: {' or '.join(scopes)}.",
        "responses": responses,
    }
    if params:
        op["parameters"] = params
    if body:
        content = {"application/json": {"schema": {"$ref": REF.format(model=body)}}}
        op["requestBody"] = {"required": body_required, "content": content}
    return op


def _response(ref: str, text: str) -> Json:
    schema = {"$ref": REF.format(model=ref)}
    return {"description": text, "content": {"application/json": {"schema": schema}}}


def _path_param(name: str) -> Json:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}


def _query(name: str, schema: Json, text: str) -> Json:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": text}


def _list_params(*filters: str) -> list[Json]:
    chosen = [_query(name, {"type": "string"}, f"only those with this {name}") for name in filters]
    return [
        *chosen,
        _query("cursor", {"type": "string"}, "next_cursor of the previous page"),
        _query("limit", {"type": "integer", "minimum": 1, "maximum": 500}, "at most (100)"),
    ]


def _audit_params() -> list[Json]:
    return [
        _query("run_id", {"type": "string"}, "only this run's events"),
        _query("approval_id", {"type": "string"}, "only this approval's events"),
        _query("since", {"type": "string", "format": "date-time"}, "at or after (ISO 8601)"),
        _query("limit", {"type": "integer", "minimum": 1, "maximum": 10000}, "at most (1000)"),
    ]


def _events_op(approval_id: Json) -> Json:
    """The server-sent stream: `_op`'s errors, but a 200 of `text/event-stream`."""
    schema = {"type": "number", "exclusiveMinimum": 0, "maximum": 3600}
    op = _op(
        "streamDecision",
        "The approval as server-sent events: now, and once decided",
        READ_APPROVALS,
        params=[approval_id, _query("timeout", schema, "seconds to stream at most (300)")],
        ok={"200": "Approval"},
    )
    op["description"] += (
        " `text/event-stream`: an `approval` event (data: the Approval as JSON) at once and"
        " another when it is decided; the stream then ends, or after `timeout` seconds with"
        " it still pending. Comment lines keep an idle stream open."
    )
    event = {
        "type": "object",
        "properties": {
            "event": {"const": "approval"},
            "data": {
                "type": "string",
                "contentMediaType": "application/json",
                "contentSchema": {"$ref": REF.format(model="Approval")},
            },
        },
        "required": ["data"],
    }
    op["responses"]["200"] = {
        "description": "OK: each event of the stream",
        "content": {"text/event-stream": {"schema": event}},
    }
    return op


def _timeout_param() -> Json:
    schema = {"type": "number", "exclusiveMinimum": 0, "maximum": 60}
    return _query("timeout", schema, "seconds to wait at most (25)")


async def serve_document(request: web.Request) -> web.Response:
    return web.json_response(document())


def add_document_route(app: web.Application) -> None:
    app.router.add_get("/v1/openapi.json", serve_document)


def main() -> None:
    print(json.dumps(document(), indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
