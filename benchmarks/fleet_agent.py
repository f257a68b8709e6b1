"""The agent the fleet benchmark's `signoff serve` workers serve
(`SIGNOFF_AGENTS=fleet_agent:agent`): the runtime benchmark's read-step agent, with
`SIGNOFF_BENCH_STEPS` read steps (40 by default)."""

from __future__ import annotations

import os

from runtime_bench import agent_for
from runtime_bench import lookup

STEPS = int(os.environ.get("SIGNOFF_BENCH_STEPS", "40"))

agent = agent_for(STEPS, lookup)
