"""Never twice (docs/architecture.md rule 2) across a real crash: a worker process is SIGKILLed
after the tool acted on the world and before the result was recorded. On recovery an idempotent tool
re-runs with the same key (the world dedupes it); a non-idempotent one pages a human, and once the
human resolves it the run finishes without acting again."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from runtime_scenarios import BILLER_SCRIPT
from runtime_scenarios import CUSTOMER
from runtime_scenarios import INVOICE
from runtime_scenarios import WORKER_ID
from runtime_scenarios import CountingModel
from runtime_scenarios import OpenDb
from runtime_scenarios import RecordingNotifier
from runtime_scenarios import Worker
from runtime_scenarios import assert_well_formed
from runtime_scenarios import biller_agent
from runtime_scenarios import wait_for_lapse

from examples.world import emails
from examples.world import payments
from runtime import Runtime
from runtime import ScriptedModel
from runtime import errors
from store import EffectStatus
from store import RunStatus
from store import Store
from store.records import utcnow

RUN = "bill-7"


async def killed_after(point: str, run_worker: Worker, open_db: OpenDb) -> Store:
    done = run_worker("biller", RUN, "Bill invoice INV-7", die=point)
    assert done.killed, done.stderr
    store = await open_db()
    await wait_for_lapse(store, owner="new")
    return store


def successor(store: Store, model: CountingModel, notifier: RecordingNotifier) -> Runtime:
    """Another worker, started after the dead one's lease ran out (`wait_for_lapse`)."""
    later = utcnow() + timedelta(minutes=5)
    return Runtime(
        store, [biller_agent(model)], notifier=notifier, worker_id="new", clock=lambda: later
    )


async def test_idempotent_charge_reruns_with_the_same_key_and_charges_once(
    run_worker: Worker, open_db: OpenDb
) -> None:
    store = await killed_after("charge", run_worker, open_db)
    assert len(payments()) == 1
    assert (await store.get_effect(RUN, "call_1_1")).status == EffectStatus.STARTED
    model = CountingModel(ScriptedModel(BILLER_SCRIPT))

    assert await successor(store, model, RecordingNotifier()).recover() == [RUN]

    run = await store.get_run(RUN)
    assert (run.status, run.stop_reason) == (RunStatus.DONE, "answered")
    ((kind, reference, amount, key),) = payments()
    assert (kind, reference, amount) == ("charge", INVOICE, 500)
    charge = await store.get_effect(RUN, "call_1_1")
    assert (charge.status, charge.idempotency_key) == (EffectStatus.COMPLETED, key)
    assert charge.result["id"] == f"charge_{key[-8:]}"
    assert [r for r, _s, _k in emails()] == [CUSTOMER]
    assert model.calls == 2
    assert_well_formed((await store.load_state(RUN)).messages)


async def test_email_in_doubt_pages_and_stops_the_run(run_worker: Worker, open_db: OpenDb) -> None:
    store = await killed_after("send_email", run_worker, open_db)
    assert len(emails()) == 1
    model = CountingModel(ScriptedModel(BILLER_SCRIPT))
    notifier = RecordingNotifier()

    await successor(store, model, notifier).recover()

    run = await store.get_run(RUN)
    assert (run.status, run.stop_reason) == (RunStatus.FAILED, "in_doubt")
    email = await store.get_effect(RUN, "call_2_1")
    assert email.status == EffectStatus.IN_DOUBT
    (page,) = await store.list_pages()
    assert (page.run_id, page.call_id, page.tool, page.reason) == (
        RUN,
        "call_2_1",
        "send_email",
        "in_doubt",
    )
    assert [p.id for p in notifier.pages] == [page.id]
    assert model.calls == 0
    assert len(emails()) == 1
    assert len(payments()) == 1


async def test_resolved_email_finishes_the_run_without_sending_again(
    run_worker: Worker, open_db: OpenDb
) -> None:
    store = await killed_after("send_email", run_worker, open_db)
    model = CountingModel(ScriptedModel(BILLER_SCRIPT))
    rt = successor(store, model, RecordingNotifier())
    await rt.recover()
    sent = {"message_id": "msg_1", "to": CUSTOMER}

    effect = await rt.resolve(RUN, "call_2_1", happened=True, by="U_ONCALL", result=sent)
    run = await rt.resume(RUN)

    assert (effect.status, effect.result) == (EffectStatus.COMPLETED, sent)
    assert (run.status, run.stop_reason) == (RunStatus.DONE, "answered")
    assert len(emails()) == 1
    assert len(payments()) == 1
    assert model.calls == 1
    assert await store.list_pages() == []
    (acknowledged,) = await store.list_pages(open_only=False)
    assert acknowledged.acknowledged_by == "U_ONCALL"
    state = await store.load_state(RUN)
    assert_well_formed(state.messages)
    email_result = next(m for m in state.messages if m.tool_call_id == "call_2_1")
    assert json.loads(email_result.content) == sent
    actions = [e.action for e in await store.list_events(run_id=RUN)]
    assert "resolve_in_doubt" in actions


async def test_resume_before_anyone_resolves_is_refused_and_changes_nothing(
    run_worker: Worker, open_db: OpenDb
) -> None:
    store = await killed_after("send_email", run_worker, open_db)
    model = CountingModel(ScriptedModel(BILLER_SCRIPT))
    notifier = RecordingNotifier()
    rt = successor(store, model, notifier)
    await rt.recover()
    history = await store.history(RUN)

    with pytest.raises(
        errors.EffectInDoubt, match=r"send_email \(call call_2_1\) is in doubt"
    ) as e:
        await rt.resume(RUN)
    assert (e.value.run_id, e.value.call_id, e.value.tool) == (RUN, "call_2_1", "send_email")
    assert "signoff" not in str(e.value)  # the words of a surface are the surface's

    run = await rt.get(RUN)
    assert (run.status, run.stop_reason) == (RunStatus.FAILED, "in_doubt")
    assert await store.history(RUN) == history
    assert (await store.get_effect(RUN, "call_2_1")).status == EffectStatus.IN_DOUBT
    assert len(emails()) == 1
    assert model.calls == 0
    (page,) = await store.list_pages()
    assert [p.id for p in notifier.pages] == [page.id]


async def test_same_worker_restarting_recovers_its_own_run(
    run_worker: Worker, open_db: OpenDb
) -> None:
    store = await killed_after("charge", run_worker, open_db)
    model = CountingModel(ScriptedModel(BILLER_SCRIPT))
    rt = Runtime(store, [biller_agent(model)], worker_id=WORKER_ID)

    assert await rt.recover() == [RUN]
    assert await rt.recover() == []

    assert (await store.get_run(RUN)).status == RunStatus.DONE
    assert len(payments()) == 1
    assert model.calls == 2
