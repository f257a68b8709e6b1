"""One job, long because each door has a check and a synthetic breach: layers.

Imports point down only: `store` knows nothing of agents or Slack, `runtime` nothing of
Slack or the process entry points, and the examples use only the public layers. Inside
`runtime`, no module reaches back to the `Runtime` facade, and no two modules import each
other, even through others or only for type hints.

One door per layer: no surface (`bot`) imports `store` or names a `Store`, reaches for a
runtime's `store`, `deps` or `desk`, or imports another module's private (`_`) names; and
the runtime modules the surfaces import, besides the facade and the queries, hand out no
`Store` (no public function returns one, no public attribute holds one). Of a sub-package of
`runtime` (approvals, runs, history, ...) the surfaces, the client and the examples import
only the public names its `__init__` lists in `__all__`, never a module path below it.

No surface imports another's modules: Slack (`bot/slack/`), the CLI (`bot/cli/`), the console
(`bot/console/`), the approvers' page (`bot/approvers/`), the e-mail channel (`bot/email/`)
and the HTTP API (`bot/api.py`, `bot/api_*.py`, `bot/openapi.py`) share what they must
through modules that belong to none (the request models and their validation,
`bot/requests.py`; the JSON views, `bot/json_views.py`; the HTTP app's auth, keys and errors,
`bot/http_*.py`; the outbox sender, `bot/outbox.py`; the inert text, `bot/inert.py`), and no
module of `bot` outside a surface imports one. Only the process entry points (`bot/server.py`,
`bot/dev/`) put the surfaces together.

Each check runs on the real tree, and on a small synthetic tree that breaks it: a check that
could not fail would prove nothing."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent.parent
LAYERS = {"store": 0, "runtime": 1, "bot": 2}
"""Each package may import its own layer and the ones below it."""
PACKAGES = ("store", "runtime", "bot", "examples")
FACADE = {"runtime", "runtime.engine", "runtime.database"}
"""The `Runtime` facade: the package's public face, the module that defines it, and the
`Database` a process opens it by."""
QUERIES = "runtime.queries"
"""The read views surfaces render (a package)."""
SURFACES = "bot"
STORE_NAMES = {"Store", "OpenStore", "open_store"}
"""Names that are the store itself (importing one is opening a door past the runtime)."""
REACHES = {"store", "_store", "deps", "desk"}
"""Attributes through which a surface would reach past the runtime's commands and queries."""


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
    trees = {name: ast.parse(path.read_text("utf-8"), str(path)) for name, path in paths.items()}
    lazy = {
        name: lazy_names(tree, name, set(paths))
        for name, tree in trees.items()
        if paths[name].name == "__init__.py"
    }
    graph: dict[str, set[str]] = {}
    for name, tree in trees.items():
        is_package = paths[name].name == "__init__.py"
        edges: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                edges.update(alias.name for alias in node.names if alias.name in paths)
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(node, name, is_package)
                for alias in node.names:
                    if f"{base}.{alias.name}" in paths:
                        edges.add(f"{base}.{alias.name}")
                    elif alias.name in lazy.get(base, {}):
                        edges.add(lazy[base][alias.name])
                    elif base in paths:
                        edges.add(base)
        edges.discard(name)
        graph[name] = edges
    return graph


def lazy_names(tree: ast.Module, package: str, modules: set[str]) -> dict[str, str]:
    """A package's names loaded on first use (`runtime.exports.lazy`): each name its
    `__init__` imports under `if TYPE_CHECKING:`, and the module it comes from. Importing
    such a name runs that module, not the rest the `__init__` names."""
    found: dict[str, str] = {}
    for block in tree.body:
        if not (isinstance(block, ast.If) and ast.unparse(block.test).endswith("TYPE_CHECKING")):
            continue
        for node in block.body:
            if isinstance(node, ast.ImportFrom):
                base = _absolute(node, package, True)
                for alias in node.names:
                    home = f"{base}.{alias.name}"
                    found[alias.asname or alias.name] = home if home in modules else base
    return found


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
    """Modules under runtime/ outside the facade that import it (the package, the engine or
    the database)."""
    return {
        module: sorted(targets & FACADE)
        for module, targets in graph.items()
        if module.startswith("runtime.") and module not in FACADE and targets & FACADE
    }


def in_package(module: str, package: str) -> bool:
    return module == package or module.startswith(f"{package}.")


def _trees(root: Path, package: str) -> dict[str, tuple[ast.Module, bool]]:
    """Module name -> (its syntax tree, whether it is a package's __init__)."""
    return {
        module_name(path, root): (
            ast.parse(path.read_text("utf-8"), str(path)),
            path.name == "__init__.py",
        )
        for path in modules_of(package, root)
    }


def store_imports(root: Path) -> dict[str, list[str]]:
    """Surface modules that import `store` (any module of it, anywhere in the file: type
    hints and function bodies included) or a name that is the store itself."""
    graph = import_graph(root)
    wrong: dict[str, list[str]] = {}
    for module, (tree, is_package) in _trees(root, SURFACES).items():
        found = {t for t in graph.get(module, ()) if in_package(t, "store")}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names if in_package(a.name, "store"))
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(node, module, is_package)
                found.update(f"{base}.{a.name}" for a in node.names if a.name in STORE_NAMES)
        if found:
            wrong[module] = sorted(found)
    return wrong


def store_reaches(root: Path) -> dict[str, list[str]]:
    """Surface modules that reach for an object's `store`, `deps` or `desk`."""
    wrong: dict[str, list[str]] = {}
    for module, (tree, _) in _trees(root, SURFACES).items():
        found = {
            f"{ast.unparse(node.value)}.{node.attr}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr in REACHES
        }
        if found:
            wrong[module] = sorted(found)
    return wrong


def private_imports(root: Path) -> dict[str, list[str]]:
    """Surface modules that import a private (`_`) name of another project module."""
    project = {module_name(p, root) for package in PACKAGES for p in modules_of(package, root)}
    wrong: dict[str, list[str]] = {}
    for module, (tree, is_package) in _trees(root, SURFACES).items():
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = _absolute(node, module, is_package)
                if base in project and base != module:
                    found.update(f"{base}.{a.name}" for a in node.names if _private(a.name))
            elif isinstance(node, ast.Import):
                found.update(
                    a.name
                    for a in node.names
                    if a.name in project and any(_private(part) for part in a.name.split("."))
                )
        if found:
            wrong[module] = sorted(found)
    return wrong


def sub_packages(root: Path) -> list[str]:
    """Every sub-package of `runtime` (a folder of modules)."""
    return sorted(
        f"runtime.{path.name}"
        for path in (root / "runtime").iterdir()
        if path.is_dir() and any(path.glob("*.py"))
    )


SURFACE_PACKAGES = ("slack", "cli", "console", "approvers", "email")
SHARED = ("bot.requests", "bot.json_views", "bot.http_auth", "bot.http_errors", "bot.http_keys")
"""Modules every surface may use and none owns (the test below checks that they are used)."""
ENTRY_POINTS = ("bot.server", "bot.dev")
"""The process entry points, which put the surfaces together: the only modules of `bot`
outside a surface that may import one."""


def surface_of(module: str) -> str | None:
    """Which surface a `bot` module belongs to (None: to none)."""
    parts = module.split(".")
    if parts[0] != SURFACES or len(parts) < 2:
        return None
    if parts[1] in SURFACE_PACKAGES:
        return parts[1]
    if parts[1] in ("api", "openapi") or parts[1].startswith("api_"):
        return "api"
    return None


def cross_surface_imports(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """Surface modules that import another surface's modules, and modules of `bot` that
    belong to no surface (the shared ones, settings, logs, views...) that import any
    surface's; only the entry points put surfaces together."""
    wrong: dict[str, list[str]] = {}
    for module, targets in graph.items():
        own = surface_of(module)
        if not in_package(module, SURFACES) or any(in_package(module, e) for e in ENTRY_POINTS):
            continue
        found = sorted(t for t in targets if surface_of(t) not in (None, own))
        if found:
            wrong[module] = found
    return wrong


def public_names(root: Path, package: str) -> set[str]:
    """The names a package's `__init__` lists in `__all__` (none without one)."""
    init = root.joinpath(*package.split("."), "__init__.py")
    if not init.exists():
        return set()
    for node in ast.parse(init.read_text("utf-8"), str(init)).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return set(ast.literal_eval(node.value))
    return set()


def past_public_names(
    root: Path, importers: list[str], packages: list[str]
) -> dict[str, list[str]]:
    """Modules of `importers` (packages or modules) that import from one of `packages` other
    than by a name its `__init__` lists in `__all__`: a module path below it, or a name it
    does not list (anywhere in the file: type hints and function bodies too). A package's own
    modules import it as they like."""
    listed = {package: public_names(root, package) for package in packages}
    wrong: dict[str, list[str]] = {}
    for top in sorted({importer.split(".")[0] for importer in importers}):
        for module, (tree, is_package) in _trees(root, top).items():
            if not any(in_package(module, importer) for importer in importers):
                continue
            found = set()
            for package in packages:
                if not in_package(module, package):
                    found.update(_past(tree, module, is_package, package, listed[package]))
            if found:
                wrong[module] = sorted(found)
    return wrong


def _past(
    tree: ast.Module, module: str, is_package: bool, package: str, listed: set[str]
) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(
                a.name for a in node.names if in_package(a.name, package) and a.name != package
            )
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, module, is_package)
            if base == package:
                found.update(f"{base}.{a.name}" for a in node.names if a.name not in listed)
            elif in_package(base, package):
                found.update(f"{base}.{a.name}" for a in node.names)
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def store_handed_out(root: Path) -> dict[str, list[str]]:
    """Runtime modules the surfaces import, besides the facade and the queries, that hand
    out a `Store`: a public function or method that returns one, or a public attribute
    (class field or `self.x = ...` named `store`) that holds one. A Protocol only says what
    its user needs, so it hands out nothing."""
    graph = import_graph(root)
    used = {
        target
        for module, targets in graph.items()
        if in_package(module, SURFACES)
        for target in targets
        if in_package(target, "runtime")
    }
    trees = _trees(root, "runtime")
    wrong: dict[str, list[str]] = {}
    for module in sorted(used - FACADE):
        if in_package(module, QUERIES) or module not in trees:
            continue
        found = _store_exits(trees[module][0])
        if found:
            wrong[module] = found
    return wrong


def _store_exits(tree: ast.Module) -> list[str]:
    found: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _returns_store(node):
            found.append(node.name)
        elif isinstance(node, ast.ClassDef) and not _is_protocol(node):
            found.extend(f"{node.name}.{name}" for name in _class_store_exits(node))
    return found


def _class_store_exits(cls: ast.ClassDef) -> list[str]:
    found: list[str] = []
    for node in ast.walk(cls):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _returns_store(node):
            found.append(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if not _private(node.target.id) and _names_store(node.annotation):
                found.append(node.target.id)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found.extend(
                f"self.{t.attr}"
                for t in targets
                if isinstance(t, ast.Attribute)
                and ast.unparse(t.value) == "self"
                and t.attr == "store"
            )
    return found


def _returns_store(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return not _private(node.name) and node.returns is not None and _names_store(node.returns)


def _names_store(annotation: ast.expr) -> bool:
    """Also in a quoted annotation (`-> "Store | None"`)."""
    return bool(set(re.findall(r"\w+", ast.unparse(annotation))) & STORE_NAMES)


def _is_protocol(cls: ast.ClassDef) -> bool:
    return any(ast.unparse(base).split(".")[-1] == "Protocol" for base in cls.bases)


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(ROOT)


def test_no_module_imports_a_higher_layer(graph: dict[str, set[str]]) -> None:
    assert upward_imports(graph) == {}


def test_no_runtime_module_imports_the_facade(graph: dict[str, set[str]]) -> None:
    assert facade_imports(graph) == {}


def test_no_modules_import_each_other(graph: dict[str, set[str]]) -> None:
    assert cycles(graph) == []


def test_no_surface_imports_the_store() -> None:
    assert store_imports(ROOT) == {}


def test_no_surface_reaches_for_a_runtime_s_store_deps_or_desk() -> None:
    assert store_reaches(ROOT) == {}


def test_no_surface_imports_another_module_s_private_names() -> None:
    assert private_imports(ROOT) == {}


def test_the_runtime_modules_surfaces_import_hand_out_no_store() -> None:
    assert store_handed_out(ROOT) == {}


def test_surfaces_import_only_a_sub_package_s_public_names() -> None:
    assert past_public_names(ROOT, ["bot", "signoff", "examples"], sub_packages(ROOT)) == {}


def test_no_surface_imports_another_surface_s_modules(graph: dict[str, set[str]]) -> None:
    assert cross_surface_imports(graph) == {}


def test_the_shared_modules_are_shared(graph: dict[str, set[str]]) -> None:
    """The check looks at real users: the CLI, the console and the API all use the run view,
    the CLI and the API the request models."""
    users = {m for m, targets in graph.items() if "bot.json_views" in targets}
    assert {"bot.cli.runs", "bot.console.routes", "bot.api"} <= users
    assert "bot.requests" in graph["bot.cli.runs"]
    assert "bot.requests" in graph["bot.api"]
    assert all(module in graph for module in SHARED)


def test_the_surfaces_enter_by_the_facade_and_the_queries(graph: dict[str, set[str]]) -> None:
    """The door checks look at the real surface: the process opens the `Database`, and the
    surfaces read through the queries."""
    assert "runtime.database" in graph["bot.wiring"]  # `from runtime import Database`
    assert "runtime.queries" in graph["bot.metrics"]
    assert "runtime.queries.reads" in graph["runtime.engine"] | graph["runtime.queries"]


def test_the_graph_sees_the_real_imports(graph: dict[str, set[str]]) -> None:
    assert "runtime.engine" in graph["runtime"]
    assert {"runtime.deps", "runtime.runs.driver"} <= graph["runtime.runs.driving"]
    assert {"store.base", "store.records"} <= graph["runtime.deps"]  # through store's lazy names


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


# (the check on the tree, the tree's files, what the check finds in it), for
# test_broken_trees
BROKEN = [
    pytest.param(
        lambda root: upward_imports(import_graph(root)),
        {
            "store/__init__.py": "",
            "store/core.py": "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from runtime.agent import Agent\n",
            "runtime/__init__.py": "",
            "runtime/agent.py": "from store import core\n",
        },
        {"store.core": ["runtime.agent"]},
        id="an upward import under type checking is found",
    ),
    pytest.param(
        lambda root: facade_imports(import_graph(root)),
        {
            "runtime/__init__.py": "from runtime.engine import Runtime\n",
            "runtime/engine.py": "from runtime import driver\n",
            "runtime/driver.py": "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from runtime.engine import Runtime\n",
            "runtime/ending.py": "from runtime import Runtime\n",
            "runtime/fine.py": "from runtime import driver\n",
        },
        {
            "runtime.driver": ["runtime.engine"],
            "runtime.ending": ["runtime"],
        },
        id="a type hint import of the facade is found",
    ),
    pytest.param(
        lambda root: cycles(import_graph(root)),
        {
            "runtime/__init__.py": "",
            "runtime/a.py": "from runtime import b\n",
            "runtime/b.py": "from . import c\n",
            "runtime/c.py": "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    import runtime.a\n",
            "runtime/d.py": "from runtime import a\n",
        },
        [["runtime.a", "runtime.b", "runtime.c"]],
        id="a cycle through a third module is found",
    ),
    pytest.param(
        lambda root: store_imports(root),
        {
            "store/__init__.py": "class Store: ...\ndef open_store(url): ...\n",
            "store/limits.py": "MAX = 1\n",
            "runtime/__init__.py": "from store import Store\n",
            "bot/__init__.py": "",
            "bot/hints.py": "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from store import Store\n",
            "bot/late.py": "def f():\n    import store.limits\n",
            "bot/named.py": "from runtime import Store\n",
            "bot/fine.py": "from runtime import Runtime\n",
        },
        {
            "bot.hints": ["store", "store.Store"],
            "bot.late": ["store.limits"],
            "bot.named": ["runtime.Store"],
        },
        id="a surface importing the store is found wherever it does",
    ),
    pytest.param(
        lambda root: store_reaches(root),
        {
            "bot/__init__.py": "",
            "bot/api.py": "async def f(rt):\n    return await rt.store.get_run('r')\n",
            "bot/cli.py": "def f(rt):\n    return rt.desk.policies, rt.deps\n",
            "bot/fine.py": "async def f(rt):\n    return await rt.queries.run('r')\n",
        },
        {"bot.api": ["rt.store"], "bot.cli": ["rt.deps", "rt.desk"]},
        id="a surface reaching for a store or the desk is found",
    ),
    pytest.param(
        lambda root: private_imports(root),
        {
            "bot/__init__.py": "",
            "bot/api.py": "def _run_view(): ...\ndef run_view(): ...\n",
            "bot/cli/__init__.py": "",
            "bot/cli/runs.py": "def f():\n    from bot.api import _run_view\n",
            "bot/cli/near.py": "from ..api import _run_view, run_view\n",
            "bot/console.py": "from bot.api import run_view\nfrom __future__ import annotations\n",
            "bot/own.py": "from typing import _SpecialForm\n",
        },
        {
            "bot.cli.near": ["bot.api._run_view"],
            "bot.cli.runs": ["bot.api._run_view"],
        },
        id="a surface importing a private name is found",
    ),
    pytest.param(
        lambda root: store_handed_out(root),
        {
            "store/__init__.py": "class Store: ...\n",
            "runtime/__init__.py": "from runtime.engine import Runtime\n",
            "runtime/engine.py": "class Runtime:\n    def __init__(self, store):\n"
            "        self.store = store\n",
            "runtime/queries.py": "from store import Store\n"
            "class Queries:\n    def __init__(self, store: Store):\n        self._store = store\n",
            "runtime/leaky.py": "from store import Store\n"
            "def opened() -> Store: ...\n"
            "class Holder:\n    store: Store\n"
            "class Keeper:\n    def __init__(self, store):\n        self.store = store\n"
            "    def get(self) -> 'Store | None': ...\n",
            "runtime/port.py": "from typing import Protocol\nfrom store import Store\n"
            "class Drives(Protocol):\n    @property\n    def store(self) -> Store: ...\n"
            "def _private() -> Store: ...\n",
            "runtime/unused.py": "from store import Store\ndef opened() -> Store: ...\n",
            "bot/__init__.py": "",
            "bot/app.py": "from runtime import Runtime\nfrom runtime.queries import Queries\n"
            "from runtime.leaky import opened\nfrom runtime import port\n",
        },
        {"runtime.leaky": ["opened", "Holder.store", "Keeper.get", "Keeper.self.store"]},
        id="a runtime module handing out the store is found",
    ),
    pytest.param(
        lambda root: past_public_names(root, ["bot", "examples"], sub_packages(root)),
        {
            "runtime/__init__.py": "",
            "runtime/approvals/__init__.py": "__all__ = ['Policy', 'call_trail']\n",
            "runtime/approvals/policy.py": "class Policy: ...\n",
            "runtime/approvals/slo.py": "",
            "runtime/runs/__init__.py": "",
            "runtime/runs/queue.py": "",
            "bot/__init__.py": "",
            "bot/health.py": "from runtime.approvals.policy import Policy\n",
            "bot/cli/__init__.py": "",
            "bot/cli/runs.py": "def f():\n    from runtime.approvals import call_trail, slo\n",
            "bot/server.py": "import runtime.runs.queue\n",
            "bot/fine.py": "from runtime.approvals import Policy, call_trail\n"
            "import runtime.approvals\n",
            "examples/demo.py": "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from runtime.approvals import policy\n",
        },
        {
            "bot.cli.runs": ["runtime.approvals.slo"],
            "bot.health": ["runtime.approvals.policy.Policy"],
            "bot.server": ["runtime.runs.queue"],
            "examples.demo": ["runtime.approvals.policy"],
        },
        id="a surface importing past the public names is found",
    ),
    pytest.param(
        lambda root: cross_surface_imports(import_graph(root)),
        {
            "bot/__init__.py": "",
            "bot/api.py": "from bot import api_views\n",
            "bot/api_views.py": "from bot.requests import RunRequest\n",
            "bot/requests.py": "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from bot.slack.cards import card\n",
            "bot/json_views.py": "from bot import words\n",
            "bot/words.py": "",
            "bot/server.py": "from bot import api\nfrom bot.slack import app\n",
            "bot/slack/__init__.py": "",
            "bot/slack/app.py": "from bot.slack import cards\nfrom bot import json_views\n",
            "bot/slack/cards.py": "",
            "bot/cli/__init__.py": "",
            "bot/cli/runs.py": "def show():\n    from bot.api_views import run_view\n",
            "bot/console/routes.py": "from bot import api\nfrom bot.slack.cards import card\n",
            "bot/logs.py": "from bot.slack.escape import plain\n",
            "bot/slack/escape.py": "from bot.inert import flat\n",
            "bot/inert.py": "",
            "bot/email/__init__.py": "",
            "bot/email/sender.py": "from bot.slack.outbox import Attempt\nfrom bot import outbox\n",
            "bot/slack/outbox.py": "",
            "bot/outbox.py": "",
            "bot/dev/__init__.py": "from bot.slack import app\nfrom bot import api\n",
        },
        {
            "bot.cli.runs": ["bot.api_views"],
            "bot.console.routes": ["bot.api", "bot.slack.cards"],
            "bot.email.sender": ["bot.slack.outbox"],
            "bot.logs": ["bot.slack.escape"],
            "bot.requests": ["bot.slack.cards"],
        },
        id="a surface leaning on another is found",
    ),
]
