"""Limits over history and the envelopes approvers hand out, in the store: the sums of a
window, and the transaction bodies that hold, settle and give back a call's share
(docs/policies.md, "Limits that see history").

A limit is a counter per key and bucket of its window (`spend_counters`): reading one sums
the few buckets its window spans, so its cost never grows with history. A call holds its
amount (`spend_holds`) in the transaction that lets it through or approves it: the body
locks the limit's key (PostgreSQL; SQLite's single writer needs no lock), reads the window
by the database's clock and lets the runtime's plan decide, then adds to the counter, so two
workers can never together pass what one alone would not. A hold is settled when its effect
completes and given back (a compare-and-set on its state, so once) when the call is
declined, fails, is compensated or never runs. An envelope's share is a hold too, on the
envelope's own row (`counter` = `envelope`, `key` its id).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any, Literal
from zoneinfo import ZoneInfo

from store import errors, rows
from store.body import Body, Stmt
from store.records import (
    Approval,
    ApprovalState,
    AuditEvent,
    LimitState,
    RuleMatch,
    ShadowNote,
    SpendWindow,
)

ENVELOPE = "envelope"
"""The counter of a hold on an envelope (its key is the envelope's id)."""
EDIT_EVERY = 10.0
"""Seconds between two edits of an envelope's live message, at the least."""


# windows


def span(window: SpendWindow, now: float) -> tuple[int, int]:
    """The buckets a window counts at `now` (epoch seconds): (first, current). A sliding
    window counts one bucket more than its length holds, so a call counts for at least the
    whole window (at most one bucket longer), never less."""
    if window.seconds is None:
        day = datetime.fromtimestamp(now, _zone(window.timezone or "UTC")).date().toordinal()
        return day, day
    current = int(now // window.width)
    return current - math.ceil(window.seconds / window.width), current


@cache
def _zone(name: str) -> ZoneInfo:
    return ZoneInfo(name)


def lock_id(counter: str, key: str) -> str:
    return f"{counter}\x1f{key}"


# what the runtime hands the body of a call's admission


@dataclass(frozen=True, slots=True)
class EnvelopeTry:
    """An envelope whose condition holds for the call: it approves it if `amount` fits and
    the call needs no more approvals than the envelope had writers (`quorum`)."""

    id: str
    amount: int
    shadow: bool = False
    quorum: int = 1


@dataclass(frozen=True, slots=True)
class Admission:
    """What a call's plan made of its limits: the approval to create (its rule's `limits`
    say which to hold), the envelopes to try in order while it waits for a person, and what
    an envelope that fits makes of it."""

    approval: Approval
    envelopes: tuple[EnvelopeTry, ...] = ()
    by_envelope: Callable[[Approval, EnvelopeTry], Approval] | None = None


@dataclass(frozen=True, slots=True)
class SpendPlan:
    """The runtime's plan for one new approval: the limits the call counts against (with
    key, amount and window; the store fills in `used` and `calls` under the lock) and the
    pure function that decides, from them, what is created."""

    limits: tuple[LimitState, ...]
    decide: Callable[[tuple[LimitState, ...]], Admission]

    def locks(self) -> list[str]:
        return [lock_id(s.counter, s.key) for s in self.limits if s.key is not None]


@dataclass(frozen=True, slots=True)
class SpendChange:
    """What an effect's end does to the holds of its call (`call_id`), or, for `idle`, to
    the holds of a finished run's calls that never started."""

    call_id: str | None
    action: Literal["settle", "release", "idle"]
    why: str = ""


# bodies


def lock(ids: Iterable[str]) -> Body[None]:
    """Lock each (counter, key) in one order, so two writers never wait in a circle."""
    ordered = sorted(set(ids))
    if ordered:
        yield Stmt("lock_spend", {"keys": ordered})


def clock() -> Body[float]:
    """The database's time (or the store's own clock, when it was given one)."""
    return float((yield Stmt("spend_clock", {"test_now": None}, "one"))[0])


def admit(plan: SpendPlan, test_now: float | None) -> Body[Admission]:
    """Read the window of each limit (locked by the caller), let the plan decide, try the
    envelopes it names, and hold what the chosen approval holds."""
    now = yield from _now(test_now)
    filled = []
    for state in plan.limits:
        if state.key is not None:
            amount, calls = yield from used(state, now)
            state = state.model_copy(update={"used": amount, "calls": calls})
        filled.append(state)
    admission = plan.decide(tuple(filled))
    approval = admission.approval
    events: list[AuditEvent] = []
    if approval.state == ApprovalState.PENDING and admission.by_envelope is not None:
        for each in admission.envelopes:
            if each.quorum < approval.required_approvals:
                continue
            if not (yield from use_envelope(each, approval, now, events)):
                continue
            if each.shadow:  # it decides nothing: what it would have done is noted
                approval = _noted(approval, each)
                continue
            approval = admission.by_envelope(approval, each)
            break
    yield from hold_limits(approval, now)
    if events:
        yield Stmt("insert_event", [rows.event_params(e) for e in events], "many")
    return Admission(approval)


def _noted(approval: Approval, each: EnvelopeTry) -> Approval:
    note = ShadowNote(
        kind="envelope",
        name=each.id,
        would="approve",
        text=f"envelope {each.id} (shadow) would have approved it at once",
    )
    match = approval.rule or RuleMatch(kind="no_match", summary=f"policy {approval.policy}")
    return approval.model_copy(
        update={"rule": match.model_copy(update={"shadow": (*match.shadow, note)})}
    )


def _now(test_now: float | None) -> Body[float]:
    return test_now if test_now is not None else (yield from clock())


def used(state: LimitState, now: float) -> Body[tuple[int, int]]:
    """What the window of `state`'s limit holds for its key at `now`: (amount, calls)."""
    first, current = span(state.window, now)
    params = {"counter": state.counter, "key": state.key, "first": first, "current": current}
    row = yield Stmt("spend_used", params, "one")
    return int(row[0]), int(row[1])


def hold_limits(approval: Approval, now: float) -> Body[None]:
    """Hold each limit the approval's rule says it holds, in the current bucket."""
    match = approval.rule
    if match is None or approval.run_id is None or approval.call_id is None:
        return
    for state in match.limits:
        if state.held and state.key is not None:
            bucket = span(state.window, now)[1]
            yield from hold(approval, state.counter, state.key, bucket, state.amount, now)


def hold(
    approval: Approval, counter: str, key: str, bucket: int, amount: int, at: float
) -> Body[bool]:
    """One hold of the call on a counter, once per call (a second is ignored)."""
    params = {
        "held_at": at,
        "counter": counter,
        "key": key,
        "bucket": bucket,
        "amount": amount,
        "calls": 1,
        "run_id": approval.run_id,
        "call_id": approval.call_id,
        "approval_id": approval.id,
    }
    if not (yield Stmt("insert_hold", params, "count")):
        return False
    if counter != ENVELOPE:
        yield Stmt("add_to_counter", params)
    return True


def use_envelope(
    each: EnvelopeTry, approval: Approval, now: float, events: list[AuditEvent]
) -> Body[bool]:
    """Take the call's share of an envelope, if it fits and the envelope is in force: a
    compare-and-set on the envelope's row, so two workers never both take its last share."""
    params = {"id": each.id, "amount": each.amount, "now": now}
    row = yield Stmt("use_envelope", params, "one")
    if row is None:
        return False
    if not (yield from hold(approval, ENVELOPE, each.id, 0, each.amount, now)):
        # The call held it already (asked again): give this take back.
        yield Stmt("give_back_envelope", {"key": each.id, "amount": each.amount, "calls": 1})
        return False
    yield from envelope_changed(each.id, now)
    left_amount = None if row["max_amount"] is None else row["max_amount"] - row["used_amount"]
    left_calls = None if row["max_calls"] is None else row["max_calls"] - row["used_calls"]
    if left_amount == 0 or left_calls == 0:
        events.append(
            AuditEvent(
                action="envelope_exhausted",
                actor="signoff",
                run_id=approval.run_id,
                approval_id=approval.id,
                at=approval.created_at,
                detail={"envelope_id": each.id, "used_amount": row["used_amount"],
                        "used_calls": row["used_calls"]},
            )
        )  # fmt: skip
    return True


def envelope_changed(envelope_id: str, now: float) -> Body[None]:
    """Queue the envelope's live message to be drawn again: one row waits at most, and it
    is sent no sooner than `EDIT_EVERY` seconds after the last one (rate-limited edits)."""
    params = {"id": envelope_id, "now": now, "every": EDIT_EVERY}
    yield Stmt("enqueue_envelope_changed", params)


def change(run_id: str, change: SpendChange, test_now: float | None) -> Body[None]:
    """Settle or give back what a call (or a finished run's calls that never ran) hold."""
    now = yield from _now(test_now)
    params = {"run_id": run_id, "call_id": change.call_id, "why": change.why, "now": now}
    if change.action == "settle":
        yield Stmt("settle_holds", params)
        return
    if change.action == "release":
        released = yield Stmt("release_holds", params, "all")
    else:
        released = yield Stmt("release_idle_holds", params, "all")
    yield from give_back(released, now)


def give_back(released: Sequence[Any], now: float) -> Body[None]:
    """Take each released hold off its counter (or its envelope), in one order."""
    ordered = sorted(released, key=lambda r: (r["counter"], r["key"], r["bucket"]))
    for row in ordered:
        params = {
            "counter": row["counter"],
            "key": row["key"],
            "bucket": row["bucket"],
            "amount": row["amount"],
            "calls": row["calls"],
        }
        if row["counter"] == ENVELOPE:
            yield Stmt("give_back_envelope", params)
            yield from envelope_changed(row["key"], now)
        else:
            yield Stmt("take_from_counter", params)


def decided(
    approval: Approval, amounts: Mapping[str, int] | None, test_now: float | None
) -> Body[None]:
    """After a person's (or the system's) decision: a decline gives the call's holds back;
    an approval of a call asked because it was past a limit holds its amounts now (a person
    with that authority said yes), and an edit that changed an amount holds the new one,
    refused (`OverLimit`, nothing written) when it would pass a limit the call was within."""
    match = approval.rule
    if match is None or approval.run_id is None or approval.call_id is None:
        return
    if not (match.limits or match.envelope_id):
        return
    if approval.state == ApprovalState.DECLINED:
        declined = SpendChange(approval.call_id, "release", "declined")
        yield from change(approval.run_id, declined, test_now)
        return
    keyed = [s for s in match.limits if s.key is not None]
    if not keyed:
        return
    yield from lock(lock_id(s.counter, s.key or "") for s in keyed)
    now = yield from _now(test_now)
    for state in keyed:
        amount = (amounts or {}).get(state.name, state.amount)
        if state.held and amount == state.amount:
            continue
        if state.held:
            released = yield Stmt("release_hold_of", _hold_key(approval, state, now), "all")
            yield from give_back(released, now)
            if state.mode == "enforce" and state.outcome == "within":
                window_used, _ = yield from used(state, now)
                if window_used + amount > state.max:
                    raise errors.OverLimit(
                        f"the edited amount {amount} would pass limit {state.name} "
                        f"({window_used} of {state.max} used)",
                        limit=state.name,
                    )
        bucket = span(state.window, now)[1]
        yield from hold(approval, state.counter, state.key or "", bucket, amount, now)


def _hold_key(approval: Approval, state: LimitState, now: float) -> dict[str, Any]:
    return {
        "run_id": approval.run_id,
        "call_id": approval.call_id,
        "counter": state.counter,
        "key": state.key,
        "why": "edited",
        "now": now,
    }
