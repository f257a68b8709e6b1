"""Issue 25 in the console timeline and the run views: an edited call reads proposed ->
approved -> executed; one approved as separate says so."""

from __future__ import annotations

from datetime import UTC
from datetime import datetime

from support.records import a_checkpoint
from support.records import an_effect

from bot.console import timeline
from runtime.approvals.binding import call_trail
from store import Approval
from store import ApprovalState
from store import Effect
from store import EffectStatus
from store import Message
from store import Reversibility
from store import RunStatus
from store import ToolCall

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
PROPOSED = {"order_id": "4471", "amount_cents": 2500}
APPROVED = {"order_id": "4471", "amount_cents": 2000}


def approval(**more: object) -> Approval:
    fields = {
        "id": "ap1",
        "tool": "issue_refund",
        "args": PROPOSED,
        "approved_args": APPROVED,
        "state": ApprovalState.APPROVED,
        "decided_by": "U0BOB",
        "decided_at": T0,
        "run_id": "r",
        "call_id": "c1",
    }
    return Approval.model_validate(fields | more)


def effect(args: dict[str, object]) -> Effect:
    return an_effect(
        call_id="c1",
        tool="issue_refund",
        args=args,
        reversibility=Reversibility.REVERSIBLE,
        status=EffectStatus.COMPLETED,
        approval_id="ap1",
    )


def test_an_edited_call_reads_proposed_approved_executed() -> None:
    [trail] = call_trail([approval()], [effect(APPROVED)])

    assert trail.edited
    assert trail.line() == (
        "issue_refund: proposed amount_cents 2500, order_id 4471 -> approved amount_cents 2000 "
        "by U0BOB -> executed as approved (completed)"
    )


def test_a_call_approved_as_separate_and_one_declined_say_so() -> None:
    separate = approval(approved_args=None, key_suffix="ap1")
    declined = approval(id="ap2", call_id="c2", state=ApprovalState.DECLINED, approved_args=None)

    lines = [t.line() for t in call_trail([separate, declined], [effect(PROPOSED)])]

    assert lines == [
        "issue_refund: proposed amount_cents 2500, order_id 4471 -> approved as proposed by "
        "U0BOB as a separate effect -> executed as approved (completed)",
        "issue_refund: proposed amount_cents 2500, order_id 4471 -> declined by U0BOB",
    ]


def test_the_console_timeline_shows_the_edit_on_the_call() -> None:
    call = ToolCall(id="c1", name="issue_refund", arguments=PROPOSED)
    history = [
        a_checkpoint(
            0,
            1,
            RunStatus.RUNNING,
            Message(role="assistant", tool_calls=(call,)),
            snapshot=True,
            created_at=T0,
        )
    ]

    [row] = timeline.timeline(history, [effect(APPROVED)], [approval()], [])

    [shown] = row["calls"]
    assert shown["binding"].endswith(
        "approved amount_cents 2000 by U0BOB -> executed as approved (completed)"
    )
    [decided] = shown["approvals"]
    assert decided["edits"] == "proposed amount_cents 2500, approved amount_cents 2000"
    assert decided["approved_digest"] != decided["args_digest"]


def test_digests_of_sensitive_arguments_are_not_shown() -> None:
    """A digest of a secret could be matched by guessing: masked views carry none."""
    secret = approval(args={"iban": "DE89370400440532013000"}, approved_args=None)
    masked = secret.model_copy(update={"sensitive": ("iban",)})

    shown = masked.shown()

    assert shown.args == {"iban": "[sensitive]"}
    assert (shown.args_digest, shown.approved_digest) == (None, None)
    assert masked.args_digest is not None  # the record itself keeps it
