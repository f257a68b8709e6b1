"""What rules, limits and envelopes in shadow mode would have done to a new approval's
call: they decided nothing; their notes are on its match (and, written with it, in the audit
trail as `shadow_decision` events, a line in the run's history); here they are counted and
logged."""

from __future__ import annotations

import logging

from runtime.runs.telemetry import Telemetry
from store import Approval

log = logging.getLogger("signoff.shadow")


def observe(telemetry: Telemetry, approval: Approval) -> None:
    for note in approval.rule.shadow if approval.rule else ():
        telemetry.shadow_decision(note.kind, note.name, note.would)
        log.info(
            "%s (shadow) would have %s %s (run %s): %s",
            note.name,
            {"approve": "approved", "ask": "asked about", "deny": "declined"}[note.would],
            approval.tool,
            approval.run_id or "-",
            note.text,
        )
