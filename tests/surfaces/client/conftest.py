"""The API the client-side tests talk to: served for real over TCP, with a policy that lets
an approver edit a call's arguments."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.live_api import LiveApi

from runtime import Policies
from runtime import Policy

EDITABLE = Policies(default=Policy(allow_edit=True))


@pytest.fixture
def live(db_url: str, world: Path) -> Iterator[LiveApi]:
    server = LiveApi(db_url, policies=EDITABLE).start()
    yield server
    server.stop()
