"""One module, one job (docs/architecture.md, "One job per file"): a Python file over
`LONG` lines either is split where it holds two jobs, or says in the first line of its
docstring that it is one job, and why it is long ("One job, long because ...").

The check walks every Python file of the project (not the virtual environments or the build
folders), on the real tree and on a small synthetic tree that breaks it."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).parent.parent.parent
LONG = 500
"""Lines; a file longer than this says why it is one job."""
ONE_JOB = re.compile(r"\bone job\b.*\blong\b", re.IGNORECASE)
"""What the first docstring line of a long file says: that it is one job, and why long."""
SKIPPED = {"build", "node_modules", "__pycache__"}


def python_files(root: Path) -> Iterator[Path]:
    """The project's Python files: none under a hidden folder (`.venv`, `.git`, ...) or a
    build folder."""
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).parts[:-1]
        if not any(part.startswith(".") or part in SKIPPED for part in parts):
            yield path


def first_docstring_line(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text("utf-8"), str(path)), clean=True)
    return doc.splitlines()[0] if doc else ""


def long_without_a_reason(root: Path) -> dict[str, int]:
    """Files over `LONG` lines whose first docstring line does not say they are one job and
    why they are long, with their length."""
    found: dict[str, int] = {}
    for path in python_files(root):
        length = len(path.read_text("utf-8").splitlines())
        if length > LONG and not ONE_JOB.search(first_docstring_line(path)):
            found[str(path.relative_to(root))] = length
    return found


def test_every_long_file_says_it_is_one_job() -> None:
    assert long_without_a_reason(ROOT) == {}


def test_the_walk_sees_the_project_and_not_the_venv() -> None:
    files = {str(path.relative_to(ROOT)) for path in python_files(ROOT)}
    assert {"store/records.py", "bot/settings.py", "tests/unit/test_file_sizes.py"} <= files
    assert not any(name.startswith(".") for name in files)


def test_the_check_finds_a_long_file_without_the_line(tmp_path: Path) -> None:
    body = "x = 1\n" * LONG
    files = {
        "store/big.py": f'"""The records."""\n{body}',
        "store/said.py": f'"""One job, long because each table is a model: the records."""\n{body}',
        "store/vague.py": f'"""One job: the records."""\n{body}',
        "store/none.py": body + "y = 2\n",
        "store/edge.py": body,
        "store/short.py": '"""Two jobs."""\nx = 1\n',
        "bot/hint.py": f'"""The sender.\n\nOne job, long because of Slack."""\n{body}',
        ".venv/lib/site.py": body,
        "tests/unit/test_big.py": f'"""Tests of the records."""\n{body}',
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)

    assert long_without_a_reason(tmp_path) == {
        "bot/hint.py": LONG + 3,
        "store/big.py": LONG + 1,
        "store/none.py": LONG + 1,
        "store/vague.py": LONG + 1,
        "tests/unit/test_big.py": LONG + 1,
    }
