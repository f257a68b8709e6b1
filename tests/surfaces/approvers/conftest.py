"""The approvals page's tests share their HTTP clients, each closed at the test's end."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.approvers_support import Clients


@pytest.fixture
def clients() -> Iterator[Clients]:
    opened = Clients()
    yield opened
    opened.close()
