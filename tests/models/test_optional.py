"""The provider packages are optional extras: the core imports, starts and runs scripted agents
without them, and a model that needs a missing one says which extra to install."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from support.helpers import run_text

from runtime.models import AnthropicModel
from runtime.models import OpenAIModel
from runtime.models.config import ModelConfig
from runtime.models.config import configure

from . import agents

ROOT = Path(__file__).parent.parent.parent
WITHOUT_PROVIDERS = """
import sys
sys.modules["openai"] = None      # an import of either now fails, as if not installed
sys.modules["anthropic"] = None
import bot.cli, bot.server, bot.wiring, runtime, runtime.models
import examples.refund_agent, examples.hosted_refund_agent
print(sorted(m for m in sys.modules if m.split(".")[0] in ("openai", "anthropic")
             and sys.modules[m] is not None))
"""


def test_the_core_and_the_examples_import_without_the_provider_packages() -> None:
    done = run_text([sys.executable, "-c", WITHOUT_PROVIDERS], cwd=ROOT)

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("model_class", "package"), [(OpenAIModel, "openai"), (AnthropicModel, "anthropic")]
)
def test_a_model_whose_package_is_missing_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, model_class: type[OpenAIModel], package: str
) -> None:
    monkeypatch.setitem(sys.modules, package, None)
    config = ModelConfig(provider=package, model="m")  # type: ignore[arg-type]

    with pytest.raises(ImportError, match=rf"pip install 'signoff\[{package}\]'"):
        _ = model_class("m").sdk
    with pytest.raises(ImportError, match=rf"signoff\[{package}\]"):  # at start-up
        configure([agents.agent], {"shipper": config}, {})
