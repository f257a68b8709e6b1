"""The run console's JSON, under /v1/console/ behind the HTTP API's bearer token: the runs
list, one run's timeline, a rollback's preview, and the operations (fork, roll back, cancel,
resume), each one call of the Runtime facade. Handlers raise; `bot.http_errors` answers
refusals as the API does. Arguments tools mark sensitive are masked, as everywhere.

The console acts as its token, or, with `X-Signoff-Reader`, as its token for that person:
every handler asks the runtime's permission table (`Runtime.check`) before it reads or
changes a run, and a run's view lists what the actor may do to it (`allowed`), so the page
offers only those buttons."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any
from typing import Protocol

from aiohttp import web

from bot import reading
from bot import words
from bot.console import rules
from bot.console import timeline
from bot.http_auth import CALLER
from bot.http_auth import error
from bot.http_auth import requires
from bot.http_errors import BadRequest
from bot.http_keys import RUNTIME
from bot.json_views import run_view
from bot.masking import ResultMasks
from bot.masking import masked_history
from bot.masking import sensitive_by_tool
from bot.readers import not_a_reader
from runtime import Actor
from runtime import Permission
from runtime import Runtime
from runtime import errors
from runtime.records import Run
from runtime.records import RunStatus

log = logging.getLogger("signoff.console")
READER_HEADER = "X-Signoff-Reader"
"""The person the console acts as (the dev workspace sends whom it plays): runs are then
narrowed to those that person may read in Slack, and operations to those they may do."""
OPERATIONS = (Permission.FORK, Permission.ROLLBACK, Permission.RESUME, Permission.CANCEL)
PREFIX = "/v1/console"
MAX_LIST = 500


class People(Protocol):
    """Who a user id is: the console shows people by name, as Slack does."""

    async def names(self, ids: Iterable[str]) -> dict[str, str]: ...


PEOPLE = web.AppKey("console_people", People)


async def _names(request: web.Request, ids: Iterable[str | None]) -> dict[str, str]:
    """Names for the ids the page shows; a lookup that fails leaves ids as they are."""
    people = request.app.get(PEOPLE)
    wanted = [i for i in ids if i]
    if people is None or not wanted:
        return {}
    try:
        return await people.names(wanted)
    except Exception as exc:  # names are a courtesy: the page shows ids without them
        log.info("console: names could not be looked up: %r", exc)
        return {}


@requires("runs:read")
async def list_runs(request: web.Request) -> web.Response:
    """Newest first; `status` filters by status, `q` by id, agent or task text."""
    rt = request.app[RUNTIME]
    status = request.query.get("status") or None
    if status is not None and status not in {s.value for s in RunStatus}:
        raise BadRequest(f"unknown status {status!r}")
    query = (request.query.get("q") or "").lower()
    now = rt.clock()
    listed = await rt.list(status, limit=MAX_LIST)
    runs = await rt.permitted(actor(request), Permission.READ, listed)
    runs = [run for run in runs if not query or query in f"{run.id} {run.agent} {run.task}".lower()]
    parked = [r.id for r in runs if r.status == RunStatus.WAITING_APPROVAL]
    decided = {i for i in parked if not await rt.approvals(i, state="pending")}
    found = [timeline.run_summary(run, now, decided=run.id in decided) for run in runs]
    return web.json_response({"runs": found})


@requires("runs:read")
async def show_run(request: web.Request) -> web.Response:
    rt = request.app[RUNTIME]
    detail = await rt.queries.run_detail(request.match_info["run_id"])
    run, pages, effects, approvals = detail.run, detail.pages, detail.effects, detail.approvals
    if not await rt.may(actor(request), Permission.READ, run):
        return error(403, not_a_reader(run.id))
    results = ResultMasks(rt.policies)
    sensitive = sensitive_by_tool([*effects, *approvals])
    history = masked_history(await rt.history(run.id), sensitive, results)
    shown = results.effects(effects)
    events = await rt.queries.events(run_id=run.id)
    rows = timeline.timeline(history, shown, approvals, pages, reading.displays(rt), events)
    forks = [r.id for r in await rt.list(limit=MAX_LIST) if r.parent_id == run.id]
    decided = run.status == RunStatus.WAITING_APPROVAL and all(
        a.state != "pending" for a in approvals
    )
    ids = [run.requested_by, *(a.decided_by for a in approvals)]
    ids += [p.acknowledged_by for p in pages]
    body = {
        "run": timeline.run_summary(
            run, rt.clock(), decided=decided, cooling=words.cool_off_end(approvals)
        ),
        "view": await run_view(rt, run),
        "budget": timeline.budget_view(run),
        "timeline": rows,
        "events": [timeline.event_view(e) for e in events],
        "forks": forks,
        "allowed": await rt.allowed(actor(request), run, OPERATIONS),
        "names": await _names(request, [*ids, *(e.actor for e in events)]),
    }
    return web.json_response(body)


@requires("runs:read")
async def rollback_preview(request: web.Request) -> web.Response:
    rt = request.app[RUNTIME]
    run_id, step = request.match_info["run_id"], _step(request.query.get("to_step"))
    run = await _checked(request, Permission.READ, run_id)
    if step > run.step:
        raise errors.InvalidRequest(f"run {run_id} is at step {run.step}; pick an earlier one")
    latest = await rt.queries.latest_state(run_id)
    on_timeline = {call.id for message in latest.messages for call in message.tool_calls}
    effects = await rt.queries.effects(run_id)
    preview = timeline.rollback_preview(effects, step, on_timeline)
    undone = {line["call_id"] for line in preview["compensate"]}
    relying = await rt.relying_on(e for e in effects if e.call_id in undone)
    for line in preview["compensate"]:  # the other runs that rely on what it would undo
        line["relied_on_by"] = relying.get(line["call_id"], [])
    preview["shared"] = bool(relying)
    return web.json_response(preview)


@requires("runs:write")
async def rollback(request: web.Request) -> web.Response:
    rt, run_id = request.app[RUNTIME], request.match_info["run_id"]
    await _checked(request, Permission.ROLLBACK, run_id)
    body = await _json(request)
    shared = _flag(body, "compensate_shared")
    step = _step(body.get("to_step"))
    report = await rt.rollback(run_id, step, by=_by(request), compensate_shared=shared)
    return web.json_response(report.as_dict())


@requires("runs:write")
async def fork(request: web.Request) -> web.Response:
    rt, run_id = request.app[RUNTIME], request.match_info["run_id"]
    await _checked(request, Permission.FORK, run_id)
    body = await _json(request)
    step, dry_run = _step(body.get("from_step")), _flag(body, "dry_run")
    happened = await rt.effects_after(run_id, step)
    new_id = await rt.fork(run_id, step, dry_run=dry_run, requested_by=_by(request))
    already = [{"tool": e.tool, "call_id": e.call_id, "step": e.step} for e in happened]
    return web.json_response({"run_id": new_id, "already_happened": already}, status=201)


@requires("runs:write")
async def cancel(request: web.Request) -> web.Response:
    rt, run_id = request.app[RUNTIME], request.match_info["run_id"]
    await _checked(request, Permission.CANCEL, run_id)
    run = await rt.cancel(run_id, by=_by(request), reason="cancelled from the console")
    return web.json_response(await run_view(rt, run))


@requires("runs:write")
async def resume(request: web.Request) -> web.Response:
    rt, run_id = request.app[RUNTIME], request.match_info["run_id"]
    await _checked(request, Permission.RESUME, run_id)
    run = await rt.resume(run_id)
    return web.json_response(await run_view(rt, run))


def add_routes(app: web.Application) -> None:
    app.router.add_get(f"{PREFIX}/runs", list_runs)
    app.router.add_get(f"{PREFIX}/runs/{{run_id}}", show_run)
    app.router.add_get(f"{PREFIX}/runs/{{run_id}}/rollback", rollback_preview)
    app.router.add_post(f"{PREFIX}/runs/{{run_id}}/rollback", rollback)
    app.router.add_post(f"{PREFIX}/runs/{{run_id}}/fork", fork)
    app.router.add_post(f"{PREFIX}/runs/{{run_id}}/cancel", cancel)
    app.router.add_post(f"{PREFIX}/runs/{{run_id}}/resume", resume)
    app.router.add_get(f"{PREFIX}/rules", rules.list_rules)


def actor(request: web.Request) -> Actor:
    """The token, acting for the person named in `X-Signoff-Reader` when there is one."""
    caller = request[CALLER]
    token = Actor(token=caller.actor, scopes=caller.scopes)
    return token.acting_for(request.headers.get(READER_HEADER, "").strip() or None)


def _by(request: web.Request) -> str:
    """Who the audit names: the person the console acts for, else its token."""
    return actor(request).name


async def _checked(request: web.Request, permission: Permission, run_id: str) -> Run:
    """The run, once the permission table allows the console's actor `permission` on it
    (a person who may not read it is told only that)."""
    rt: Runtime = request.app[RUNTIME]
    run = await rt.get(run_id)
    who = actor(request)
    if permission != Permission.READ and not await rt.may(who, Permission.READ, run):
        raise errors.NotPermitted(not_a_reader(run_id))
    await rt.check(who, permission, run)
    return run


def _step(value: Any) -> int:
    if isinstance(value, bool) or value is None:
        raise BadRequest("a step is a whole number, 0 or more")
    try:
        step = int(value)
    except (TypeError, ValueError):
        raise BadRequest(f"step {str(value)[:20]!r} is not a whole number") from None
    if step < 0 or step > 2**31 - 1:
        raise BadRequest("a step is a whole number, 0 or more")
    return step


def _flag(body: dict[str, Any], name: str) -> bool:
    """A true-or-false field of the body (false without it)."""
    value = body.get(name, False)
    if not isinstance(value, bool):
        raise BadRequest(f"{name}: true or false")
    return value


async def _json(request: web.Request) -> dict[str, Any]:
    """The request's JSON object (empty without a body)."""
    try:
        body = await request.json() if request.can_read_body else {}
    except ValueError:
        raise BadRequest("the body is not JSON") from None
    if not isinstance(body, dict):
        raise BadRequest("the body is not a JSON object")
    return body
