"""Below the facade, modules depend on narrow ports, not on the classes behind them: the run
loop (`runtime/runs/`) and history (`runtime/history/`) never reach `runtime.approvals.desk`,
not even through another module, and no module under `runtime/` outside `runtime/approvals/`
(and the facade that builds the desk) names `ApprovalDesk`: they take
`runtime.ports.Approvals` or `Withdrawals`.

Each check runs on the real tree, and on a small synthetic tree that breaks it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from .test_layers import ROOT, _tree, import_graph, module_name

DESK = "runtime.approvals.desk"
DESK_CLASS = "ApprovalDesk"
LOOP = ("runtime.runs", "runtime.history")
"""The packages that reach approvals only through the ports."""
MAY_NAME_THE_DESK = ("runtime.approvals", "runtime.engine")
"""The approvals package and the facade, which builds the desk (the package re-exports it)."""


def reaches(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every module `start` imports, directly or through others."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for target in graph.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def loop_reaching_the_desk(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """Modules of the loop and history that import the desk, with the path they reach it by."""
    found: dict[str, list[str]] = {}
    for module in sorted(graph):
        if module.startswith(LOOP) and DESK in reaches(graph, module):
            found[module] = _path(graph, module, DESK)
    return found


def _path(graph: dict[str, set[str]], start: str, goal: str) -> list[str]:
    """The shortest import path from `start` to `goal` (breadth first)."""
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target in sorted(graph.get(node, ())):
                if target in came_from or target == start:
                    continue
                came_from[target] = node
                if target == goal:
                    path = [goal]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return path[::-1]
                following.append(target)
        frontier = following
    return []


def names_the_desk(path: Path) -> bool:
    """Whether a module names `ApprovalDesk`: imports it, uses it, or writes it as a quoted
    annotation (docstrings and comments that mention it do not count)."""
    tree = ast.parse(path.read_text("utf-8"), str(path))
    return any(DESK_CLASS in _names(node) for node in ast.walk(tree))


def _names(node: ast.AST) -> tuple[str | None, ...]:
    if isinstance(node, ast.Name):
        return (node.id,)
    if isinstance(node, ast.Attribute):
        return (node.attr,)
    if isinstance(node, ast.alias):
        return (node.name, node.asname)
    if isinstance(node, ast.arg) and isinstance(node.annotation, ast.Constant):
        return tuple(str(node.annotation.value).replace("[", " ").replace("]", " ").split())
    return ()


def desk_namers(root: Path) -> list[str]:
    """Modules under runtime/ outside the approvals package and the facade naming the desk."""
    found = []
    for path in sorted((root / "runtime").rglob("*.py")):
        name = module_name(path, root)
        if name == "runtime" or name.startswith(MAY_NAME_THE_DESK):
            continue
        if names_the_desk(path):
            found.append(name)
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(ROOT)


def test_the_loop_and_history_never_reach_the_desk(graph: dict[str, set[str]]) -> None:
    assert loop_reaching_the_desk(graph) == {}


def test_below_the_facade_only_approvals_name_the_desk() -> None:
    assert desk_namers(ROOT) == []


def test_the_loop_takes_the_ports(graph: dict[str, set[str]]) -> None:
    """The checks look at the modules they are about: the loop does reach approvals, by the
    ports, and the facade does reach the desk."""
    for module in ("runtime.runs.driver", "runtime.runs.ending", "runtime.history.rollback"):
        assert "runtime.ports" in graph[module]
    assert DESK in graph["runtime.engine"]
    assert names_the_desk(ROOT / "runtime" / "engine.py")


# the checks fail on trees that break them


def test_a_loop_module_reaching_the_desk_is_found(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "runtime/__init__.py": "",
            "runtime/engine.py": "from runtime.approvals.desk import ApprovalDesk\n",
            "runtime/ports.py": "",
            "runtime/approvals/__init__.py": "",
            "runtime/approvals/desk.py": "",
            "runtime/approvals/remote.py": "from runtime.approvals import desk\n",
            "runtime/runs/__init__.py": "",
            "runtime/runs/driver.py": "from runtime.approvals.desk import ApprovalDesk\n",
            "runtime/runs/fine.py": "from runtime import ports\n",
            "runtime/runs/asks.py": "from runtime.approvals import remote\n",
            "runtime/history/__init__.py": "",
            "runtime/history/rollback.py": "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    import runtime.approvals.desk\n",
        },
    )

    assert loop_reaching_the_desk(import_graph(root, ("runtime",))) == {
        "runtime.history.rollback": ["runtime.history.rollback", DESK],
        "runtime.runs.asks": ["runtime.runs.asks", "runtime.approvals.remote", DESK],
        "runtime.runs.driver": ["runtime.runs.driver", DESK],
    }


def test_a_module_naming_the_desk_is_found(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "runtime/__init__.py": "from runtime.approvals.desk import ApprovalDesk\n",
            "runtime/engine.py": "desk = ApprovalDesk()\n",
            "runtime/approvals/desk.py": "class ApprovalDesk: ...\n",
            "runtime/runs/ending.py": "async def cancel(desk: 'ApprovalDesk') -> None: ...\n",
            "runtime/runs/driving.py": "import runtime.approvals.desk as d\nx = d.ApprovalDesk\n",
            "runtime/scheduler.py": '"""Ticks through `ApprovalDesk.tick`."""\n',
            "runtime/deps.py": "from runtime.approvals.desk import ApprovalDesk as Desk\n",
        },
    )

    assert desk_namers(root) == ["runtime.deps", "runtime.runs.driving", "runtime.runs.ending"]
