"""`signoff dev` lets agents on other stacks in with a token of their own: they may ask for
approvals and run, never decide (people decide on their cards)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from bot.dev.serve import AGENTS_TOKEN
from bot.dev.serve import _kept_token
from bot.dev.serve import dev_settings


def settings(tmp_path: Path, agent_token: str | None) -> object:
    return dev_settings(
        database=tmp_path / "dev.db",
        port=8000,
        slack_api_url="http://127.0.0.1:1/api/",
        signing_secret="s",
        api_token="console-secret",
        agent_token=agent_token,
    )


def test_the_agents_token_asks_and_runs_but_never_decides(tmp_path: Path) -> None:
    tokens = settings(tmp_path, "agent-secret").api.tokens  # type: ignore[attr-defined]
    agents = tokens[AGENTS_TOKEN]
    assert agents.scopes == {"approvals:request", "runs:read", "runs:write"}
    assert agents.digest == hashlib.sha256(b"agent-secret").digest()
    assert "approvals:decide" not in tokens["console"].scopes
    assert AGENTS_TOKEN not in settings(tmp_path, None).api.tokens  # type: ignore[attr-defined]


def test_the_kept_token_is_made_once_and_private(tmp_path: Path) -> None:
    path = tmp_path / "dev-agent-token"
    made = _kept_token(path)
    assert _kept_token(path) == made
    assert len(made) >= 24
    assert path.stat().st_mode & 0o077 == 0
