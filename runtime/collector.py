"""The garbage collector's pace in a process that drives runs.

CPython runs a collection of its youngest generation each time 700 more container objects
were allocated than freed. A read step allocates a few thousand (records, their dicts, the
transcript's lists), so a worker driving many runs collected several times a step, and each
young collection walks every object still alive since the last one, a run's transcript
included: 13-15% of a read step's CPU with 100 runs at once, in both this code and the code
before approval binding (docs/benchmarks.md, "What binding and fencing cost"). At 10,000 the
young collections are a seventh as many and a step's collecting is about a fifth of what it
was; cycles are still found, a little later, and memory holds at most that many more young
objects. The older generations keep CPython's own ratios.

Only CPython's default thresholds are changed: a process (or an application embedding the
runtime) that chose its own keeps them.
"""

from __future__ import annotations

import gc

CPYTHON_DEFAULT = (700, 10, 10)
DRIVING = (10_000, 10, 10)


def pace_for_driving() -> bool:
    """Set `DRIVING` unless the thresholds were changed from CPython's; True if set."""
    if gc.get_threshold() != CPYTHON_DEFAULT:
        return False
    gc.set_threshold(*DRIVING)
    return True
