"""The OpenAPI document of /v1: generated from the models, checked in, valid, served; and the
live API fuzzed from it with schemathesis (a fixed seed and a budget that fits CI): no 5xx,
every answer matches the document, and a refused request changes nothing."""

from __future__ import annotations

import copy
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck
from hypothesis import Phase
from hypothesis import given
from hypothesis import settings
from openapi_spec_validator import validate
from openapi_spec_validator.validation import OpenAPIV31SpecValidator
from schemathesis import checks
from schemathesis.core.failures import FailureGroup
from schemathesis.generation.stateful import run_state_machine_as_test
from support.helpers import AUTH
from support.helpers import Api
from support.live_api import LiveApi
from support.openapi_check import VIOLATIONS
from support.openapi_check import problems

from bot.openapi import document
from examples import world

CHECKED_IN = Path(__file__).parents[3] / "docs" / "openapi.json"
EXAMPLES_PER_OPERATION = 20
STATEFUL_SCENARIOS = 40
# A schema-valid request may still be refused for what only the server knows (an agent or a
# policy it does not have, an approval that is not there): a 400 with the reason is right.
BUSINESS_RULES = [checks.positive_data_acceptance]


def test_the_checked_in_document_is_the_generated_one() -> None:
    written = json.loads(CHECKED_IN.read_text("utf-8"))
    assert written == document(), "stale: run python -m bot.openapi > docs/openapi.json"


def test_the_document_is_valid_openapi_3_1() -> None:
    validate(document(), cls=OpenAPIV31SpecValidator)
    assert document()["openapi"] == "3.1.0"


async def test_the_api_serves_the_document_to_a_known_token(api: Api) -> None:
    response = await api.client.get("/v1/openapi.json", headers=AUTH)
    assert response.status == 200
    assert await response.json() == document()
    assert (await api.client.get("/v1/openapi.json")).status == 401


def test_the_answer_check_notices_what_does_not_match() -> None:
    assert problems("GET", "/v1/approvals", 200, {"approvals": [], "next_cursor": None}) == []
    wrong = problems("GET", "/v1/approvals", 200, {"approvals": [{"id": 1}]})
    assert "'next_cursor' is a required property" in " ".join(wrong)
    # (202 is documented since a cancel with a tool in flight answers it: 201 is not.)
    assert problems("POST", "/v1/runs/{run_id}/cancel", 201, {}) == [
        "POST /v1/runs/{run_id}/cancel -> 201: status not documented"
    ]
    assert problems("GET", None, 404, {"oops": 1}) == [
        "GET (no route) -> 404: 'error' is a required property"
    ]


# What the fuzzing found, kept as tests: each was a 500 or an accepted invalid request.


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("since=", "since: '' is not an ISO 8601 date and time"),  # was taken as no since
        ("limit=%C2%B2", "is not a number from 1 to 10000"),  # "²".isdigit(): was a 500
        ("limit=" + "9" * 5000, "is not a number from 1 to 10000"),  # int() refused: a 500
    ],
)
async def test_fuzzing_findings_are_400s_now(api: Api, query: str, reason: str) -> None:
    response = await api.client.get(f"/v1/audit?{query}", headers=AUTH)
    assert response.status == 400
    assert reason in (await response.json())["error"]


# fuzzing the live API


@pytest.fixture
def live(db_url: str, world: Path) -> Iterator[LiveApi]:
    server = LiveApi(db_url).start()
    yield server
    server.stop()


def _snapshot(live: LiveApi) -> tuple[Any, ...]:
    async def read() -> tuple[Any, ...]:
        runs = await live.store.list_runs(None, limit=10_000)
        approvals = await live.store.list_approvals(limit=10_000)
        events = await live.store.list_audit(limit=100_000)
        return (runs, approvals, len(events))

    return live.run(read)


@pytest.mark.parametrize("mode", list(schemathesis.GenerationMode), ids=str)
def test_fuzzing_the_live_api_finds_no_5xx_and_no_answer_off_the_document(
    live: LiveApi, mode: schemathesis.GenerationMode
) -> None:
    schema = schemathesis.openapi.from_dict(copy.deepcopy(document()))  # it adds to links
    failures: list[str] = []
    statuses: Counter[int] = Counter()
    for result in schema.get_all_operations():
        operation = result.ok()
        takes = [operation.path_parameters, operation.query, operation.headers, operation.body]
        if mode == schemathesis.GenerationMode.NEGATIVE and not any(takes):
            continue  # nothing it takes can be malformed (GET /v1/keys)

        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            derandomize=True,
            phases=[Phase.explicit, Phase.generate],  # findings are reported, not shrunk
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=operation.as_strategy(generation_mode=mode))
        def fuzz(case: schemathesis.Case) -> None:
            if case.operation.label == "GET /v1/approvals/{approval_id}/wait":
                case.query = {**(case.query or {}), "timeout": 0.2}  # waiting: tested apart
            before = _snapshot(live)
            response = case.call(base_url=live.url, headers=AUTH, timeout=10)
            statuses[response.status_code] += 1
            where = f"{case.method} {case.formatted_path} {case.query or ''}"
            if response.status_code >= 500:
                failures.append(f"{where}: {response.status_code} {response.text[:200]}")
            if response.status_code >= 400 and _snapshot(live) != before:
                failures.append(f"{where}: refused ({response.status_code}) yet changed")
            try:
                case.validate_response(response, headers=AUTH, excluded_checks=BUSINESS_RULES)
            except FailureGroup as group:
                failures.extend(f"{where}: {failure}" for failure in group.exceptions)

        fuzz()
    found, VIOLATIONS[:] = list(VIOLATIONS), []
    assert not failures, "\n".join(dict.fromkeys(failures))
    assert not found, "\n".join(found)
    assert sum(statuses.values()) > 200, statuses
    assert statuses[400] > 0, statuses  # it did send what is refused
    if mode == schemathesis.GenerationMode.POSITIVE:
        assert statuses[201] > 0, statuses  # and what is made
    assert world.payments() == []


def test_stateful_fuzzing_follows_the_links_and_finds_nothing(live: LiveApi) -> None:
    """Sequences along the document's links (ask, then get / wait / decide that approval;
    start a run, then read / cancel it): no 5xx, and every answer matches the document."""
    schema = schemathesis.openapi.from_dict(copy.deepcopy(document()))  # it adds to links
    statuses: Counter[str] = Counter()

    class Walk(schema.as_state_machine()):  # type: ignore[misc]
        def get_call_kwargs(self, case: schemathesis.Case) -> dict[str, Any]:
            if case.operation.label == "GET /v1/approvals/{approval_id}/wait":
                case.query = {**(case.query or {}), "timeout": 0.2}
            return {"base_url": live.url, "headers": AUTH, "timeout": 10}

        def validate_response(self, response: Any, case: schemathesis.Case, **kw: Any) -> None:
            statuses[f"{case.operation.label} {response.status_code}"] += 1
            assert response.status_code < 500, response.text[:300]
            case.validate_response(response, headers=AUTH, excluded_checks=BUSINESS_RULES)

    run_state_machine_as_test(
        Walk,
        settings=settings(
            max_examples=STATEFUL_SCENARIOS,
            stateful_step_count=6,
            derandomize=True,
            phases=[Phase.explicit, Phase.generate],
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        ),
    )
    found, VIOLATIONS[:] = list(VIOLATIONS), []
    assert not found, "\n".join(found)
    assert sum(statuses.values()) > 100, statuses
    assert world.payments() == []


def test_every_link_of_an_ask_leads_to_its_approval(live: LiveApi) -> None:
    """The walk above picks links by chance; here each link the document gives an ask's 201 is
    followed by hand, with the id its runtime expression names: every one finds the approval."""
    doc = document()
    links = doc["paths"]["/v1/approvals"]["post"]["responses"]["201"]["links"]
    operations = {
        op["operationId"]: (method.upper(), path)
        for path, item in doc["paths"].items()
        for method, op in item.items()
    }
    body = {"tool": "wire_money", "args": {"to": "ACME", "cents": 100}, "requested_by": "U0BOT"}
    with httpx.Client(base_url=live.url, headers=AUTH, timeout=10) as client:
        for name, link in sorted(links.items(), key=lambda kv: kv[0] == "Decide"):
            asked = client.post("/v1/approvals", json=body | {"approval_id": f"ap_{name}"})
            assert asked.status_code == 201, asked.text
            assert link["parameters"] == {"approval_id": "$response.body#/id"}, name
            method, path = operations[link["operationId"]]
            url = path.replace("{approval_id}", asked.json()["id"])
            answer = _follow(client, method, url)
            assert answer.status_code == 200, (name, answer.status_code, answer.text[:300])
    assert world.payments() == []


def _follow(client: httpx.Client, method: str, url: str) -> httpx.Response:
    if url.endswith("/wait"):
        return client.get(url, params={"timeout": 0.2})
    if url.endswith("/decision"):
        return client.post(url, json={"decision": "declined", "by": "U0ANN"})
    return client.request(method, url, json={} if method == "POST" else None)
