"""`signoff policy backtest`: the audit trail's requests replayed through a (changed) policy
file's rules, and those whose outcome would have been different. Pure: the requests are
rows of `Store.backtest_requests` (the same the "Approve + similar" backtest reads).

Each request is routed again with its arguments as the audit trail has them (sensitive ones
masked), its time, who asked (when a person was asked) and the limits as they stood for it
(`limits.<name>.used` reads what the trail recorded). What it is compared with is what the
file did then: asked (and under how many approvals), approved at once, or declined at once.
A request a learned rule or an envelope approved is compared as asked (the file asked; they
answered). History limits are not counted again: a limit's own decisions stay as they were.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from runtime.approvals.policy import Policies
from runtime.approvals.routing import route
from runtime.approvals.rules import Facts

WAS = {
    "approval_requested": "ask",
    "approval_auto_approved": "auto_approve",
    "approval_denied": "deny",
}


@dataclass(frozen=True)
class Change:
    """One request the changed file would have handled otherwise."""

    approval_id: str | None
    tool: str
    args: Mapping[str, Any]
    at: str
    was: str
    would: str
    decided: str | None
    """What people then did with it (`approved by U…`, `declined by U…`), if it was asked."""
    rule: str

    def line(self) -> str:
        then = f", {self.decided}" if self.decided else ""
        return (
            f"{self.approval_id} {self.tool} {dict(self.args)} at {self.at}: was {self.was}"
            f"{then} → would {self.would} ({self.rule})"
        )


@dataclass(frozen=True)
class Replay:
    replayed: int
    changes: tuple[Change, ...]

    def summary(self) -> str:
        return f"{len(self.changes)} of {self.replayed} requests would have gone otherwise"


def replay(policies: Policies, tool: str, requests: Sequence[Mapping[str, Any]]) -> Replay:
    changes = []
    for request in requests:
        detail = request["detail"] or {}
        was = _was(request, detail)
        name, chosen = policies.for_tool(tool)
        facts = Facts(
            requested_by=request["actor"] if request["action"] == "approval_requested" else "",
            now=request["at"],
            limits=_limits(detail),
        )
        routed = route(name, chosen, tool, detail.get("args") or {}, facts)
        would = routed.action
        if would == "ask":
            would = f"ask ({routed.policy.required_approvals} approval(s))"
        if would != was:
            changes.append(
                Change(
                    approval_id=request["approval_id"],
                    tool=tool,
                    args=detail.get("args") or {},
                    at=request["at"].isoformat(timespec="seconds"),
                    was=was,
                    would=would,
                    decided=_decided(request),
                    rule=routed.match.summary if routed.match else f"policy {name}",
                )
            )
    return Replay(len(requests), tuple(changes))


def _was(request: Mapping[str, Any], detail: Mapping[str, Any]) -> str:
    was = WAS[request["action"]]
    by_rule = str(detail.get("rule") or "")
    if was == "auto_approve" and (detail.get("envelope_id") or by_rule.startswith("learned")):
        was = "ask"  # the file asked; a learned rule or an envelope answered
    if was == "ask":
        was = f"ask ({detail.get('required_approvals', 1)} approval(s))"
    return was


def _limits(detail: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    found = {}
    for state in detail.get("limits") or []:
        if state.get("outcome") != "error":
            used, most = int(state.get("after", 0)), int(state.get("max", 0))
            found[state["name"]] = {"used": used, "left": most - used, "max": most}
    return found


def _decided(request: Mapping[str, Any]) -> str | None:
    decision = request.get("decision")
    if decision == "approval_approved":
        return f"approved by {request.get('decided_by')}"
    if decision == "approval_declined":
        return f"declined by {request.get('decided_by')}"
    return None
