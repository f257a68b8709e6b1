"""Configuration from the environment and an optional `signoff.toml`, read once at the edge.

The environment wins over the file. A file with a mistake fails at start-up with the file,
the line and the reason, e.g. `signoff.toml:12: policies.tools.issue_refund.timeout: ...`.
One job, the settings and their errors; long because each setting is declared, checked and
explained here, next to the code that maps a mistake back to its line.
"""

from __future__ import annotations

import hashlib
import os
import re
import tomllib
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Literal, Self, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
)

from bot.callback_policy import parse_allowed
from bot.policy_ids import SlackLearnedRules, SlackPolicies
from runtime.approvals.policy import Duration
from runtime.models.config import ModelConfig
from runtime.models.pricing import Price

DEFAULT_CONFIG = "signoff.toml"
Scope = Literal["runs:read", "runs:write", "approvals:request", "approvals:decide", "audit:read"]
SCOPES: tuple[Scope, ...] = get_args(Scope)
TokenName = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_.-]{0,63}$")]


class ConfigError(Exception):
    """The configuration is invalid; the message says where and why."""


class ApiToken(BaseModel):
    """A named bearer token of the HTTP API and the scopes it grants.

    The configuration never holds the token itself: either `sha256`, the hex SHA-256 of it,
    or `secret_env`, the environment variable that holds it (hashed when settings are read).
    """

    model_config = ConfigDict(extra="forbid")

    scopes: frozenset[Scope] = Field(min_length=1)
    sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")
    secret_env: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    allow_request_and_decide: bool = False
    """Both approvals:request and approvals:decide: the token could approve its own requests."""
    revoked: bool = False
    rate_per_minute: int | None = Field(None, ge=1)
    """Overrides api_rate_per_minute for this token."""
    _digest: bytes | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _check(self) -> Self:
        if (self.sha256 is None) == (self.secret_env is None):
            raise ValueError(
                "give exactly one of sha256 (the hex SHA-256 of the token) or secret_env "
                "(the environment variable that holds the token)"
            )
        both = {"approvals:request", "approvals:decide"} <= self.scopes
        if both and not self.allow_request_and_decide:
            raise ValueError(
                "approvals:decide with approvals:request lets the token approve its own "
                "requests; give each its own token, or set allow_request_and_decide = true"
            )
        if self.sha256:
            self._digest = bytes.fromhex(self.sha256)
        elif value := os.environ.get(self.secret_env or ""):
            self._digest = hashlib.sha256(value.encode()).digest()
        # An unset secret_env matters only to `serve` (check_token_secrets): a CLI command
        # that reads the same signoff.toml never needs the server's secrets.
        return self

    @property
    def missing_secret(self) -> str | None:
        """The environment variable `serve` needs and does not have, if any."""
        if self._digest is None and not self.revoked:
            return self.secret_env
        return None

    @property
    def digest(self) -> bytes | None:
        """SHA-256 of the token (None for a revoked one whose secret is gone)."""
        return self._digest


def check_token_secrets(settings: Settings) -> None:
    """Refuse to serve with a token whose secret is not in the environment, naming it."""
    missing = {
        name: token.missing_secret
        for name, token in settings.api_tokens.items()
        if token.missing_secret
    }
    if missing:
        name, variable = next(iter(missing.items()))
        raise ConfigError(
            f"api_tokens.{name}: secret_env: the environment variable {variable} is not set"
        )


class Settings(BaseSettings):
    # In the environment only SIGNOFF_* and SLACK_* names count (never a bare PORT or
    # DATABASE_URL meant for something else); in signoff.toml, the field names.
    model_config = SettingsConfigDict(extra="forbid", populate_by_name=True, env_prefix="SIGNOFF_")

    database_url: str = Field("sqlite:///signoff.db", validation_alias="SIGNOFF_DATABASE_URL")
    synchronous: Literal["OFF", "NORMAL", "FULL", "EXTRA"] | None = Field(
        None, validation_alias="SIGNOFF_SQLITE_SYNCHRONOUS"
    )
    """SQLite only; None: the URL's `?synchronous=`, else FULL."""
    database_pool_size: int | None = Field(
        None, ge=1, le=1000, validation_alias="SIGNOFF_DATABASE_POOL_SIZE"
    )
    """PostgreSQL: connections this process may hold open at once (None: the URL's
    `?pool_size=`, else 10)."""
    agents: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["examples.refund_agent:agent"],
        validation_alias="SIGNOFF_AGENTS",
    )
    policies: SlackPolicies = Field(default_factory=SlackPolicies)
    learned_rules: SlackLearnedRules = Field(default_factory=lambda: SlackLearnedRules())
    """Who may make approval rules from a decision ("approve + similar"), and their limits."""
    models: dict[str, ModelConfig] = Field(default_factory=dict)
    """A hosted model per agent name, in place of the one its code gives."""
    prices: dict[str, Price] = Field(default_factory=dict)
    """Dollars per million tokens per model name: what a run's cost budget counts."""
    protected_facts: list[str] = Field(default_factory=list)
    worker_id: str | None = Field(None, validation_alias="SIGNOFF_WORKER_ID")
    lease_ttl: float = Field(30.0, gt=0)
    host: str = Field("127.0.0.1", validation_alias="SIGNOFF_HOST")
    port: int = Field(3000, ge=0, le=65535, validation_alias="SIGNOFF_PORT")
    api_token: SecretStr | None = Field(None, validation_alias="SIGNOFF_API_TOKEN")
    """The single legacy token: every scope. Prefer `api_tokens`."""
    api_tokens: dict[TokenName, ApiToken] = Field(
        default_factory=dict, validation_alias="SIGNOFF_API_TOKENS"
    )
    api_rate_per_minute: int = Field(600, ge=1, validation_alias="SIGNOFF_API_RATE_PER_MINUTE")
    """Requests per minute per token (a bucket of this many, refilled evenly)."""
    callback_allowed_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=list, validation_alias="SIGNOFF_CALLBACK_ALLOWED_HOSTS"
    )
    callback_secret: SecretStr | None = Field(None, validation_alias="SIGNOFF_CALLBACK_SECRET")
    oncall_channel: str | None = Field(None, validation_alias="SIGNOFF_ONCALL_CHANNEL")
    page_resolvers: Annotated[list[str], NoDecode] = Field(
        default_factory=list, validation_alias="SIGNOFF_PAGE_RESOLVERS"
    )
    """Slack user ids who may settle an in-doubt page from its card ("It happened" / "It did
    not happen"); none: the card offers only Acknowledge, and the CLI or API settles it."""
    slack_readers: Annotated[list[str], NoDecode] = Field(
        default_factory=list, validation_alias="SIGNOFF_SLACK_READERS"
    )
    """Who may read every run with `/runs` and in the dev console, besides a run's requester,
    approvers and on-call: Slack user ids, user-group ids (S…) and channel ids (C…, anyone
    asking in it); see `bot.readers`."""
    approvals_channel: str | None = Field(None, validation_alias="SIGNOFF_APPROVALS_CHANNEL")
    home_publish_per_minute: float = Field(
        80.0, gt=0, validation_alias="SIGNOFF_HOME_PUBLISH_PER_MINUTE"
    )
    """App Home publishes a minute at most (Slack allows `views.publish` 100+ a minute)."""
    api_only: bool = Field(False, validation_alias="SIGNOFF_API_ONLY")
    outbox_claim_seconds: float = Field(60.0, gt=0, validation_alias="SIGNOFF_OUTBOX_CLAIM_SECONDS")
    """How long a sender owns an outbox row; a row whose sender died goes out again after."""
    page_remind_every: Duration = Field(
        timedelta(hours=1), validation_alias="SIGNOFF_PAGE_REMIND_EVERY"
    )
    """How often a page nobody acknowledged is announced again, in its thread."""
    slack_bot_token: SecretStr | None = Field(None, validation_alias="SLACK_BOT_TOKEN")
    slack_signing_secret: SecretStr | None = Field(None, validation_alias="SLACK_SIGNING_SECRET")
    slack_app_token: SecretStr | None = Field(None, validation_alias="SLACK_APP_TOKEN")
    slack_api_url: str | None = Field(None, validation_alias="SLACK_API_URL")
    _source: tuple[Path, str] | None = PrivateAttr(None)

    @property
    def source(self) -> tuple[Path, str] | None:
        """The configuration file read and its text, to say where a setting is."""
        return self._source

    @source.setter
    def source(self, value: tuple[Path, str]) -> None:
        self._source = value

    @field_validator(
        "agents", "callback_allowed_hosts", "page_resolvers", "slack_readers", mode="before"
    )
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        """SIGNOFF_AGENTS="pkg.mod:agent,other:agent" (the file gives a list)."""
        if isinstance(value, str):
            return [path.strip() for path in value.split(",") if path.strip()]
        return value

    @field_validator("callback_allowed_hosts")
    @classmethod
    def _hosts(cls, value: list[str]) -> list[str]:
        parse_allowed(value)
        return value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # The file's values arrive as init arguments; the environment overrides them.
        return env_settings, init_settings


def config_path(explicit: str | Path | None = None) -> Path:
    return Path(explicit or os.environ.get("SIGNOFF_CONFIG") or DEFAULT_CONFIG)


def where(settings: Settings, loc: tuple[str, ...]) -> str:
    """`signoff.toml:14`: where in the file the settings came from a key is set."""
    source = settings.source
    if source is None:
        return "configuration"
    file, text = source
    return _where(file, loc, _key_lines(text))


def load_settings(path: str | Path | None = None) -> Settings:
    """Settings from the environment and the config file.

    The default `signoff.toml` may be absent; a file named by `--config` or `SIGNOFF_CONFIG`
    must exist.
    """
    named = path or os.environ.get("SIGNOFF_CONFIG")
    file = config_path(path)
    if named and not file.exists():
        raise ConfigError(f"{file}: no such configuration file")
    text = file.read_text("utf-8") if file.exists() else ""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file}: {exc}") from None
    try:
        settings = Settings(**data)
    except ValidationError as exc:
        raise ConfigError(_explain(file, text, exc)) from None
    except SettingsError as exc:  # an environment value that is not the JSON a field needs
        raise ConfigError(f"environment: {exc}") from None
    settings.source = (file, text)
    return settings


def _explain(file: Path, text: str, exc: ValidationError) -> str:
    lines = _key_lines(text)
    problems = []
    for error in exc.errors():
        loc = tuple(str(part) for part in error["loc"])
        where = _where(file, loc, lines)
        problems.append(f"{where}: {'.'.join(loc) or 'config'}: {_said(error)}")
    return "\n".join(problems)


def _said(error: Any) -> str:
    """pydantic's message in the words of a configuration file."""
    if error["type"] == "extra_forbidden":
        return "unknown setting"
    return str(error["msg"]).removeprefix("Value error, ")


def _where(file: Path, loc: tuple[str, ...], lines: dict[tuple[str, ...], int]) -> str:
    variable = _variable_of(loc[0]) if loc else None
    if variable:
        return f"environment {variable}"
    line = _line_of(loc, lines)
    return f"{file}:{line}" if line else str(file)


def _variable_of(field: str) -> str | None:
    """The environment variable that set this field, if one did (it wins over the file)."""
    present = {key.upper() for key in os.environ}
    if field.isupper():  # errors from the environment carry the variable's name
        return field if field in present else None
    info = Settings.model_fields.get(field)
    if info is None:
        return None
    alias = info.validation_alias
    name = alias if isinstance(alias, str) else f"SIGNOFF_{field.upper()}"
    return name if name in present else None


_HEADER = re.compile(r"^\s*\[+\s*([^\]]+?)\s*\]+\s*(#.*)?$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_.\-\"']+)\s*=")


def _key_lines(text: str) -> dict[tuple[str, ...], int]:
    """Where each dotted key (and each table) is defined in a TOML text; the entries of an
    array of tables (`[[policies.tools.x.rules]]`) by their index, as validation names them."""
    found: dict[tuple[str, ...], int] = {}
    table: tuple[str, ...] = ()
    entries: dict[tuple[str, ...], int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if header := _HEADER.match(line):
            table = _split(header[1])
            found.setdefault(table, number)
            if line.lstrip().startswith("[["):
                entries[table] = entries.get(table, -1) + 1
                table = (*table, str(entries[table]))
                found.setdefault(table, number)
        elif key := _KEY.match(line):
            found.setdefault(table + _split(key[1]), number)
    return found


def _split(dotted: str) -> tuple[str, ...]:
    return tuple(part.strip().strip("\"'") for part in dotted.split("."))


def _line_of(loc: tuple[str, ...], lines: dict[tuple[str, ...], int]) -> int | None:
    for end in range(len(loc), 0, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return None


def secret(value: SecretStr | None) -> str | None:
    return value.get_secret_value() if value is not None else None
