"""Reading one record by id, with an unknown id as the runtime's own error (`RunNotFound`,
`ApprovalNotFound`, `PageNotFound`) rather than the store's `NotFound`."""

from __future__ import annotations

from runtime import errors
from store import Approval
from store import Page
from store import Run
from store import Store
from store import errors as store_errors


async def run(store: Store, run_id: str) -> Run:
    try:
        return await store.get_run(run_id)
    except store_errors.NotFound:
        raise errors.RunNotFound(f"no run {run_id!r}", run_id=run_id) from None


async def approval(store: Store, approval_id: str) -> Approval:
    try:
        return await store.get_approval(approval_id)
    except store_errors.NotFound:
        raise errors.ApprovalNotFound(f"no approval {approval_id!r}", ident=approval_id) from None


async def page(store: Store, page_id: str) -> Page:
    try:
        return await store.get_page(page_id)
    except store_errors.NotFound:
        raise errors.PageNotFound(f"no page {page_id!r}", ident=page_id) from None
