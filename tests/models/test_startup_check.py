"""A hosted model that could not make a single call is refused at start-up, in one line,
before any run is created: no API key in the environment, or its SDK not installed."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.helpers import clean_env
from support.helpers import run_text

from runtime.models import AnthropicModel
from runtime.models import OpenAIModel

from .test_restart import SIGNOFF

ROOT = Path(__file__).parent.parent.parent


@pytest.mark.parametrize(
    ("make", "variable"),
    [
        (OpenAIModel, "OPENAI_API_KEY"),
        (AnthropicModel, "ANTHROPIC_API_KEY"),
    ],
)
def test_a_model_without_a_key_names_the_variable(
    make: type, variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(variable, raising=False)
    with pytest.raises(ValueError, match=variable):
        make("some-model").check()
    make("some-model", api_key="k").check()  # given in code
    monkeypatch.setenv(variable, "k")
    make("some-model").check()  # or in the environment


def test_runs_start_refuses_a_hosted_agent_without_a_key_and_creates_nothing(
    tmp_path: Path,
) -> None:
    env = clean_env("SIGNOFF_", "OPENAI_")
    env |= {"SIGNOFF_AGENTS": "examples.hosted_refund_agent:agent", "PYTHONPATH": str(ROOT)}
    done = run_text(
        [SIGNOFF, "runs", "start", "refund-agent", "Refund order 2"], cwd=tmp_path, env=env
    )
    assert done.returncode == 2  # a configuration error
    assert done.stderr.strip().splitlines() == [
        "error: models: OpenAIModel('gpt-5.5') has no API key: set OPENAI_API_KEY"
    ]
    assert list(tmp_path.iterdir()) == []  # no database made
