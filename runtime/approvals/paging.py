"""Paging a human: the one way the driver, rollback and the saga ask for a person (a page
whose id is fixed by what it is about, so paging twice pages once), and acknowledging it."""

from __future__ import annotations

from collections.abc import Sequence

from runtime import errors
from runtime.deps import Deps
from store import AuditEvent
from store import Batch
from store import Committed
from store import Page
from store import Run
from store import errors as store_errors


def new_page(
    deps: Deps,
    *,
    run_id: str | None,
    call_id: str | None,
    tool: str | None,
    reason: str,
    detail: str,
) -> Page:
    """A page whose id is fixed by what it is about, so paging twice pages once."""
    return Page(
        id=f"pg_{run_id}_{call_id}_{reason}",
        run_id=run_id,
        call_id=call_id,
        tool=tool,
        reason=reason,
        detail=detail,
        created_at=deps.clock(),
    )


async def page(deps: Deps, run: Run, page: Page) -> None:
    """Write the page on its own and announce it, unless it was written before."""
    committed = await deps.store.commit(Batch(run_id=run.id, pages=[page]))
    await announce_new(deps, [page], committed, run)


async def announce_new(
    deps: Deps, pages: Sequence[Page], committed: Committed, run: Run | None
) -> None:
    """Announce the pages a commit wrote for the first time (not those written before)."""
    for one in pages:
        if one.id in committed.new_pages:
            await deps.announcer.page(one, run)


async def acknowledge(deps: Deps, page_id: str, *, by: str) -> Page:
    """A human takes an effect that needs one; audited. Acknowledging twice is refused."""
    now = deps.clock()
    try:
        acknowledged = await deps.store.acknowledge_page(page_id, by=by, at=now)
    except store_errors.NotFound:
        raise errors.PageNotFound(f"no page {page_id!r}", ident=page_id) from None
    except store_errors.Conflict as exc:
        current = await deps.store.get_page(page_id)
        raise errors.AlreadyAcknowledged(str(exc), page=current) from None
    await deps.store.record_event(
        AuditEvent(
            action="page_acknowledged",
            actor=by,
            run_id=acknowledged.run_id,
            at=now,
            detail={
                "page_id": acknowledged.id,
                "tool": acknowledged.tool,
                "reason": acknowledged.reason,
            },
        )
    )
    return acknowledged
