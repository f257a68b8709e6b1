"""How errors answer over HTTP: one middleware turns every refusal and failure under /v1/
into JSON with its status, so handlers raise and never build error responses themselves.
The API and the console share it; neither owns it."""

from __future__ import annotations

import logging
from typing import Any

from aiohttp import web

from bot import words
from bot.http_auth import Handler
from bot.http_auth import error
from bot.json_views import approval_view
from runtime import errors
from runtime import spend as budgets
from runtime.records import Approval
from runtime.records import DiskFull
from runtime.records import UnreadableRecord

log = logging.getLogger("signoff.api")

MAX_BODY = 1024**2

# The runtime's refusals, by status (first match wins: subclasses before their parents).
REFUSALS: tuple[tuple[type[errors.SignoffRuntimeError], int], ...] = (
    (errors.RunNotFound, 404),
    (errors.ApprovalNotFound, 404),
    (errors.PageNotFound, 404),
    (errors.AlreadyDecided, 409),  # and expired: declined at its deadline
    (errors.AlreadyVoted, 409),
    (errors.LinkUsed, 409),
    (errors.RunFinished, 409),
    (errors.RunBusy, 409),
    (errors.NotAnApprover, 403),
    (errors.SelfApproval, 403),
    (errors.StepUpRequired, 403),
    (errors.NotTheAsker, 403),
    (errors.NotPermitted, 403),
    (errors.EditRefused, 400),
    (errors.KeyConflict, 409),
    (errors.SharedEffect, 409),  # other runs rely on what would be undone
    (errors.TooLate, 409),  # a cool-off over, an undo window closed or used
    (errors.UnknownAgent, 400),
    (errors.InvalidRequest, 400),
    (budgets.EnvelopeNotAllowed, 403),
    (budgets.EnvelopeNotFound, 404),
)


class BadRequest(Exception):
    """The request itself is wrong (its body, a query parameter): 400 with the reason."""


def refusal(exc: errors.SignoffRuntimeError) -> web.Response | None:
    """The answer to a runtime refusal, or None for an error no request should cause."""
    status = next((code for kind, code in REFUSALS if isinstance(exc, kind)), None)
    if status is None:
        return None
    decided = getattr(exc, "approval", None)
    more: dict[str, Any] = {}
    if isinstance(decided, Approval):
        more["approval"] = approval_view(decided)
    if isinstance(exc, errors.EffectInDoubt):  # what a client needs to resolve it
        more["in_doubt"] = {"run_id": exc.run_id, "call_id": exc.call_id, "tool": exc.tool}
    if isinstance(exc, errors.SharedEffect):  # by call id: the runs (and calls) relying on it
        more["shared"] = {call: [list(d) for d in found] for call, found in exc.shared.items()}
    return error(status, words.refusal(exc), **more)


@web.middleware
async def json_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Under /v1/ every error is JSON: refusals, unknown paths, wrong methods, oversized
    bodies, a full disk, a row only a newer Signoff can read, bugs."""
    if not request.path.startswith("/v1/"):
        return await handler(request)
    try:
        return await handler(request)
    except BadRequest as exc:
        return error(400, str(exc))
    except errors.SignoffRuntimeError as exc:
        answer = refusal(exc)
        if answer is None:
            log.exception("%s %s failed", request.method, request.path)
            return error(500, "internal error; the server log has the details")
        return answer
    except web.HTTPRequestEntityTooLarge:
        return error(413, f"the body is over the limit of {MAX_BODY} bytes")
    except web.HTTPNotFound:
        return error(404, f"no endpoint {request.method} {request.path}")
    except web.HTTPMethodNotAllowed as exc:
        allowed = ", ".join(sorted(exc.allowed_methods))
        text = f"{request.method} is not allowed on {request.path} (allowed: {allowed})"
        return error(405, text, headers={"Allow": allowed})
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return error(exc.status, exc.reason)
    except (DiskFull, UnreadableRecord) as exc:
        # A full disk: nothing was written, reads go on, writes resume once space is freed.
        # A row a newer Signoff wrote: a worker that knows its schema can read it.
        log.error("%s %s: %s", request.method, request.path, exc)
        return error(503, str(exc), kind=type(exc).__name__, headers={"Retry-After": "30"})
    except Exception:
        log.exception("%s %s failed", request.method, request.path)
        return error(500, "internal error; the server log has the details")
