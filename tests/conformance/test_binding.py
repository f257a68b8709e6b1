"""A key is bound to its arguments (docs/architecture.md rule 2): the ledger keeps each effect's
args digest; the same key with the same digest is a repeat, with another digest a conflict (in the
lineage or across lineages), never a replay of the other call's result. An approval keeps the digest
of what was shown and of what was approved."""

from __future__ import annotations

from datetime import datetime

from store import ApprovalState
from store import Batch
from store import Effect
from store import EffectOutcome
from store import EffectStatus
from store import Run
from store import Store
from store.base import Ruling
from store.digest import args_digest

from .builders import Clock
from .builders import MakeApproval
from .builders import MakeEffect
from .builders import MakeRun

KEY = "issue_refund-order-1001"
ASKED_2500 = {"order_id": "1001", "amount_cents": 2500}
ASKED_2000 = {"order_id": "1001", "amount_cents": 2000}


async def completed(store: Store, effect: Effect, at: datetime) -> None:
    await store.commit(Batch(run_id=effect.run_id, start=[effect]))
    done = EffectOutcome(
        run_id=effect.run_id,
        call_id=effect.call_id,
        status=EffectStatus.COMPLETED,
        result={"refund": effect.args["amount_cents"]},
        finished_at=at,
    )
    await store.commit(Batch(run_id=effect.run_id, finish=[done]))


async def test_the_ledger_keeps_each_effects_args_digest(
    store: Store, run: Run, make_effect: MakeEffect
) -> None:
    effect = make_effect(run.id, args=ASKED_2500)
    await store.commit(Batch(run_id=run.id, start=[effect]))

    got = await store.get_effect(run.id, effect.call_id)

    assert got.args_digest == args_digest({"amount_cents": 2500, "order_id": "1001"})
    assert got.args_digest != args_digest(ASKED_2000)


async def test_the_same_key_with_other_args_in_the_lineage_is_a_conflict_not_a_replay(
    store: Store, run: Run, make_effect: MakeEffect, clock: Clock
) -> None:
    first = make_effect(run.id, idempotency_key=KEY, args=ASKED_2500)
    await completed(store, first, clock())
    again = make_effect(run.id, idempotency_key=KEY, args=ASKED_2000)

    committed = await store.commit(Batch(run_id=run.id, start=[again]))

    assert committed.preempted == {}
    assert committed.conflicts[again.call_id].call_id == first.call_id
    assert [e.call_id for e in await store.list_effects(run.id)] == [first.call_id]


async def test_the_same_key_with_the_same_args_is_still_the_recorded_result(
    store: Store, run: Run, make_run: MakeRun, make_effect: MakeEffect, clock: Clock
) -> None:
    first = make_effect(run.id, idempotency_key=KEY, args=ASKED_2500)
    await completed(store, first, clock())
    fork = await make_run(lineage_id=run.lineage_id, parent_id=run.id, fork_step=1)
    # The same arguments written in another order are the same call.
    reordered = dict(reversed(ASKED_2500.items()))
    again = make_effect(fork.id, lineage_id=run.lineage_id, idempotency_key=KEY, args=reordered)

    committed = await store.commit(Batch(run_id=fork.id, start=[again]))

    assert committed.conflicts == {}
    assert committed.preempted[again.call_id].result == {"refund": 2500}


async def test_another_lineage_under_the_key_with_other_args_conflicts(
    store: Store, run: Run, make_run: MakeRun, make_effect: MakeEffect, clock: Clock
) -> None:
    first = make_effect(run.id, idempotency_key=KEY, args=ASKED_2500)
    await completed(store, first, clock())
    stranger = await make_run()
    other = make_effect(stranger.id, idempotency_key=KEY, args=ASKED_2000)
    same = make_effect(stranger.id, idempotency_key=KEY, args=ASKED_2500)

    conflicted = await store.commit(Batch(run_id=stranger.id, start=[other]))
    started = await store.commit(Batch(run_id=stranger.id, start=[same]))

    assert conflicted.conflicts[other.call_id].run_id == run.id
    assert (started.conflicts, started.preempted) == ({}, {})  # another lineage: the tool runs
    assert [e.call_id for e in await store.list_effects(stranger.id)] == [same.call_id]
    found = await store.conflicting_effect(KEY, args_digest(ASKED_2000))
    assert found is not None
    assert found.call_id == same.call_id  # the latest: started, 2500
    assert await store.conflicting_effect(KEY, args_digest(ASKED_2500)) is None


async def test_an_effect_in_flight_under_the_key_with_other_args_conflicts(
    store: Store, run: Run, make_run: MakeRun, make_effect: MakeEffect
) -> None:
    first = make_effect(run.id, idempotency_key=KEY, args=ASKED_2500)
    await store.commit(Batch(run_id=run.id, start=[first]))  # started, not finished
    stranger = await make_run()
    other = make_effect(stranger.id, idempotency_key=KEY, args=ASKED_2000)

    committed = await store.commit(Batch(run_id=stranger.id, start=[other]))

    assert committed.conflicts[other.call_id].status == EffectStatus.STARTED


async def test_a_re_keyed_call_does_not_conflict(
    store: Store, run: Run, make_run: MakeRun, make_effect: MakeEffect, clock: Clock
) -> None:
    await completed(store, make_effect(run.id, idempotency_key=KEY, args=ASKED_2500), clock())
    stranger = await make_run()
    separate = make_effect(stranger.id, idempotency_key=f"{KEY}~separate:ap1", args=ASKED_2000)

    committed = await store.commit(Batch(run_id=stranger.id, start=[separate]))

    assert (committed.conflicts, committed.preempted) == ({}, {})
    assert len(await store.list_effects(stranger.id)) == 1


async def test_a_decline_answers_only_a_call_with_the_same_args(
    store: Store, run: Run, make_approval: MakeApproval, clock: Clock
) -> None:
    declined = make_approval(run.id, idempotency_key=KEY, args=ASKED_2500)
    await store.create_approval(declined)
    await store.decide_approval(declined.id, Ruling(ApprovalState.DECLINED, by="U0B", at=clock()))
    same = make_approval(run.id, idempotency_key=KEY, args=ASKED_2500)
    other = make_approval(run.id, idempotency_key=KEY, args=ASKED_2000)

    repeated = await store.commit(Batch(run_id=run.id, request=[same]))
    asked = await store.commit(Batch(run_id=run.id, request=[other]))

    assert repeated.prior_decisions[str(same.call_id)].id == declined.id
    assert asked.prior_decisions == {}
    assert (await store.get_approval(other.id)).state == ApprovalState.PENDING


async def test_an_approval_keeps_the_digests_shown_and_approved_and_the_key_suffix(
    store: Store, run: Run, make_approval: MakeApproval, clock: Clock
) -> None:
    approval = make_approval(run.id, idempotency_key=KEY, args=ASKED_2500)
    await store.create_approval(approval)
    assert (await store.get_approval(approval.id)).args_digest == args_digest(ASKED_2500)

    decided = await store.decide_approval(
        approval.id,
        Ruling(
            ApprovalState.APPROVED,
            by="U0B",
            at=clock(),
            approved_args=ASKED_2000,
            approved_digest=args_digest(ASKED_2000),
            key_suffix=approval.id,
        ),
    )

    assert decided.args_digest == args_digest(ASKED_2500)
    assert decided.approved_digest == args_digest(ASKED_2000)
    assert decided.key_suffix == approval.id
    assert decided.edited
    assert await store.get_approval(approval.id) == decided
