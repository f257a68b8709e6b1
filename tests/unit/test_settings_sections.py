"""Settings in sections (database, runtime, workers, api, slack, proof) read every environment
variable and file key the flat settings did, into the same value; a bad value still names
its variable (or its file line)."""

from __future__ import annotations

import json
from datetime import timedelta
from functools import reduce
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from bot.sections import ApiSettings
from bot.sections import SlackSettings
from bot.settings import SECTIONS
from bot.settings import ConfigError
from bot.settings import Settings
from bot.settings import load_settings
from bot.settings import names_of
from bot.settings import secret

HASH = "a" * 64
TOKENS = {"ci": {"scopes": ["runs:read"], "sha256": HASH}}

# variable, what it is set to, where the value lands, what it reads as
VARIABLES: list[tuple[str, str, str, Any]] = [
    ("SIGNOFF_DATABASE_URL", "sqlite:///x.db", "database.url", "sqlite:///x.db"),
    ("SIGNOFF_SQLITE_SYNCHRONOUS", "NORMAL", "database.synchronous", "NORMAL"),
    ("SIGNOFF_DATABASE_POOL_SIZE", "7", "database.pool_size", 7),
    ("SIGNOFF_AGENTS", "a.b:c, d.e:f", "runtime.agents", ["a.b:c", "d.e:f"]),
    (
        "SIGNOFF_POLICIES",
        json.dumps({"default": {"approvers": ["U0BOB"]}}),
        "runtime.policies.default.approvers",
        ("U0BOB",),
    ),
    (
        "SIGNOFF_LEARNED_RULES",
        json.dumps({"writers": ["U0BOB"]}),
        "runtime.learned_rules.writers",
        ("U0BOB",),
    ),
    (
        "SIGNOFF_LIMITS",
        json.dumps(
            {"refunds": {"tools": ["issue_refund"], "max": 3, "window": "1h", "deny": "no"}}
        ),
        "runtime.limits.refunds.max",
        3,
    ),
    (
        "SIGNOFF_ENVELOPES",
        json.dumps({"max_expiry": "2d", "default_expiry": "1d"}),
        "runtime.envelopes.max_expiry",
        timedelta(days=2),
    ),
    (
        "SIGNOFF_MODELS",
        json.dumps({"refund-agent": {"provider": "openai", "model": "gpt-x"}}),
        "runtime.models.refund-agent.model",
        "gpt-x",
    ),
    (
        "SIGNOFF_PRICES",
        json.dumps({"gpt-x": {"input_per_mtok": 1.5, "output_per_mtok": 6}}),
        "runtime.prices.gpt-x.output_per_mtok",
        6.0,
    ),
    ("SIGNOFF_PROTECTED_FACTS", '["price"]', "runtime.protected_facts", ["price"]),
    ("SIGNOFF_WORKER_ID", "w-1", "workers.id", "w-1"),
    ("SIGNOFF_LEASE_TTL", "3", "workers.lease_ttl", 3.0),
    ("SIGNOFF_OUTBOX_CLAIM_SECONDS", "9", "workers.outbox_claim_seconds", 9.0),
    ("SIGNOFF_WORKER_CAPACITY", "4", "workers.capacity", 4),
    ("SIGNOFF_WORKER_POLL_SECONDS", "2.5", "workers.poll_seconds", 2.5),
    ("SIGNOFF_HOST", "0.0.0.0", "api.host", "0.0.0.0"),
    ("SIGNOFF_PORT", "5055", "api.port", 5055),
    ("SIGNOFF_API_TOKEN", "tok", "api.token", "tok"),
    ("SIGNOFF_API_TOKENS", json.dumps(TOKENS), "api.tokens.ci.sha256", HASH),
    ("SIGNOFF_API_RATE_PER_MINUTE", "30", "api.rate_per_minute", 30),
    ("SIGNOFF_API_ONLY", "1", "api.only", True),
    (
        "SIGNOFF_CALLBACK_ALLOWED_HOSTS",
        "hooks.example.com, http://10.0.0.5",
        "api.callback_allowed_hosts",
        ["hooks.example.com", "http://10.0.0.5"],
    ),
    ("SIGNOFF_CALLBACK_SECRET", "cb", "api.callback_secret", "cb"),
    ("SLACK_BOT_TOKEN", "xoxb-1", "slack.bot_token", "xoxb-1"),
    ("SLACK_SIGNING_SECRET", "sig", "slack.signing_secret", "sig"),
    ("SLACK_APP_TOKEN", "xapp-1", "slack.app_token", "xapp-1"),
    ("SLACK_API_URL", "http://127.0.0.1:1/api/", "slack.api_url", "http://127.0.0.1:1/api/"),
    ("SIGNOFF_APPROVALS_CHANNEL", "C0APPROVALS", "slack.approvals_channel", "C0APPROVALS"),
    ("SIGNOFF_ONCALL_CHANNEL", "C0ONCALL", "slack.oncall_channel", "C0ONCALL"),
    ("SIGNOFF_PAGE_RESOLVERS", "U0BOB,U0ANN", "slack.page_resolvers", ["U0BOB", "U0ANN"]),
    ("SIGNOFF_PAGE_REMIND_EVERY", "2h", "slack.page_remind_every", timedelta(hours=2)),
    ("SIGNOFF_SLACK_READERS", "U0AUD,S0OPS,C0OPS", "slack.readers", ["U0AUD", "S0OPS", "C0OPS"]),
    ("SIGNOFF_HOME_PUBLISH_PER_MINUTE", "40", "slack.home_publish_per_minute", 40.0),
    ("SIGNOFF_DATA_DIR", "/var/lib/signoff", "proof.data_dir", "/var/lib/signoff"),
    (
        "SIGNOFF_SIGNING_KEY_FILE",
        "/etc/signoff/key.pem",
        "proof.signing_key_file",
        "/etc/signoff/key.pem",
    ),
    ("SIGNOFF_SIGNING_KEY", "pem", "proof.signing_key", "pem"),
    ("SIGNOFF_AUDIT_SINK_URL", "syslog://logs:514", "proof.audit_sink_url", "syslog://logs:514"),
    ("SIGNOFF_AUDIT_SINK_SECRET", "s", "proof.audit_sink_secret", "s"),
    ("SIGNOFF_PUBLIC_URL", "https://signoff.example", "web.public_url", "https://signoff.example"),
    ("SIGNOFF_OIDC_ISSUER", "https://id.example", "web.oidc_issuer", "https://id.example"),
    ("SIGNOFF_OIDC_CLIENT_ID", "signoff", "web.oidc_client_id", "signoff"),
    ("SIGNOFF_OIDC_CLIENT_SECRET", "s", "web.oidc_client_secret", "s"),
    ("SIGNOFF_SESSION_SECRET", "s", "web.session_secret", "s"),
    ("SIGNOFF_PEOPLE", '{"Bob@Example.com": "U0BOB"}', "web.people", {"bob@example.com": "U0BOB"}),
    ("SIGNOFF_EMAIL_HOST", "smtp.example.com", "email.host", "smtp.example.com"),
    ("SIGNOFF_EMAIL_PORT", "465", "email.port", 465),
    ("SIGNOFF_EMAIL_FROM", "signoff@example.com", "email.sender", "signoff@example.com"),
    ("SIGNOFF_EMAIL_USERNAME", "signoff", "email.username", "signoff"),
    ("SIGNOFF_EMAIL_PASSWORD", "pw", "email.password", "pw"),
    ("SIGNOFF_EMAIL_SECURITY", "tls", "email.security", "tls"),
    ("SIGNOFF_EMAIL_TIMEOUT", "7.5", "email.timeout", 7.5),
    (
        "SIGNOFF_RETIRED_SIGNING_KEYS",
        "a.pem, b.pem",
        "proof.retired_signing_keys",
        ["a.pem", "b.pem"],
    ),
]

# variable -> a value it refuses
BAD: dict[str, str] = {
    "SIGNOFF_SQLITE_SYNCHRONOUS": "SOMETIMES",
    "SIGNOFF_DATABASE_POOL_SIZE": "0",
    "SIGNOFF_POLICIES": "{not json",
    "SIGNOFF_LEASE_TTL": "-1",
    "SIGNOFF_OUTBOX_CLAIM_SECONDS": "soon",
    "SIGNOFF_WORKER_CAPACITY": "0",
    "SIGNOFF_PORT": "not-a-port",
    "SIGNOFF_API_TOKENS": json.dumps({"ci": {"scopes": []}}),
    "SIGNOFF_API_RATE_PER_MINUTE": "0",
    "SIGNOFF_API_ONLY": "perhaps",
    "SIGNOFF_CALLBACK_ALLOWED_HOSTS": "ftp://x",
    "SIGNOFF_PAGE_REMIND_EVERY": "whenever",
    "SIGNOFF_SLACK_READERS": "#ops",
    "SIGNOFF_AUDIT_SINK_URL": "ftp://logs",
}


def value_at(settings: Settings, path: str) -> Any:
    """`api.tokens.ci.sha256`: attributes, then keys of a dict; secrets revealed."""

    def step(node: Any, name: str) -> Any:
        return node[name] if isinstance(node, dict) else getattr(node, name)

    found = reduce(step, path.split("."), settings)
    return secret(found) if hasattr(found, "get_secret_value") else found


def read(settings: Settings, path: str) -> Any:
    try:
        return value_at(settings, path)
    except KeyError:  # an entry of a table that is not there
        return None


@pytest.fixture
def empty_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for variable, *_ in VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    path = tmp_path / "signoff.toml"
    path.write_text("", "utf-8")
    return path


@pytest.fixture(params=VARIABLES, ids=[variable for variable, *_ in VARIABLES])
def old_variable(request: pytest.FixtureRequest) -> tuple[str, str, str, Any]:
    """(variable, raw value, settings path, expected value) of one old variable."""
    param: tuple[str, str, str, Any] = request.param
    return param


def test_the_sections_read_exactly_the_old_variables() -> None:
    variables = {v for model in SECTIONS.values() for v, _ in names_of(model).values()}
    assert variables == {variable for variable, *_ in VARIABLES}
    assert len(VARIABLES) == 53


def test_every_old_variable_sets_the_same_value(
    empty_file: Path, monkeypatch: pytest.MonkeyPatch, old_variable: tuple[str, str, str, Any]
) -> None:
    variable, raw, path, expected = old_variable
    unset = read(load_settings(empty_file), path)
    monkeypatch.setenv(variable, raw)

    settings = load_settings(empty_file)

    assert read(settings, path) == expected
    assert unset != expected  # the variable, not a default, set it


def test_the_file_key_and_the_section_field_set_the_same_value(
    empty_file: Path, monkeypatch: pytest.MonkeyPatch, old_variable: tuple[str, str, str, Any]
) -> None:
    """`Settings(api_rate_per_minute=30)` (signoff.toml's `api_rate_per_minute = 30`) and
    `Settings(api={"rate_per_minute": 30})` (`[api] rate_per_minute = 30`) give what
    SIGNOFF_API_RATE_PER_MINUTE=30 gives."""
    variable, raw, path, expected = old_variable
    section, field = path.split(".")[:2]
    key = names_of(SECTIONS[section])[field][1]
    monkeypatch.setenv(variable, raw)
    from_env = getattr(load_settings(empty_file), section)
    given = getattr(from_env, field)
    monkeypatch.delenv(variable)

    by_key = getattr(Settings(**{key: given}), section)
    in_section = getattr(Settings(**{section: {field: given}}), section)

    assert by_key == in_section == from_env
    assert read(Settings(**{key: given}), path) == expected


@pytest.mark.parametrize(("variable", "raw"), sorted(BAD.items()))
def test_a_bad_value_names_its_variable(
    empty_file: Path, monkeypatch: pytest.MonkeyPatch, variable: str, raw: str
) -> None:
    monkeypatch.setenv(variable, raw)

    with pytest.raises(ConfigError) as refused:
        load_settings(empty_file)

    assert variable in str(refused.value)
    assert str(refused.value).count(variable) == 1  # named once, where it is
    assert str(empty_file) not in str(refused.value)


def test_a_file_in_sections_or_flat_says_where_a_mistake_is(
    empty_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty_file.write_text('[database]\nurl = "sqlite:///n.db"\npool_size = 0\n', "utf-8")
    with pytest.raises(ConfigError, match=rf"^{empty_file}:3: database\.pool_size: "):
        load_settings(empty_file)
    empty_file.write_text("host = '0.0.0.0'\ndatabase_pool_size = 0\n", "utf-8")
    with pytest.raises(ConfigError, match=rf"^{empty_file}:2: database_pool_size: "):
        load_settings(empty_file)
    empty_file.write_text('[database]\nurl = "sqlite:///n.db"\nnot_a_setting = 1\n', "utf-8")
    with pytest.raises(ConfigError, match=rf"^{empty_file}:3: database\.not_a_setting: unknown"):
        load_settings(empty_file)

    monkeypatch.setenv("SIGNOFF_DATABASE_URL", "sqlite:///env.db")
    empty_file.write_text('[database]\nurl = "sqlite:///n.db"\n', "utf-8")
    assert load_settings(empty_file).database.url == "sqlite:///env.db"


def test_a_section_given_whole_still_yields_to_the_environment_field_by_field(
    empty_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SIGNOFF_PORT", "5055")

    settings = Settings(api=ApiSettings(host="0.0.0.0", port=1, rate_per_minute=9))

    assert (settings.api.host, settings.api.port, settings.api.rate_per_minute) == (
        "0.0.0.0",
        5055,
        9,
    )


def test_every_secret_setting_is_among_the_values_to_redact(empty_file: Path) -> None:
    settings = Settings(
        api_token="tok",
        callback_secret="cb",
        slack=SlackSettings(
            bot_token=SecretStr("xoxb-1"),
            signing_secret=SecretStr("sig"),
            app_token=SecretStr("xapp-1"),
        ),
    )

    assert sorted(settings.secrets()) == ["cb", "sig", "tok", "xapp-1", "xoxb-1"]
    assert Settings().secrets() == []
