"""The approval card and what goes in its thread (on-call pages: `bot.slack.page_cards`; how a
call and its arguments read: `bot.slack.action_text`).

Everything an agent or a requester wrote (task, tool arguments, reasons, page details) goes
through `bot.slack.escape`; mentions are made only from ids that look like Slack ids. Each
part of a card keeps itself inside Block Kit's limits whatever the input.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from bot import reading
from bot import words
from bot.inert import flat
from bot.slack import blocks as kit
from bot.slack import escape
from bot.slack import texts
from bot.slack.action_text import ARG_NAME
from bot.slack.action_text import ARG_VALUE
from bot.slack.action_text import SUMMARY_VALUE
from bot.slack.action_text import action_summary
from bot.slack.action_text import arg_fields
from bot.slack.action_text import shown_action
from bot.slack.action_text import value_text
from bot.slack.actions import Action
from bot.slack.blocks import Block
from bot.slack.cool_off_card import cool_off_blocks
from runtime.approvals import differences
from runtime.display import Display
from runtime.records import Approval
from runtime.records import ApprovalState
from runtime.records import Checkpoint
from runtime.records import Run

TASK_TEXT = 1000
REASON_TEXT = 500
DETAIL_TEXT = 1500
MAX_VOTERS = 10
"""Page reasons a human settles with `signoff runs resolve`."""


# the approval card


def approval_message(  # noqa: PLR0913 - a keyword for each part of the card, all optional
    approval: Approval,
    run: Run | None,
    *,
    votes: Sequence[str] = (),
    step: int | None = None,
    reversibility: str | None = None,
    compensator: str | None = None,
    allow_edit: bool = False,
    rule: str | None = None,
    escalate_to: Sequence[str] = (),
    similar: bool = False,
    envelope: bool = False,
    target: str | None = None,
    display: Display | None = None,
    chain: str | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """The card approvers decide from; after a decision, the same card without buttons
    (but Cancel in its call's cool-off, Undo in its undo window; `now` says how long left).
    `chain`: who is asked now and next, and when (`bot.slack.escalation`), while pending.

    After an edit the header and fields say what runs, with what was asked beside it.
    `display`: how the tool's arguments read (its title, money, links)."""
    action = _action(approval, display)
    run_id = run.id if run else approval.run_id
    blocks = [
        kit.header(action),
        kit.section(_about(approval, run, run_id, step)),
        kit.fields(_card_fields(approval, reversibility, compensator, display)),
    ]
    if approval.conflict is not None:  # running it as it is would not do what is shown
        blocks.append(kit.section(conflict_line(approval)))
    blocks.extend(kit.section(line) for line in context_lines(approval))
    if approval.duplicate_of:  # another run asked for the same effect: the approver must know
        differs = _duplicate_differs(approval)
        blocks.append(
            kit.context(texts.possible_duplicate(ident_code(approval.duplicate_of) or "", differs))
        )
    if approval.key_suffix is not None:
        blocks.append(kit.context(texts.separate(escape.code(approval.tool, limit=ARG_NAME))))
    limits = [escape.mrkdwn(line, limit=REASON_TEXT) for line in reading.limit_lines(approval)]
    if limits:  # "$420 of $500 for this customer in 30 days, after this refund"
        blocks.append(kit.context(*limits))
    terms = _terms(approval, rule) + ([target] if target else [])  # a decision target
    waiter = words.waiter_note(approval)
    if approval.state == ApprovalState.PENDING:
        waiting = [*_progress(approval, votes), *terms, *_escalation(approval, escalate_to)]
        blocks.append(kit.context(" · ".join(waiting)))
        if chain:
            blocks.append(kit.context(chain))
        if waiter:
            blocks.append(kit.context(texts.waiter(waiter)))
        blocks.append(
            decision_actions(
                approval,
                action=action,
                reversibility=reversibility,
                compensator=compensator,
                allow_edit=allow_edit,
                similar=similar,
                envelope=envelope,
                display=display,
            )
        )
        text = texts.needs_approval(
            escape.mrkdwn(action), ident_code(run_id), kit.mention(approval.requested_by)
        )
    else:
        outcome = outcome_line(approval, votes)
        blocks.append(kit.context(outcome, " · ".join(terms)))
        blocks.extend(cool_off_blocks(approval, now))
        if waiter:
            blocks.append(kit.context(texts.waiter(waiter)))
        text = texts.decided(escape.mrkdwn(action), outcome)
    if run is not None and words.outcome_of(run) is not None:  # how the run ended, said here too
        blocks.append(kit.context(run_note(run, [approval])))
    meta = kit.metadata(kit.APPROVAL_EVENT, approval_id=approval.id, run_id=run_id)
    return kit.message(text, blocks, metadata=meta)


def _action(approval: Approval, display: Display | None = None) -> str:
    """The action as it runs: the approved arguments once an approver edited them."""
    args = approval.shown_approved_args or approval.shown_args
    return action_summary(approval.tool, args, display)


def context_lines(approval: Approval) -> list[str]:
    """Why it is asked again, the facts the tool read (or why it could not), and the
    agent's stated reason: each escaped, none a mention or a hidden link."""
    lines = []
    asked = words.question(approval.reasked)
    if asked is not None:
        by, text = asked
        lines.append(texts.question(kit.mention(by), escape.mrkdwn(text, limit=1500)))
    elif approval.reasked:
        lines.append(texts.asked_again(escape.mrkdwn(str(approval.reasked.get("text", "")))))
    if approval.context is not None:
        facts = approval.shown().context or {}
        said = ", ".join(f"{name.replace('_', ' ')}: {_show(v)}" for name, v in facts.items())
        lines.append(texts.context_facts(escape.mrkdwn(said or "none", limit=1500)))
    elif approval.context_error:
        lines.append(texts.context_unavailable(escape.mrkdwn(approval.context_error)))
    if approval.agent_reason:
        said = escape.mrkdwn(approval.agent_reason, limit=600)
        lines.append(texts.agent_answer(said) if asked else texts.agent_reason(said))
    return lines


def _show(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def conflict_line(approval: Approval) -> str:
    """mrkdwn: what an earlier effect under this key did, by which run, and what this asks."""
    conflict = approval.conflict
    if conflict is None:
        return ""
    changes = differences(conflict.args, approval.shown_approved_args or approval.shown_args)
    done = "was already done" if conflict.status == "completed" else f"is {conflict.status}"
    approver = None
    if conflict.approved_by:
        at = f" at {kit.date(conflict.approved_at)}" if conflict.approved_at else ""
        approver = kit.mention(conflict.approved_by) + at
    return texts.conflict(
        escape.code(conflict.tool, limit=ARG_NAME),
        f"{done} with {_changes(changes, 1)}",
        ident_code(conflict.run_id) or "",
        approver,
        _changes(changes, 2),
    )


def _changes(changes: list[tuple[str, Any, Any]], side: int) -> str:
    """One side of the differing arguments, escaped: `amount_cents 2500, note "x"`."""
    said = ", ".join(
        f"{escape.mrkdwn(flat(c[0]), limit=ARG_NAME)} {value_text(c[side], SUMMARY_VALUE)}"
        for c in changes
    )
    return said or "the same arguments"


def _duplicate_differs(approval: Approval) -> str | None:
    """What differs between this request and the possible duplicate's, if anything."""
    if approval.duplicate_args is None:
        return None
    changes = differences(
        approval.duplicate_args, approval.shown_approved_args or approval.shown_args
    )
    if not changes:
        return None
    return f"it asked {_changes(changes, 1)} and this asks {_changes(changes, 2)}"


def _edits(approval: Approval) -> str | None:
    """The approver's edits as `amount_cents 2000 (asked 2500)`, or None unedited."""
    if approval.shown_approved_args is None:
        return None
    changes = differences(approval.shown_args, approval.shown_approved_args)
    parts = [
        f"{escape.mrkdwn(flat(name), limit=ARG_NAME)} "
        + texts.edited(value_text(before, SUMMARY_VALUE), value_text(after, SUMMARY_VALUE))
        for name, before, after in changes
    ]
    return ", ".join(parts) or None


def _about(approval: Approval, run: Run | None, run_id: str | None, step: int | None) -> str:
    task = escape.mrkdwn(flat(run.task), limit=TASK_TEXT) if run else None
    step = step if step is not None else (run.step if run else None)
    return texts.about(task, kit.mention(approval.requested_by), ident_code(run_id), step)


def _card_fields(
    approval: Approval,
    reversibility: str | None,
    compensator: str | None,
    display: Display | None = None,
) -> list[str]:
    head = [texts.field(texts.TOOL, escape.code(approval.tool, limit=ARG_VALUE))]
    if reversibility:
        undo = escape.code(compensator, limit=ARG_NAME) if compensator else None
        effect = texts.effect(escape.mrkdwn(reversibility, limit=ARG_NAME), undo)
        head.append(texts.field(texts.EFFECT, effect))
    slots = kit.MAX_FIELDS - len(head)
    shown = arg_fields(
        approval.shown_args, approval.shown_approved_args, slots=slots, display=display
    )
    return [*head, *shown]


def _progress(approval: Approval, votes: Sequence[str]) -> list[str]:
    if approval.required_approvals <= 1:
        return []
    voters = [kit.mention(v) for v in dict.fromkeys(votes)][:MAX_VOTERS]
    return [texts.quorum(approval.required_approvals, voters)]


def _terms(approval: Approval, rule: str | None) -> list[str]:
    terms = [texts.expires(kit.date(approval.deadline))] if approval.deadline else []
    terms.append(texts.policy(escape.code(approval.policy, limit=ARG_NAME)))
    if rule:
        terms.append(texts.rule(escape.mrkdwn(flat(rule), limit=REASON_TEXT)))
    return terms


def _escalation(approval: Approval, escalate_to: Sequence[str]) -> list[str]:
    if not (approval.escalated and escalate_to):
        return []
    return [texts.escalated_to(_targets(escalate_to))]


def _targets(idents: Sequence[str]) -> str:
    return " ".join(kit.target(i) for i in list(dict.fromkeys(idents))[:MAX_VOTERS])


def ident_code(ident: str | None) -> str | None:
    """An id as inline code (None stays None)."""
    return escape.code(ident, limit=ARG_NAME + 40) if ident else None


def decision_actions(
    approval: Approval,
    *,
    action: str | None = None,
    reversibility: str | None = None,
    compensator: str | None = None,
    allow_edit: bool = False,
    similar: bool = False,
    envelope: bool = False,
    display: Display | None = None,
) -> Block:
    """Approve (with a confirm dialog), Edit (when allowed) and Decline; each button's value
    is the approval id alone. A quorum votes on the proposed arguments, so it gets no Edit.
    A call whose key an earlier effect used with other arguments gets "Approve as separate"
    instead of Approve: approving it as it is would not do what the card shows."""
    action = action or action_summary(approval.tool, approval.shown_args, display)
    if approval.conflict is not None:
        tool = flat(approval.tool)
        sure = kit.confirm(
            texts.confirm_title(action),
            texts.separate_confirm(tool),
            ok=texts.APPROVE_SEPARATE,
            back=texts.BACK,
        )
        approve = kit.button(
            texts.APPROVE_SEPARATE,
            Action.APPROVE_SEPARATE,
            approval.id,
            style="primary",
            confirm=sure,
        )
    else:
        sure = kit.confirm(
            texts.confirm_title(action),
            texts.confirm_text(action, reversibility, compensator),
            ok=texts.APPROVE,
            back=texts.BACK,
        )
        approve = kit.button(
            texts.APPROVE, Action.APPROVE, approval.id, style="primary", confirm=sure
        )
    buttons = [approve]
    if allow_edit and approval.required_approvals == 1:
        buttons.append(kit.button(texts.EDIT, Action.EDIT, approval.id))
    if similar and approval.required_approvals == 1:  # "Approve + similar…" (learned rules)
        buttons.append(kit.button(texts.APPROVE_SIMILAR, Action.APPROVE_SIMILAR, approval.id))
    if envelope and approval.required_approvals == 1:  # "Approve + budget…" (envelopes)
        buttons.append(kit.button(texts.APPROVE_ENVELOPE, Action.APPROVE_ENVELOPE, approval.id))
    buttons.append(kit.button(texts.ASK, Action.ASK, approval.id))
    buttons.append(kit.button(texts.DECLINE, Action.DECLINE, approval.id, style="danger"))
    return kit.actions(kit.APPROVAL_BLOCK + approval.id, buttons)


def outcome_line(approval: Approval, votes: Sequence[str] = ()) -> str:
    """How a decided approval ended, e.g. "✅ Approved by <@U…> at <!date…>"."""
    at = kit.date(approval.decided_at) if approval.decided_at else None
    reason = approval.reason or ""
    if approval.state == ApprovalState.PENDING:
        return texts.STILL_PENDING
    if approval.state == ApprovalState.APPROVED:
        last = {approval.decided_by, approval.decided_for}
        others = [a for a in dict.fromkeys(votes) if a and a not in last]
        names = [kit.mention(a) for a in others][: MAX_VOTERS - 1]
        if approval.decided_by:
            names.append(decider(approval))
        line = texts.approved(", ".join(names) or texts.UNKNOWN_PERSON, at)
        edits = _edits(approval)
        return line if edits is None else f"{line} · {texts.edits_note(decider(approval), edits)}"
    if reason == "expired":
        return texts.expired(at)
    if reason.startswith("withdrawn"):
        return texts.withdrawn(withdrawal(reason))
    if approval.question is not None:
        return texts.asked(decider(approval), _reason(approval.question) or "")
    return texts.declined(decider(approval), _reason(reason))


def decider(approval: Approval) -> str:
    """Who decided: "<@carol>", or "<@carol> for <@alice>" when a delegate decided for
    someone away."""
    by = kit.mention(approval.decided_by)
    return f"{by} for {kit.mention(approval.decided_for)}" if approval.decided_for else by


def withdrawal(reason: str) -> str:
    """`withdrawn: run rolled back by U123` -> the cause, its trailing actor as a mention.

    The runtime appends " by <actor>" last, so the final " by " is ours, not the human's.
    """
    cause = reason.removeprefix("withdrawn").lstrip(": ")
    head, sep, actor = cause.rpartition(" by ")
    if sep and kit.is_user_id(actor):
        return f"{escape.mrkdwn(flat(head), limit=REASON_TEXT)} by {kit.mention(actor)}"
    return escape.mrkdwn(flat(cause), limit=REASON_TEXT)


def _reason(reason: str) -> str | None:
    return escape.mrkdwn(flat(reason), limit=REASON_TEXT) or None


def asked_at(history: Sequence[Checkpoint], call_id: str) -> int | None:
    """The step whose model reply asked for this call: a decided card keeps the step it was
    asked at, though the run has moved on."""
    for checkpoint in history:
        for message in checkpoint.messages:
            if any(call.id == call_id for call in message.tool_calls):
                return checkpoint.step
    return None


# the card's thread


def decision_note(approval: Approval, display: Display | None = None) -> str:
    """One line telling the requester how their request ended."""
    asker = approval.requested_by
    mention = kit.mention(asker) if kit.is_user_id(asker) else None
    action = shown_action(approval, display)
    return texts.decision_note(mention, action, _verdict(approval))


def _verdict(approval: Approval) -> str:
    reason = approval.reason or ""
    if approval.state == ApprovalState.PENDING:
        return texts.VERDICT_PENDING
    if approval.state == ApprovalState.APPROVED:
        return texts.verdict_approved(decider(approval), _edits(approval))
    if reason == "expired":
        return texts.VERDICT_EXPIRED
    if reason.startswith("withdrawn"):
        return texts.verdict_withdrawn(withdrawal(reason))
    return texts.verdict_declined(decider(approval), _reason(reason))


def reminder_message(
    approval: Approval,
    *,
    reminders_sent: int,
    escalated: bool,
    escalate_to: Sequence[str],
    display: Display | None = None,
) -> dict[str, Any]:
    """A reminder in the card's thread; an escalation mentions its users and user groups."""
    action = shown_action(approval, display)
    deadline = kit.date(approval.deadline) if approval.deadline else None
    if escalated and escalate_to:
        since = kit.date(approval.created_at)
        line = texts.escalation(_targets(escalate_to), action, since, deadline)
    else:
        line = texts.reminder(reminders_sent, action, deadline)
    policy = escape.code(approval.policy, limit=ARG_NAME)
    blocks = [kit.section(line), kit.context(texts.reminder_context(reminders_sent, policy))]
    meta = kit.metadata(kit.REMINDER_EVENT, approval_id=approval.id, reminder=str(reminders_sent))
    return kit.message(line, blocks, metadata=meta)


def run_note(run: Run, approvals: Sequence[Approval] = ()) -> str:
    """One line for the card's thread when the run ends (or whatever it is doing now), in the
    vocabulary's words: done, declined (by whom, why), failed (the error), cancelled, rolled
    back or expired; `approvals`: the run's, which say who declined."""
    sentence = words.run_ended(run, NOTE_VOICE, declined=words.ended_by(run, approvals))
    return texts.run_ended(words.outcome_of(run), sentence)


def relied_on_note(detail: Mapping[str, Any]) -> str:
    """The note in the thread of a run whose relied-on effect another run undid (the
    `run_noted` outbox row's detail: what, by which run, who chose it)."""
    sentence = words.relied_on_undone(
        str(detail.get("tool", "")),
        str(detail.get("call_id", "")),
        str(detail.get("by_run", "")),
        str(detail["actor"]) if detail.get("actor") else None,
        NOTE_VOICE,
    )
    return texts.relied_on_undone(sentence)


NOTE_VOICE = words.Voice(
    person=kit.mention,
    text=lambda text: escape.mrkdwn(flat(text), limit=DETAIL_TEXT),
    code=lambda ident: escape.code(ident, limit=ARG_NAME + 40),
    time=kit.date,
)
"""How a run's end is written in Slack: mentions, escaped text cut to size, code spans."""
