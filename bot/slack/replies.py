"""`/runs` replies (all ephemeral), the App Home tab, and the Decline and Edit modals.

Each reply keeps itself inside Block Kit's limits whatever the runs hold."""

from __future__ import annotations

from collections.abc import Collection
from collections.abc import Mapping
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from bot import reading
from bot import words
from bot.inert import flat
from bot.slack import action_text
from bot.slack import blocks as kit
from bot.slack import cards
from bot.slack import escape
from bot.slack import texts
from bot.slack.actions import Modal
from bot.slack.blocks import Block
from bot.slack.home_view import age
from runtime import Runtime
from runtime.approvals import CallTrail
from runtime.display import Display
from runtime.records import Approval
from runtime.records import ApprovalState
from runtime.records import Checkpoint
from runtime.records import Message
from runtime.records import Page
from runtime.records import Run

Displays = Mapping[str, Display]
"""How each loaded tool's arguments read, by tool name (`bot.reading.displays`)."""
NO_DISPLAYS: Displays = {}
MAX_ROWS = 40
MAX_PENDING = 8
"""Approvals with buttons in one reply: each costs a section and an actions block."""
MAX_PAGES = 10
MAX_STATUS_APPROVALS = 4
MAX_STATUS_ARGS = 6
MAX_STATUS_PAGES = 5
ID_TEXT = 80
NAME_TEXT = 40
LINE_TEXT = 150
VALUE_TEXT = 100
TASK_TEXT = 1000
DECLINE_REASON = 1000


# modals


def decline_modal(approval: Approval, display: Display | None = None) -> dict[str, Any]:
    """Asks the decliner why; the reason is required and goes to the agent."""
    action = action_text.shown_action(approval, display)
    run = escape.code(approval.run_id, limit=ID_TEXT) if approval.run_id else None
    reason = _written_answer("reason", texts.DECLINE_LABEL, texts.DECLINE_PLACEHOLDER)
    prompt = texts.decline_prompt(action, run)
    return _asking(
        Modal.DECLINE_REASON, approval, texts.DECLINE_TITLE, texts.DECLINE_SUBMIT, prompt, reason
    )


def edit_modal(approval: Approval, display: Display | None = None) -> dict[str, Any]:
    """The arguments as pretty JSON to edit; too long to fit, the modal only says so."""
    initial = escape.json_text(approval.shown_args, limit=kit.INPUT_VALUE)
    action = action_text.shown_action(approval, display)
    if initial is None:
        return kit.modal(
            Modal.EDIT_ARGS,
            approval.id,
            title=texts.EDIT_TITLE,
            close=texts.BACK,
            blocks=[kit.section(escape.mrkdwn(texts.EDIT_TOO_LONG))],
        )
    editor = kit.text_input(
        "args", texts.EDIT_LABEL, multiline=True, initial=initial, hint=texts.EDIT_HINT
    )
    prompt = texts.edit_prompt(action)
    return _asking(Modal.EDIT_ARGS, approval, texts.EDIT_TITLE, texts.EDIT_SUBMIT, prompt, editor)


def ask_modal(approval: Approval, display: Display | None = None) -> dict[str, Any]:
    """Asks the approver's question; it goes back to the agent as the tool's result."""
    action = action_text.shown_action(approval, display)
    question = _written_answer("question", texts.ASK_LABEL, texts.ASK_PLACEHOLDER)
    prompt = texts.ask_prompt(action)
    return _asking(
        Modal.ASK_QUESTION, approval, texts.ASK_TITLE, texts.ASK_SUBMIT, prompt, question
    )


def _written_answer(block_id: str, label: str, placeholder: str) -> Block:
    """A free-text input for words that go back to the agent (a reason, a question)."""
    return kit.text_input(
        block_id, label, multiline=True, placeholder=placeholder, max_length=DECLINE_REASON
    )


def _asking(
    kind: str, approval: Approval, title: str, submit: str, prompt: str, field: Block
) -> dict[str, Any]:
    """A modal about the approval: the prompt, one input, and Back to close it unsaid."""
    return kit.modal(
        kind,
        approval.id,
        title=title,
        submit=submit,
        close=texts.BACK,
        blocks=[kit.section(prompt), field],
    )


# /runs replies


def runs_help() -> dict[str, Any]:
    return kit.ephemeral(escape.mrkdwn(texts.HELP_FALLBACK), _help())


def _help() -> list[Block]:
    lines = [texts.help_line(escape.code(f"/runs {c}"), m) for c, m in texts.HELP]
    return [kit.section("\n".join([texts.HELP_TITLE, *lines]))]


def unknown_command(text: str) -> dict[str, Any]:
    said = escape.code(f"/runs {flat(text)}", limit=ID_TEXT) if text.strip() else ""
    line = texts.unknown_command(said)
    return kit.ephemeral(line, [kit.section(line), *_help()])


def not_found(what: str, ident: str) -> dict[str, Any]:
    line = texts.not_found(
        escape.mrkdwn(flat(what), limit=NAME_TEXT), escape.code(ident, limit=ID_TEXT)
    )
    return kit.ephemeral(line, [kit.section(line)])


def refusal(text: str, *, escaped: bool = False) -> dict[str, Any]:
    """Why a click or command changed nothing. `escaped=True`: `text` is already safe mrkdwn
    (it may carry mentions); otherwise it is escaped here."""
    line = escape.cut(text, kit.SECTION_TEXT) if escaped else escape.mrkdwn(text, limit=1000)
    return kit.ephemeral(line, [kit.section(line)])


def run_status(
    run: Run,
    approvals: Sequence[Approval],
    pages: Sequence[Page],
    *,
    calls: Sequence[CallTrail] = (),
    decided: bool = False,
    displays: Displays = NO_DISPLAYS,
    cooling: datetime | None = None,
) -> dict[str, Any]:
    """Status, step, usage against the budget, stop reason, decided calls (proposed ->
    approved -> executed), pending approvals, open pages. `decided`: the run is parked with
    every approval decided (ready to resume), which the reply says, with how; unless an
    approved call waits out its cool-off until `cooling` (the reply says that instead)."""
    overview = _overview(run, decided, cooling)
    blocks = [kit.header(texts.run_title(run.id)), kit.section(overview)]
    if decided and cooling is None:
        how = escape.mrkdwn(words.how_to_resume(run.id), limit=LINE_TEXT * 2)
        ready = texts.ready_to_resume(escape.code(run.id, limit=ID_TEXT), how)
        blocks.append(kit.context(ready))
    if calls:
        lines = [escape.mrkdwn(flat(c.line()), limit=LINE_TEXT * 3) for c in calls]
        blocks.append(kit.section("\n".join(lines[:MAX_STATUS_APPROVALS])))
    limits = [
        f"{escape.code(a.tool, limit=NAME_TEXT)} {escape.mrkdwn(line, limit=LINE_TEXT)}"
        for a in approvals
        for line in reading.limit_lines(a)
    ]
    if limits:  # what each call counted against its limits when it was asked
        blocks.append(kit.section(texts.limits_title(len(limits))))
        blocks.append(kit.context(*limits))
    pending = [a for a in approvals if a.state == ApprovalState.PENDING]
    if pending:
        blocks.append(kit.section(texts.waiting_title(len(pending))))
        for approval in pending[:MAX_STATUS_APPROVALS]:
            display = displays.get(approval.tool)
            blocks += [
                kit.section(_detail(approval, display)),
                cards.decision_actions(approval, display=display),
            ]
        blocks += _more(len(pending) - MAX_STATUS_APPROVALS)
    blocks += _open_pages(pages, MAX_STATUS_PAGES)
    status = texts.status_text(run.status.value, run.stop_reason, decided=decided, cooling=cooling)
    fallback = texts.run_now(escape.code(run.id, limit=ID_TEXT), escape.mrkdwn(status), run.step)
    return kit.ephemeral(fallback, blocks)


def _overview(run: Run, decided: bool = False, cooling: datetime | None = None) -> str:
    status = texts.status_text(run.status.value, run.stop_reason, decided=decided, cooling=cooling)
    status = escape.mrkdwn(status, limit=LINE_TEXT)
    lines = [
        texts.run_summary(escape.mrkdwn(run.agent, limit=NAME_TEXT), status, run.step),
        texts.task(escape.mrkdwn(flat(run.task), limit=TASK_TEXT)),
        texts.usage(_usage(run)),
    ]
    if run.error:
        lines.append(texts.error(escape.mrkdwn(flat(run.error), limit=LINE_TEXT * 3)))
    return "\n".join(lines)


def _usage(run: Run) -> list[str]:
    u, b = run.usage, run.budget
    cost_limit = f"${b.max_cost:.2f}" if b.max_cost is not None else None
    return [
        texts.used(texts.STEPS, str(u.steps), _limit(b.max_steps)),
        texts.used(texts.INPUT_TOKENS, f"{u.input_tokens:,}", _limit(b.max_input_tokens)),
        texts.used(texts.OUTPUT_TOKENS, f"{u.output_tokens:,}", _limit(b.max_output_tokens)),
        texts.used(texts.COST, f"${u.cost:.4f}", cost_limit),
    ]


def _limit(value: int | None) -> str | None:
    return f"{value:,}" if value is not None else None


def _detail(approval: Approval, display: Display | None = None) -> str:
    lines = [_pending_line(approval, display)]
    items = list(approval.shown_args.items())
    for name, _ in items[:MAX_STATUS_ARGS]:
        read = reading.value(display, name, approval.shown_args)
        shown = escape.mrkdwn(flat(read), limit=VALUE_TEXT)
        lines.append(f"{escape.code(name, limit=NAME_TEXT)} {shown}")
    if len(items) > MAX_STATUS_ARGS:
        lines.append(texts.and_more(len(items) - MAX_STATUS_ARGS))
    deciders = words.who_may_decide(Runtime.authority(approval), words.Voice(person=kit.target))
    if deciders is not None:
        lines.append(deciders)
    return "\n".join(lines)


def _pending_line(approval: Approval, display: Display | None = None) -> str:
    action = action_text.shown_action(approval, display)
    run = escape.code(approval.run_id, limit=ID_TEXT) if approval.run_id else None
    deadline = kit.date(approval.deadline) if approval.deadline else None
    return texts.pending_line(action, run, kit.mention(approval.requested_by), deadline)


def _open_pages(pages: Sequence[Page], limit: int) -> list[Block]:
    open_pages = [p for p in pages if not p.acknowledged_by]
    if not open_pages:
        return []
    lines = [_page_line(p) for p in open_pages[:limit]]
    title = kit.section(texts.pages_title(len(open_pages)))
    return [title, *kit.sections(lines), *_more(len(open_pages) - limit)]


def _page_line(page: Page) -> str:
    tool = escape.code(page.tool, limit=NAME_TEXT) if page.tool else texts.AN_EFFECT
    reason = escape.code(page.reason, limit=NAME_TEXT)
    return texts.page_line(tool, reason, escape.mrkdwn(flat(page.detail), limit=LINE_TEXT))


def _more(hidden: int) -> list[Block]:
    return [kit.context(texts.and_more(hidden))] if hidden > 0 else []


def run_list(
    runs: Sequence[Run], *, status: str | None, more: int, decided: Collection[str] = ()
) -> dict[str, Any]:
    """One line per run, newest as given; past MAX_ROWS the rest is counted in "…and N more".
    `decided`: the parked runs whose approvals are all decided (ready to resume)."""
    which = escape.mrkdwn(flat(status), limit=NAME_TEXT) if status else None
    if not runs:
        line = texts.no_runs(which)
        return kit.ephemeral(line, [kit.section(line)])
    shown = runs[:MAX_ROWS]
    title = texts.runs_title(which, len(shown))
    blocks = [kit.section(title), *kit.sections(_run_line(r, r.id in decided) for r in shown)]
    if any(r.id in decided for r in shown):
        blocks.append(kit.context(escape.mrkdwn(texts.RESUME_HOW)))
    blocks += _more(more + len(runs) - len(shown))
    return kit.ephemeral(title, blocks)


def _run_line(run: Run, decided: bool = False) -> str:
    status = texts.status_text(run.status.value, run.stop_reason, decided=decided)
    return texts.run_line(
        escape.code(run.id, limit=ID_TEXT),
        escape.mrkdwn(status, limit=NAME_TEXT),
        run.step,
        escape.mrkdwn(flat(run.agent), limit=NAME_TEXT),
        escape.mrkdwn(flat(run.task), limit=VALUE_TEXT // 2),
    )


def pending_list(
    approvals: Sequence[Approval],
    *,
    more: int,
    displays: Displays = NO_DISPLAYS,
    now: datetime | None = None,
) -> dict[str, Any]:
    """What waits for the caller, each with a one-line summary and the card's buttons, and
    (given `now`) how long it has waited."""
    if not approvals:
        return kit.ephemeral(texts.NOTHING_PENDING, [kit.section(texts.NOTHING_PENDING)])
    shown = _decidable(approvals[:MAX_PENDING], displays, now)
    blocks = [kit.section(texts.PENDING_TITLE), *shown]
    blocks += _more(more + len(approvals) - min(len(approvals), MAX_PENDING))
    return kit.ephemeral(texts.PENDING_TITLE, blocks)


def _decidable(
    approvals: Sequence[Approval], displays: Displays = NO_DISPLAYS, now: datetime | None = None
) -> list[Block]:
    out: list[Block] = []
    for approval in approvals:
        display = displays.get(approval.tool)
        line = _pending_line(approval, display)
        if now is not None:
            line += f" · waiting {age(now - approval.created_at)}"
        out += [kit.section(line), cards.decision_actions(approval, display=display)]
    return out


def run_history(run: Run, checkpoints: Sequence[Checkpoint]) -> dict[str, Any]:
    """One line per checkpoint (the latest MAX_ROWS): seq, step, status, what was appended."""
    title = texts.history_title(escape.code(run.id, limit=ID_TEXT), len(checkpoints))
    shown = checkpoints[-MAX_ROWS:]
    blocks = [kit.section(title)]
    if len(checkpoints) > len(shown):
        blocks.append(kit.context(texts.earlier_hidden(len(checkpoints) - len(shown))))
    blocks += kit.sections(_checkpoint_line(c) for c in shown)
    return kit.ephemeral(title, blocks)


def _checkpoint_line(checkpoint: Checkpoint) -> str:
    status = texts.status_text(checkpoint.status.value, checkpoint.stop_reason)
    appended = escape.mrkdwn(flat(appended_text(checkpoint)), limit=LINE_TEXT)
    return texts.checkpoint_line(
        checkpoint.seq, checkpoint.step, escape.mrkdwn(status, limit=NAME_TEXT), appended
    )


def appended_text(checkpoint: Checkpoint) -> str:
    """Plain, untrusted text: what a checkpoint appended, e.g. "called issue_refund"."""
    if checkpoint.snapshot:
        return texts.snapshot(len(checkpoint.messages))
    parts = [_message_text(m) for m in checkpoint.messages[:MAX_ROWS]]
    return "; ".join(parts) or texts.NOTHING_APPENDED


def _message_text(message: Message) -> str:
    if message.role == "assistant" and message.tool_calls:
        return texts.called(", ".join(c.name for c in message.tool_calls[:MAX_ROWS]))
    if message.role == "assistant":
        return texts.REPLIED
    if message.role == "tool":
        return texts.result_of(message.name or message.tool_call_id or "?")
    return texts.USER_MESSAGE if message.role == "user" else texts.SYSTEM_PROMPT
