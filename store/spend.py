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
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any
from typing import Literal
from zoneinfo import ZoneInfo

from store import errors
from store import rows
from store.body import Body
from store.body import Stmt
from store.records import Approval
from store.records import ApprovalState
from store.records import AuditEvent
from store.records import LimitState
from store.records import RuleMatch
from store.records import ShadowNote
from store.records import SpendWindow

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


def lock(ids: Iterable[str]) -> Body[float | None]:
    """Lock each (counter, key) in one order, so two writers never wait in a circle; the
    database's time as the lock took it (None where the dialect needs no lock)."""
    ordered = sorted(set(ids))
    if not ordered:
        return None
    row = yield Stmt("lock_spend", {"keys": ordered}, "one")
    return None if row is None else float(row[0])


def clock() -> Body[float]:
    """The database's time (or the store's own clock, when it was given one)."""
    return float((yield Stmt("spend_clock", {"test_now": None}, "one"))[0])


def admit(plan: SpendPlan, now: float | None) -> Body[Admission]:
    """Read the window of each limit (locked by the caller), let the plan decide, try the
    envelopes it names, and hold what the chosen approval holds. `now`: the time the
    windows are judged by, when the caller knows it."""
    when = yield from _now(now)
    filled = yield from read_windows(plan.limits, when)
    admission = plan.decide(filled)
    approval = admission.approval
    events: list[AuditEvent] = []
    if approval.state == ApprovalState.PENDING and admission.by_envelope is not None:
        for each in admission.envelopes:
            if each.quorum < approval.required_approvals:
                continue
            if not (yield from use_envelope(each, approval, when, events)):
                continue
            if each.shadow:  # it decides nothing: what it would have done is noted
                approval = _noted(approval, each)
                continue
            approval = admission.by_envelope(approval, each)
            break
    yield from hold_limits(approval, when)
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


def _now(now: float | None) -> Body[float]:
    return now if now is not None else (yield from clock())


def read_windows(states: Sequence[LimitState], now: float) -> Body[tuple[LimitState, ...]]:
    """The states with what each key's window holds at `now`, read in one statement (a few
    buckets of the primary key each, however long the history)."""
    if not any(s.key is not None for s in states):
        return tuple(states)
    found = yield Stmt("spend_used_many", window_claims(states, now), "all")
    return filled(states, found)


def window_claims(states: Sequence[LimitState], now: float) -> dict[str, Any]:
    """`spend_used_many`'s parameters: each keyed state's counter, key and buckets."""
    claims = []
    for i, state in enumerate(states):
        if state.key is not None:
            first, current = span(state.window, now)
            claims.append(
                {"i": i, "counter": state.counter, "key": state.key, "first": first,
                 "current": current}
            )  # fmt: skip
    return {"claims": rows.dumps(claims)}


def filled(states: Sequence[LimitState], found: Sequence[Any]) -> tuple[LimitState, ...]:
    """The states with `spend_used_many`'s rows (index, amount, calls) filled in."""
    totals = {int(row[0]): (int(row[1]), int(row[2])) for row in found}
    return tuple(
        s.model_copy(update={"used": totals[i][0], "calls": totals[i][1]}) if i in totals else s
        for i, s in enumerate(states)
    )


def used(state: LimitState, now: float) -> Body[tuple[int, int]]:
    """What the window of `state`'s limit holds for its key at `now`: (amount, calls)."""
    (filled,) = yield from read_windows([state], now)
    return filled.used, filled.calls


def hold_limits(approval: Approval, now: float) -> Body[None]:
    """Hold, in the current bucket, each limit the approval's rule says it holds: the holds
    in one statement, what they add to the counters in one more (in the same one, where the
    dialect can)."""
    match = approval.rule
    if match is None or approval.run_id is None or approval.call_id is None:
        return
    held = [s for s in match.limits if s.held and s.key is not None]
    if held:
        yield from hold_many(
            approval, [(s.counter, s.key or "", s.amount, s.window) for s in held], now
        )


def hold_many(
    approval: Approval, holds: Sequence[tuple[str, str, int, SpendWindow]], at: float
) -> Body[None]:
    """The call's holds on these counters (each once per call; a second is ignored), and
    what they add to the counters."""
    params = {
        "holds": rows.dumps(
            [
                {"counter": c, "key": k, "bucket": span(w, at)[1], "amount": a}
                for c, k, a, w in holds
            ]
        ),
        "run_id": approval.run_id,
        "call_id": approval.call_id,
        "approval_id": approval.id,
        "held_at": at,
    }
    inserted = yield Stmt("insert_holds", params, "all")
    if inserted:
        added = [
            {"counter": r["counter"], "key": r["key"], "bucket": r["bucket"], "amount": r["amount"]}
            for r in inserted
        ]
        yield Stmt("add_to_counters", {"added": rows.dumps(added)})


def hold_envelope(approval: Approval, envelope_id: str, amount: int, at: float) -> Body[bool]:
    """The call's hold on an envelope's share, once per call (a second is ignored)."""
    params = {
        "held_at": at,
        "counter": ENVELOPE,
        "key": envelope_id,
        "bucket": 0,
        "amount": amount,
        "calls": 1,
        "run_id": approval.run_id,
        "call_id": approval.call_id,
        "approval_id": approval.id,
    }
    return bool((yield Stmt("insert_hold", params, "count")))


def use_envelope(
    each: EnvelopeTry, approval: Approval, now: float, events: list[AuditEvent]
) -> Body[bool]:
    """Take the call's share of an envelope, if it fits and the envelope is in force: a
    compare-and-set on the envelope's row, so two workers never both take its last share."""
    params = {"id": each.id, "amount": each.amount, "now": now}
    row = yield Stmt("use_envelope", params, "one")
    if row is None:
        return False
    if not (yield from hold_envelope(approval, each.id, each.amount, now)):
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


def envelope_changed(
    envelope_id: str, test_now: float | None, every: float = EDIT_EVERY
) -> Body[None]:
    """Queue the envelope's live message to be drawn again: one row waits at most, and it
    is sent no sooner than `every` seconds after the last one (rate-limited edits)."""
    params = {"id": envelope_id, "test_now": test_now, "every": every}
    yield Stmt("enqueue_envelope_changed", params)


def change(run_id: str, change: SpendChange, test_now: float | None) -> Body[None]:
    """Settle or give back what a call (or a finished run's calls that never ran) hold,
    dated by the store's clock (`test_now`, or the database's)."""
    params: dict[str, Any] = {"run_id": run_id, "call_id": change.call_id, "why": change.why}
    params["test_now"] = test_now
    if change.action == "settle":
        yield Stmt("settle_holds", params)
        return
    if change.action == "release":
        released = yield Stmt("release_holds", params, "all")
    else:
        released = yield Stmt("release_idle_holds", params, "all")
    yield from give_back(released, test_now)


def give_back(released: Sequence[Any], test_now: float | None) -> Body[None]:
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
            yield from envelope_changed(row["key"], test_now)
        else:
            yield Stmt("take_from_counter", params)


def decided(
    approval: Approval,
    amounts: Mapping[str, int] | None,
    now: float | None,
    test_now: float | None,
) -> Body[None]:
    """After a person's (or the system's) decision: a decline gives the call's holds back;
    an approval of a call asked because it was past a limit holds its amounts now (a person
    with that authority said yes), and an edit that changed an amount holds the new one,
    refused (`OverLimit`, nothing written) when it would pass a limit the call was within.
    `now`: the time the windows are judged by, when the caller knows it; `test_now` the
    store's own clock, if it has one."""
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
    locked = yield from lock(lock_id(s.counter, s.key or "") for s in keyed)
    when = yield from _now(now if now is not None else locked)
    taking = []
    for state in keyed:
        amount = (amounts or {}).get(state.name, state.amount)
        if state.held and amount == state.amount:
            continue
        if state.held:
            released = yield Stmt("release_hold_of", _hold_key(approval, state, test_now), "all")
            yield from give_back(released, test_now)
            if state.mode == "enforce" and state.outcome == "within":
                window_used, _ = yield from used(state, when)
                if window_used + amount > state.max:
                    raise errors.OverLimit(
                        f"the edited amount {amount} would pass limit {state.name} "
                        f"({window_used} of {state.max} used)",
                        limit=state.name,
                    )
        taking.append((state.counter, state.key or "", amount, state.window))
    if taking:
        yield from hold_many(approval, taking, when)


def _hold_key(approval: Approval, state: LimitState, test_now: float | None) -> dict[str, Any]:
    return {
        "run_id": approval.run_id,
        "call_id": approval.call_id,
        "counter": state.counter,
        "key": state.key,
        "why": "edited",
        "test_now": test_now,
    }
