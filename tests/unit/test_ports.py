"""Below the facade, modules depend on narrow ports, not on the classes behind them: the run
loop (`runtime/runs/`) and history (`runtime/history/`) never reach `runtime.approvals.desk`,
not even through another module, and no module under `runtime/` outside `runtime/approvals/`
(and the facade that builds the desk) names `ApprovalDesk`: they take
`runtime.ports.Approvals` or `Withdrawals`.

Every sub-package of `runtime` (approvals, runs, history, spend, models, queries) is reached
by the others only through its public names, the ones its `__init__` lists in `__all__`, or
through `runtime.ports`: no module outside a sub-package imports one of its module paths or a
name it does not list. Only the wiring (the package's `__init__`, the engine and `deps`, which
build the parts) is exempt.

Each check runs on the real tree, and on a small synthetic tree that breaks it."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import runtime

from .test_layers import ROOT
from .test_layers import _tree
from .test_layers import import_graph
from .test_layers import module_name
from .test_layers import past_public_names
from .test_layers import sub_packages

DESK = "runtime.approvals.desk"
DESK_CLASS = "ApprovalDesk"
LOOP = ("runtime.runs", "runtime.history")
"""The packages that reach approvals only through the ports."""
MAY_NAME_THE_DESK = ("runtime.approvals", "runtime.engine")
"""The approvals package and the facade, which builds the desk (the package re-exports it)."""
WIRING = {"runtime", "runtime.engine", "runtime.deps"}
"""The modules that build the parts, and may import any module of a sub-package."""


def reaching_past_public_names(root: Path) -> dict[str, list[str]]:
    """Modules under `runtime/` (besides the wiring) that import another sub-package other than
    by its public names."""
    importers = [
        *sub_packages(root),
        *(module_name(p, root) for p in sorted((root / "runtime").glob("*.py"))),
    ]
    return past_public_names(root, [i for i in importers if i not in WIRING], sub_packages(root))


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


def test_every_sub_package_is_reached_only_by_its_public_names() -> None:
    assert reaching_past_public_names(ROOT) == {}


@pytest.mark.parametrize("package", ["approvals", "runs", "history", "spend", "models"])
def test_the_public_names_are_what_they_say(package: str) -> None:
    """Each listed name loads, and is the object its `TYPE_CHECKING` import (what the type
    checker and the import graph read) says it is."""
    module = importlib.import_module(f"runtime.{package}")
    init = ROOT / "runtime" / package / "__init__.py"
    said = {
        alias.asname or alias.name: (node.module, alias.name)
        for block in ast.parse(init.read_text("utf-8")).body
        if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"
        for node in block.body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }

    assert sorted(module.__all__) == sorted(said)
    for name, (home, attribute) in said.items():
        assert getattr(module, name) is getattr(importlib.import_module(home), attribute), name


def test_importing_a_public_name_loads_its_module_only(graph: dict[str, set[str]]) -> None:
    """`from runtime.approvals import bind` is an edge to `runtime.approvals.binding`, not to
    the package (whose `__init__` names the desk too) and so not to the desk."""
    assert "runtime.approvals.binding" in graph["runtime.runs.execution"]
    assert "runtime.approvals" not in graph["runtime.runs.execution"]
    assert DESK in graph["runtime.approvals"]
    assert runtime.approvals.__name__ == "runtime.approvals"


# the checks fail on trees that break them


# (the check on the tree, the tree's files, what the check finds in it), for
# test_broken_trees
BROKEN = [
    pytest.param(
        lambda root: loop_reaching_the_desk(import_graph(root, ("runtime",))),
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
        {
            "runtime.history.rollback": ["runtime.history.rollback", DESK],
            "runtime.runs.asks": ["runtime.runs.asks", "runtime.approvals.remote", DESK],
            "runtime.runs.driver": ["runtime.runs.driver", DESK],
        },
        id="a loop module reaching the desk is found",
    ),
    pytest.param(
        lambda root: desk_namers(root),
        {
            "runtime/__init__.py": "from runtime.approvals.desk import ApprovalDesk\n",
            "runtime/engine.py": "desk = ApprovalDesk()\n",
            "runtime/approvals/desk.py": "class ApprovalDesk: ...\n",
            "runtime/runs/ending.py": "async def cancel(desk: 'ApprovalDesk') -> None: ...\n",
            "runtime/runs/driving.py": "import runtime.approvals.desk as d\nx = d.ApprovalDesk\n",
            "runtime/scheduler.py": '"""Ticks through `ApprovalDesk.tick`."""\n',
            "runtime/deps.py": "from runtime.approvals.desk import ApprovalDesk as Desk\n",
        },
        ["runtime.deps", "runtime.runs.driving", "runtime.runs.ending"],
        id="a module naming the desk is found",
    ),
    pytest.param(
        lambda root: reaching_past_public_names(root),
        {
            "runtime/__init__.py": "from runtime.runs.keys import key\n",
            "runtime/engine.py": "from runtime.approvals.desk import ApprovalDesk\n",
            "runtime/deps.py": "from runtime.runs.lease import Lease\n",
            "runtime/ports.py": "from runtime.approvals.policy import Policy\n",
            "runtime/fine.py": "from runtime.approvals import Policy\nfrom runtime import ports\n",
            "runtime/approvals/__init__.py": "__all__ = ['Policy', 'bind']\n",
            "runtime/approvals/policy.py": "from runtime.approvals.binding import bind\n",
            "runtime/approvals/binding.py": "from runtime.runs import key\n",
            "runtime/runs/__init__.py": "__all__ = ['key']\n",
            "runtime/runs/keys.py": "",
            "runtime/runs/gate.py": "from runtime.approvals.binding import bind\n",
            "runtime/runs/asks.py": "from runtime.approvals import bind, hidden\n",
            "runtime/runs/late.py": "def f():\n    import runtime.approvals.paging\n",
            "runtime/history/rollback.py": "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from ..runs.keys import key\n",
            "runtime/spend/desk.py": "from runtime.approvals import Policy, bind\n",
            "runtime/spend/rules.py": "from runtime.approvals import rules\n",
        },
        {
            "runtime.history.rollback": ["runtime.runs.keys.key"],
            "runtime.ports": ["runtime.approvals.policy.Policy"],
            "runtime.runs.asks": ["runtime.approvals.hidden"],
            "runtime.runs.gate": ["runtime.approvals.binding.bind"],
            "runtime.runs.late": ["runtime.approvals.paging"],
            "runtime.spend.rules": ["runtime.approvals.rules"],
        },
        id="a module reaching past a sub package s public names is found",
    ),
]


def test_a_public_name_is_an_edge_to_its_module(tmp_path: Path) -> None:
    """A name the package loads lazily leads to its module; one it defines, or imports at
    once, leads to the package (whose imports then count)."""
    root = _tree(
        tmp_path,
        {
            "runtime/__init__.py": "",
            "runtime/approvals/__init__.py": "from typing import TYPE_CHECKING\n"
            "from runtime.approvals.policy import Policy\n"
            "if TYPE_CHECKING:\n"
            "    from runtime.approvals.binding import bind\n"
            "    from runtime.approvals.desk import ApprovalDesk as Desk\n",
            "runtime/approvals/binding.py": "",
            "runtime/approvals/desk.py": "",
            "runtime/approvals/policy.py": "",
            "runtime/runs/__init__.py": "",
            "runtime/runs/gate.py": "from runtime.approvals import bind\n",
            "runtime/runs/asks.py": "from runtime.approvals import Desk\n",
            "runtime/runs/policy.py": "from runtime.approvals import Policy\n",
        },
    )
    graph = import_graph(root, ("runtime",))

    assert graph["runtime.runs.gate"] == {"runtime.approvals.binding"}
    assert graph["runtime.runs.policy"] == {"runtime.approvals"}
    assert loop_reaching_the_desk(graph) == {
        "runtime.runs.asks": ["runtime.runs.asks", DESK],
        "runtime.runs.policy": ["runtime.runs.policy", "runtime.approvals", DESK],
    }
