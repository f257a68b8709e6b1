"""Every call that names a record the store does not hold raises `NotFound`, on both dialects,
rather than answering about nothing or writing a row that points nowhere."""

from __future__ import annotations

from collections.abc import Awaitable
from collections.abc import Callable

import pytest

from store import ApprovalState
from store import Batch
from store import Store
from store import errors
from store.base import Ruling

from .builders import Clock
from .builders import checkpoint

UNKNOWN: dict[str, Callable[[Store, Clock], Awaitable[object]]] = {
    "get a run": lambda store, clock: store.get_run("no-such-run"),
    "commit to a run": lambda store, clock: store.commit(
        Batch(run_id="nope", checkpoints=[checkpoint("nope", 1, clock())])
    ),
    "load a run's state": lambda store, clock: store.load_state("no-such-run"),
    "load a run's state at a step": lambda store, clock: store.load_state("no-such-run", step=0),
    "a run's history": lambda store, clock: store.history("no-such-run"),
    "get an approval": lambda store, clock: store.get_approval("no-such-approval"),
    "decide an approval": lambda store, clock: store.decide_approval(
        "no-such-approval", Ruling(ApprovalState.APPROVED, by="U1", at=clock())
    ),
    "set an approval's message": lambda store, clock: store.set_approval_message(
        "nope", channel="C1", ts="1.0", delivery="delivered"
    ),
    "set an approval's callback status": lambda store, clock: store.set_callback_status(
        "nope", "delivered"
    ),
    "get a page": lambda store, clock: store.get_page("no-such-page"),
    "acknowledge a page": lambda store, clock: store.acknowledge_page(
        "no-such-page", by="U1", at=clock()
    ),
    "set a page's message": lambda store, clock: store.set_page_message(
        "nope", channel="C1", ts="1.0", delivery="failed"
    ),
    "get a fact": lambda store, clock: store.get_fact("no.such.key"),
}


@pytest.mark.parametrize("call", UNKNOWN.values(), ids=UNKNOWN.keys())
async def test_naming_an_unknown_record_is_not_found(
    store: Store, clock: Clock, call: Callable[[Store, Clock], Awaitable[object]]
) -> None:
    with pytest.raises(errors.NotFound):
        await call(store, clock)
