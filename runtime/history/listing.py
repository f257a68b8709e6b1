"""Listing runs and approvals, with their filters checked: an unknown status or state is a
clear error, not an empty list."""

from __future__ import annotations

from typing import TYPE_CHECKING

from runtime import errors
from store import Approval
from store import ApprovalState
from store import Run
from store import RunStatus

if TYPE_CHECKING:  # the filters alone are read by `Queries`, which needs no engine
    from runtime.deps import Deps


async def list_runs(deps: Deps, status: RunStatus | str | None, *, limit: int) -> list[Run]:
    return await deps.store.list_runs(_status(status), limit=limit)


async def list_approvals(
    deps: Deps, run_id: str | None, state: ApprovalState | str | None
) -> list[Approval]:
    if run_id is not None:
        await deps.run(run_id)
    return await deps.store.list_approvals(run_id=run_id, state=approval_state(state))


def approval_state(state: ApprovalState | str | None) -> ApprovalState | None:
    try:
        return ApprovalState(state) if state else None
    except ValueError:
        raise errors.InvalidRequest(
            f"unknown approval state {state!r}; use pending, approved or declined"
        ) from None


def run_status(status: RunStatus | str | None) -> RunStatus | None:
    return _status(status)


def _status(status: RunStatus | str | None) -> RunStatus | None:
    if status is None:
        return None
    try:
        return RunStatus(status)
    except ValueError:
        choices = ", ".join(s.value for s in RunStatus)
        hint = ""
        if status == "rolled_back":  # shown as a status, stored as a stop reason
            hint = " (a rolled-back run is failed, with the stop reason rolled_back)"
        raise errors.InvalidRequest(
            f"unknown status {status!r}; use one of {choices}{hint}"
        ) from None
