"""The pages a driver leaves when it will not run a call, or cannot know what one did: a call
that is not the one approved, a key another call used with other arguments, the same effect
running or in doubt elsewhere, an effect in doubt here, and a tool that acted after the run
was taken over. Each says why, and what a person should do."""

from __future__ import annotations

from runtime.approvals import Unbound
from runtime.approvals import differences
from runtime.approvals import new_page
from runtime.approvals import said
from runtime.deps import Deps
from store import Approval
from store import Effect
from store import EffectOutcome
from store import Page
from store import ToolCall
from store.records import masked


def unbound(
    deps: Deps, run_id: str, call: ToolCall, approval: Approval, found: Unbound
) -> tuple[str, Page]:
    """A call that is not the one approved: nothing was done."""
    why = f"{call.name} was not run: {found.why}"
    page = new_page(
        deps,
        run_id=run_id,
        call_id=call.id,
        tool=call.name,
        reason="args_mismatch",
        detail=f"{why} (approval {approval.id}: expected digest {found.expected}, found "
        f"{found.found}). Nothing was done; check the approval and the run, then start "
        "a new request if the call is still wanted.",
    )
    return why, page


def key_conflict(deps: Deps, run_id: str, effect: Effect, other: Effect) -> tuple[str, Page]:
    """The key was used by an effect with other arguments, and the lineage answered already."""
    changes = differences(other.shown_args, effect.shown_args)
    why = (
        f"{effect.tool} was not run: its key was used by run {other.run_id} (call "
        f"{other.call_id}, {other.status.value}) with {said(changes, 1)}; this call has "
        f"{said(changes, 2)}"
    )
    page = _about(
        deps,
        run_id,
        effect,
        "key_conflict",
        f"{why}. Nothing was done and no result of run {other.run_id} was used; "
        "start a new request (it will ask to approve it as a separate effect) if it is "
        "still wanted.",
    )
    return why, page


def blocked(deps: Deps, run_id: str, effect: Effect, other: Effect) -> tuple[str, Page]:
    """The same effect is running or in doubt elsewhere in the lineage: do not guess."""
    why = (
        f"{effect.tool} with the same idempotency key is {other.status.value} in run "
        f"{other.run_id} (call {other.call_id}); doing it here could do it twice"
    )
    page = _about(
        deps,
        run_id,
        effect,
        "in_doubt",
        f"{why}. Settle that effect first, then resume this run.",
    )
    return why, page


def in_doubt(deps: Deps, run_id: str, effect: Effect, why: str) -> Page:
    """An effect that may or may not have happened."""
    return _about(
        deps,
        run_id,
        effect,
        "in_doubt",
        f"{effect.tool}({masked(effect.args, effect.sensitive)}) may or may not have "
        f"happened: {why}. "
        "Check the outside system, then resolve it.",
    )


def acted_late(deps: Deps, run_id: str, outcome: EffectOutcome, resolved: Effect) -> Page:
    """Our tool acted after the run was taken over and a human resolved it as not done."""
    was = resolved.status.value + (f" ({resolved.error})" if resolved.error else "")
    result = deps.result_masks.result(resolved.tool, outcome.result)
    return _about(
        deps,
        run_id,
        resolved,
        "acted_late",
        f"{resolved.tool}({masked(resolved.args, resolved.sensitive)}) did complete, "
        f"in worker {deps.worker_id} after the run was taken over, with result "
        f"{result!r}; the ledger says {was}. Check the outside system and "
        "undo or account for it by hand.",
    )


def _about(deps: Deps, run_id: str, effect: Effect, reason: str, detail: str) -> Page:
    """The page about one effect of the run, saying why (`reason`) and what to do (`detail`)."""
    return new_page(
        deps,
        run_id=run_id,
        call_id=effect.call_id,
        tool=effect.tool,
        reason=reason,
        detail=detail,
    )
