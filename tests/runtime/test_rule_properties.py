"""Property: for random arguments and requesters, and random decisions by random people, a
call that needs approval executes only if a rule approved it at once, or the approvers the
rule it was created under named approved it (as many of them as that rule required); a deny
rule never executes; a rule that fails while it runs never approves."""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck
from hypothesis import event
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from runtime import Agent
from runtime import Policies
from runtime import Runtime
from runtime import ScriptedModel
from runtime import ToolContext
from runtime import errors
from runtime import tool
from runtime import tool_call
from store import ApprovalState
from store import open_store

EXECUTED: list[dict[str, Any]] = []
PEOPLE = ["U0CLERK", "U0LEAD1", "U0LEAD2", "U0LEAD3", "U0ASKER", "U0INTERN", "U0STRANGER"]
POLICIES = Policies.model_validate(
    {
        "tools": {
            "refund": {
                "approvers": ["U0CLERK"],
                "rules": [
                    # fails for any order that is not a number: must never approve then
                    {"when": "int(args.order) > 9000", "auto_approve": True},
                    {
                        "when": "args.cents <= 2500 && run.requested_by != 'U0INTERN'",
                        "auto_approve": True,
                    },
                    {"when": "args.cents > 100000", "deny": "too large"},
                    {
                        "when": "args.cents > 20000 || run.requested_by in ['U0INTERN']",
                        "approvers": ["U0LEAD1", "U0LEAD2", "U0LEAD3"],
                        "required_approvals": 2,
                    },
                ],
            }
        }
    }
)


@tool(description="Refund an order.", effect="irreversible")
async def refund(order: str, cents: int, *, ctx: ToolContext) -> dict[str, Any]:
    EXECUTED.append({"order": order, "cents": cents})
    return {"refunded": cents}


ORDERS = st.one_of(  # mostly orders no rule fails on, so the later rules get their turn
    st.integers(min_value=0, max_value=9000).map(str),
    st.integers(min_value=0, max_value=9000).map(str),
    st.integers(min_value=9001, max_value=20000).map(str),
    st.text(alphabet="AB-19", min_size=1, max_size=5),
)
CENT_BANDS = [(0, 2500), (2501, 20000), (20001, 100_000), (100_001, 200_000)]
# Approvers come up more often than strangers, so quorums do form.
DECIDERS = st.sampled_from([*PEOPLE, "U0CLERK", "U0LEAD1", "U0LEAD2", "U0LEAD3"])
DECISION = st.tuples(DECIDERS, st.sampled_from(["approved", "approved", "declined"]))
# Random decisions, often followed by every approver of the tool and its rules approving.
AGREE = [(who, "approved") for who in ("U0CLERK", "U0LEAD1", "U0LEAD2")]
DECISIONS = st.builds(
    lambda random, agree: random + (AGREE if agree else []),
    st.lists(DECISION, max_size=4),
    st.booleans(),
)


def expected(order: str, cents: int, asker: str) -> tuple[str, str, int]:
    """What the rules say, worked out without CEL: (kind, action, first rule number that
    held or failed); `int(args.order)` fails for what is not a whole number."""
    try:
        number = int(order)
    except ValueError:
        return "error", "ask", 1
    if number > 9000:
        return "matched", "auto_approve", 1
    if cents <= 2500 and asker != "U0INTERN":
        return "matched", "auto_approve", 2
    if cents > 100000:
        return "matched", "deny", 3
    if cents > 20000 or asker == "U0INTERN":
        return "matched", "ask", 4
    return "no_match", "ask", 0


async def scenario(
    folder: Path, order: str, cents: int, asker: str, decisions: list[tuple[str, str]]
) -> None:
    EXECUTED.clear()
    call = tool_call("refund", {"order": order, "cents": cents})
    agent = Agent("refunds", model=ScriptedModel([call, "Done."]), tools=[refund])
    store = await open_store(f"sqlite:///{folder / 'prop.db'}")
    try:
        rt = Runtime(store, [agent], policies=POLICIES, worker_id="w1")
        await rt.start("refunds", "Refund it", run_id="r1", requested_by=asker)
        for person, decision in decisions:
            [approval] = await rt.approvals("r1")
            with contextlib.suppress(errors.DecisionRefused):
                await rt.decide(approval.id, decision, by=person)  # type: ignore[arg-type]
        [approval] = await rt.approvals("r1")
        votes = await store.list_votes(approval.id)
    finally:
        await store.close()

    rule = approval.rule
    assert rule is not None
    event(f"{rule.kind} {rule.action}, {'executed' if EXECUTED else 'not executed'}")
    assert (rule.kind, rule.action, rule.number or 0) == expected(order, cents, asker)
    assert len(EXECUTED) <= 1
    if rule.action == "deny":
        assert approval.state == ApprovalState.DECLINED
        assert not EXECUTED
    if rule.kind == "error":  # asked of people, never decided by the rule
        assert rule.action == "ask"
        assert approval.decided_by != "signoff"
    if not EXECUTED:
        assert approval.state != ApprovalState.APPROVED
        return
    assert approval.state == ApprovalState.APPROVED
    if rule.action == "auto_approve":
        assert rule.kind == "matched"
        assert approval.decided_by == "signoff"
        return
    named = set(rule.policy["approvers"])
    deciders = set(votes) | {approval.decided_by}
    assert deciders <= named
    assert len(deciders) >= rule.policy["required_approvals"]
    assert asker not in deciders


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    order=ORDERS,
    cents=st.one_of(  # each band the rules tell apart
        *(st.integers(min_value=lo, max_value=hi) for lo, hi in CENT_BANDS)
    ),
    asker=st.sampled_from(["U0ASKER", "U0INTERN", "U0LEAD1"]),
    decisions=DECISIONS,
)
def test_a_call_executes_only_as_its_rule_allows(
    order: str, cents: int, asker: str, decisions: list[tuple[str, str]]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(scenario(Path(tmp), order, cents, asker, decisions))
