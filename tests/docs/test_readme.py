"""The README and docs/ cannot drift from the code: every shell block they show runs (page
by page, as a reader would type it) or says on the line above why it cannot here; their
Python compiles and the README's program runs; their configuration loads; every command,
module, script and flag they name exists; every setting is documented; every link resolves."""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import os
import re
from pathlib import Path
from typing import Any

import pytest
import typer.main

import runtime
import store
from bot.cli import app
from bot.policy_fixtures import load as load_fixtures
from bot.settings import SECTIONS
from bot.settings import load_settings
from bot.settings import names_of
from signoff.mcp_rules import load_rules

from .docs_pages import LANGUAGES
from .docs_pages import PAGES
from .docs_pages import README
from .docs_pages import ROOT
from .docs_pages import SHELL
from .docs_pages import Block
from .docs_pages import Reader
from .docs_pages import anchors
from .docs_pages import blocks
from .docs_pages import ci_test_command
from .docs_pages import commands
from .docs_pages import inline_code
from .docs_pages import links
from .docs_pages import prose

ALL_BLOCKS = [block for page in PAGES for block in blocks(page)]
RUNNABLE_PAGES = [
    page
    for page in PAGES
    if any(b.language in SHELL and not b.not_run_reason for b in blocks(page))
]


def name(page: Path) -> str:
    return str(page.relative_to(ROOT))


# the shell blocks


def test_every_shell_block_runs_in_order(tmp_path: Path) -> None:
    """One reader, one folder, the README first and then each page: a server a page starts
    stays up for the pages after it, as it would in a reader's other terminal."""
    reader = Reader(tmp_path)
    try:
        for page in PAGES:
            reader.turn_page()
            for block in blocks(page):
                if block.language in SHELL and not block.not_run_reason:
                    for command, expected in commands(block):
                        reader.type(command, expected, block.where)
    finally:
        stopped = reader.stop()

    # the first command's page offers the refund that step 1 of the README clicks
    [html] = [html for url, html in reader.pages_seen.items() if url.endswith("/")]
    [button] = re.findall(r"^1\. Click \*\*(.+?)\*\*", README.read_text("utf-8"), re.M)
    assert button in html
    # signoff dev prints the variables docs/dev.md exports (with full paths)
    [export] = [
        c for b in blocks(ROOT / "docs" / "dev.md") for c, _ in commands(b) if "export" in c
    ]
    dev = next(started for started, _ in stopped if "signoff dev" in started.command)
    assert export in dev.output().replace(f"{tmp_path}/", "")
    for started, status in stopped:
        if "--ready-file" not in started.command:  # the fake Slack has no shutdown of its own
            assert status == 0, f"{started.command}\n{started.output()}"


def test_the_readme_starts_with_signoff_dev_then_the_line_ci_runs() -> None:
    first = blocks(README)[0]
    lines = first.body.splitlines()

    assert lines[0] == "pip install -e . && signoff dev"
    assert lines[1] == ci_test_command()
    assert f"test_command=$(grep -m1 -E '{'^pip install .*&& python -m pytest'}' README.md)" in (
        ROOT / ".ci" / "run"
    ).read_text("utf-8")


def test_the_readme_is_short() -> None:
    assert len(README.read_text("utf-8").splitlines()) <= 200


@pytest.mark.parametrize("block", ALL_BLOCKS, ids=lambda b: b.where)
def test_every_block_says_its_language_and_a_block_not_run_says_why(block: Block) -> None:
    assert block.language in LANGUAGES, f"{block.where}: ```{block.language}"
    reason = block.not_run_reason
    if reason is None:
        return
    assert block.language in SHELL, f"{block.where}: only shell blocks are run"
    for path in re.findall(r"`(tests/[\w/]+\.py)`", reason):
        assert (ROOT / path).exists(), f"{block.where}: {path}"


# the Python and the configuration


def test_the_readme_program_runs_and_prints_what_its_comments_say(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    [program] = [b.body for b in blocks(README) if b.language == "python"]
    assert program in (ROOT / "examples" / "quickstart.py").read_text("utf-8")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "readme"}

    exec(compile(program, "README.md", "exec"), namespace)
    asyncio.run(namespace["main"]())  # type: ignore[operator]

    assert capsys.readouterr().out.split() == ["waiting_approval", "done"]
    assert len(program.splitlines()) <= 40


@pytest.mark.parametrize(
    "block", [b for b in ALL_BLOCKS if b.language == "python"], ids=lambda b: b.where
)
def test_every_python_block_runs_or_at_least_compiles(block: Block) -> None:
    """A block of definitions runs (its imports, decorators and classes are real), with the
    public names at hand; a sketch with top-level `await` compiles."""
    try:
        code = compile(block.body, block.where, "exec")
    except SyntaxError:
        compile(block.body, block.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        return
    public = {name: getattr(module, name) for module in (runtime, store) for name in module.__all__}
    exec(code, public | {"__name__": "docs"})


def test_the_hosted_agent_is_the_example_that_the_tests_run() -> None:
    [hosted] = [b.body for b in blocks(ROOT / "docs" / "models.md") if "PROMPT" in b.body]
    example = (ROOT / "examples" / "hosted_refund_agent.py").read_text("utf-8")

    assert example.endswith(hosted)
    assert len(example.splitlines()) < 30


@pytest.mark.parametrize(
    "block", [b for b in ALL_BLOCKS if b.language == "toml"], ids=lambda b: b.where
)
def test_every_toml_block_loads(
    block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in list(os.environ):
        if variable.startswith(("SIGNOFF_", "SLACK_")):
            monkeypatch.delenv(variable)
    for variable in re.findall(r'secret_env = "(\w+)"', block.body):
        monkeypatch.setenv(variable, f"{variable.lower()}-example")
    path = tmp_path / "signoff.toml"
    path.write_text(block.body, "utf-8")

    if "[[rule]]" in block.body:  # `signoff mcp --rules`, not a signoff.toml
        assert load_rules(path)
        return
    if "[[calls]]" in block.body:  # `signoff policy test FILE`, not a signoff.toml
        assert load_fixtures(path).calls
        return
    settings = load_settings(path)

    if "[policies.tools.issue_refund]" in block.body:
        assert settings.runtime.policies.for_tool("issue_refund")[1].required_approvals == 2
    if "[learned_rules]" in block.body:
        assert settings.runtime.learned_rules.writers
    if "[models." in block.body:
        assert settings.runtime.models["refund-agent"].model in settings.runtime.prices
    if "[api_tokens." in block.body:
        assert set(settings.api.tokens) == set(
            re.findall(r"^\[api_tokens\.([\w-]+)\]", block.body, re.M)
        )


# what the text names


def signoff_commands() -> dict[str, str]:
    """Every inline `signoff ...` of the pages that names a command, and the first page."""
    found: dict[str, str] = {}
    for page in PAGES:
        for code in inline_code(page):
            if re.match(r"signoff (-\S+ \S+ )*[a-z]", code):
                found.setdefault(code, name(page))
    return found


def _options(command: Any) -> set[str]:
    named = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)}
    return named | {"--help"}


def command_problem(code: str) -> str | None:
    """What is wrong with `signoff ...` as the CLI stands: no such command, or option."""
    root = typer.main.get_command(app)
    words = code.replace("…", "").split()[1:]
    leaves: list[Any] = [root]
    while words and words[0].startswith("-"):  # the root's own options
        if words[0] not in _options(root):
            return f"no option {words[0]}"
        words = words[2:] if words[0] in ("--config", "--log-format") else words[1:]
    for word in words:
        groups = [c for c in leaves if hasattr(c, "commands")]
        if not groups or not re.fullmatch(r"[a-z|-]+", word):
            break
        leaves = [groups[0].commands.get(sub) for sub in word.split("|")]
        if not all(leaves):
            return f"no command {word!r}"
    for option in re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", " ".join(words)):
        if not any(option in _options(leaf) | _options(root) for leaf in leaves):
            return f"no option {option}"
    return None


@pytest.mark.parametrize("code", sorted(signoff_commands()))
def test_every_signoff_command_named_exists_with_its_options(code: str) -> None:
    problem = command_problem(code)

    assert problem is None, f"{signoff_commands()[code]}: `{code}`: {problem}"


def test_every_python_module_and_benchmark_named_exists_with_its_flags() -> None:
    for page in PAGES:
        texts = inline_code(page) + [c for b in blocks(page) for c, _ in commands(b)]
        for text in texts:
            for module in re.findall(r"python -m ([\w.]+)", text):
                if module != "pytest":
                    assert importlib.util.find_spec(module), f"{name(page)}: {text}"
            for script, flags in re.findall(r"python (benchmarks/\w+\.py)((?: [^`]*)?)", text):
                source = (ROOT / script).read_text("utf-8")
                for flag in re.findall(r"--[a-z][a-z-]*", flags):
                    assert f'"{flag}"' in source, f"{name(page)}: {text}: no {flag}"


def settings_variables() -> set[str]:
    """Every variable the project's code reads by name, and the settings' own."""
    found: set[str] = set()
    for package in ("bot", "signoff", "examples", "runtime", "store"):
        for module in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(module.read_text("utf-8"))):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    found.update(re.findall(r"\b(?:SIGNOFF|SLACK)_[A-Z][A-Z_]*[A-Z]\b", node.value))
    for section in SECTIONS.values():
        found.update(variable for variable, _ in names_of(section).values())
    return found


def test_every_environment_variable_is_in_the_configuration_reference() -> None:
    reference = (ROOT / "docs" / "configuration.md").read_text("utf-8")
    documented = set(re.findall(r"^\| `([A-Z_]+)`(?:, `([A-Z_]+)`)?", reference, re.M))
    rows = {variable for pair in documented for variable in pair if variable}

    missing = settings_variables() - rows

    assert not missing, f"docs/configuration.md has no row for {sorted(missing)}"


@pytest.mark.parametrize("page", PAGES, ids=name)
def test_every_link_resolves(page: Path) -> None:
    for target in links(page):
        if re.match(r"^[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f"{name(page)}: {target}"
        if anchor:
            assert anchor in anchors(linked), f"{name(page)}: {target}: no such heading"


def test_every_page_is_reachable_from_the_readme() -> None:
    linked = {(README.parent / t.partition("#")[0]).resolve() for t in links(README)}

    assert {page.resolve() for page in PAGES if page != README} <= linked


def test_the_checks_of_the_pages_can_fail(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# A page\n\n(Not run by the tests: needs Slack.)\n\n```bash\nsignoff serve\n```\n\n"
        "```bash\nsignoff nonsense \\\n  --flag\n```\n\n[gone](missing.md) [here](#a-page)\n"
        "```console\n$ echo hi\nhi\n```\n",
        "utf-8",
    )
    first, second, third = blocks(page)

    assert first.not_run_reason == "needs Slack."
    assert second.not_run_reason is None
    assert commands(second) == [("signoff nonsense   --flag", None)]
    assert commands(third) == [("echo hi", "hi\n")]
    assert links(page) == ["missing.md", "#a-page"]
    assert anchors(page) == {"a-page"}
    assert "signoff nonsense" not in prose(page)
    assert command_problem("signoff runs list|nonsense") == "no command 'list|nonsense'"
    assert command_problem("signoff runs show ID --nonsense") == "no option --nonsense"
    assert command_problem("signoff --nonsense serve") == "no option --nonsense"
    assert command_problem("signoff --config x.toml runs resolve R C --happened --by U1") is None
    typing = Reader(tmp_path)
    with pytest.raises(AssertionError):
        typing.type("false", None, "page.md")
    with pytest.raises(AssertionError):
        typing.type("echo bye", "hi\n", "page.md")
    with pytest.raises(AssertionError):
        typing.type("pip install -e '.[nonsense]' && true", None, "page.md")
    typing.type("export A=1  # why", None, "page.md")
    assert typing.env["A"] == "1"


def test_the_rules_the_code_cites_are_on_the_architecture_page() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text("utf-8")
    numbered = {int(n) for n in re.findall(r"^(\d+)\. \*\*", page.split("## The rules")[1], re.M)}
    cited: set[int] = set()
    for package in ("bot", "runtime", "store", "signoff", "benchmarks", "tests"):
        for module in (ROOT / package).rglob("*.py"):
            text = " ".join(module.read_text("utf-8").split())
            assert "DESIGN" + " rule" not in text, f"{module}: cite docs/architecture.md"
            for numbers in re.findall(r"docs/architecture\.md rules? ([\d, and]+)", text):
                cited.update(int(n) for n in re.findall(r"\d+", numbers))

    assert numbered == set(range(1, 13))
    assert cited
    assert cited <= numbered
