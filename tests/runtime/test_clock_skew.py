"""A worker's clock against the database's (issue 33): the skew is measured, a figure above
the warning threshold is logged once and reported, and above a quarter of the lease the worker
reports not ready, on every backend."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC
from datetime import datetime
from datetime import timedelta

import pytest

from runtime.runs.skew import ClockSkew
from store import Store


def shifted(seconds: float) -> Callable[[], datetime]:
    """This host's clock, put `seconds` ahead (behind, if negative)."""
    return lambda: datetime.now(UTC) + timedelta(seconds=seconds)


@pytest.mark.parametrize("shift", [300.0, -300.0])
async def test_a_clock_minutes_off_is_measured_logged_reported_and_not_ready(
    store: Store, shift: float, caplog: pytest.LogCaptureFixture
) -> None:
    reported: list[float] = []
    skew = ClockSkew(store, shifted(shift), unready_at=30 / 4, report=reported.append)

    with caplog.at_level(logging.WARNING, logger="signoff.clock"):
        measured = await skew.measure()
        await skew.measure()  # still off: not said again

    assert abs(measured - shift) < 2
    assert len(reported) == 2
    assert abs(reported[0] - shift) < 2
    (warning,) = [r.getMessage() for r in caplog.records]
    assert f"{shift:+.0f}" in warning  # the figure, e.g. "+300.0 s off"
    assert ("ahead" if shift > 0 else "behind") in warning
    assert "not ready" in warning
    problem = skew.problem()
    assert problem is not None
    assert "off the database's" in problem


@pytest.mark.parametrize(
    ("shift", "level", "low", "high", "logged"),
    [
        pytest.param(4, logging.WARNING, 2, 6, 1, id="a little off warns"),
        pytest.param(0, logging.INFO, -1, 1, 0, id="in step says nothing"),
    ],
)
async def test_a_clock_near_the_databases_stays_ready(
    store: Store,
    caplog: pytest.LogCaptureFixture,
    shift: float,
    level: int,
    low: float,
    high: float,
    logged: int,
) -> None:
    """A clock a little off (4 s) warns once, at WARNING; one in step with the database
    says nothing, even at INFO; both stay ready."""
    skew = ClockSkew(store, shifted(shift), unready_at=30 / 4)

    with caplog.at_level(level, logger="signoff.clock"):
        await skew.measure()

    assert skew.skew is not None
    assert low < skew.skew < high
    assert len(caplog.records) == logged
    assert skew.problem() is None


async def test_a_clock_put_right_is_ready_again(store: Store) -> None:
    offset = [300.0]
    skew = ClockSkew(
        store, lambda: datetime.now(UTC) + timedelta(seconds=offset[0]), unready_at=7.5
    )
    await skew.measure()
    assert skew.problem() is not None

    offset[0] = 0.0
    await skew.measure()

    assert skew.problem() is None
