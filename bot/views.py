"""How the CLI shows runs, history and approvals: rich tables and plain JSON, no I/O."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from rich.table import Table

from store import Approval, Checkpoint, Effect, Message, Page, Run


def when(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S") if moment else "-"


def short(text: str, width: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def status_text(status: str, stop_reason: str | None) -> str:
    return status if not stop_reason or stop_reason == status else f"{status} ({stop_reason})"


def usage_text(run: Run) -> str:
    b, u = run.budget, run.usage
    steps = f"{u.steps}/{b.max_steps}" if b.max_steps is not None else str(u.steps)
    cost = f"${u.cost:.4f}" + (f"/${b.max_cost:.2f}" if b.max_cost is not None else "")
    return f"steps {steps}, tokens {u.input_tokens}+{u.output_tokens}, cost {cost}"


def _id_column(table: Table, name: str, ids: Sequence[str | None]) -> None:
    """Ids are for copying into the next command: never cut or wrapped."""
    width = max([len(name), *(len(i or "-") for i in ids)])
    table.add_column(name, no_wrap=True, min_width=width)


def runs_table(runs: Sequence[Run]) -> Table:
    table = Table()
    _id_column(table, "run", [r.id for r in runs])
    for name in ("agent", "status", "step", "stop", "task", "created"):
        table.add_column(name)
    for run in runs:
        table.add_row(
            run.id,
            run.agent,
            run.status.value,
            str(run.step),
            run.stop_reason or "",
            short(run.task, 40),
            when(run.created_at),
        )
    return table


def run_table(run: Run, approvals: Sequence[Approval], effects: Sequence[Effect]) -> Table:
    table = Table("field", "value", show_header=False)
    table.add_row("run", run.id)
    table.add_row("agent", run.agent)
    table.add_row("task", run.task)
    table.add_row("status", status_text(run.status.value, run.stop_reason))
    if run.error:
        table.add_row("error", run.error)
    table.add_row("step", str(run.step))
    table.add_row("usage", usage_text(run))
    if run.parent_id:
        table.add_row("forked from", f"{run.parent_id} at step {run.fork_step}")
    if run.dry_run:
        table.add_row("dry run", "yes: mutating tools do not run")
    for approval in approvals:
        table.add_row("approval", f"{approval.id} {approval.tool} {approval.state.value}")
    for effect in effects:
        undone = f" undone by {effect.compensated_by}" if effect.compensated_by else ""
        table.add_row("effect", f"step {effect.step} {effect.tool} {effect.status.value}{undone}")
    return table


def appended(message: Message) -> str:
    if message.role == "assistant" and message.tool_calls:
        calls = ", ".join(
            f"{c.name}({short(json.dumps(c.arguments), 40)})" for c in message.tool_calls
        )
        return f"assistant → {calls}"
    if message.role == "tool":
        return f"{message.name or 'tool'} ← {short(message.content, 50)}"
    return f"{message.role}: {short(message.content, 60)}"


def history_table(checkpoints: Sequence[Checkpoint]) -> Table:
    table = Table("seq", "step", "status", "cost", "appended")
    for cp in checkpoints:
        lines = [appended(m) for m in cp.messages] or ["(status only)"]
        if cp.snapshot and cp.seq > 0:
            lines = [f"snapshot of {len(cp.messages)} messages"]
        status = status_text(cp.status.value, cp.stop_reason)
        table.add_row(str(cp.seq), str(cp.step), status, f"${cp.usage.cost:.4f}", "\n".join(lines))
    return table


def approvals_table(approvals: Sequence[Approval]) -> Table:
    table = Table()
    _id_column(table, "approval", [a.id for a in approvals])
    table.add_column("tool")
    table.add_column("state")
    _id_column(table, "run", [a.run_id for a in approvals])
    for name in ("by", "reason", "deadline"):
        table.add_column(name)
    for a in approvals:
        table.add_row(
            a.id,
            a.tool,
            a.state.value,
            a.run_id or "-",
            a.decided_by or "",
            a.reason or "",
            when(a.deadline),
        )
    return table


def pages_table(pages: Sequence[Page]) -> Table:
    table = Table()
    _id_column(table, "page", [p.id for p in pages])
    _id_column(table, "run", [p.run_id for p in pages])
    for name in ("call", "tool", "reason", "detail", "acknowledged"):
        table.add_column(name)
    for p in pages:
        table.add_row(
            p.id,
            p.run_id or "-",
            p.call_id or "-",
            p.tool or "-",
            p.reason,
            p.detail,
            p.acknowledged_by or "",
        )
    return table


def effects_table(effects: Sequence[Effect]) -> Table:
    table = Table("step", "tool", "effect", "args", "result")
    for e in effects:
        table.add_row(
            str(e.step),
            e.tool,
            e.reversibility.value,
            short(json.dumps(e.args), 40),
            short(json.dumps(e.result), 40),
        )
    return table


def rollback_table(report: dict[str, Any], effects: Sequence[Effect]) -> Table:
    outcome_of = {c: o for o in ("compensated", "paged", "skipped") for c in report[o]}
    table = Table("effect", "tool", "outcome", title=f"rolled back to step {report['to_step']}")
    for effect in reversed(effects):  # newest first: the order the rollback went through them
        if effect.call_id in outcome_of:
            table.add_row(effect.call_id, effect.tool, outcome_of[effect.call_id])
    return table


def as_json(value: Any) -> str:
    return json.dumps(value, indent=2, default=str, ensure_ascii=False)
