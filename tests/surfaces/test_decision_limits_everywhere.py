"""The same limits whatever surface a decision comes through: the same bad input, sent to the
HTTP API, the CLI and Slack (a modal's submission), is refused for the same reason (the
API's, `bot.requests.DecisionRequest`), and nothing is recorded."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.helpers import AUTH
from support.helpers import SIGNOFF
from support.helpers import clean_env
from support.helpers import run_text
from support.slack_inprocess import BOB
from support.slack_inprocess import slack_app
from support.slack_inprocess import submit

from runtime import Runtime
from runtime.approvals.policy import Policies
from runtime.approvals.policy import Policy
from store import Store

POLICIES = Policies(default=Policy(approvers=(BOB,), allow_edit=True))


def nested(levels: int) -> dict[str, Any]:
    value: Any = 1
    for _ in range(levels - 1):
        value = {"a": value}
    return {"amount_cents": value}


# what, the decision, the reason every surface must give
BAD: list[tuple[str, dict[str, Any], str]] = [
    (
        "a 3,001-character reason",
        {"decision": "declined", "reason": "x" * 3001},
        "String should have at most 3000 characters",
    ),
    (
        "a 10,000-character reason",
        {"decision": "declined", "reason": "y" * 10_000},
        "String should have at most 3000 characters",
    ),
    (
        "arguments 33 levels deep",
        {"decision": "approved", "args": nested(33)},
        "the arguments nest deeper than the limit of 32 levels",
    ),
    (
        "arguments over 64 KiB",
        {"decision": "approved", "args": {"note": "z" * 70_000}},
        "the arguments are over the limit of 65536 bytes as JSON",
    ),
]


def cli_decide(db: Path, approval_id: str, decision: dict[str, Any]) -> str:
    env = clean_env("SIGNOFF_", "SLACK_")
    env["SIGNOFF_DATABASE_URL"] = f"sqlite:///{db}"
    verb = "approve" if decision["decision"] == "approved" else "decline"
    argv = [SIGNOFF, "approvals", "decide", approval_id, verb, "--by", BOB]
    if "reason" in decision:
        argv += ["--reason", decision["reason"]]
    if "args" in decision:
        argv += ["--edit", json.dumps(decision["args"])]
    done = run_text(argv, env=env)
    assert done.returncode != 0, done.stdout
    return done.stderr


async def slack_decide(rt: Runtime, approval_id: str, decision: dict[str, Any]) -> str:
    if "args" in decision:
        payload = submit("edit_args", approval_id, {"args": json.dumps(decision["args"])})
    else:
        payload = submit("decline_reason", approval_id, {"reason": decision["reason"]})
    async with slack_app(rt) as slack:
        status, body, _ = await slack.send(payload)
    assert status == 200
    answer = json.loads(body)
    assert answer["response_action"] == "errors"
    return str(next(iter(answer["errors"].values())))


@pytest.mark.parametrize(("what", "decision", "reason"), BAD, ids=[b[0] for b in BAD])
async def test_the_same_bad_decision_is_refused_alike_by_api_cli_and_slack(
    make_api: Callable[..., Any],
    store: Store,
    db_path: Path,
    what: str,
    decision: dict[str, Any],
    reason: str,
) -> None:
    api = await make_api(policies=POLICIES)
    approval, _ = await api.rt.request_approval("issue_refund", {"amount_cents": 5})

    response = await api.client.post(
        f"/v1/approvals/{approval.id}/decision", json={**decision, "by": BOB}, headers=AUTH
    )
    refused_by_api = (response.status, (await response.json())["error"])
    refused_by_cli = cli_decide(db_path, approval.id, decision)
    refused_by_slack = await slack_decide(api.rt, approval.id, decision)

    assert refused_by_api[0] == 400
    for surface, said in (
        ("api", refused_by_api[1]),
        ("cli", refused_by_cli),
        ("slack", refused_by_slack),
    ):
        assert reason in said, (surface, said)
    assert (await api.rt.desk.get(approval.id)).state == "pending"
