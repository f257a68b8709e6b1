"""Approval binding: what a person approved is exactly what runs, once (docs/architecture.md rule 2,
"a key is bound to its arguments", and rule 4).

An approval keeps the digest of the arguments shown and of those approved. Before a call runs
under an approval, the call found in the transcript must be the one shown, and the arguments
about to run must be the ones approved; otherwise it does not run. An effect key used before
with other arguments is a conflict a person decides (decline, or approve as a separate
effect, which re-keys the call); it is never a replay of the other call's result. The texts
here say so in plain words on every surface.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from runtime.runs import separate_key
from store import Approval
from store import Effect
from store.digest import args_digest
from store.digest import short
from store.records import EffectConflict
from store.records import masked


@dataclass(frozen=True, slots=True)
class Bound:
    """A call cleared to run under its approval: the approved arguments, under this key."""

    args: dict[str, Any]
    key: str
    asked_digest: str | None
    """Of the proposed arguments when the approver edited them (recorded on the effect)."""


@dataclass(frozen=True, slots=True)
class Unbound:
    """Why a call may not run under its approval: it is not the call that was approved."""

    why: str
    expected: str
    found: str


def bind(approval: Approval, call_args: dict[str, Any], key: str) -> Bound | Unbound:
    """The call to run under `approval`, or why it does not match what was approved."""
    now = args_digest(call_args)
    if now != approval.shown_digest:
        return Unbound(
            f"the call to {approval.tool} now has arguments (digest {short(now)}) other than "
            f"those shown to the approver (digest {short(approval.shown_digest)}): the code or "
            "the transcript changed since approval",
            expected=approval.shown_digest,
            found=now,
        )
    args = call_args if approval.approved_args is None else approval.approved_args
    running = args_digest(args)
    expected = approval.approved_digest or running  # a row from before digests were kept
    if running != expected:
        return Unbound(
            f"the arguments about to run (digest {short(running)}) are not those approved "
            f"(digest {short(expected)}): the approval's stored arguments were changed",
            expected=expected,
            found=running,
        )
    asked = approval.shown_digest if running != approval.shown_digest else None
    return Bound(args, separate_key(key, approval.key_suffix), asked)


def conflict_of(effect: Effect, approval: Approval | None) -> EffectConflict:
    """What an approver is shown about the earlier effect a call conflicts with."""
    decided = approval is not None and approval.decided_by is not None
    return EffectConflict(
        run_id=effect.run_id,
        call_id=effect.call_id,
        tool=effect.tool,
        status=effect.status,
        args=effect.shown_args,
        digest=effect.digest,
        approval_id=effect.approval_id,
        approved_by=approval.decided_by if decided and approval else None,
        approved_at=approval.decided_at if decided and approval else None,
    )


def differences(before: dict[str, Any], after: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(name, before, after) for each argument that differs, in name order."""
    names = sorted(set(before) | set(after))
    return [(n, before.get(n), after.get(n)) for n in names if before.get(n) != after.get(n)]


def said(changes: list[tuple[str, Any, Any]], side: int) -> str:
    """One side of the differences as `name value, name value`."""
    return ", ".join(f"{change[0]} {change[side]}" for change in changes) or "the same arguments"


def conflict_text(
    conflict: EffectConflict, asked: dict[str, Any], sensitive: tuple[str, ...]
) -> str:
    """Plain words: what happened under the key, what this run asks, what a person may do."""
    changes = differences(conflict.args, masked(asked, sensitive))
    done = "was already done" if conflict.status == "completed" else f"is {conflict.status.value}"
    who = ""
    if conflict.approved_by is not None:
        who = f" (approved by {conflict.approved_by}{_at(conflict.approved_at)})"
    return (
        f"{conflict.tool} {done} under the same key with {said(changes, 1)} by run "
        f"{conflict.run_id}{who}; this run asks {said(changes, 2)}. Decline, or approve it as "
        f"a separate {conflict.tool}."
    )


def _at(at: datetime | None) -> str:
    return "" if at is None else f" at {at:%Y-%m-%d %H:%M} UTC"


@dataclass(frozen=True, slots=True)
class CallTrail:
    """One approved or declined call of a run as every surface shows it: what was proposed,
    what was approved (after an edit), and what ran (the ledger's arguments), masked."""

    call_id: str
    tool: str
    approval_id: str
    state: str
    decided_by: str | None
    proposed: dict[str, Any]
    approved: dict[str, Any] | None
    executed: dict[str, Any] | None
    effect_status: str | None
    key: str | None
    separate: bool
    conflict_run: str | None

    @property
    def edited(self) -> bool:
        return self.approved is not None and self.approved != self.proposed

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__} | {"edited": self.edited}

    def line(self) -> str:
        """Plain text: `issue_refund: proposed amount_cents 2500 -> approved amount_cents
        2000 by U0BOB -> executed amount_cents 2000 (completed)`."""
        parts = [f"{self.tool}: proposed {_args(self.proposed)}"]
        if self.approved is None:
            parts.append(f"{self.state} by {self.decided_by or '-'}")
        else:
            changes = differences(self.proposed, self.approved)
            approved = said(changes, 2) if changes else "as proposed"
            how = " as a separate effect" if self.separate else ""
            parts.append(f"approved {approved} by {self.decided_by or '-'}{how}")
            if self.executed is None:
                parts.append("not executed")
            else:
                ran = differences(self.approved, self.executed)
                shown = said(ran, 2) if ran else "as approved"
                parts.append(f"executed {shown} ({self.effect_status})")
        return " -> ".join(parts)


def call_trail(approvals: list[Approval], effects: list[Effect]) -> list[CallTrail]:
    """The decided approvals of a run with the effects they led to, oldest first."""
    by_approval = {e.approval_id: e for e in effects if e.approval_id is not None}
    trail = []
    for approval in approvals:
        if approval.state == "pending" or approval.call_id is None:
            continue
        effect = by_approval.get(approval.id)
        approved = None
        if approval.state == "approved":
            approved = approval.shown_approved_args or approval.shown_args
        trail.append(
            CallTrail(
                call_id=approval.call_id,
                tool=approval.tool,
                approval_id=approval.id,
                state=approval.state.value,
                decided_by=approval.decided_by,
                proposed=approval.shown_args,
                approved=approved,
                executed=effect.shown_args if effect else None,
                effect_status=effect.status.value if effect else None,
                key=effect.idempotency_key if effect else None,
                separate=approval.key_suffix is not None,
                conflict_run=approval.conflict.run_id if approval.conflict else None,
            )
        )
    return trail


def _args(args: dict[str, Any]) -> str:
    return ", ".join(f"{name} {value}" for name, value in sorted(args.items()))
