"""An approval's authority round-trips, is filled in once (audited) for an approval without
one, and workers record the configuration digest they run; on every backend."""

from __future__ import annotations

from store import AuditEvent
from store import Store
from store.records import Authority

from .builders import Clock
from .builders import MakeApproval

ASKED = Authority.of("issue_refund", {"approvers": ["U0ALICE"]}, config_digest="sha256:a")
FILLED = Authority.of("issue_refund", {"approvers": ["U0BOB"]}, filled=True)


def _event(approval_id: str, clock: Clock) -> AuditEvent:
    return AuditEvent(
        action="authority_filled", actor="signoff", approval_id=approval_id, at=clock()
    )


async def test_an_approval_keeps_the_authority_it_was_asked_under(
    store: Store, make_approval: MakeApproval
) -> None:
    approval = make_approval(authority=ASKED)
    await store.create_approval(approval)
    assert (await store.get_approval(approval.id)).authority == ASKED
    assert ASKED.digest == Authority.of("default", {"approvers": ["U0ALICE"]}).digest


async def test_authority_is_filled_once_with_its_audit_event(
    store: Store, make_approval: MakeApproval, clock: Clock
) -> None:
    old, asked = make_approval(), make_approval(authority=ASKED)
    await store.create_approval(old)
    await store.create_approval(asked)
    assert [a.id for a in await store.approvals_without_authority()] == [old.id]

    assert await store.fill_authority(old.id, FILLED, event=_event(old.id, clock))
    assert not await store.fill_authority(old.id, ASKED, event=_event(old.id, clock))
    assert not await store.fill_authority(asked.id, FILLED, event=_event(asked.id, clock))

    assert (await store.get_approval(old.id)).authority == FILLED
    assert (await store.get_approval(asked.id)).authority == ASKED
    assert await store.approvals_without_authority() == []
    events = [e.approval_id for e in await store.list_events() if e.action == "authority_filled"]
    assert events == [old.id]


async def test_workers_record_the_digest_they_run(store: Store, clock: Clock) -> None:
    await store.record_worker("worker-a", config_digest="sha256:a", started_at=clock())
    await store.record_worker("worker-b", config_digest="sha256:b", started_at=clock())
    await store.record_worker("worker-a", config_digest="sha256:c", started_at=clock())

    live = {w.id: w.config_digest for w in await store.list_workers(within=60)}
    assert live == {"worker-a": "sha256:c", "worker-b": "sha256:b"}
    assert await store.list_workers(within=-3600) == []  # none seen an hour from now
