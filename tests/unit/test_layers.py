"""Imports point down only: `store` knows nothing of agents or Slack, `runtime` nothing of
Slack or the process entry points, and the examples use only the public layers."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent.parent
LAYERS = {"store": 0, "runtime": 1, "bot": 2}
"""Each package may import its own layer and the ones below it."""


def imported_packages(path: Path) -> set[str]:
    """The top-level packages a module imports, TYPE_CHECKING blocks included."""
    tree = ast.parse(path.read_text("utf-8"), str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def modules_of(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("package", ["store", "runtime"])
def test_a_layer_never_imports_one_above_it(package: str) -> None:
    above = {name for name, level in LAYERS.items() if level > LAYERS[package]}
    wrong = {
        str(path.relative_to(ROOT)): sorted(imported_packages(path) & above)
        for path in modules_of(package)
        if imported_packages(path) & above
    }

    assert wrong == {}, f"{package} imports a higher layer: {wrong}"


def test_runtime_never_imports_slack() -> None:
    slack = {"slack_bolt", "slack_sdk", "aiohttp"}
    wrong = {
        str(path.relative_to(ROOT)): sorted(imported_packages(path) & slack)
        for path in modules_of("runtime")
        if imported_packages(path) & slack
    }

    assert wrong == {}, f"runtime talks to Slack or HTTP directly: {wrong}"


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import bot.x\n")

    assert "bot" in imported_packages(module)
