"""Settings from `signoff.toml` and the environment; a bad file fails with file, line, reason."""

from __future__ import annotations

import hashlib
import json
import os
from datetime import timedelta
from pathlib import Path

import pytest
from support.api_support import TOKENS_TOML

from bot.agents import load_agents
from bot.server import startup_warnings
from bot.settings import ConfigError
from bot.settings import Settings
from bot.settings import check_token_secrets
from bot.settings import load_settings
from examples.refund_agent import agent as refund_agent
from runtime.approvals.policy import Policies
from runtime.approvals.policy import Policy

GOOD = """\
database_url = "sqlite:///from-file.db"
port = 4000
agents = ["examples.refund_agent:agent"]

[policies.default]
approvers = ["U0AAA", "S0GROUP"]
timeout = "2h"
remind_every = "15m"

[policies.tools.issue_refund]
required_approvals = 2
on_timeout = "escalate"
escalate_to = "S0LEADS"
"""


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No SIGNOFF_/SLACK_ variable from the outside leaks in; no signoff.toml in the cwd."""
    for name in list(os.environ):
        if name.startswith(("SIGNOFF_", "SLACK_")):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def write(tmp_path: Path, text: str, name: str = "signoff.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, "utf-8")
    return path


def refused(path: Path) -> str:
    """What `load_settings` says, refusing the file at `path`."""
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    return str(caught.value)


def test_file_values_are_read(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, GOOD))
    assert settings.database.url == "sqlite:///from-file.db"
    assert settings.api.port == 4000
    name, refund = settings.runtime.policies.for_tool("issue_refund")
    assert name == "issue_refund"
    assert refund.required_approvals == 2
    assert refund.approvers == ("U0AAA", "S0GROUP")  # inherited from the default
    assert refund.timeout == timedelta(hours=2)
    assert refund.on_timeout == "escalate"
    assert settings.runtime.policies.for_tool("send_email") == (
        "default",
        settings.runtime.policies.default,
    )


def test_environment_overrides_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIGNOFF_DATABASE_URL", "sqlite:///from-env.db")
    monkeypatch.setenv("SIGNOFF_PORT", "5055")
    monkeypatch.setenv("SIGNOFF_API_TOKEN", "tok")
    settings = load_settings(write(tmp_path, GOOD))
    assert settings.database.url == "sqlite:///from-env.db"
    assert settings.api.port == 5055
    assert settings.api.token is not None
    assert settings.api.token.get_secret_value() == "tok"
    assert settings.runtime.policies.for_tool("issue_refund")[1].required_approvals == 2


def test_no_file_gives_defaults(tmp_path: Path) -> None:
    settings = load_settings()
    assert settings.database.url == "sqlite:///signoff.db"
    assert settings.runtime.agents == ["examples.refund_agent:agent"]


def test_signoff_toml_in_the_working_directory_is_read(tmp_path: Path) -> None:
    write(tmp_path, 'database_url = "sqlite:///cwd.db"\n')
    assert load_settings().database.url == "sqlite:///cwd.db"


def test_missing_explicit_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"no-such\.toml"):
        load_settings(tmp_path / "no-such.toml")


def test_missing_file_named_by_signoff_config_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SIGNOFF_CONFIG", str(tmp_path / "typo.toml"))
    with pytest.raises(ConfigError, match=r"typo\.toml"):
        load_settings()


def test_secrets_are_masked_when_shown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIGNOFF_API_TOKEN", "very-secret")
    settings = load_settings()

    assert "very-secret" not in repr(settings)
    assert "very-secret" not in str(settings.model_dump())


BAD = [
    pytest.param(
        '[policies.tools.issue_refund]\nchannel = "C1"\ntimeout = "soon"\n',
        3,
        "'soon' is not a duration",
        id="bad duration",
    ),
    pytest.param(
        '[policies.default]\nremind_every = "-5m"\n', 2, "not a duration", id="negative duration"
    ),
    pytest.param("[policies.default]\ntimeout = 0\n", 2, "positive", id="zero timeout"),
    pytest.param(
        '\n[policies.default]\napprovers = ["U0AAA"]\napprover = ["U0BBB"]\n',
        4,
        "policies.default.approver",
        id="unknown policy key",
    ),
    pytest.param('port = 3000\ndatabse_url = "x"\n', 2, "databse_url", id="unknown top-level key"),
    pytest.param(
        '[policies.default]\ntimeout = "1h"\n\n[policies.tools.charge]\napprovers = ["bob"]\n',
        5,
        "'bob' is not a Slack user id",
        id="bad approver id",
    ),
    pytest.param(
        "[policies.tools.charge]\nrequired_approvals = 0\n",
        2,
        "required_approvals",
        id="zero required approvals",
    ),
    pytest.param(
        '[policies.default]\non_timeout = "shrug"\n', 2, "on_timeout", id="bad on_timeout"
    ),
    pytest.param("port = 3000\nport = 3001\n", 2, "overwrite", id="duplicate key"),
    pytest.param('[policies.default]\ntimeout = "1h\n', 2, "line 2", id="toml syntax error"),
]


@pytest.mark.parametrize(("text", "line", "reason"), BAD)
def test_bad_file_names_the_file_line_and_reason(
    tmp_path: Path, text: str, line: int, reason: str
) -> None:
    path = write(tmp_path, text)
    message = refused(path)
    assert str(path) in message
    assert f"{path}:{line}:" in message or f"line {line}" in message
    assert reason in message


def test_every_mistake_in_a_file_is_reported(tmp_path: Path) -> None:
    path = write(
        tmp_path, '[policies.default]\ntimeout = "soon"\nrequired_approvals = 0\nfoo = 1\n'
    )
    lines = refused(path).splitlines()
    assert {line.split(":")[1] for line in lines} == {"2", "3", "4"}


def test_bad_environment_value_is_blamed_on_the_variable_not_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, "port = 4000\n")
    monkeypatch.setenv("SIGNOFF_PORT", "not-a-port")
    message = refused(path)
    assert "SIGNOFF_PORT" in message
    assert f"{path}:1" not in message  # line 1 of the file is fine


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("nosuch.module:agent", "cannot import 'nosuch.module'"),
        ("examples.refund_agent", "is not a 'module:attribute' import path"),
        ("examples.refund_agent:policy", "is not an Agent"),
    ],
)
def test_a_bad_agent_path_names_the_setting(path: str, why: str) -> None:
    with pytest.raises(ConfigError) as refused:
        load_agents([path])
    assert "SIGNOFF_AGENTS" in str(refused.value)
    assert why in str(refused.value)


@pytest.mark.parametrize(
    "text",
    [
        '[policies.default]\ntimeout = "1h"\non_timeout = "escalate"\n',
        '[policies.tools.wire]\ntimeout = "1h"\non_timeout = "escalate"\n',
    ],
)
def test_escalating_on_timeout_without_anyone_to_escalate_to_is_refused(
    tmp_path: Path, text: str
) -> None:
    assert "needs escalate_to" in refused(write(tmp_path, text))


# the HTTP API's tokens, rate and callback allowlist

HASH = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"  # sha256("test")


def test_api_tokens_hold_a_hash_or_read_the_secret_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REFUND_AGENT_TOKEN", "agent-secret")
    settings = load_settings(write(tmp_path, TOKENS_TOML))
    agent, page = settings.api.tokens["refund-agent"], settings.api.tokens["approvals-page"]
    assert agent.scopes == {"runs:write", "runs:read", "approvals:request"}
    assert agent.digest == hashlib.sha256(b"agent-secret").digest()
    assert page.digest == bytes.fromhex(HASH)
    assert (page.rate_per_minute, settings.api.rate_per_minute) == (30, 120)
    assert settings.api.callback_allowed_hosts == [
        "hooks.example.com",
        ".corp.example",
        "http://127.0.0.1",
    ]
    assert "agent-secret" not in repr(settings)
    assert "agent-secret" not in str(settings.model_dump())


def test_api_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    tokens = {"auditor": {"scopes": ["audit:read"], "sha256": HASH}}
    monkeypatch.setenv("SIGNOFF_API_TOKENS", json.dumps(tokens))
    monkeypatch.setenv("SIGNOFF_CALLBACK_ALLOWED_HOSTS", "hooks.example.com, http://10.0.0.5")
    monkeypatch.setenv("SIGNOFF_API_RATE_PER_MINUTE", "30")
    settings = load_settings()
    assert settings.api.tokens["auditor"].scopes == {"audit:read"}
    assert settings.api.callback_allowed_hosts == ["hooks.example.com", "http://10.0.0.5"]
    assert settings.api.rate_per_minute == 30


BAD_API = [
    pytest.param(
        '[api_tokens.kiosk]\nscopes = ["approvals:request", "approvals:decide"]\n'
        f'sha256 = "{HASH}"\n',
        1,
        "approve its own requests",
        id="request and decide without saying so",
    ),
    pytest.param(
        f'[api_tokens.x]\nscopes = ["runs:read"]\nsha256 = "{HASH}"\nsecret_env = "X_TOKEN"\n',
        1,
        "exactly one of sha256",
        id="hash and environment",
    ),
    pytest.param(
        '[api_tokens.x]\nscopes = ["runs:read"]\n', 1, "exactly one of sha256", id="neither"
    ),
    pytest.param(
        f'[api_tokens.x]\nscopes = ["runs:delete"]\nsha256 = "{HASH}"\n',
        2,
        "api_tokens.x.scopes",
        id="unknown scope",
    ),
    pytest.param(f'[api_tokens.x]\nscopes = []\nsha256 = "{HASH}"\n', 2, "scopes", id="no scopes"),
    pytest.param(
        '[api_tokens.x]\nscopes = ["runs:read"]\nsha256 = "the-token-itself"\n',
        3,
        "sha256",
        id="not a hash",
    ),
    pytest.param(
        f'[api_tokens."Bad Name"]\nscopes = ["runs:read"]\nsha256 = "{HASH}"\n',
        1,
        "Bad Name",
        id="bad token name",
    ),
    pytest.param(
        'port = 3000\ncallback_allowed_hosts = ["*.example.com"]\n',
        2,
        "'*.example.com' is not a host name",
        id="bad allowlist entry",
    ),
    pytest.param("api_rate_per_minute = 0\n", 1, "api_rate_per_minute", id="zero rate"),
]


@pytest.mark.parametrize(("text", "line", "reason"), BAD_API)
def test_bad_api_settings_name_the_file_line_and_reason(
    tmp_path: Path, text: str, line: int, reason: str
) -> None:
    path = write(tmp_path, text)
    message = refused(path)
    assert f"{path}:{line}:" in message
    assert reason in message


def test_request_and_decide_in_one_token_when_the_configuration_says_so(tmp_path: Path) -> None:
    text = (
        '[api_tokens.kiosk]\nscopes = ["approvals:request", "approvals:decide"]\n'
        f'sha256 = "{HASH}"\nallow_request_and_decide = true\n'
    )
    settings = load_settings(write(tmp_path, text))
    assert settings.api.tokens["kiosk"].allow_request_and_decide


def test_a_token_secret_missing_from_the_environment_stops_serve_not_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NO_SUCH_TOKEN_VAR", raising=False)
    config = write(
        tmp_path, '[api_tokens.x]\nscopes = ["runs:read"]\nsecret_env = "NO_SUCH_TOKEN_VAR"\n'
    )

    settings = load_settings(config)  # what every CLI command reads: fine

    with pytest.raises(
        ConfigError,
        match=r"^api_tokens.x: secret_env: the environment variable "
        r"NO_SUCH_TOKEN_VAR is not set$",
    ):
        check_token_secrets(settings)
    monkeypatch.setenv("NO_SUCH_TOKEN_VAR", "s")
    check_token_secrets(load_settings(config))


def test_a_revoked_token_needs_no_secret(tmp_path: Path) -> None:
    text = '[api_tokens.old]\nscopes = ["runs:read"]\nsecret_env = "GONE"\nrevoked = true\n'
    settings = load_settings(write(tmp_path, text))
    assert settings.api.tokens["old"].digest is None


def test_startup_warnings_say_why_a_tool_runs_without_approval_and_flag_dead_settings() -> None:
    settings = Settings(
        policies=Policies(
            tools={
                "issue_refund": Policy(
                    approvers=("U0BOB", "U0ANN"), required_approvals=2, allow_edit=True
                )
            }
        )
    )
    warnings = startup_warnings(settings, [refund_agent])

    charge = next(w for w in warnings if " charge runs WITHOUT approval" in w)
    assert "approved with the refund" in charge
    assert any("allow_edit has no effect" in w and "issue_refund" in w for w in warnings)
