"""One readable log line per step of every run: what the model said or called, and where
the run stopped. It reads the runs' own record, so it sees runs driven by any
path - a click, a recovery, the console - without hooks in the runtime. Sensitive arguments
and result fields are masked, as on every other surface (`bot.masking`)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from contextlib import suppress

from bot import words
from bot.masking import ResultMasks
from bot.masking import masked_history
from bot.masking import sensitive_by_tool
from runtime.queries import Queries
from runtime.records import Approval
from runtime.records import Checkpoint
from runtime.records import Effect
from runtime.records import Message

log = logging.getLogger("signoff.dev")
EVERY = 0.5
MAX_ARGS = 120


class StepLog:
    def __init__(self, queries: Queries, results: ResultMasks) -> None:
        self.queries = queries
        self.results = results
        self._seen: dict[str, int] = {}

    async def mark_existing(self) -> None:
        """Runs already on record are not told again from their first step."""
        for run in await self.queries.runs(limit=10_000):
            history = await self.queries.checkpoints(run.id)
            self._seen[run.id] = history[-1].seq if history else -1

    async def tick(self) -> None:
        for run in await self.queries.runs(limit=200):
            seen = self._seen.get(run.id, -1)
            history = await self.queries.checkpoints(run.id)
            new = [c for c in history if c.seq > seen]
            for line in describe(run.id, await self._shown(run.id, new) if new else []):
                log.info("%s", line)
            if history:
                self._seen[run.id] = history[-1].seq

    async def _shown(self, run_id: str, checkpoints: list[Checkpoint]) -> list[Checkpoint]:
        effects = await self.queries.effects(run_id)
        records: list[Effect | Approval] = [*effects, *await self.queries.approvals(run_id=run_id)]
        return masked_history(checkpoints, sensitive_by_tool(records), self.results)

    async def follow(self, stop: asyncio.Event) -> None:
        """Tell new steps every EVERY seconds until `stop`, and once more then."""
        await self.mark_existing()
        while True:
            try:
                await self.tick()
            except Exception:  # a log line missed is not worth stopping the server for
                log.exception("dev: could not read the runs for the step log")
            if stop.is_set():
                return
            with suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), EVERY)


def describe(run_id: str, checkpoints: Sequence[Checkpoint]) -> list[str]:
    """`run R step k: ...`, one line per step among these new checkpoints (a step's reply
    and its tool results are two checkpoints, usually read in the same tick)."""
    steps: dict[int, list[str]] = {}
    for checkpoint in checkpoints:
        if checkpoint.rolled_back:
            continue
        said = steps.setdefault(checkpoint.step, [])
        if checkpoint.snapshot and checkpoint.seq > 0:
            said.append(f"restored (rolled back to step {checkpoint.step})")
        else:
            said.extend(t for t in (_said(m) for m in checkpoint.messages) if t)
        if checkpoint.status.value != "running":
            said.append(f"-> {words.run_state(checkpoint.status.value, checkpoint.stop_reason)}")
    return [f"run {run_id} step {step}: " + "; ".join(said) for step, said in steps.items() if said]


def _said(message: Message) -> str:
    if message.role in ("system", "user"):
        return ""
    if message.role == "tool":
        return f"{message.name or 'tool'} returned {_short(message.content)}"
    calls = [f"calls {c.name}({_short(json.dumps(c.arguments))})" for c in message.tool_calls]
    reply = [f"says {_short(message.content)!s}"] if message.content else []
    return ", ".join(reply + calls)


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_ARGS else flat[: MAX_ARGS - 1] + "…"
