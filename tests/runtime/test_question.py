"""A question back to the agent (issue 43.6), round trip with a scripted model: the approver
asks instead of deciding; the agent reads "the approver asks: …" as the tool's result, the
call not run; it calls again with its answer in its reason, which asks again on a card that
shows the question and the answer; approved, the call runs once. A question is not a "no"
the lineage repeats, and asking needs the question."""

from __future__ import annotations

import json
from collections.abc import Callable
from collections.abc import Sequence
from pathlib import Path

import pytest
from approvals_conftest_helpers import APPROVER
from approvals_conftest_helpers import REQUESTER
from approvals_conftest_helpers import RecordingNotifier
from approvals_conftest_helpers import invocations
from approvals_conftest_helpers import wire_money

from bot import words
from bot.approvers import html
from bot.slack import cards
from runtime import Agent
from runtime import Runtime
from runtime import ScriptedModel
from runtime import errors
from runtime import tool_call
from runtime.model import Entry
from runtime.model import Reply
from store import ApprovalState
from store import Message
from store import RunStatus

ARGS = {"account": "ACME", "amount_cents": 250_000}
QUESTION = "Why is this twice the invoice?"
ANSWER = "The invoice was split in two; this pays both halves."


def answering(messages: Sequence[Message]) -> Entry:
    """Wire the money; asked a question, answer it in the reply's text and call again."""
    results = [m for m in messages if m.role == "tool"]
    if not results:
        return Reply("Paying ACME's invoice.", (tool_call("wire_money", ARGS),))
    said = json.loads(results[-1].content)
    if said.get("decision") == "asked":
        assert said["said"] == f"the approver asks: {QUESTION}"
        return Reply(ANSWER, (tool_call("wire_money", ARGS),))
    return "paid"


async def test_the_question_goes_to_the_agent_and_its_answer_comes_back_on_a_card(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    notifier = RecordingNotifier()
    rt = make_runtime([Agent("payer", model=ScriptedModel(answering), tools=[wire_money])])
    rt = Runtime(rt.store, rt.agents.values(), notifier, worker_id=rt.worker_id)
    run_id = await rt.start("payer", "Pay ACME", requested_by=REQUESTER)
    (first,) = await rt.approvals(run_id)

    with pytest.raises(errors.InvalidRequest, match="question"):  # asking needs the question
        await rt.decide(first.id, "asked", by=APPROVER, reason="  ")
    asked = await rt.decide(first.id, "asked", by=APPROVER, reason=QUESTION)
    assert (asked.state, asked.question, asked.decided_by) == (
        ApprovalState.DECLINED,
        QUESTION,
        APPROVER,
    )
    assert words.approval_state(asked) == words.ASKED
    assert invocations("wire_money") == []  # not run

    # the run went on: the agent answered and asked again, on a card with both
    run = await rt.get(run_id)
    assert run.status == RunStatus.WAITING_APPROVAL
    again = [a for a in await rt.approvals(run_id) if a.id != first.id]
    assert len(again) == 1
    second = again[0]
    assert second.state == ApprovalState.PENDING
    assert second.reasked == {
        "why": "question",
        "text": QUESTION,
        "by": APPROVER,
        "approval_id": first.id,
    }
    assert second.agent_reason == ANSWER
    card = json.dumps(cards.approval_message(second, run))
    assert QUESTION in card
    assert ANSWER in card
    assert "Question from" in card
    assert words.ANSWER in card
    page = html.card(html.Card(approval=second), "token")
    assert QUESTION in page
    assert ANSWER in page
    events = await rt.store.list_events(run_id=run_id)
    assert "approval_asked" in [e.action for e in events if e.approval_id == first.id]

    await rt.decide(second.id, "approved", by=APPROVER)
    assert (await rt.get(run_id)).status == RunStatus.DONE
    assert len(invocations("wire_money")) == 1
    state = await rt.store.load_state(run_id)
    tool_results = [json.loads(m.content) for m in state.messages if m.role == "tool"]
    assert tool_results[0]["decision"] == "asked"
    assert tool_results[0]["executed"] is False
    assert tool_results[1] == {"wired": 250_000, "to": "ACME"}
