"""Approval rules benchmark: what routing a call by its rules costs, per approval and per step.

    python benchmarks/rules_bench.py [--rounds 15] [--runs 40] [--calls 2000]

1. Routing alone: `runtime.approvals.routing.route` for the refund example's three rules, for a call
   the third rule takes (all three conditions evaluated, the most work a call can cost) and
   for one no rule takes, and a learned rule with its tool's ceiling (what "approve +
   similar" adds to a call), against the same tool's policy without rules (the reference),
   interleaved, medians in microseconds. Compiling a condition is timed once, apart: it
   happens when the configuration is read, never per approval.
2. In the step: a run that asks for approval (one model reply, the approval routed and
   written with the checkpoint, the run parked), started with the rules and without them,
   in interleaved rounds on one SQLite file (synchronous=FULL), the median per run of each
   and their ratio. The rules must not show in the step time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

from runtime import Agent
from runtime import Policies
from runtime import Runtime
from runtime import ScriptedModel
from runtime import ToolContext
from runtime import tool
from runtime import tool_call
from runtime.approvals.routing import route
from runtime.approvals.rules import Facts
from runtime.approvals.rules import activation
from runtime.approvals.rules import holds
from runtime.approvals.rules import program
from store import open_store

RULES: list[dict[str, Any]] = [
    {"when": "args.amount_cents <= 2500", "auto_approve": True},
    {"when": "args.amount_cents > 100000", "deny": "refunds over $1,000 go to the desk"},
    {
        "when": "args.amount_cents > 20000 || run.requested_by in ['U0INTERN']",
        "approvers": ["S0FINANCELEADS"],
        "required_approvals": 2,
    },
]
WITH_RULES = Policies.model_validate({"tools": {"issue_refund": {"rules": RULES}}})
WITHOUT = Policies.model_validate({"tools": {"issue_refund": {"required_approvals": 2}}})
THIRD_RULE = {"order_id": "4471", "amount_cents": 30_000, "restocking_fee_cents": 0}
NO_RULE = {"order_id": "4471", "amount_cents": 5_000, "restocking_fee_cents": 0}


@tool(description="Refund an order.", effect="irreversible")
async def issue_refund(
    order_id: str, amount_cents: int, restocking_fee_cents: int = 0, *, ctx: ToolContext
) -> dict[str, Any]:
    return {"refunded": amount_cents}


def per_call(fn: Callable[[], object], calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - started) / calls * 1e6


def routing(rounds: int, calls: int) -> dict[str, float]:
    facts = Facts(run_id="r1", agent="refund-agent", task="Refund", requested_by="U0ASKER")
    ruled = WITH_RULES.for_tool("issue_refund")
    plain = WITHOUT.for_tool("issue_refund")
    cases = {
        "no rules (reference)": lambda: route(*plain, "issue_refund", THIRD_RULE, facts),
        "rule 3 of 3 matches": lambda: route(*ruled, "issue_refund", THIRD_RULE, facts),
        "no rule matches": lambda: route(*ruled, "issue_refund", NO_RULE, facts),
        "a learned rule and its ceiling hold": lambda: learned(THIRD_RULE, facts),
    }
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name, case in cases.items():
            samples[name].append(per_call(case, calls // rounds or 1))
    return {name: statistics.median(values) for name, values in samples.items()}


LEARNED = 'tool == "issue_refund" && args.amount_cents <= 50000 && args.restocking_fee_cents <= 0'
CEILING = "args.amount_cents <= 100000"


def learned(args: dict[str, Any], facts: Facts) -> bool:
    """What `RuleBook.apply` evaluates for a call after the file's rules asked: one learned
    rule's condition and the tool's ceiling (its store read is in backtest_bench.py)."""
    context = activation("issue_refund", args, facts)
    return holds(LEARNED, context) and holds(CEILING, context)


def compile_once() -> float:
    program.cache_clear()
    program("true")  # the parser and environment, made once per process
    started = time.perf_counter()
    for rule in RULES:
        program(rule["when"])
    return (time.perf_counter() - started) / len(RULES) * 1e3


async def in_the_step(rounds: int, runs: int) -> dict[str, float]:
    call = tool_call("issue_refund", {"order_id": "4471", "amount_cents": 30_000})
    agent = Agent("refunds", model=ScriptedModel([call, "Done."]), tools=[issue_refund])
    with tempfile.TemporaryDirectory() as folder:
        store = await open_store(f"sqlite:///{os.path.join(folder, 'rules.db')}")
        try:
            runtimes = {
                "with rules": Runtime(store, [agent], policies=WITH_RULES, worker_id="b"),
                "without rules": Runtime(store, [agent], policies=WITHOUT, worker_id="b"),
            }
            samples: dict[str, list[float]] = {name: [] for name in runtimes}
            for r in range(rounds):
                order = list(runtimes.items())
                for name, rt in order if r % 2 else reversed(order):
                    started = time.perf_counter()
                    for i in range(runs):
                        await rt.start("refunds", "Refund", run_id=f"{name[:4]}-{r}-{i}")
                    samples[name].append((time.perf_counter() - started) / runs * 1e3)
        finally:
            await store.close()
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--calls", type=int, default=2000)
    options = parser.parse_args()

    print(f"compiling one condition (once, at start-up): {compile_once():.2f} ms")
    costs = routing(options.rounds, options.calls)
    reference = costs["no rules (reference)"]
    for name, micros in costs.items():
        print(f"route, {name}: {micros:.1f} µs ({micros - reference:+.1f} µs)")
    step = asyncio.run(in_the_step(options.rounds, options.runs))
    ruled, plain = step["with rules"], step["without rules"]
    print(f"run to its approval, with rules: {ruled:.3f} ms; without: {plain:.3f} ms")
    print(f"ratio with/without: {ruled / plain:.3f}")
    extra = (costs["rule 3 of 3 matches"] - reference) / 1e3
    print(f"the three rules' evaluation is {extra / plain:.1%} of a run to its approval")


if __name__ == "__main__":
    main()
