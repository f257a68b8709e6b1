"""The public names docs/agents.md lists are exactly each package's `__all__`, and importable;
the names the design promises are among them."""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

import pytest

import runtime
import store

DESIGN_RUNTIME = {"Agent", "Budget", "Runtime", "ScriptedModel", "ToolContext", "tool", "tool_call"}
DESIGN_STORE = {"open_store"}


AGENTS_PAGE = Path(__file__).parents[2] / "docs" / "agents.md"


def names_on_the_page(package: str) -> set[str]:
    """The names docs/agents.md lists, in backticks, after "`package` exports exactly these
    names:" and up to the next blank line."""
    text = AGENTS_PAGE.read_text("utf-8")
    found = re.search(rf"^`{package}` exports exactly these names:\n(.*?)\n\n", text, re.M | re.S)
    assert found is not None, f"docs/agents.md lists no public names of {package}"
    return set(re.findall(r"`(\w+)`", found[1]))


@pytest.mark.parametrize(
    ("package", "design"),
    [(runtime, DESIGN_RUNTIME), (store, DESIGN_STORE)],
    ids=["runtime", "store"],
)
def test_a_package_exports_exactly_the_names_its_page_lists(
    package: ModuleType, design: set[str]
) -> None:
    names = names_on_the_page(package.__name__)
    assert set(package.__all__) == names
    assert names >= design
    assert all(hasattr(package, name) for name in package.__all__)


def test_the_runtime_methods_design_names_exist() -> None:
    for method in (
        "start",
        "get",
        "list",
        "approvals",
        "decide",
        "recover",
        "cancel",
        "history",
        "state_at",
        "fork",
        "rollback",
    ):
        assert callable(getattr(runtime.Runtime, method)), method
