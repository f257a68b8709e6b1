"""The terminal demo the README points at runs as printed, and again without refunding twice.
(The quickstart is the README's own program, which tests/docs/test_readme.py runs.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from support.helpers import run_text

ROOT = Path(__file__).parent.parent.parent


def run_example(module: str, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": str(ROOT), "SIGNOFF_WORLD_DB": str(cwd / "world.db"), "PATH": ""}
    return run_text([sys.executable, "-m", module, *args], cwd=cwd, env=env)


def test_demo_runs_and_running_it_again_refunds_nothing_twice(tmp_path: Path) -> None:
    first = run_example("examples.demo", tmp_path, "Refund order 4471")
    second = run_example("examples.demo", tmp_path, "Refund order 4471")

    assert first.returncode == 0, first.stderr
    assert second.returncode == 0, second.stderr
    assert "done (answered)" in first.stdout
    assert first.stdout.count("'refund', '4471'") == 1
    assert second.stdout.count("'refund', '4471'") == 1
    # The second run asks the same order for $20: a conflict on its card, refused, declined.
    said = " ".join(first.stdout.split())
    assert "this run asks amount" in said
    assert "refused, nothing was done" in said
    assert "The refund for order 4471 was not made" in said
