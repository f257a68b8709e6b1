"""One job, long because it holds every shared word and refusal: Signoff's vocabulary.

Signoff's vocabulary: the one word for each state of a run, an approval, a page and an
effect, the label of a step, and the one sentence for each refusal, shared by every surface
(Slack, the CLI, the HTTP API's messages, the `signoff dev` console).

The words are the same everywhere; only how a person, a value or a time is written differs
by surface (a Slack mention, a name in a modal, an id in a terminal). A surface passes a
`Voice` that writes those, and these functions say the rest. A state's word is the stored
name where one exists (what `/runs list STATUS` and the CLI's filters take), except where
the stored name would say the wrong thing: a run restored by a rollback is "rolled back",
not "failed"; a parked run whose approvals are all decided is "ready to resume", unless an
approved call waits out its cool-off, which it says with the time the call runs.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC
from datetime import datetime
from typing import Any

from runtime import errors
from runtime.approvals import differences
from runtime.approvals import said
from runtime.records import Approval
from runtime.records import ApprovalState
from runtime.records import Effect
from runtime.records import EffectConflict
from runtime.records import EffectStatus
from runtime.records import Page
from runtime.records import Run
from runtime.records import RunStatus

# states

RUN_STATES: dict[str, str] = {s.value: s.value for s in RunStatus}
"""A run's stored status and its word: `running`, `waiting_approval`, `done`, ..."""
ROLLED_BACK = "rolled back"
READY_TO_RESUME = "ready to resume"
DERIVED_RUN_STATES = (ROLLED_BACK, READY_TO_RESUME)
"""Words for what a stored status alone would misname."""

STOP_REASONS: dict[str, str | None] = {
    "answered": None,  # a done run answered: nothing more to say
    "waiting_approval": None,
    "cancelled": None,
    "error": None,
    "rolled_back": None,  # said by ROLLED_BACK itself
    "step_budget": "out of steps",
    "token_budget": "out of tokens",
    "cost_budget": "over its cost limit",
    "in_doubt": "an effect is in doubt",
    "conflict": "a call's key was used with other arguments",
    "args_mismatch": "a call's arguments were not those approved",
    "declined": None,  # said by its outcome, DECLINED
    "expired": None,  # said by its outcome, EXPIRED
    "tool_failed": "a tool failed",
    "cool_off_cancelled": "a call was cancelled in its cool-off",
    "undone": None,  # said by its outcome, UNDONE
}
"""Why a run stopped, in words; None: its status says it already."""

APPROVAL_STATES: dict[str, str] = {s.value: s.value for s in ApprovalState}
EXPIRED = "expired"
WITHDRAWN = "withdrawn"
DERIVED_APPROVAL_STATES = (EXPIRED, WITHDRAWN)
"""A declined approval that no person declined: its deadline passed, or its run moved on."""

ASKED = "asked"
"""The one word for a question back to the agent instead of a decision: the approval's
state, the API's and CLI's decision (`asked`), the Ask button."""
ASK = "Ask"
ANSWER = "Agent's answer"


def question_from(by: str) -> str:
    """The label of an approver's question on the card asked again: `Question from @bob`."""
    return f"Question from {by}"


def question(reasked: Mapping[str, Any] | None) -> tuple[str, str] | None:
    """(who asked, the question) when an approval is the agent's call after a question."""
    if not reasked or reasked.get("why") != "question":
        return None
    return str(reasked.get("by") or UNKNOWN_PERSON), str(reasked.get("text") or "")


AGENT_STOPPED_WAITING = "the agent stopped waiting"
"""Why an approval was withdrawn when the agent that asked left (cancelled, disconnected)."""
NOBODY_WAITING = "nobody is waiting for this answer now"
"""A pending approval whose waiter's heartbeat lapsed (its agent was killed, or gave up)."""
RUNS_ONLY_IF_ASKED_AGAIN = "the call runs only if it is asked again"


def waiter_note(approval: Approval) -> str | None:
    """What an approval's waiter means for its answer: nobody waits for a pending one, or
    nobody waited when it was approved (so it runs only if asked again); None otherwise."""
    left = approval.waiter_left_at
    if left is None or approval.state == ApprovalState.DECLINED:
        return None
    if approval.state == ApprovalState.PENDING:
        return NOBODY_WAITING
    if approval.decided_at is not None and left <= approval.decided_at:
        return f"nobody was waiting for this answer: {RUNS_ONLY_IF_ASKED_AGAIN}"
    return None


PAGE_OPEN = "open"
PAGE_ACKNOWLEDGED = "acknowledged"
PAGE_STATES = (PAGE_OPEN, PAGE_ACKNOWLEDGED)

EFFECT_STATES: dict[str, str] = {
    EffectStatus.STARTED.value: "running",
    EffectStatus.COMPLETED.value: "completed",
    EffectStatus.FAILED.value: "failed",
    EffectStatus.IN_DOUBT.value: "in doubt",
}
COMPENSATED = "compensated"


def run_state(
    status: str,
    stop_reason: str | None = None,
    *,
    decided: bool = False,
    dry_run: bool = False,
    cooling: datetime | None = None,
) -> str:
    """A run's state in one word or a few: `done`, `declined`, `failed (out of steps)`,
    `rolled back`, `ready to resume` (`decided`: parked, with every approval decided),
    `dry run: done`; parked while an approved call waits out its cool-off until `cooling`,
    it says so (nothing resumes it before). A run that answered says whether it did what was
    asked (`run_outcome`)."""
    outcome = run_outcome(status, stop_reason)
    if outcome in (ROLLED_BACK, DECLINED, EXPIRED, UNDONE):
        text = outcome
    elif cooling is not None and status == RunStatus.WAITING_APPROVAL:
        text = cooling_off(cooling)
    elif decided and status == RunStatus.WAITING_APPROVAL:
        text = READY_TO_RESUME
    elif outcome in (FAILED, CANCELLED) and status == RunStatus.DONE:
        text = f"{outcome} ({STOP_REASONS[stop_reason or '']})"
    else:
        why = STOP_REASONS.get(stop_reason or "", stop_reason)
        text = RUN_STATES.get(status, status) + (f" ({why})" if why and why != status else "")
    return f"dry run: {text}" if dry_run else text


def state_of_run(run: Run, *, decided: bool = False, cooling: datetime | None = None) -> str:
    return run_state(
        run.status.value, run.stop_reason, decided=decided, dry_run=run.dry_run, cooling=cooling
    )


def cooling_off(until: datetime) -> str:
    """A parked run whose approved call waits out its cool-off (issue 42.6)."""
    return f"the call waits out its cool-off until {until.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"


def cool_off_end(approvals: Sequence[Approval]) -> datetime | None:
    """When the first approved call of these still waiting out its cool-off runs (None: none
    waits)."""
    ends = [a.cool_off_until for a in approvals if a.cool_off == "waiting" and a.cool_off_until]
    return min(ends, default=None)


def approval_state(approval: Approval) -> str:
    """`pending`, `approved`, `declined`, or `expired` / `withdrawn` (declined by no one), or
    `asked` (a question back to the agent)."""
    reason = approval.reason or ""
    if approval.state == ApprovalState.DECLINED and reason == "expired":
        return EXPIRED
    if approval.state == ApprovalState.DECLINED and reason.startswith("withdrawn"):
        return WITHDRAWN
    if approval.state == ApprovalState.DECLINED and approval.question is not None:
        return ASKED
    return APPROVAL_STATES[approval.state.value]


def page_state(page: Page) -> str:
    return PAGE_ACKNOWLEDGED if page.acknowledged_by else PAGE_OPEN


def effect_state(effect: Effect, *, compensated: bool = False) -> str:
    if compensated or effect.compensated_by is not None:
        return COMPENSATED
    return EFFECT_STATES[effect.status.value]


def step(number: int) -> str:
    """A step's label, the same before and after anything about it is decided."""
    return f"step {number}"


REPLIED = "replied"
STARTED = "started"
NOT_RUN = "not run"


def call_outcome(tool: str, approval: str | None, effect: str | None) -> str:
    """A finished step's call: `issue_refund: approved, completed`, `send_email: declined,
    not run`, `lookup_order: completed`."""
    parts = [p for p in (approval, effect) if p]
    if approval in (ApprovalState.DECLINED, EXPIRED, WITHDRAWN) and not effect:
        parts.append(NOT_RUN)
    return f"{tool}: {', '.join(parts) or NOT_RUN}"


def how_to_resume(run_id: str | None = None, agent: str | None = None) -> str:
    """Plain text: how a run that is ready to resume goes on (every approval decided, and
    its agent not loaded where the decision was made)."""
    where = f"its agent {agent!r}" if agent else "its agent"
    command = f"signoff runs resume {shlex.quote(run_id) if run_id else '<id>'}"
    return (
        f"it resumes where {where} is loaded: `signoff serve` there picks it up, "
        f"or run `{command}` there"
    )


# how a surface writes people, values and times


@dataclass(frozen=True)
class Voice:
    """How one surface writes what the words are about. `you`: the reader (the person who
    clicked or typed), whom the words address as "You"."""

    person: Callable[[str], str] = str
    text: Callable[[str], str] = str
    code: Callable[[str], str] = str
    time: Callable[[datetime], str] = lambda at: at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    you: str | None = None

    def who(self, user: str | None) -> str:
        if user is None:
            return UNKNOWN_PERSON
        return "You" if user == self.you else self.person(user)

    def be(self, user: str | None) -> str:
        """`You are` / `U0BOB is`."""
        return f"{self.who(user)} {'are' if user is not None and user == self.you else 'is'}"

    def at(self, moment: datetime | None) -> str:
        return f" at {self.time(moment)}" if moment else ""


UNKNOWN_PERSON = "someone"
PLAIN = Voice(code=repr)
"""For a terminal and the HTTP API: ids as they are, names quoted, times in UTC."""


def named(names: Mapping[str, str]) -> Callable[[str], str]:
    """A person by name when the directory knows them (`@riley`), else by id."""
    return lambda user: f"@{names[user]}" if user in names else user


# how a run ended: one word for each end, the same on every surface; only `done` did what
# was asked

DONE = RunStatus.DONE.value
DECLINED = ApprovalState.DECLINED.value
FAILED = RunStatus.FAILED.value
CANCELLED = RunStatus.CANCELLED.value
UNDONE = "undone"
OUTCOMES = (DONE, DECLINED, FAILED, CANCELLED, ROLLED_BACK, EXPIRED, UNDONE)
_ANSWERED_BUT = {
    "declined": DECLINED,
    "expired": EXPIRED,
    "tool_failed": FAILED,
    "cool_off_cancelled": CANCELLED,
    "undone": UNDONE,
}
"""A run that answered without doing what was asked (or had it taken back after): its stop
reason, and its outcome."""


def run_outcome(status: str, stop_reason: str | None) -> str | None:
    """How a run ended, one of OUTCOMES; None while it has not (running, parked)."""
    if stop_reason == "rolled_back":
        return ROLLED_BACK
    if status == RunStatus.DONE:
        return _ANSWERED_BUT.get(stop_reason or "", DONE)
    if status in (RunStatus.FAILED, RunStatus.CANCELLED):
        return str(status)
    return None


def outcome_of(run: Run) -> str | None:
    return run_outcome(run.status.value, run.stop_reason)


def run_ended(run: Run, voice: Voice = PLAIN, *, declined: Approval | None = None) -> str:
    """A run's end in one sentence: `Run r1 ended at step 4: failed (delete_customer:
    CrmUnavailable: the CRM answered 503)`; `Run r1 was rolled back to step 2`. `declined`:
    the approval that was declined (or expired), for who and why; the run's error says why it
    failed."""
    outcome = outcome_of(run)
    ident = voice.code(run.id)
    if outcome == ROLLED_BACK:
        return f"Run {ident} was rolled back to {step(run.step)}."
    if outcome is None:
        return f"Run {ident} is {voice.text(state_of_run(run))} at {step(run.step)}."
    why = _why_ended(run, outcome, voice, declined)
    return f"Run {ident} ended at {step(run.step)}: {outcome}" + (f" ({why})." if why else ".")


def _why_ended(run: Run, outcome: str, voice: Voice, declined: Approval | None) -> str | None:
    if outcome == FAILED:
        why = run.error or STOP_REASONS.get(run.stop_reason or "") or run.stop_reason
        return voice.text(" ".join(why.split())) if why else None
    if outcome == CANCELLED:  # by a person; in its cool-off, one call only
        why = STOP_REASONS.get(run.stop_reason or "")
        return voice.text(why) if why else None
    if outcome in (DECLINED, EXPIRED) and declined is not None:
        tool = voice.code(declined.tool)
        if outcome == EXPIRED:
            return f"{tool} was not decided before its deadline"
        reason = f": {voice.text(declined.reason)}" if declined.reason else ""
        return f"{tool} was declined by {voice.who(declined.decided_by)}{reason}"
    return None


def ended_by(run: Run, approvals: Sequence[Approval]) -> Approval | None:
    """The approval a declined or expired run was stopped by: the latest one in that state."""
    outcome = outcome_of(run)
    stopped = [
        a for a in approvals if outcome in (DECLINED, EXPIRED) and approval_state(a) == outcome
    ]
    return stopped[-1] if stopped else None


def relied_on_undone(
    tool: str, call_id: str, by_run: str, by: str | None, voice: Voice = PLAIN
) -> str:
    """What a run is told when the effect it was handed (another run's) was compensated."""
    return (
        f"{voice.code(tool)} of run {voice.code(by_run)}, which this run relies on (its call "
        f"{voice.code(call_id)} was handed that effect), was undone by {voice.who(by)}'s explicit "
        "choice: what this run did or said on the strength of it may no longer hold."
    )


# refusals: why something a person asked changed nothing


NOTHING_CHANGED = "nothing changed"


def refusal(exc: BaseException, voice: Voice = PLAIN) -> str:
    """The sentence for a refusal, the same on every surface."""
    if isinstance(exc, errors.DecisionRefused):
        return _decision_refusal(exc, voice)
    if isinstance(exc, errors.ApprovalNotFound):
        return f"There is no approval{_ident(exc, voice)} (it may have been pruned)."
    if isinstance(exc, errors.PageNotFound):
        return f"There is no page{_ident(exc, voice)}."
    if isinstance(exc, errors.AlreadyAcknowledged):
        page = getattr(exc, "page", None)
        if isinstance(page, Page):
            who = voice.who(page.acknowledged_by)
            return f"{who} already acknowledged this page{voice.at(page.acknowledged_at)}."
        return "This page was already acknowledged."
    return voice.text(_one_line(exc))


def _decision_refusal(exc: errors.DecisionRefused, voice: Voice) -> str:
    approval = getattr(exc, "approval", None)
    by = getattr(exc, "by", None)
    if isinstance(exc, errors.ApprovalExpired):
        return "This approval expired before the decision; it was declined as expired."
    if isinstance(exc, errors.AlreadyDecided):
        if isinstance(approval, Approval):
            return already_decided(approval, voice)
        return "This approval was already decided; a decision never changes."
    if isinstance(exc, errors.SelfApproval) or (
        isinstance(exc, errors.NotAnApprover) and _asker(approval, by)
    ):
        return self_approval(approval if isinstance(approval, Approval) else None, voice, by)
    if isinstance(exc, errors.NotAnApprover):
        what = _call(approval, voice)
        return f"{voice.be(by)} not an approver for {what}; {NOTHING_CHANGED}."
    if isinstance(exc, errors.AlreadyVoted):
        rest = str(exc).split("; ", 1)[-1]
        return f"{voice.who(by)} already approved this; {voice.text(rest)}."
    if isinstance(exc, errors.KeyConflict):
        return f"Not approved, nothing was done: {voice.text(_one_line(exc))}"
    if isinstance(exc, errors.EditRefused):
        return f"These arguments cannot be approved: {voice.text(_one_line(exc))}"
    return voice.text(_one_line(exc))


def self_approval(approval: Approval | None, voice: Voice, by: str | None) -> str:
    """A requester approving their own request: one sentence whether or not they are also
    among the approvers (the policy lets no requester approve)."""
    policy = f"policy {voice.code(approval.policy)}" if approval else "its policy"
    return f"{voice.who(by)} asked for this action, and {policy} forbids self-approval; " + (
        f"{NOTHING_CHANGED}."
    )


def edit_conflict(exc: errors.KeyConflict, voice: Voice = PLAIN) -> str:
    """An edit refused because an earlier effect used the call's key with other arguments:
    what was done, what the edit asks, and what the card the person edited from offers (a
    card shows "Approve as separate" only when the call as asked conflicts, and that button
    approves the arguments as asked, not the edit)."""
    conflict, asked = getattr(exc, "conflict", None), getattr(exc, "asked", None)
    approval = getattr(exc, "approval", None)
    if not isinstance(conflict, EffectConflict) or not isinstance(asked, dict):
        return refusal(exc, voice)
    changes = differences(conflict.args, asked)
    tool = voice.code(conflict.tool)
    done = (
        "was already done"
        if conflict.status == EffectStatus.COMPLETED
        else (f"is {EFFECT_STATES.get(conflict.status.value, conflict.status.value)}")
    )
    who = f" (approved by {voice.who(conflict.approved_by)}{voice.at(conflict.approved_at)})"
    facts = (
        f"{tool} {done} under the same key with {voice.text(said(changes, 1))} by run "
        f"{voice.code(conflict.run_id)}{who if conflict.approved_by else ''}; "
        f"this edit asks {voice.text(said(changes, 2))}"
    )
    if isinstance(approval, Approval) and approval.conflict is not None:
        then = f"Approve as separate on the card runs the call as asked as a separate {tool}"
    else:
        then = f"Approve on the card runs the call as asked (the same {tool}, made once)"
    return f"Not approved, nothing was done: {facts}. {then}; or Decline."


def already_decided(approval: Approval, voice: Voice = PLAIN) -> str:
    when = voice.at(approval.decided_at)
    reason = approval.reason or ""
    state = approval_state(approval)
    if state == ApprovalState.APPROVED:
        return f"Already approved by {_decider(approval, voice)}{when}."
    if state == EXPIRED:
        return f"This approval expired{when} and was declined; it cannot be decided any more."
    if state == WITHDRAWN:
        cause = reason.removeprefix("withdrawn").lstrip(": ")
        cause = voice.text(cause)
        return f"This approval was withdrawn{when} ({cause}); there is nothing to decide."
    because = f": {voice.text(reason)}" if reason else ""
    return f"Already declined by {_decider(approval, voice)}{when}{because}."


def _decider(approval: Approval, voice: Voice) -> str:
    who = approval.decided_by
    said = voice.person(who) if who else UNKNOWN_PERSON
    return f"{said} for {voice.person(approval.decided_for)}" if approval.decided_for else said


def _asker(approval: object, by: str | None) -> bool:
    return isinstance(approval, Approval) and by is not None and approval.requested_by == by


def _call(approval: object, voice: Voice) -> str:
    if not isinstance(approval, Approval):
        return "this action"
    return f"{voice.code(approval.tool)} under policy {voice.code(approval.policy)}"


def _ident(exc: BaseException, voice: Voice) -> str:
    ident = getattr(exc, "ident", None)
    return f" {voice.code(ident)}" if isinstance(ident, str) else ""


def _one_line(exc: BaseException) -> str:
    lines = (" ".join(line.split()) for line in str(exc).splitlines())
    return "; ".join(line for line in lines if line)


# the App Home, and how long an approval waits (a surface writes the people, actions and
# times it names; these say the rest)

HOME_PENDING = "Waiting for your decision"
HOME_PAGES = "Open pages"
HOME_REQUESTS = "Your requests"
HOME_RECENT = "Your recent decisions"
NOTHING_PENDING = "Nothing waits for your decision."
NO_REQUESTS = "Nothing you asked for."
NO_RECENT = "No decisions yet."
ANYONE_BUT_THE_REQUESTER = "anyone but the requester"
AN_EFFECT = "an effect"
"""What a page is about when it names no tool."""


def and_more(count: int) -> str:
    """The rows a list leaves out."""
    return f"…and {count} more"


def waiting(approval: Approval, waited: str, *, asker: str | None = None) -> str:
    """`asked by @eve · waiting 3h · escalated` (to whoever may decide it), or its state
    to its requester: `pending, escalated · waiting 3h`."""
    if asker is not None:
        escalated = " · escalated" if approval.escalated else ""
        return f"asked by {asker} · waiting {waited}{escalated}"
    escalated = ", escalated" if approval.escalated else ""
    return f"{APPROVAL_STATES[ApprovalState.PENDING]}{escalated} · waiting {waited}"


def decided(approval: Approval, ago: str, *, by: str) -> str:
    """`approved by @bob · 2h ago`; `expired · 2h ago` (no person decided it)."""
    state = approval_state(approval)
    if state in DERIVED_APPROVAL_STATES:
        return f"{state} · {ago} ago"
    return f"{state} by {by} · {ago} ago"


# batches: several approvals of one tool decided together (`bot.batches`)

BATCH_EACH_ITS_OWN = (
    "Each chosen request is decided on its own, under its own policy: any you may not "
    "decide are left as they are and named. A batch never makes a rule."
)
BATCH_EMPTY = "Choose at least one request to decide."
BATCH_NOT_RECORDED = "not recorded — nothing changed, try again in a moment"


def batch_heading(count: int, tool: str) -> str:
    return f"Decide {count} {tool} requests together"


def batch_too_big(count: int, limit: int) -> str:
    return f"{count} requests chosen; a batch decides at most {limit}."


def not_in_batch(tool: str, batch_tool: str) -> str:
    """A chosen approval of another tool than the batch's."""
    return f"it is a {tool} request, not {batch_tool}; a batch decides one tool's requests"


def batch_outcome(decision: str, tool: str, count: int, refused: Sequence[str]) -> str:
    """`Approved 18 issue_refund requests, each on its own; not decided: ap_1: …; ap_2: …`."""
    verb = APPROVAL_STATES.get(decision, decision).capitalize()
    said = f"{verb} {count} {tool} request{'s' if count != 1 else ''}, each on its own"
    if refused:
        said += f"; {len(refused)} not decided: " + "; ".join(refused)
    return said + "."


def page_opened(about: str, ago: str) -> str:
    """An open page in a list: `send_email · uncompensatable · opened 5m ago`."""
    return f"{about} · opened {ago} ago"


def waited(age: str) -> str:
    """A reminder's line: how long the approval has waited."""
    return f"Waiting {age} since it was asked"


def chain(
    asked_now: str,
    *,
    next_reminder: str | None = None,
    then: tuple[str, str] | None = None,
    expires: str | None = None,
) -> str:
    """Who is asked now, when the next reminder goes, who is asked next (and when) if nobody
    answers, or when it expires: `Asked now: @bob · next reminder … · then @oncall … if
    nobody answers`."""
    parts = [f"Asked now: {asked_now}"]
    if next_reminder is not None:
        parts.append(f"next reminder {next_reminder}")
    if then is not None:
        parts.append(f"then {then[0]} {then[1]} if nobody answers")
    elif expires is not None:
        parts.append(f"declined as {EXPIRED} {expires} if nobody answers")
    return " · ".join(parts)


# authority: who may decide an approval, as recorded when it was asked


def who_may_decide(authority: Mapping[str, Any] | None, voice: Voice = PLAIN) -> str | None:
    """`Who may decide: U0ALICE, S0LEADS (2 approvals; not the requester; may edit)`, from
    an approval's recorded authority (`Runtime.authority`); None without one."""
    if authority is None:
        return None
    asked = [*authority["approvers"], *authority["groups"]]
    if authority["escalated"] and authority["escalate_to"]:
        asked.append(authority["escalate_to"])
    who = ", ".join(voice.person(i) for i in dict.fromkeys(asked)) or ANYONE_BUT_THE_REQUESTER
    count = authority["required_approvals"]
    terms = [f"{count} approval{'s' if count > 1 else ''}"]
    if asked and not authority["allow_self_approval"]:
        terms.append("not the requester")
    if authority["allow_edit"]:
        terms.append("may edit")
    return f"Who may decide: {who} ({'; '.join(terms)})"


def stepped_aside(found: int | None, supported: int | None) -> str:
    """What a worker that stepped aside for a newer schema answers a request that would
    write."""
    return (
        f"This worker runs an older Signoff (schema {supported}) than the database (schema "
        f"{found}) and takes no new writes: send the request to another worker."
    )
