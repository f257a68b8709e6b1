"""One set of limits (`store.limits`) for the HTTP API and the CLI: nesting, task length, id
lengths; at the limit accepted, one past it refused before anything is stored, with a reason
(JSON over HTTP, one line in the console), never a Python internal."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.helpers import AUTH
from support.helpers import Api

from store.limits import MAX_DEPTH
from store.limits import MAX_ID
from store.limits import MAX_TASK
from store.limits import nesting_depth
from surfaces.api.test_api import post
from surfaces.cli.test_cli import Cli
from surfaces.cli.test_cli_decide import BOSS
from surfaces.cli.test_cli_decide import fresh_cli
from surfaces.cli.test_cli_decide import parked


def nested(levels: int) -> dict[str, Any]:
    """An arguments object `levels` objects deep (the object itself is level 1)."""
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


def test_nesting_is_counted_from_the_arguments_object() -> None:
    assert nesting_depth(1) == 0
    assert nesting_depth({}) == 1
    assert nesting_depth({"a": [1, {"b": []}]}) == 4
    assert nesting_depth(nested(MAX_DEPTH)) == MAX_DEPTH
    assert nesting_depth(nested(100_000)) == MAX_DEPTH + 1  # stops counting, no recursion


# over real HTTP


async def test_arguments_at_the_depth_limit_are_stored(api: Api) -> None:
    status, answer = await post(api, "/v1/approvals", {"tool": "x", "args": nested(MAX_DEPTH)})

    assert status == 201, answer
    assert nesting_depth(answer["args"]) == MAX_DEPTH
    assert (await api.store.get_approval(answer["id"])).args == nested(MAX_DEPTH)
    assert await api.counts() == (0, 1)


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 254, 300, 989])
async def test_arguments_past_the_depth_limit_get_400_and_store_nothing(
    api: Api, levels: int
) -> None:
    args = '{"a": ' * (levels - 1) + '{"leaf": 1}' + "}" * (levels - 1)  # past json.dumps
    response = await api.client.post(
        "/v1/approvals",
        data=f'{{"tool": "x", "args": {args}}}',
        headers=AUTH | {"Content-Type": "application/json"},
    )

    assert response.status == 400, await response.text()
    answer = await response.json()
    assert f"deeper than the limit of {MAX_DEPTH} levels" in answer["error"]
    assert await api.counts() == (0, 0)


async def test_edited_arguments_past_the_depth_limit_get_400(api: Api) -> None:
    status, asked = await post(api, "/v1/approvals", {"tool": "x", "args": {}})
    assert status == 201
    body = {"decision": "approved", "by": "U0BOSS", "args": nested(MAX_DEPTH + 1)}

    status, answer = await post(api, f"/v1/approvals/{asked['id']}/decision", body)

    assert status == 400
    assert f"limit of {MAX_DEPTH} levels" in answer["error"]
    still = await api.client.get(f"/v1/approvals/{asked['id']}", headers=AUTH)
    assert (await still.json())["state"] == "pending"


async def test_a_number_too_long_for_python_is_refused_without_python_advice(api: Api) -> None:
    raw = b'{"tool": "x", "args": {"n": ' + b"9" * 5_000 + b"}}"

    response = await api.client.post(
        "/v1/approvals", data=raw, headers=AUTH | {"Content-Type": "application/json"}
    )

    assert response.status == 400
    assert response.content_type == "application/json"
    reason = (await response.json())["error"]
    assert "too many digits" in reason
    assert "sys." not in reason
    assert "int_max_str_digits" not in reason
    assert await api.counts() == (0, 0)


@pytest.mark.parametrize(
    ("field", "at_limit", "past_it"),
    [
        ("task", "t" * MAX_TASK, "t" * (MAX_TASK + 1)),
        ("run_id", "r" * MAX_ID, "r" * (MAX_ID + 1)),
    ],
)
async def test_run_text_at_the_limit_is_taken_and_past_it_refused(
    api: Api, field: str, at_limit: str, past_it: str
) -> None:
    base = {"agent": "refund-agent", "task": "Refund order 7"}

    status, answer = await post(api, "/v1/runs", base | {field: past_it})
    assert status == 400
    assert field in answer["error"]
    assert await api.counts() == (0, 0)

    status, answer = await post(api, "/v1/runs", base | {field: at_limit})
    assert status == 201, answer
    await api.background.drain()


# through the real console script


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Cli:
    return fresh_cli(tmp_path, monkeypatch)


def test_the_cli_refuses_a_task_and_a_run_id_one_past_the_limit_and_takes_them_at_it(
    cli: Cli,
) -> None:
    start = ("runs", "start", "refund-agent")
    assert "TASK" in cli(*start, "t" * (MAX_TASK + 1)).refused()
    assert "is not 1-128 letters" in cli(*start, "x", "--run-id", "r" * (MAX_ID + 1)).refused()
    assert not cli.db.exists()

    started = cli(*start, "Refund order 7 " + "t" * (MAX_TASK - 15), "--run-id", "r" * MAX_ID)
    assert started.code == 0, started.err


def test_the_cli_refuses_an_edit_one_past_the_depth_limit_and_takes_one_at_it(cli: Cli) -> None:
    (cli.cwd / "signoff.toml").write_text("[policies.tools.issue_refund]\nallow_edit = true\n")
    approval = parked(cli)
    before = cli.fingerprint()
    decide = ("approvals", "decide", approval, "approve", *BOSS, "--edit")

    deep = cli(*decide, json.dumps(nested(MAX_DEPTH + 1)))
    assert f"--edit: Value error, the arguments nest deeper than the limit of {MAX_DEPTH}" in (
        deep.refused()
    )
    digits = cli(*decide, '{"amount_cents": ' + "9" * 5_000 + "}").refused()
    assert "too many digits" in digits
    assert "sys." not in digits
    assert cli.fingerprint() == before

    # At the limit the depth passes; the tool's own argument check has the last word.
    at_limit = cli(*decide, json.dumps({"order_id": "7", "amount_cents": 1} | nested(MAX_DEPTH)))
    assert "levels" not in at_limit.refused()


def test_the_limits_and_request_models_load_without_aiohttp() -> None:
    code = "import sys, bot.requests, store.limits; print('aiohttp' in sys.modules)"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)

    assert loaded.stdout.strip() == "False", loaded.stderr
