"""The console's views of a run, and the dev step log, are pure functions of records."""

from __future__ import annotations

from datetime import UTC
from datetime import datetime
from datetime import timedelta

from support.records import a_checkpoint

from bot.console import timeline
from bot.dev.steplog import describe
from examples.refund_agent import _asked_cents
from store import Approval
from store import ApprovalState
from store import Budget
from store import Checkpoint
from store import Effect
from store import EffectStatus
from store import Message
from store import Page
from store import Reversibility
from store import Run
from store import RunStatus
from store import ToolCall
from store import Usage

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def _effect(call_id: str, step: int, tool: str, kind: Reversibility, **more: object) -> Effect:
    fields = {
        "run_id": "r",
        "call_id": call_id,
        "lineage_id": "r",
        "step": step,
        "tool": tool,
        "args": {},
        "idempotency_key": f"k-{call_id}",
        "reversibility": kind,
        "status": EffectStatus.COMPLETED,
    }
    return Effect.model_validate(fields | more)


def _call(call_id: str, tool: str) -> Message:
    return Message(role="assistant", tool_calls=(ToolCall(id=call_id, name=tool),))


def test_a_rollback_preview_compensates_what_has_a_compensator_and_pages_the_rest() -> None:
    effects = [
        _effect("c1", 1, "lookup_order", Reversibility.READ),
        _effect("c2", 2, "issue_refund", Reversibility.REVERSIBLE, compensator="reverse_refund"),
        _effect("c3", 3, "send_email", Reversibility.IRREVERSIBLE),
        _effect("c4", 3, "charge", Reversibility.IRREVERSIBLE, status=EffectStatus.IN_DOUBT),
        _effect("c5", 3, "charge", Reversibility.IRREVERSIBLE, status=EffectStatus.FAILED),
        _effect("c6", 4, "send_email", Reversibility.IRREVERSIBLE),  # not on the timeline
    ]
    preview = timeline.rollback_preview(effects, 1, {"c1", "c2", "c3", "c4", "c5"})

    assert [(c["tool"], c["compensator"]) for c in preview["compensate"]] == [
        ("issue_refund", "reverse_refund")
    ]
    assert [(p["call_id"], p["why"]) for p in preview["page"]] == [
        ("c4", "in_doubt: it may or may not have happened"),
        ("c3", "no compensating tool: a person undoes it"),
    ]
    assert timeline.rollback_preview(effects, 3, {"c1", "c2", "c3"}) == {
        "to_step": 3,
        "compensate": [],
        "page": [],
    }


def test_the_timeline_has_a_row_per_step_with_effects_approvals_pages_and_undone_steps() -> None:
    history = [
        Checkpoint.opening("r", [Message(role="user", content="Refund order 1")]),
        a_checkpoint(1, 1, RunStatus.RUNNING, _call("c2", "issue_refund")),
        a_checkpoint(
            2, 1, RunStatus.RUNNING, Message(role="tool", tool_call_id="c2", content='{"ok": 1}')
        ),
        a_checkpoint(
            3,
            2,
            RunStatus.DONE,
            Message(role="assistant", content="Refunded."),
            stop_reason="answered",
            rolled_back=True,
        ),
        a_checkpoint(4, 1, RunStatus.FAILED, snapshot=True, stop_reason="rolled_back"),
    ]
    effects = [
        _effect("c2", 1, "issue_refund", Reversibility.REVERSIBLE, compensated_by="undo:c2"),
    ]
    approval = Approval(
        id="a1",
        tool="issue_refund",
        args={},
        call_id="c2",
        state=ApprovalState.DECLINED,
        decided_by="U0BOB",
        decided_at=T0,
        reason="no",
    )
    page = Page(id="p1", reason="uncompensatable", call_id="c2", detail="by hand")

    rows = timeline.timeline(history, effects, [approval], [page])

    assert [(r["step"], r["rolled_back"]) for r in rows] == [(0, False), (1, False), (2, True)]
    [call] = rows[1]["calls"]
    assert call["result"] == '{"ok": 1}'
    assert call["effect"]["state"] == "compensated"
    assert call["effect"]["classification"] == "reversible"
    assert call["approvals"][0]["decided_by"] == "U0BOB"
    assert call["approvals"][0]["reason"] == "no"
    assert call["pages"][0]["detail"] == "by hand"
    assert rows[1]["restored"] is True
    assert rows[1]["stop_reason"] == "rolled_back"
    assert rows[2]["replies"] == ["Refunded."]
    # each step says what it came to, in the vocabulary's words: never "running" once done
    assert rows[0]["label"] == "started"
    assert rows[1]["label"] == "issue_refund: declined, compensated"
    assert call["effect"]["label"] == "compensated"
    assert call["approvals"][0]["label"] == "declined"
    assert rows[2]["label"] == "done"


def test_the_budget_view_says_used_against_each_limit() -> None:
    run = Run(
        id="r",
        agent="a",
        task="t",
        lineage_id="r",
        budget=Budget(max_steps=10, max_cost=1.0),
        usage=Usage(steps=4, cost=2.0),
        created_at=T0,
    )
    lines = {line["name"]: line for line in timeline.budget_view(run)}
    assert lines["steps"]["fraction"] == 0.4
    assert lines["cost"]["fraction"] == 1.0  # over the limit is a full bar
    assert lines["input tokens"]["fraction"] is None
    assert timeline.run_summary(run, T0 + timedelta(minutes=2))["age_seconds"] == 120


def test_the_step_log_says_one_line_per_step() -> None:
    checkpoints = [
        a_checkpoint(1, 1, RunStatus.RUNNING, _call("c1", "lookup_order")),
        a_checkpoint(
            2,
            1,
            RunStatus.RUNNING,
            Message(role="tool", name="lookup_order", tool_call_id="c1", content="x" * 500),
        ),
        a_checkpoint(
            3,
            2,
            RunStatus.WAITING_APPROVAL,
            _call("c2", "issue_refund"),
            stop_reason="waiting_approval",
        ),
    ]
    lines = describe("r", checkpoints)
    assert len(lines) == 2
    assert lines[0].startswith("run r step 1: calls lookup_order({}); lookup_order returned x")
    assert len(lines[0]) < 200
    assert lines[1] == ("run r step 2: calls issue_refund({}); -> waiting_approval")


def test_a_refund_task_may_name_an_amount_never_more_than_the_order() -> None:
    assert _asked_cents("Refund order 4471 for $25", 4136) == 2500
    assert _asked_cents("Refund order 4471 for $25.50", 4136) == 2550
    assert _asked_cents("Refund order 4471 for $99", 4136) == 4136
    assert _asked_cents("Refund order 4471", 4136) == 4136
