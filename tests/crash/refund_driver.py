"""A driver process the runtime crash test starts, SIGKILLs and restarts until it finishes.

    python refund_driver.py <store-db> <world-db> <N>

Every life does the same thing, so a restarted driver simply carries on: it opens the store
with a fixed worker id (so it reclaims its own leases at once), calls `recover()`, starts the
runs `order-1` .. `order-N` (idempotent by id), approves every pending approval as
`U_APPROVER`, and acts as the human on call for runs stopped `in_doubt`: it checks the
tools' own ledger (examples.world), completes by hand whatever did not happen (once, since it
checked first), resolves the effect as happened and resumes the run. It exits 0 when every
run is done, 3 when a run ended some other way, 4 when it made no headway.

Knobs (environment):
  SIGNOFF_CRASH_TOOL_DELAY   seconds slept just before and just after each ledger write, to
                             widen the window between "tool executed" and "result recorded";
  SIGNOFF_CRASH_MODEL_DELAY  seconds each model step takes;
  SIGNOFF_CRASH_MARKERS      a directory: SIGKILL this process right after each ledger write,
                             once per write (a marker file remembers the writes already killed);
  SIGNOFF_CRASH_BEFORE_ACK   with markers: also SIGKILL once per page right after `resolve`
                             recorded the outcome, before it acknowledges the effect's page.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import signal
import sys
import time
from collections.abc import Callable
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from examples import refund_agent
from examples import world
from runtime import Agent
from runtime import Model
from runtime import Reply
from runtime import Runtime
from runtime import ToolSpec
from runtime import errors
from store import Effect
from store import EffectStatus
from store import Message
from store import Page
from store import RunStatus
from store import Store
from store import open_store

WORKER_ID = "crash-driver"
AGENT = "refund-agent"
REQUESTER = "U_REQ"
APPROVER = "U_APPROVER"
ON_CALL = "U_ONCALL"
MAX_PASSES = 20

EXIT_DONE = 0
EXIT_UNEXPECTED = 3
EXIT_NO_HEADWAY = 4

TOOL_DELAY = float(os.environ.get("SIGNOFF_CRASH_TOOL_DELAY", "0"))
MODEL_DELAY = float(os.environ.get("SIGNOFF_CRASH_MODEL_DELAY", "0"))
MARKERS = os.environ.get("SIGNOFF_CRASH_MARKERS")
BEFORE_ACK = os.environ.get("SIGNOFF_CRASH_BEFORE_ACK") == "1"


def run_ids(count: int) -> list[str]:
    return [f"order-{i}" for i in range(1, count + 1)]


# the outside world, slowed down and (optionally) crashing right after each write


def _kill_once(what: str) -> None:
    """Kill this process the first time it gets here for `what`, if markers are enabled."""
    if not MARKERS:
        return
    marker = Path(MARKERS) / hashlib.sha256(what.encode()).hexdigest()
    try:
        with marker.open("x") as file:
            file.write(what)
    except FileExistsError:
        return
    os.kill(os.getpid(), signal.SIGKILL)


def _hooked(write: Callable[..., dict[str, Any]], kind: str) -> Callable[..., dict[str, Any]]:
    def hooked(*args: Any) -> dict[str, Any]:
        time.sleep(TOOL_DELAY)
        result = write(*args)
        _kill_once(f"{kind}:{args}")
        time.sleep(TOOL_DELAY)
        return result

    return hooked


def install_world_hooks() -> None:
    """Wrap the ledger writes the refund agent's tools call (`world.pay`, `world.send`)."""
    world.pay = _hooked(world.pay, "pay")  # type: ignore[method-assign]
    world.send = _hooked(world.send, "send")  # type: ignore[method-assign]


class SlowModel:
    """The refund agent's own scripted model, taking `MODEL_DELAY` seconds a step."""

    def __init__(self, inner: Model) -> None:
        self.inner = inner

    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Reply:
        await asyncio.sleep(MODEL_DELAY)
        return await self.inner.complete(messages, tools)


def build_agent() -> Agent:
    """The example refund agent: same tools, policy, prompt and budget; a slower model."""
    example = refund_agent.agent
    return Agent(
        example.name,
        model=SlowModel(example.model),
        tools=list(example.tools.values()),
        system_prompt=example.system_prompt,
        budget=example.budget,
    )


def install_store_hooks(store: Store) -> None:
    """Crash between `resolve` recording an outcome and acknowledging its page, if asked."""
    if not BEFORE_ACK:
        return
    acknowledge = store.acknowledge_page

    async def acknowledge_page(page_id: str, *, by: str, at: datetime) -> Page:
        _kill_once(f"ack:{page_id}")
        return await acknowledge(page_id, by=by, at=at)

    store.acknowledge_page = acknowledge_page  # type: ignore[method-assign]


# the humans


async def approve_pending(rt: Runtime) -> None:
    for approval in await rt.approvals(state="pending"):
        with contextlib.suppress(errors.AlreadyDecided):
            await rt.decide(approval.id, "approved", by=APPROVER)


def settle_by_hand(effect: Effect) -> dict[str, Any]:
    """What the human on call does for an in-doubt effect: look in the outside system; if it
    did not happen, do it by hand with the same key (exactly once, having checked)."""
    key = effect.idempotency_key
    args = effect.args
    if effect.tool == "send_email":
        sent = [e for e in world.emails() if e[2] == key]
        if not sent:
            world.send(args["to"], args["subject"], key)
        return {"to": args["to"], "resolved_by": ON_CALL, "found_in_ledger": bool(sent)}
    if effect.tool in ("issue_refund", "charge", "reverse_refund"):
        paid = [p for p in world.payments() if p[3] == key]
        found = bool(paid)
        if not found:
            kind = {"issue_refund": "refund", "reverse_refund": "refund_reversal"}.get(
                effect.tool, effect.tool
            )
            reference = args.get("order_id") or args["invoice_id"]
            amount = -args["amount_cents"] if kind == "refund_reversal" else args["amount_cents"]
            world.pay(kind, reference, amount, key)
            paid = [p for p in world.payments() if p[3] == key]
        kind, reference, amount, _ = paid[0]
        return {
            "id": f"{kind}_{key[-8:]}",
            "kind": kind,
            "reference": reference,
            "amount_cents": amount,
            "resolved_by": ON_CALL,
            "found_in_ledger": found,
        }
    if effect.tool == "lookup_order":
        return world.order(args["order_id"])
    raise RuntimeError(f"the on-call does not know how to check {effect.tool}")


async def handle_in_doubt(rt: Runtime) -> None:
    for run in await rt.list(status=RunStatus.FAILED):
        if run.stop_reason != "in_doubt":
            continue
        for effect in await rt.store.list_effects(run.id):
            if effect.status in (EffectStatus.STARTED, EffectStatus.IN_DOUBT):
                result = settle_by_hand(effect)
                await rt.resolve(run.id, effect.call_id, happened=True, by=ON_CALL, result=result)
        await rt.resume(run.id)


# the loop


async def main(store_db: str, world_db: str, count: int) -> int:
    os.environ["SIGNOFF_WORLD_DB"] = world_db
    install_world_hooks()
    store = await open_store(f"sqlite:///{store_db}")
    install_store_hooks(store)
    try:
        rt = Runtime(store, [build_agent()], worker_id=WORKER_ID)
        print("ready", flush=True)
        await rt.recover()
        ids = run_ids(count)
        for _ in range(MAX_PASSES):
            await asyncio.gather(
                *(
                    rt.start(AGENT, f"Refund order {i}", run_id=run_id, requested_by=REQUESTER)
                    for i, run_id in enumerate(ids, start=1)
                )
            )
            await approve_pending(rt)
            await handle_in_doubt(rt)
            runs = [await rt.get(run_id) for run_id in ids]
            if all(run.status == RunStatus.DONE for run in runs):
                print("done", flush=True)
                return EXIT_DONE
            odd = [
                run
                for run in runs
                if run.status == RunStatus.CANCELLED
                or (run.status == RunStatus.FAILED and run.stop_reason != "in_doubt")
            ]
            if odd:
                for run in odd:
                    print(f"unexpected: {run.id} {run.status} {run.stop_reason} {run.error}")
                return EXIT_UNEXPECTED
        for run in [await rt.get(run_id) for run_id in ids]:
            print(f"not done: {run.id} {run.status} {run.stop_reason} {run.error}", flush=True)
        return EXIT_NO_HEADWAY
    finally:
        await store.close()


if __name__ == "__main__":
    store_path, world_path, how_many = sys.argv[1:4]
    sys.exit(asyncio.run(main(store_path, world_path, int(how_many))))
