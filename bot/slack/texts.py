"""One job, long because it is every sentence the app says in Slack: Slack's words.

Every word Signoff says in Slack, in one place.

Arguments are already-safe mrkdwn (escaped text, mentions, dates, code spans) unless a
function says it takes plain text; these functions add only the words around them. Every
sentence of the app is here, so the words can be read and changed in one place.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from bot import words

# buttons, dialogs and modals (plain text)

APPROVE = "Approve"
EDIT = "Edit…"
APPROVE_SIMILAR = "Approve + similar…"
APPROVE_ENVELOPE = "Approve + budget…"
CONFIRM_ENVELOPE = "Confirm budget"
REVOKE_ENVELOPE = "Revoke"
DECLINE = "Decline…"
ASK = f"{words.ASK}…"
ASK_TITLE = "Ask the agent"
ASK_SUBMIT = words.ASK
ASK_LABEL = "Your question. The agent reads it and asks again with its answer."
ASK_PLACEHOLDER = "e.g. why is the refund more than the order total?"
BACK = "Back"
ACKNOWLEDGE = "Acknowledge"
HAPPENED = "It happened"
DID_NOT_HAPPEN = "It did not happen"
DECLINE_TITLE = "Decline request"
DECLINE_SUBMIT = "Decline"
DECLINE_LABEL = "Why? The agent is told this reason."
DECLINE_PLACEHOLDER = "e.g. the customer is not eligible"
EDIT_TITLE = "Edit arguments"
EDIT_SUBMIT = "Approve as edited"
EDIT_LABEL = "Arguments (JSON)"
EDIT_HINT = "Change values, then submit to approve the call with them."
EDIT_TOO_LONG = (
    "These arguments are too long to edit in Slack. Approve or decline them as they are."
)
UNKNOWN_PERSON = words.UNKNOWN_PERSON
BACKTEST_RUNNING = (
    "_Backtest running: what this rule would have done to the latest requests "
    "appears here in a moment._"
)


def more_characters(count: int) -> str:
    return f"… ({count} more character{'' if count == 1 else 's'})"


and_more = words.and_more


# the approval card


def action(tool: str, amount: str | None, subject: str | None, pairs: Sequence[str]) -> str:
    """The action in a few words, plain text: `issue_refund 2500 cents on 4471`."""
    if amount is not None and subject is not None:
        return f"{tool} {amount} on {subject}"
    return " ".join([tool, *(w for w in (amount, subject) if w is not None), *pairs])


def in_cents(amount: str) -> str:
    return f"{amount} cents"


def about(task: str | None, asker: str, run: str | None, step: int | None) -> str:
    where = [f"*Asked by* {asker}"]
    if run:
        where.append(f"run {run}")
    if step is not None:
        where.append(words.step(step))
    lines = [f"*Task:* {task}"] if task else []
    return "\n".join([*lines, " · ".join(where)])


def field(name: str, value: str) -> str:
    return f"*{name}*\n{value}"


TOOL = "Tool"
EFFECT = "Effect"


def effect(reversibility: str, compensator: str | None) -> str:
    if reversibility == "reversible" and compensator:
        return f"reversible (compensated by {compensator})"
    if reversibility == "irreversible":
        return "irreversible: cannot be undone"
    return reversibility


def more_args(count: int, names: str) -> str:
    return f"*+{count} more*\n{names}"


def edited(before: str, after: str) -> str:
    """An argument the approver changed: what runs, then what was asked."""
    return f"{after} (asked {before})"


APPROVE_SEPARATE = "Approve as separate"


def conflict(tool: str, done: str, by_run: str, approved: str | None, asks: str) -> str:
    """mrkdwn: an earlier effect used this call's key with other arguments."""
    who = f" (approved by {approved})" if approved else ""
    return (
        f":warning: *{tool} {done} by run {by_run}{who}; this run asks {asks}.* "
        f"Decline, or approve it as a separate {tool}. `/runs status` {by_run} shows that run."
    )


def separate(tool: str) -> str:
    return f"approved as a separate {tool} (re-keyed: not a repeat of the earlier one)"


def separate_confirm(tool: str) -> str:
    return f"This makes a second {tool}, in addition to the one already done."


def edits_note(by: str, changes: str) -> str:
    return f"edited by {by}: {changes}"


NOT_SET = "(not set)"


def quorum(required: int, voters: Sequence[str]) -> str:
    progress = f"{len(voters)} of {required}"
    so_far = f"{progress}: {', '.join(voters)}" if voters else f"{progress} so far"
    return f"Needs {required} approvals · {so_far}"


def expires(when: str) -> str:
    return f"expires {when}"


def context_facts(facts: str) -> str:
    """The facts the tool's context function read, for the approver."""
    return f":mag: *Context:* {facts}"


def context_unavailable(why: str) -> str:
    return f":grey_question: context unavailable: {why}"


def agent_reason(reason: str) -> str:
    """The agent's own words for the call (untrusted text, escaped by the caller)."""
    return f":speech_balloon: *The agent's reason:* {reason}"


def asked_again(why: str) -> str:
    """A call approved before that did not run as approved: why it is asked again."""
    return f":arrows_counterclockwise: *Asked again:* {why}; it was not run"


def question(by: str, text: str) -> str:
    """The approver's question this call answers (a card asked again after it)."""
    return f":grey_question: *{words.question_from(by)}:* {text}"


def agent_answer(text: str) -> str:
    return f":speech_balloon: *{words.ANSWER}:* {text}"


def possible_duplicate(run: str, differs: str | None = None) -> str:
    if differs:
        return f":warning: possible duplicate of run {run}: the same effect, but {differs}"
    return f":warning: possible duplicate of run {run}: it asked for the same effect"


def decision_target(within: str, *, missed: bool) -> str:
    """A policy's decision target on a card or reminder, and whether it was missed."""
    return (
        f":warning: past its {within} decision target"
        if missed
        else f"target: decided within {within}"
    )


def policy(name: str) -> str:
    return f"policy {name}"


def rule(text: str) -> str:
    """The approval rule a card was made under; a rule's summary names itself ("rule 3: …")."""
    return text if text.startswith(("rule ", "no rule")) else f"rule: {text}"


def escalated_to(targets: str) -> str:
    return f"escalated to {targets}"


def _at(what: str, at: str | None) -> str:
    """What happened, and when if it is known."""
    return what + (f" at {at}" if at else "")


def approved(by: str, at: str | None) -> str:
    return _at(f":white_check_mark: Approved by {by}", at)


def declined(by: str, reason: str | None) -> str:
    return f":x: Declined by {by}" + (f": {reason}" if reason else "")


def expired(at: str | None) -> str:
    return _at(":hourglass: Expired (declined)", at)


STILL_PENDING = ":hourglass_flowing_sand: Pending: waiting for a decision"


CANCEL_COOL_OFF = "Cancel"
UNDO = "Undo"


def runs_in(minutes: int | None, at: str) -> str:
    """An approved call waiting out its cool-off: "Runs in 4m (at …) unless an approver
    cancels it"."""
    left = f"in {minutes}m " if minutes is not None else ""
    return f":hourglass_flowing_sand: Runs {left}({at}) unless an approver cancels it"


def cool_off_cancelled(by: str) -> str:
    return f":no_entry_sign: Cancelled by {by} before it ran: nothing was done"


def undo_until(at: str) -> str:
    return f":leftwards_arrow_with_hook: Ran. An approver may undo it until {at}"


RUNNING_NO_UNDO_YET = ":gear: Running: Undo is offered once it has completed"
RAN_AND_FAILED = ":x: Ran and failed: nothing was done, so there is nothing to undo"
RAN_IN_DOUBT = (
    ":warning: Ran, but whether it happened is in doubt: on-call was paged; it cannot be "
    "undone blind"
)


def undoing(by: str) -> str:
    return f":leftwards_arrow_with_hook: Being undone by {by}"


def undo_failed(why: str) -> str:
    """An undo whose compensation failed: the call is not undone (an approver may retry)."""
    return f":x: Undo failed: {why}. It is not undone"


def undone(by: str, at: str | None) -> str:
    return _at(f":leftwards_arrow_with_hook: Undone by {by}", at)


def not_taken_back(why: str) -> str:
    """A Cancel or Undo click that could not be done (too late, not permitted)."""
    return f":warning: {why}"


def waiter(note: str) -> str:
    """Whether anyone waits for the answer (`bot.words.waiter_note`)."""
    return f":zzz: {note[:1].upper()}{note[1:]}"


def step_up(link: str | None) -> str:
    """A click on a card whose policy needs a passkey: where to confirm it."""
    if link is None:
        return (
            ":closed_lock_with_key: This approval counts only once you confirm it with your "
            "passkey on the approvals page (this server has no public_url to link to); "
            "nothing changed."
        )
    return (
        f":closed_lock_with_key: This approval counts only once you confirm it with your "
        f"passkey: <{link}|approve it on the approvals page>. Nothing changed yet."
    )


def ask_prompt(action: str) -> str:
    return f"What would you like the agent to answer before you decide {action}?"


def asked(by: str, question: str) -> str:
    """An approver asked the agent instead of deciding: it was not run, and the agent's
    answer comes back as a new card."""
    return (
        f":grey_question: {words.ASKED.capitalize()} by {by}: {question} "
        "(not run; the agent answers on a new card)"
    )


def withdrawn(reason: str) -> str:
    return f":leftwards_arrow_with_hook: Withdrawn: {reason}"


def confirm_title(action: str) -> str:
    """Plain text."""
    return f"Approve {action}?"


def confirm_text(action: str, reversibility: str | None, compensator: str | None) -> str:
    """Plain text."""
    if reversibility == "reversible":
        undo = f" with {compensator}" if compensator else ""
        return f"This runs {action}. It can be reversed{undo}."
    if reversibility == "irreversible":
        return f"This runs {action}. It cannot be undone."
    return f"This runs {action}."


def needs_approval(action: str, run: str | None, asker: str) -> str:
    return f"Approval needed: {action}" + (f" (run {run})" if run else "") + f", asked by {asker}"


def decided(action: str, outcome: str) -> str:
    return f"{action}: {outcome}"


# the card's thread


def decision_note(asker: str | None, action: str, verdict: str) -> str:
    whose = f"{asker} your request" if asker else "The request"
    return f"{whose} {action} {verdict}"


def verdict_approved(by: str, edits: str | None = None) -> str:
    return f"was approved by {by}" + (f", who edited it: {edits}." if edits else ".")


def verdict_declined(by: str, reason: str | None) -> str:
    return f"was declined by {by}" + (f": {reason}" if reason else ".")


VERDICT_EXPIRED = "expired without a decision and was declined."
VERDICT_PENDING = "is still waiting for a decision."


def verdict_withdrawn(reason: str) -> str:
    return f"was withdrawn: {reason}"


def reminder(count: int, action: str, deadline: str | None) -> str:
    until = _expires_sentence(deadline)
    return f":alarm_clock: Reminder {count}: {action} still waits for a decision.{until}"


def escalation(targets: str, action: str, since: str, deadline: str | None) -> str:
    until = _expires_sentence(deadline)
    return f":mega: {targets}: {action} has waited for a decision since {since}.{until}"


def _expires_sentence(deadline: str | None) -> str:
    """A reminder's or escalation's last sentence: when the approval expires, if it does."""
    return f" It expires {deadline}." if deadline else ""


def reminder_context(count: int, policy_name: str) -> str:
    return f"Reminder {count} · policy {policy_name}"


OUTCOME_ICONS = {
    words.DONE: ":white_check_mark:",
    words.DECLINED: ":no_entry_sign:",
    words.FAILED: ":x:",
    words.CANCELLED: ":octagonal_sign:",
    words.ROLLED_BACK: ":leftwards_arrow_with_hook:",
    words.EXPIRED: ":hourglass:",
    words.UNDONE: ":rewind:",
}
"""One icon per way a run ends (`bot.words.OUTCOMES`); a check mark only for `done`."""


def run_ended(outcome: str | None, sentence: str) -> str:
    """The vocabulary's sentence for a run's end (`bot.words.run_ended`), with its icon."""
    icon = OUTCOME_ICONS.get(outcome or "")
    return f"{icon} {sentence}" if icon else sentence


def run_outcome(outcome: str) -> str:
    """How a request's run ended, in a list: `:x: run failed`."""
    return run_ended(outcome, f"run {outcome}")


def relied_on_undone(sentence: str) -> str:
    """In the thread of a run that relied on another run's effect, once that was undone."""
    return f":warning: {sentence}"


def run_now(run: str, status: str, step: int) -> str:
    return f"Run {run} is {status} at step {step}."


# pages

PAGE_REASONS = {
    "in_doubt": "may or may not have happened",
    "uncompensatable": "cannot be undone automatically",
    "compensation_failed": "could not be undone",
    "acted_late": "completed after its run was taken over",
    "key_conflict": "was not run: its key was used with other arguments",
    "args_mismatch": "was not run: its arguments are not those approved",
    "shared_undone": "was undone though other runs rely on it",
    "shared_kept": "was not undone: other runs rely on it",
}
AN_EFFECT = words.AN_EFFECT


def page_header(tool: str, run: str | None) -> str:
    """Plain text."""
    return f"Needs a human: {tool}" + (f" in run {run}" if run else "")


def page_body(tool: str, why: str, detail: str, task: str | None) -> str:
    lines = [f"*{tool} {why}.*", detail]
    if task:
        lines.append(f"*Task:* {task}")
    return "\n".join(line for line in lines if line)


def settle(commands: str) -> str:
    return f"*To settle it:*\n{commands}"


def page_context(reason: str, call: str | None) -> str:
    return f"reason {reason}" + (f" · call {call}" if call else "")


def acknowledged(by: str, at: str | None) -> str:
    return _at(f":eyes: Acknowledged by {by}", at)


def page_reminder(tool: str, since: str) -> str:
    return f":repeat: Still needs a human: {tool}, open since {since}. Acknowledge it once handled."


def page_fallback(tool: str, run: str | None, reason: str) -> str:
    """The header's words, with the page's reason."""
    return f"{page_header(tool, run)} ({reason})"


# /runs replies and the App Home

HELP = (
    ("status <id>", "a run's status, budget, pending approvals and open pages"),
    ("list [status]", "recent runs, e.g. `list waiting_approval`"),
    ("pending", "what waits for your decision"),
    ("history <id>", "a run's checkpoints, one line each"),
    (
        "cancel <id> [compensate]",
        "stop a run for good (approvers of its actions only); `compensate` undoes a "
        "reversible tool still running once it ends",
    ),
    ("rules", "the approval rules in force, from the file and made from decisions"),
    ("revoke <rule id>", "end a rule made from a decision (rule-writers only)"),
    ("help", "this help"),
)
"""Plain text: each sub-command and what it does (the descriptions may use `code`)."""
HELP_TITLE = "*/runs* looks at Signoff's agent runs:"
ANSWER_FOLLOWS = "Looking that up; the answer follows here in a moment."
HELP_FALLBACK = (
    "/runs status <id> · list [status] · pending · history <id> · cancel <id> · rules · "
    "revoke <rule id> · help"
)


def help_line(command: str, meaning: str) -> str:
    return f"{command} — {meaning}"


def unknown_command(said: str) -> str:
    return f"I don't know {said}." if said else "Say what to look at."


def not_found(what: str, ident: str) -> str:
    return f"No {what} {ident}."


def run_title(run: str) -> str:
    """Plain text."""
    return f"Run {run}"


def run_summary(agent: str, status: str, step: int) -> str:
    return f"*Status:* {status} · *step* {step} · *agent* {agent}"


def status_text(
    status: str, stop_reason: str | None, *, decided: bool = False, cooling: datetime | None = None
) -> str:
    """Plain text: the vocabulary's word for a run's state (`bot.words`)."""
    return words.run_state(status, stop_reason, decided=decided, cooling=cooling)


RESUME_HOW = f"{words.READY_TO_RESUME}: every approval is decided; {words.how_to_resume()}."


def ready_to_resume(run: str, how: str) -> str:
    """A parked run whose approvals are all decided, and how it goes on (`how`: the
    vocabulary's `how_to_resume`, escaped)."""
    return f"Every approval of run {run} is decided: {words.READY_TO_RESUME}; {how}."


def task(text: str) -> str:
    return f"*Task:* {text}"


def usage(parts: Sequence[str]) -> str:
    return "*Usage:* " + " · ".join(parts)


def used(name: str, amount: str, limit: str | None) -> str:
    return f"{name} {amount}" + (f" of {limit}" if limit is not None else "")


STEPS = "steps"
INPUT_TOKENS = "input tokens"
OUTPUT_TOKENS = "output tokens"
COST = "cost"


def error(text: str) -> str:
    return f"*Error:* {text}"


def waiting_title(count: int) -> str:
    return f"*Waiting for approval ({count})*"


def limits_title(count: int) -> str:
    return f"*Limits its calls counted against ({count})*"


def pages_title(count: int) -> str:
    return f"*Open pages ({count})*"


def pending_line(action: str, where: str | None, asker: str, deadline: str | None) -> str:
    parts = [action, *([f"run {where}"] if where else []), f"asked by {asker}"]
    if deadline:
        parts.append(expires(deadline))
    return " · ".join(parts)


def page_line(tool: str, reason: str, detail: str) -> str:
    return f":rotating_light: {tool} · {reason} · {detail}"


def runs_title(status: str | None, count: int) -> str:
    which = f" {status}" if status else ""
    return f"*Runs{which}* ({count} shown)"


def no_runs(status: str | None) -> str:
    return f"No runs with status {status}." if status else "No runs yet."


def run_line(run: str, status: str, step: int, agent: str, task: str) -> str:
    return f"{run} · *{status}* · step {step} · {agent} · {task}"


PENDING_TITLE = "*Waiting for your decision*"
NOTHING_PENDING = words.NOTHING_PENDING


def history_title(run: str, count: int) -> str:
    return f"*History of run {run}* ({count} checkpoints)"


def earlier_hidden(count: int) -> str:
    return f"{count} earlier checkpoints not shown; `signoff runs history` has them all."


def checkpoint_line(seq: int, step: int, status: str, appended: str) -> str:
    return f"#{seq} · step {step} · {status} · {appended}"


def snapshot(count: int) -> str:
    return f"snapshot of {count} messages"


def called(names: str) -> str:
    return f"called {names}"


REPLIED = "replied"
NOTHING_APPENDED = "status only"
SYSTEM_PROMPT = "system prompt"
USER_MESSAGE = "user message"


def result_of(name: str) -> str:
    return f"result of {name}"


def decline_prompt(action: str, run: str | None) -> str:
    return f"Decline {action}" + (f" in run {run}" if run else "") + "?"


def edit_prompt(action: str) -> str:
    return f"Edit the arguments of {action}, then approve."


NO_PAGES = "No open pages."


NOT_A_RESOLVER = "Only on-call (page_resolvers) may settle a page; nothing changed."


def not_settled(why: str) -> str:
    return f"Nothing changed: {why}"
