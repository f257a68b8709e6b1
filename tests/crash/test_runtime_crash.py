"""Crash test with real processes (issue 3): SIGKILL a driver of N refund-agent runs at random
points, restart it, and repeat until every run is done; then every refund and charge exists
exactly once in the tools' own ledger, every e-mail was sent once, every run's usage matches
the steps it really took, and nothing is stuck.

The driver (`refund_driver.py`) is slowed down so kills land inside the windows that matter:
model steps, tool execution, between "tool executed" and "result recorded", and commits. A
second variant makes the driver SIGKILL itself right after every ledger write, so the
executed-but-not-recorded window is hit for every single effect, deterministically.

The seed of the random schedule is printed on failure; SIGNOFF_CRASH_SEED=<seed> replays the
same schedule of kill delays (not the same interleaving: kills are timed by the wall clock).
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

import pytest
from support.helpers import clean_env

from examples import refund_agent
from examples import world
from store import EffectStatus
from store import Message
from store import RunStatus
from store import ToolCall
from store import Usage
from store import open_store

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).with_name("refund_driver.py")

MIN_KILLS = 50
"""Kill points required across the random variant (the issue asks for at least 50)."""
TARGET_KILLS = MIN_KILLS
RUNS_PER_ROUND = 8
MAX_ROUNDS = 20
MAX_KILLED_LIVES_PER_ROUND = 40
"""After this many kills in one round the driver is let finish: a round that still does not
finish then is stuck."""
TIME_BUDGET = 75.0
"""Seconds of killing; past it no new round starts (once MIN_KILLS is reached)."""
READY_TIMEOUT = 30.0
FINISH_TIMEOUT = 30.0

TOOL_DELAY = 0.03
MODEL_DELAY = 0.02

SEED_ENV = "SIGNOFF_CRASH_SEED"


# running the driver


@dataclass
class Life:
    """One driver process and the files its output goes to."""

    proc: subprocess.Popen[bytes]
    out: Path
    err: Path

    def check_no_errors(self) -> None:
        """A driver logs nothing unless something broke: recovery, for one, logs and carries on,
        so an exception there would otherwise go unnoticed."""
        if "Traceback" in self.err.read_text():
            pytest.fail(f"the driver logged an exception\n{self.output()}")

    def output(self) -> str:
        out, err = self.out.read_text()[-3000:], self.err.read_text()[-6000:]
        return f"--- stdout\n{out}\n--- stderr\n{err}"


def spawn(workdir: Path, count: int, env_extra: dict[str, str]) -> Life:
    env = clean_env("SIGNOFF_")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.update(env_extra)
    out, err = workdir / "driver.out", workdir / "driver.err"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        proc = subprocess.Popen(
            [
                sys.executable,
                str(DRIVER),
                str(workdir / "signoff.db"),
                str(workdir / "world.db"),
                str(count),
            ],
            cwd=ROOT,
            env=env,
            stdout=stdout,
            stderr=stderr,
        )
    return Life(proc, out, err)


def wait_ready(life: Life) -> None:
    """Wait until the driver has opened its store (or died)."""
    deadline = time.monotonic() + READY_TIMEOUT
    while life.proc.poll() is None:
        if b"ready" in life.out.read_bytes():
            return
        if time.monotonic() > deadline:
            kill(life)
            pytest.fail(f"the driver did not open its store in {READY_TIMEOUT:g}s\n{life.output()}")
        time.sleep(0.005)


def kill(life: Life) -> None:
    life.proc.send_signal(signal.SIGKILL)
    life.proc.wait()
    life.check_no_errors()


def wait_exit(life: Life, timeout: float) -> int | None:
    try:
        rc = life.proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    life.check_no_errors()
    return rc


# what the test saw


@dataclass
class Tally:
    kills: int = 0
    kills_before_ready: int = 0
    lives: int = 0
    rounds: int = 0
    executed_not_recorded: int = 0
    """In-doubt effects the on-call found already in the ledger (refunds, e-mails)."""
    not_executed: int = 0
    """In-doubt effects the on-call found missing and completed by hand."""
    idempotent_retries: int = 0
    """In-doubt effects re-run with the same key by the runtime (charges, lookups)."""
    open_pages: list[str] = field(default_factory=list)
    """Pages still open once every run is done (each in-doubt effect was resolved)."""

    def summary(self) -> str:
        return (
            f"{self.rounds} round(s), {self.lives} lives, {self.kills} kills "
            f"({self.kills_before_ready} before the store was open); in doubt: "
            f"{self.executed_not_recorded} executed-not-recorded, {self.not_executed} not "
            f"executed, {self.idempotent_retries} idempotent retries"
        )


# the checks


def _check_transcript(run_id: str, messages: Sequence[Message]) -> None:
    """Well formed: one system and one user message first, every call answered exactly once."""
    roles = [m.role for m in messages]
    assert roles[:2] == ["system", "user"], f"{run_id}: transcript starts {roles[:3]}"
    assert roles.count("system") == 1, f"{run_id}: system message repeated: {roles}"
    assert roles.count("user") == 1, f"{run_id}: task repeated: {roles}"
    asked = [c.id for m in messages if m.role == "assistant" for c in m.tool_calls]
    answered = [m.tool_call_id for m in messages if m.role == "tool"]
    assert len(asked) == len(set(asked)), f"{run_id}: a call id was asked twice: {asked}"
    assert sorted(answered) == sorted(asked), (
        f"{run_id}: tool results {answered} do not answer the calls {asked} exactly once"
    )


async def _check_usage(run_id: str, usage: Usage, messages: Sequence[Message], step: int) -> None:
    """Usage equals the model steps the run really took: each assistant turn of the final
    transcript is replayed against the agent's (deterministic) model on the transcript before
    it, which must give the same reply; the usages of those replies must add up to the run's."""
    assistants = [i for i, m in enumerate(messages) if m.role == "assistant"]
    assert usage.steps == len(assistants) == step, (
        f"{run_id}: usage.steps={usage.steps}, run.step={step}, but the transcript has "
        f"{len(assistants)} model steps"
    )
    model, specs = refund_agent.agent.model, refund_agent.agent.specs
    spent = Usage()
    for n, i in enumerate(assistants, start=1):
        reply = await model.complete(messages[:i], specs)
        recorded = messages[i]
        assert (reply.content, _calls(reply.tool_calls)) == (
            recorded.content,
            _calls(recorded.tool_calls),
        ), f"{run_id}: step {n} of the transcript is not what the model says there"
        spent = spent + reply.usage + Usage(steps=1)
    assert (usage.input_tokens, usage.output_tokens) == (spent.input_tokens, spent.output_tokens), (
        f"{run_id}: token usage {usage.input_tokens}/{usage.output_tokens} is not what its "
        f"{len(assistants)} steps used ({spent.input_tokens}/{spent.output_tokens})"
    )
    assert usage.cost == pytest.approx(spent.cost, rel=1e-6, abs=1e-9), (
        f"{run_id}: cost {usage.cost} is not what its steps cost ({spent.cost})"
    )


def _calls(calls: Sequence[ToolCall]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(c.id, c.name, c.arguments) for c in calls]


def _integrity(path: Path) -> str:
    with closing(sqlite3.connect(path)) as conn:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])


def _world(world_db: Path) -> tuple[list[tuple[str, str, int, str]], list[tuple[str, str, str]]]:
    saved = os.environ.get("SIGNOFF_WORLD_DB")
    os.environ["SIGNOFF_WORLD_DB"] = str(world_db)
    try:
        return world.payments(), world.emails()
    finally:
        if saved is None:
            del os.environ["SIGNOFF_WORLD_DB"]
        else:
            os.environ["SIGNOFF_WORLD_DB"] = saved


async def check_round(workdir: Path, count: int, tally: Tally) -> None:
    """Every invariant of a finished round, in the outside world and in Signoff's store."""
    world_db, store_db = workdir / "world.db", workdir / "signoff.db"
    orders = {f"order-{i}": world.order(str(i)) for i in range(1, count + 1)}

    # the outside world: each refund and each charge exactly once, each e-mail exactly once
    payments, emails = _world(world_db)
    in_world = {key for *_, key in payments} | {key for *_, key in emails}
    paid = Counter((kind, reference) for kind, reference, _, _ in payments)
    wanted: Counter[tuple[str, str]] = Counter()
    for order in orders.values():
        wanted["refund", order["order_id"]] += 1
        if order["restocking_fee_cents"]:
            wanted["charge", order["invoice_id"]] += 1
    assert paid == wanted, f"payments in the world ledger: {payments}"
    amounts = {(kind, reference): amount for kind, reference, amount, _ in payments}
    for order in orders.values():
        assert amounts["refund", order["order_id"]] == order["amount_cents"]
        if order["restocking_fee_cents"]:
            assert amounts["charge", order["invoice_id"]] == order["restocking_fee_cents"]
    sent = Counter(recipient for recipient, _, _ in emails)
    assert sent == Counter(o["customer_email"] for o in orders.values()), f"e-mails: {emails}"
    assert all(subject.startswith("Your refund for order") for _, subject, _ in emails), emails

    # Signoff's store
    store = await open_store(f"sqlite:///{store_db}")
    try:
        for status in (RunStatus.RUNNING, RunStatus.WAITING_APPROVAL, RunStatus.FAILED):
            left = [r.id for r in await store.list_runs(status)]
            assert not left, f"runs left {status.value}: {left}"
        for run_id, order in orders.items():
            run = await store.get_run(run_id)
            assert (run.status, run.stop_reason) == (RunStatus.DONE, "answered"), (
                f"{run_id}: {run.status.value} / {run.stop_reason} / {run.error}"
            )
            state = await store.load_state(run_id)
            _check_transcript(run_id, state.messages)
            await _check_usage(run_id, run.usage, state.messages, run.step)
            fee = bool(order["restocking_fee_cents"])
            assert run.usage.steps == (5 if fee else 4), f"{run_id}: {run.usage.steps} steps"

            effects = await store.list_effects(run_id)
            unsettled = [(e.call_id, e.tool, e.status) for e in effects]
            assert all(e.status == EffectStatus.COMPLETED for e in effects), unsettled
            unknown = [
                (e.tool, e.idempotency_key)
                for e in effects
                if e.tool != "lookup_order" and e.idempotency_key not in in_world
            ]
            assert not unknown, f"{run_id}: completed effects the world never saw: {unknown}"
            done = Counter(e.tool for e in effects)
            assert done == Counter(
                {"lookup_order": 1, "issue_refund": 1, "send_email": 1, "charge": int(fee)}
                if fee
                else {"lookup_order": 1, "issue_refund": 1, "send_email": 1}
            ), f"{run_id}: completed effects {unsettled}"
            for effect in effects:
                if isinstance(effect.result, dict) and effect.result.get("resolved_by"):
                    if effect.result["found_in_ledger"]:
                        tally.executed_not_recorded += 1
                    else:
                        tally.not_executed += 1
            events = await store.list_events(run_id=run_id)
            tally.idempotent_retries += sum(e.action == "retry_in_doubt" for e in events)

            approvals = await store.list_approvals(run_id=run_id)
            assert [a.state.value for a in approvals] == ["approved"], (
                f"{run_id}: approvals {[(a.tool, a.state.value) for a in approvals]}"
            )
        # checked by the callers, after everything else, so that this does not mask the rest
        tally.open_pages += [
            f"{workdir.name}: {page.id} ({page.tool}, {page.reason})"
            for page in await store.list_pages()
        ]
    finally:
        await store.close()
    assert _integrity(store_db) == "ok"
    assert _integrity(world_db) == "ok"


# the random variant


def run_round(workdir: Path, rng: random.Random, tally: Tally) -> None:
    """Kill and restart one driver of RUNS_PER_ROUND runs until it finishes."""
    env = {
        "SIGNOFF_CRASH_TOOL_DELAY": str(TOOL_DELAY),
        "SIGNOFF_CRASH_MODEL_DELAY": str(MODEL_DELAY),
    }
    killed = 0
    while True:
        tally.lives += 1
        life = spawn(workdir, RUNS_PER_ROUND, env)
        if killed >= MAX_KILLED_LIVES_PER_ROUND:
            rc = wait_exit(life, FINISH_TIMEOUT)
            if rc is None:
                kill(life)
            assert rc == 0, (
                f"runs stuck: after {killed} kills the driver did not finish in "
                f"{FINISH_TIMEOUT:g}s (exit {rc})\n{life.output()}"
            )
            return
        roll = rng.random()
        if roll < 0.1:
            before_ready = True
            delay = rng.uniform(0.0, 0.4)  # imports, opening, migrating the store
        else:
            before_ready = False
            wait_ready(life)
            # right at the start (recovery), or anywhere in the work that follows
            delay = rng.uniform(0.0, 0.06) if roll < 0.3 else rng.uniform(0.0, 0.5)
        rc = wait_exit(life, delay)
        if rc is None:
            kill(life)
            killed += 1
            tally.kills += 1
            tally.kills_before_ready += before_ready
            continue
        assert rc == 0, f"the driver failed (exit {rc})\n{life.output()}"
        return


def test_random_sigkills_leave_every_effect_exactly_once(tmp_path: Path) -> None:
    """Rounds of RUNS_PER_ROUND runs, each driven by a driver killed at random points until it
    finishes, until at least MIN_KILLS kills landed; every round is then checked in full."""
    seed = int(os.environ.get(SEED_ENV) or random.SystemRandom().randrange(2**32))
    print(f"crash test seed: {seed} (replay with {SEED_ENV}={seed})")
    rng = random.Random(seed)
    tally = Tally()
    started = time.monotonic()
    while tally.kills < TARGET_KILLS:
        if tally.rounds >= MAX_ROUNDS or (
            tally.kills >= MIN_KILLS and time.monotonic() - started > TIME_BUDGET
        ):
            break
        tally.rounds += 1
        workdir = tmp_path / f"round-{tally.rounds}"
        workdir.mkdir()
        try:
            run_round(workdir, rng, tally)
            asyncio.run(check_round(workdir, RUNS_PER_ROUND, tally))
        except AssertionError as exc:
            print(tally.summary())
            raise AssertionError(f"seed {seed}, round {tally.rounds}: {exc}") from exc
    print(tally.summary(), f"in {time.monotonic() - started:.1f}s")
    assert tally.kills >= MIN_KILLS, f"seed {seed}: only {tally.summary()}"
    assert not tally.open_pages, (
        f"seed {seed}: pages of resolved effects are still open: {tally.open_pages}"
    )


# the deterministic variant


def run_self_killing(workdir: Path, count: int, env: dict[str, str], max_lives: int) -> Tally:
    """Restart a driver that SIGKILLs itself at chosen points until it finishes."""
    tally = Tally(rounds=1)
    while True:
        tally.lives += 1
        assert tally.lives <= max_lives, f"runs stuck after {tally.summary()}"
        life = spawn(workdir, count, env)
        rc = wait_exit(life, FINISH_TIMEOUT)
        if rc is None:
            kill(life)
            pytest.fail(f"the driver hung for {FINISH_TIMEOUT:g}s\n{life.output()}")
        if rc == -signal.SIGKILL:
            tally.kills += 1
            continue
        assert rc == 0, f"the driver failed (exit {rc})\n{life.output()}"
        return tally


def _fees(count: int) -> int:
    return sum(bool(world.order(str(i))["restocking_fee_cents"]) for i in range(1, count + 1))


def test_sigkill_after_every_ledger_write_is_recorded_exactly_once(tmp_path: Path) -> None:
    """The driver kills itself right after each write to the tools' ledger, before Signoff
    records the result: every refund and e-mail goes in doubt and is settled by the on-call
    from the ledger, every charge is retried with its key and deduped by the provider."""
    count = 4
    fees = _fees(count)
    writes = 2 * count + fees
    markers = tmp_path / "markers"
    markers.mkdir()
    env = {"SIGNOFF_CRASH_MARKERS": str(markers)}
    tally = run_self_killing(tmp_path, count, env, max_lives=writes + 5)
    asyncio.run(check_round(tmp_path, count, tally))
    print(tally.summary())
    assert tally.kills == writes, f"expected one kill per ledger write ({writes}): {tally}"
    assert tally.executed_not_recorded == 2 * count, tally.summary()
    assert tally.not_executed == 0, tally.summary()
    assert tally.idempotent_retries == fees, tally.summary()
    assert not tally.open_pages, f"pages of resolved effects are still open: {tally.open_pages}"


def test_sigkill_inside_resolve_leaves_no_page_open(tmp_path: Path) -> None:
    """A crash after `resolve` recorded an in-doubt effect's outcome but before it
    acknowledged the effect's page must not leave that page open for ever."""
    count = 1
    markers = tmp_path / "markers"
    markers.mkdir()
    env = {"SIGNOFF_CRASH_MARKERS": str(markers), "SIGNOFF_CRASH_BEFORE_ACK": "1"}
    writes = 2 * count + _fees(count)
    tally = run_self_killing(tmp_path, count, env, max_lives=2 * writes + 5)
    asyncio.run(check_round(tmp_path, count, tally))
    print(tally.summary())
    assert tally.executed_not_recorded == 2 * count, tally.summary()
    assert not tally.open_pages, f"pages of resolved effects are still open: {tally.open_pages}"
