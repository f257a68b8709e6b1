"""Fixtures of the crash tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def ledger_file(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """An empty ledger of the outside world, named in the environment the test and its worker
    share by the variable the worker module the test imports calls `LEDGER`."""
    path = tmp_path / "ledger.txt"
    path.touch()
    monkeypatch.setenv(request.module.LEDGER, str(path))
    return path
