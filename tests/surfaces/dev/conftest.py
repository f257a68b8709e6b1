"""`signoff dev` and a headless Chromium for the page's tests, each stopped at the test's end
(a test module with its own, like the page tour's, defines them itself)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.dev_support import DevServer
from support.dev_support import chromium


@pytest.fixture
def dev(tmp_path: Path) -> Iterator[DevServer]:
    server = DevServer(tmp_path)
    yield server
    assert server.interrupt() == 0, server.log.read_text()


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    driver = chromium(tmp_path)
    driver.implicitly_wait(0)
    yield driver
    driver.quit()
