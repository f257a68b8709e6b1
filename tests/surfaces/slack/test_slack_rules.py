"""The approval card says which rule it was made under, from a real server and a local fake
Slack: "rule 1: an intern asks → 1 approval from U…"."""

from __future__ import annotations

import json
from pathlib import Path

from support.slack_harness import BOB
from support.slack_harness import EVE
from support.slack_harness import FakeSlackProcess
from support.slack_harness import start_server

RULE = f"""
[policies.tools.issue_refund]
approvers = ["{EVE}"]

[[policies.tools.issue_refund.rules]]
label = "an intern asks"
when = "run.requested_by in ['U0INTERN']"
approvers = ["{BOB}"]
"""


def test_the_card_names_the_rule_it_was_made_under(
    tmp_path: Path, world: Path, fake: FakeSlackProcess
) -> None:
    with start_server(tmp_path, world, fake.base_url, policy=RULE) as server:
        server.start_run("intern", requested_by="U0INTERN")
        [card] = server.wait_until(lambda: fake.cards())
        blocks = json.dumps(card["blocks"], ensure_ascii=False)
        assert f"rule 1: an intern asks → 1 approval from {BOB}" in blocks
