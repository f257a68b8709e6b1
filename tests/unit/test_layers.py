"""Imports point down only: `store` knows nothing of agents or Slack, `runtime` nothing of
Slack or the process entry points, and the examples use only the public layers. Inside
`runtime`, no module reaches back to the `Runtime` facade, and no two modules import each
other, even through others or only for type hints.

Each check runs on the real tree, and on a small synthetic tree that breaks it: a check that
could not fail would prove nothing."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent.parent
LAYERS = {"store": 0, "runtime": 1, "bot": 2}
"""Each package may import its own layer and the ones below it."""
PACKAGES = ("store", "runtime", "bot", "examples")
FACADE = {"runtime", "runtime.engine"}
"""The `Runtime` facade: the package's public face and the module that defines it."""


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


def modules_of(package: str, root: Path = ROOT) -> list[Path]:
    return sorted((root / package).rglob("*.py"))


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, set[str]]:
    """Module -> the project modules it imports (TYPE_CHECKING blocks and function bodies
    included). `from pkg import name` points at `pkg.name` when that is a module, else at
    `pkg` itself (its __init__)."""
    paths = {
        module_name(path, root): path for package in packages for path in modules_of(package, root)
    }
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text("utf-8"), str(path))
        edges: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                edges.update(alias.name for alias in node.names if alias.name in paths)
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(node, name, is_package)
                for alias in node.names:
                    if f"{base}.{alias.name}" in paths:
                        edges.add(f"{base}.{alias.name}")
                    elif base in paths:
                        edges.add(base)
        edges.discard(name)
        graph[name] = edges
    return graph


def _absolute(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    parts = importer.split(".")
    if not is_package:
        parts = parts[:-1]
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join([*parts, *([node.module] if node.module else [])])


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected group of modules (Tarjan), each as a path."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def upward_imports(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """Imports from a lower layer to a higher one (store <- runtime <- bot)."""
    wrong: dict[str, list[str]] = {}
    for module, targets in graph.items():
        level = LAYERS.get(module.split(".")[0])
        if level is None:
            continue
        up = sorted(t for t in targets if LAYERS.get(t.split(".")[0], -1) > level)
        if up:
            wrong[module] = up
    return wrong


def facade_imports(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """Modules under runtime/ that import the facade (runtime.engine or the package)."""
    return {
        module: sorted(targets & FACADE)
        for module, targets in graph.items()
        if module.startswith("runtime.") and module != "runtime.engine" and targets & FACADE
    }


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(ROOT)


def test_no_module_imports_a_higher_layer(graph: dict[str, set[str]]) -> None:
    assert upward_imports(graph) == {}


def test_no_runtime_module_imports_the_facade(graph: dict[str, set[str]]) -> None:
    assert facade_imports(graph) == {}


def test_no_modules_import_each_other(graph: dict[str, set[str]]) -> None:
    assert cycles(graph) == []


def test_the_graph_sees_the_real_imports(graph: dict[str, set[str]]) -> None:
    assert "runtime.engine" in graph["runtime"]
    assert {"runtime.deps", "runtime.runs.driver"} <= graph["runtime.runs.driving"]
    assert "store" in graph["runtime.deps"]


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


# the checks fail on trees that break them


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import bot.x\n")

    assert "bot" in imported_packages(module)


def test_an_upward_import_under_type_checking_is_found(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "store/__init__.py": "",
            "store/core.py": "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from runtime.agent import Agent\n",
            "runtime/__init__.py": "",
            "runtime/agent.py": "from store import core\n",
        },
    )

    assert upward_imports(import_graph(root)) == {"store.core": ["runtime.agent"]}


def test_a_type_hint_import_of_the_facade_is_found(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "runtime/__init__.py": "from runtime.engine import Runtime\n",
            "runtime/engine.py": "from runtime import driver\n",
            "runtime/driver.py": "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from runtime.engine import Runtime\n",
            "runtime/ending.py": "from runtime import Runtime\n",
            "runtime/fine.py": "from runtime import driver\n",
        },
    )

    assert facade_imports(import_graph(root)) == {
        "runtime.driver": ["runtime.engine"],
        "runtime.ending": ["runtime"],
    }


def test_a_cycle_through_a_third_module_is_found(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "runtime/__init__.py": "",
            "runtime/a.py": "from runtime import b\n",
            "runtime/b.py": "from . import c\n",
            "runtime/c.py": "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    import runtime.a\n",
            "runtime/d.py": "from runtime import a\n",
        },
    )

    assert cycles(import_graph(root)) == [["runtime.a", "runtime.b", "runtime.c"]]
