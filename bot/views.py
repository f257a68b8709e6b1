"""How the CLI shows runs, history and approvals: rich tables and plain JSON, no I/O.

What agents and people wrote (tasks, arguments, reasons, user ids) reaches the terminal as
`Text`, never read as rich markup, on one line, with control characters and bidirectional
overrides written out inert by the same escapes as in Slack (`bot.inert.plain`).
Times are UTC, and every table that shows one says so.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from collections.abc import Mapping
from collections.abc import Sequence
from contextvars import ContextVar
from datetime import UTC
from datetime import datetime
from types import MappingProxyType
from typing import Any

from rich.table import Table
from rich.text import Text

from bot import words
from bot.inert import flat
from bot.inert import plain
from bot.reading import limit_lines
from bot.settle import settle_commands
from runtime.approvals import call_trail
from runtime.records import Approval
from runtime.records import ApprovalState
from runtime.records import Checkpoint
from runtime.records import Effect
from runtime.records import Message
from runtime.records import Page
from runtime.records import Run

Votes = Mapping[str, Sequence[str]]
"""Who approved so far, by approval id, for approvals that need several approvers."""

PEOPLE: ContextVar[Mapping[str, str]] = ContextVar("people", default=MappingProxyType({}))
"""Display names by user id for what is printed now (the CLI looks them up as Slack does,
`bot.cli.people`); a person not in it is shown by id."""


def person(user: str) -> str:
    """`@bob` when the name is known, else the id."""
    return words.named(PEOPLE.get())(user)


def when(moment: datetime | None) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S") if moment else "-"


def short(text: str, width: int = 60) -> str:
    one_line = flat(text)
    return one_line if len(one_line) <= width else one_line[: width - 1] + "…"


def inert(text: str, width: int | None = None) -> Text:
    """Untrusted text for a terminal: one line, control characters written out, cut to
    `width`, and a `Text`, so `[bold]` or `[link=…]` stay literal."""
    safe = plain(flat(text))
    return Text(safe if width is None else short(safe, width))


def args_text(args: Mapping[str, Any], width: int = 80) -> str:
    """Arguments as `name=value` pairs; each value is cut first, so every name shows."""
    pairs = (f"{name}={short(_json(value), 40)}" for name, value in args.items())
    return short(", ".join(pairs), width)


def call_text(approval: Approval, width: int = 100) -> str:
    """The call an approval is about; approved arguments that differ follow an arrow."""
    args, approved = approval.shown_args, approval.shown_approved_args
    text = f"{approval.tool}({args_text(args, width)})"
    if approved is not None and approved != args:
        text += f" → approved as ({args_text(approved, width)})"
    return text


status_text = words.run_state
"""A status for people, in the vocabulary's words (`bot.words.run_state`)."""


def run_status(run: Run, *, decided: bool = False, cooling: datetime | None = None) -> str:
    """The stored status, told as it is: a parked run whose approvals are all decided is
    ready to resume (`decided`), unless a call waits out its cool-off (until `cooling`), and
    a dry-run fork says so."""
    return words.state_of_run(run, decided=decided, cooling=cooling)


def usage_text(run: Run) -> str:
    b, u = run.budget, run.usage
    cost = f"${u.cost:.4f}" + (f"/${b.max_cost:.2f}" if b.max_cost is not None else "")
    cached = f" ({u.cached_input_tokens} cached)" if u.cached_input_tokens else ""
    return (
        f"steps {_of(u.steps, b.max_steps)}, tokens {_of(u.input_tokens, b.max_input_tokens)}"
        f"{cached}+{_of(u.output_tokens, b.max_output_tokens)}, cost {cost}"
    )


def _of(used: int, limit: int | None) -> str:
    return f"{used}/{limit}" if limit is not None else str(used)


def approval_state(approval: Approval, votes: Votes) -> str:
    """`pending`, `approved`, `declined`; a quorum in progress as "pending, 1 of 2: U0ANN"."""
    if approval.state != ApprovalState.PENDING or approval.required_approvals < 2:
        return words.approval_state(approval)
    return f"pending, {quorum_text(approval, votes.get(approval.id, ()))}"


def duplicate_note(approval: Approval) -> str:
    """The note "; possible duplicate of run X" when another run asked for the same effect."""
    return f"; possible duplicate of run {approval.duplicate_of}" if approval.duplicate_of else ""


def take_back_note(approval: Approval) -> str:
    """Where an approved call of a cool-off or undo policy is: "; cool-off until …" (it runs
    then), "; cool-off cancelled by …", "; undo until …" or "; undone by …" (issue 42.6)."""
    if approval.undone_by:
        return f"; undone by {person(approval.undone_by)}"
    if approval.undoing_by:
        return f"; being undone by {person(approval.undoing_by)}"
    if approval.undo_error:
        return f"; undo failed: {approval.undo_error}"
    if approval.ran_outcome in ("failed", "in_doubt"):
        return f"; ran: {words.EFFECT_STATES[approval.ran_outcome]}, nothing to undo"
    if approval.cool_off == "cancelled":
        return f"; cool-off cancelled by {person(approval.cool_off_by or '?')}"
    if approval.cool_off == "waiting":
        return f"; cool-off until {when(approval.cool_off_until)} UTC"
    return f"; undo until {when(approval.undo_until)} UTC" if approval.undo_until else ""


def rule_text(approval: Approval) -> str:
    """Which approval rule it was made under ("rule 3: amount over $200 → 2 approvals …")."""
    return approval.rule.summary if approval.rule else ""


def quorum_text(approval: Approval, voters: Sequence[str]) -> str:
    progress = f"{len(voters)} of {approval.required_approvals}"
    return f"{progress}: {', '.join(map(person, voters))}" if voters else progress


def _id_column(table: Table, name: str, ids: Sequence[str | None]) -> None:
    """Ids are for copying into the next command: never cut or wrapped."""
    width = max([len(name), *(len(i or "-") for i in ids)])
    table.add_column(name, no_wrap=True, min_width=width)


def runs_table(
    runs: Sequence[Run],
    *,
    decided: Collection[str] = (),
    cooling: Mapping[str, datetime] | None = None,
    caption: str | None = None,
) -> Table:
    """`decided`: ids of parked runs whose approvals are all decided; `cooling`: when the
    call a parked run waits on ends its cool-off, by run id."""
    table = Table(caption=caption)
    _id_column(table, "run", [r.id for r in runs])
    for name in ("agent", "status", "step", "task", "created (UTC)"):
        table.add_column(name)
    for run in runs:
        table.add_row(
            inert(run.id),
            inert(run.agent),
            run_status(run, decided=run.id in decided, cooling=(cooling or {}).get(run.id)),
            str(run.step),
            inert(run.task, 40),
            when(run.created_at),
        )
    return table


def run_table(
    run: Run,
    approvals: Sequence[Approval],
    effects: Sequence[Effect],
    *,
    votes: Votes,
    decided: bool = False,
) -> Table:
    table = Table("field", "value", show_header=False)
    table.add_row("run", inert(run.id))
    table.add_row("agent", inert(run.agent))
    table.add_row("task", inert(run.task, 500))
    cooling = words.cool_off_end(approvals)
    table.add_row("status", run_status(run, decided=decided, cooling=cooling))
    if run.error:
        table.add_row("error", inert(run.error, 500))
    table.add_row("step", str(run.step))
    table.add_row("usage", usage_text(run))
    if run.requested_by:
        table.add_row("requested by", inert(person(run.requested_by)))
    if run.parent_id:
        table.add_row("forked from", inert(f"{run.parent_id} at step {run.fork_step}"))
    if run.dry_run:
        table.add_row("dry run", "yes: mutating tools do not run")
    table.add_row("created", f"{when(run.created_at)} UTC")
    for approval in approvals:
        decided_by = f" by {person(approval.decided_by)}" if approval.decided_by else ""
        state = approval_state(approval, votes) + decided_by + duplicate_note(approval)
        rule = f" ({rule_text(approval)})" if approval.rule else ""
        table.add_row("approval", inert(f"{approval.id} {call_text(approval)} {state}{rule}"))
        for line in limit_lines(approval):
            table.add_row("limit", inert(line, 200))
    for call in call_trail(list(approvals), list(effects)):
        table.add_row("call", inert(call.line(), 500))  # proposed -> approved -> executed
    for effect in effects:
        undone = f" by {effect.compensated_by}" if effect.compensated_by else ""
        line = f"{words.step(effect.step)} {effect.tool} {words.effect_state(effect)}{undone}"
        table.add_row("effect", inert(line))
    return table


def appended(message: Message) -> str:
    if message.role == "assistant" and message.tool_calls:
        calls = ", ".join(f"{c.name}({args_text(c.arguments, 40)})" for c in message.tool_calls)
        return f"assistant → {calls}"
    if message.role == "tool":
        return f"{message.name or 'tool'} ← {short(message.content, 50)}"
    return f"{message.role}: {short(message.content, 60)}"


def ruled(approval: Approval) -> bool:
    """Approved or declined at once by an approval rule, with no one asked."""
    return approval.rule is not None and approval.rule.action != "ask"


def history_table(checkpoints: Sequence[Checkpoint], ruled: Sequence[Approval] = ()) -> Table:
    """One row per checkpoint; a call a rule approved or denied at once gets a row of its
    own, before the checkpoint that recorded what followed."""
    table = Table("seq", "step", "status", "cost", "appended")
    waiting = sorted(ruled, key=lambda a: a.decided_at or a.created_at)
    for cp in checkpoints:
        while waiting and (waiting[0].decided_at or waiting[0].created_at) <= cp.created_at:
            table.add_row("", "", "rule", "", inert(_ruled_text(waiting.pop(0))))
        lines = [appended(m) for m in cp.messages] or ["(status only)"]
        if cp.snapshot and cp.seq > 0:
            lines = [f"snapshot of {len(cp.messages)} messages"]
        status = status_text(cp.status.value, cp.stop_reason)
        status += " (undone by a rollback)" if cp.rolled_back else ""
        cell = Text("\n").join(inert(line) for line in lines)
        table.add_row(str(cp.seq), str(cp.step), status, f"${cp.usage.cost:.4f}", cell)
    for approval in waiting:
        table.add_row("", "", "rule", "", inert(_ruled_text(approval)))
    return table


def _ruled_text(approval: Approval) -> str:
    call = f"{approval.tool}({args_text(approval.args, 40)})"
    return f"{call} {approval.state.value}: {rule_text(approval)}"


def approvals_table(approvals: Sequence[Approval], votes: Votes) -> Table:
    table = Table()
    _id_column(table, "approval", [a.id for a in approvals])
    table.add_column("call")
    table.add_column("state")
    _id_column(table, "run", [a.run_id for a in approvals])
    for name in ("by", "reason", "deadline (UTC)", "rule"):
        table.add_column(name)
    for a in approvals:
        table.add_row(
            inert(a.id),
            inert(call_text(a)),
            inert(approval_state(a, votes) + take_back_note(a) + duplicate_note(a)),
            inert(a.run_id or "-"),
            inert(person(a.decided_by) if a.decided_by else ""),
            inert(a.reason or "", 60),
            when(a.deadline),
            inert(rule_text(a), 100),
        )
    return table


def pages_table(pages: Sequence[Page]) -> Table:
    """The "to settle" column is there only when some page still needs settling."""
    table = Table()
    _id_column(table, "page", [p.id for p in pages])
    _id_column(table, "run", [p.run_id for p in pages])
    for name in ("call", "tool", "reason", "detail", "state"):
        table.add_column(name)
    settling = any(not p.acknowledged_by and settle_commands(p) for p in pages)
    if settling:
        table.add_column("to settle")
    for p in pages:
        state = words.page_state(p)
        by = f" by {person(p.acknowledged_by)}" if p.acknowledged_by else ""
        row = [
            *(inert(value or "-") for value in (p.id, p.run_id, p.call_id, p.tool)),
            inert(p.reason),
            inert(p.detail, 200),
            inert(state + by),
        ]
        if settling:  # one command a line: inert() makes one line of what it is given
            commands = settle_commands(p) if not p.acknowledged_by else []
            row.append(Text("\n").join(inert(c) for c in commands) if commands else Text("-"))
        table.add_row(*row)
    return table


def effects_table(effects: Sequence[Effect]) -> Table:
    table = Table("step", "tool", "effect", "args", "result")
    for e in effects:
        table.add_row(
            str(e.step),
            inert(e.tool),
            e.reversibility.value,
            inert(args_text(e.shown_args, 60)),
            inert(_json(e.result), 40),
        )
    return table


def rollback_table(report: dict[str, Any], effects: Sequence[Effect]) -> Table:
    outcome_of = {c: o for o in ("compensated", "paged", "skipped") for c in report[o]}
    title = report.get("nothing_to_do") or f"rolled back to step {report['to_step']}"
    table = Table("effect", "tool", "outcome", title=title)
    for effect in reversed(effects):  # newest first: the order the rollback went through them
        if effect.call_id in outcome_of:
            table.add_row(inert(effect.call_id), inert(effect.tool), outcome_of[effect.call_id])
    return table


def as_json(value: Any) -> str:
    return json.dumps(value, indent=2, default=str, ensure_ascii=False)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
