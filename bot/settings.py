"""Configuration from the environment and an optional `signoff.toml`, read once at the edge.

The environment wins over the file. A file with a mistake fails at start-up with the file,
the line and the reason, e.g. `signoff.toml:12: policies.tools.issue_refund.timeout: ...`.
Each setting is declared, checked and explained here, next to the code that maps a mistake
back to its line.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import tomllib
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Literal, Self, get_args

from pydantic import (
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
)

from bot.callback_policy import parse_allowed
from bot.near import did_you_mean, keys_at
from bot.policy_ids import SlackLearnedRules, SlackPolicies
from runtime.approvals import Duration
from runtime.models import ModelConfig, Price
from runtime.spend import EnvelopesConfig, LimitConfig, SpendConfig, check_names

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


def comma_separated(value: Any) -> Any:
    """SIGNOFF_AGENTS="pkg.mod:agent,other:agent" (the file gives a list)."""
    if isinstance(value, str):
        return [path.strip() for path in value.split(",") if path.strip()]
    return value


CommaList = Annotated[list[str], NoDecode, BeforeValidator(comma_separated)]
"""A list setting the environment may give as one comma-separated string."""


def check_token_secrets(settings: Settings) -> None:
    """Refuse to serve with a token whose secret is not in the environment, naming it."""
    missing = {
        name: token.missing_secret
        for name, token in settings.api.tokens.items()
        if token.missing_secret
    }
    if missing:
        name, variable = next(iter(missing.items()))
        raise ConfigError(
            f"api_tokens.{name}: secret_env: the environment variable {variable} is not set"
        )


def setting(
    key: str, default: Any = PydanticUndefined, *, env: str | None = None, **rules: Any
) -> Any:
    """A setting named `key` in signoff.toml (at its top level) and read from the environment
    variable `env` (`SIGNOFF_<KEY>` unless given); within its section it may also be named by
    its field name. The variable comes first: it wins over the file."""
    choices = AliasChoices(env or f"SIGNOFF_{key.upper()}", key)
    return Field(default, validation_alias=choices, **rules)


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class DatabaseSettings(Section):
    url: str = setting("database_url", "sqlite:///signoff.db")
    synchronous: Literal["OFF", "NORMAL", "FULL", "EXTRA"] | None = setting(
        "synchronous", None, env="SIGNOFF_SQLITE_SYNCHRONOUS"
    )
    """SQLite only; None: the URL's `?synchronous=`, else FULL."""
    pool_size: int | None = setting("database_pool_size", None, ge=1, le=1000)
    """PostgreSQL: connections this process may hold open at once (None: the URL's
    `?pool_size=`, else 10)."""

    def store_options(self) -> dict[str, Any]:
        """The settings that belong to the configured backend only."""
        if self.url.startswith("sqlite"):
            return {} if self.synchronous is None else {"synchronous": self.synchronous}
        if self.url.startswith(("postgres:", "postgresql:")):
            return {} if self.pool_size is None else {"pool_size": self.pool_size}
        return {}


class RuntimeSettings(Section):
    agents: CommaList = setting("agents", default_factory=lambda: ["examples.refund_agent:agent"])
    policies: SlackPolicies = setting("policies", default_factory=SlackPolicies)
    learned_rules: SlackLearnedRules = setting(
        "learned_rules", default_factory=lambda: SlackLearnedRules()
    )
    """Who may make approval rules from a decision ("approve + similar"), and their limits."""
    limits: dict[str, LimitConfig] = setting("limits", default_factory=dict)
    """`[limits.<name>]`: counters over the history of calls (docs/policies.md)."""
    envelopes: EnvelopesConfig = setting("envelopes", default_factory=EnvelopesConfig)
    """`[envelopes]`: how long the budgets approvers hand out may last."""

    @field_validator("limits")
    @classmethod
    def _limit_names(cls, limits: dict[str, LimitConfig]) -> dict[str, LimitConfig]:
        return check_names(limits)

    @property
    def spend(self) -> SpendConfig:
        return SpendConfig(limits=self.limits, envelopes=self.envelopes)

    models: dict[str, ModelConfig] = setting("models", default_factory=dict)
    """A hosted model per agent name, in place of the one its code gives."""
    prices: dict[str, Price] = setting("prices", default_factory=dict)
    """Dollars per million tokens per model name: what a run's cost budget counts."""
    protected_facts: list[str] = setting("protected_facts", default_factory=list)


class WorkerSettings(Section):
    id: str | None = setting("worker_id", None)
    lease_ttl: float = setting("lease_ttl", 30.0, gt=0)
    outbox_claim_seconds: float = setting("outbox_claim_seconds", 60.0, gt=0)
    """How long a sender owns an outbox row; a row whose sender died goes out again after."""
    capacity: int = setting("worker_capacity", 32, ge=1, le=10_000)
    """Runs this process drives at once; more wait in the database for a worker with room."""
    poll_seconds: float = setting("worker_poll_seconds", 10.0, gt=0)
    """How often the run queue looks for ready runs nothing woke it for (a lost
    notification; on SQLite, runs another process created)."""


class ApiSettings(Section):
    host: str = setting("host", "127.0.0.1")
    port: int = setting("port", 3000, ge=0, le=65535)
    token: SecretStr | None = setting("api_token", None)
    """The single legacy token: every scope. Prefer `tokens`."""
    tokens: dict[TokenName, ApiToken] = setting("api_tokens", default_factory=dict)
    rate_per_minute: int = setting("api_rate_per_minute", 600, ge=1)
    """Requests per minute per token (a bucket of this many, refilled evenly)."""
    only: bool = setting("api_only", False)
    """Serve the HTTP API without Slack."""
    callback_allowed_hosts: CommaList = setting("callback_allowed_hosts", default_factory=list)
    callback_secret: SecretStr | None = setting("callback_secret", None)

    @field_validator("callback_allowed_hosts")
    @classmethod
    def _hosts(cls, value: list[str]) -> list[str]:
        parse_allowed(value)
        return value


READER_ID = re.compile(r"[UWSCG][A-Z0-9]{2,}")


class SlackSettings(Section):
    bot_token: SecretStr | None = setting("slack_bot_token", None, env="SLACK_BOT_TOKEN")
    signing_secret: SecretStr | None = setting(
        "slack_signing_secret", None, env="SLACK_SIGNING_SECRET"
    )
    app_token: SecretStr | None = setting("slack_app_token", None, env="SLACK_APP_TOKEN")
    api_url: str | None = setting("slack_api_url", None, env="SLACK_API_URL")
    approvals_channel: str | None = setting("approvals_channel", None)
    oncall_channel: str | None = setting("oncall_channel", None)
    page_resolvers: CommaList = setting("page_resolvers", default_factory=list)
    """Slack user ids who may settle an in-doubt page from its card ("It happened" / "It did
    not happen"); none: the card offers only Acknowledge, and the CLI or API settles it."""
    page_remind_every: Duration = setting("page_remind_every", timedelta(hours=1))
    """How often a page nobody acknowledged is announced again, in its thread."""
    readers: CommaList = setting("slack_readers", default_factory=list)
    """Who may read every run with `/runs` and in the dev console, besides a run's requester,
    approvers and on-call: Slack user ids, user-group ids (S…) and channel ids (C…, anyone
    asking in it); see `bot.readers`."""
    home_publish_per_minute: float = setting("home_publish_per_minute", 80.0, gt=0)
    """App Home publishes a minute at most (Slack allows `views.publish` 100+ a minute)."""

    @field_validator("readers")
    @classmethod
    def _reader_ids(cls, value: list[str]) -> list[str]:
        wrong = [i for i in value if not READER_ID.fullmatch(i)]
        if wrong:
            raise ValueError(
                f"readers are Slack ids (U…/W… users, S… user groups, C…/G… channels), "
                f"not {', '.join(map(repr, wrong))}"
            )
        return value


class ProofSettings(Section):
    data_dir: str | None = setting("data_dir", None)
    """Where `serve` keeps what it makes for itself (the signing key it creates when none is
    configured); None: the SQLite file's directory, else the working directory."""
    signing_key_file: str | None = setting("signing_key_file", None)
    """The Ed25519 private key (PEM) that signs receipts and audit anchors."""
    signing_key: SecretStr | None = setting("signing_key", None)
    """The same key's PEM text itself (an environment secret), instead of a file."""
    retired_signing_keys: CommaList = setting("retired_signing_keys", default_factory=list)
    """Key files (public or private PEM) that signed before a rotation: still in the JWKS,
    so what they signed still verifies."""
    audit_sink_url: str | None = setting("audit_sink_url", None)
    """Where `serve` streams every audit event (`bot.audit_sink`): an http(s):// endpoint
    (signed NDJSON) or syslog://host:port (RFC 5424 over TCP)."""
    audit_sink_secret: SecretStr | None = setting("audit_sink_secret", None)
    """Signs what the HTTP sink sends (default: the callback secret)."""

    @field_validator("audit_sink_url")
    @classmethod
    def _sink(cls, value: str | None) -> str | None:
        scheme = value.partition("://")[0] if value else None
        if value and scheme not in ("http", "https", "syslog", "syslog+tcp", "tcp"):
            raise ValueError(
                f"{value[:60]!r}: an audit sink is an http(s):// URL or syslog://host:port"
            )
        return value


EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")


class WebSettings(Section):
    """The approvals page (`bot.approvers`): who signs in, and how."""

    public_url: str | None = setting("public_url", None)
    """Where people reach this server (links in e-mails, the OpenID Connect redirect)."""
    oidc_issuer: str | None = setting("oidc_issuer", None)
    """The OpenID Connect provider people sign in with (its discovery document is read)."""
    oidc_client_id: str | None = setting("oidc_client_id", None)
    oidc_client_secret: SecretStr | None = setting("oidc_client_secret", None)
    session_secret: SecretStr | None = setting("session_secret", None)
    """Signs session cookies and e-mail links; unset: made at start-up (sessions end with
    the process, and e-mailed links with it)."""
    people: dict[str, str] = setting("people", default_factory=dict)
    """`[people]`: e-mail address -> the person id policies name (a Slack user id)."""

    @field_validator("people")
    @classmethod
    def _people(cls, value: dict[str, str]) -> dict[str, str]:
        for address, person in value.items():
            if not EMAIL.fullmatch(address):
                raise ValueError(f"{address!r} is not an e-mail address")
            if not re.fullmatch(r"[UW][A-Z0-9]{2,}", person):
                raise ValueError(f"{address}: {person!r} is not a Slack user id (U…/W…)")
        return {address.lower(): person for address, person in value.items()}


class EmailSettings(Section):
    """`[email]`: the SMTP server that carries approvals to people outside Slack (`bot.email`).
    `from` is the sender's address (`email_from` at the file's top level)."""

    host: str | None = setting("email_host", None)
    """The SMTP server; unset: nobody is e-mailed (policies' addresses decide on the page)."""
    port: int = setting("email_port", 587, ge=1, le=65535)
    sender: str | None = setting("email_from", None)
    username: str | None = setting("email_username", None)
    password: SecretStr | None = setting("email_password", None)
    security: Literal["starttls", "tls", "none"] = setting("email_security", "starttls")
    """`starttls` (port 587), `tls` (implicit, port 465), or `none` (a relay on localhost)."""
    timeout: float = setting("email_timeout", 20.0, gt=0, le=300)
    """Seconds one SMTP conversation may take before the row is tried again later."""

    @model_validator(mode="before")
    @classmethod
    def _from(cls, data: Any) -> Any:
        if isinstance(data, dict) and "from" in data:
            data = dict(data)
            data["sender"] = data.pop("from")
        return data

    @field_validator("sender")
    @classmethod
    def _sender(cls, value: str | None) -> str | None:
        if value is not None and not EMAIL.search(value):
            raise ValueError(f"{value!r} is not an e-mail address")
        return value


class Settings(BaseSettings):
    """Every setting, by section. signoff.toml and `Settings(...)` name a setting by its key
    (`database_url`, `api_tokens`, `[policies]`) or inside its section (`[database] url`);
    the environment by its variable (`SIGNOFF_DATABASE_URL`, `SLACK_BOT_TOKEN`), which wins.
    In the environment only those names count (never a bare PORT or DATABASE_URL meant for
    something else)."""

    model_config = SettingsConfigDict(extra="forbid")

    database: DatabaseSettings = Field(default_factory=DatabaseSettings)
    runtime: RuntimeSettings = Field(default_factory=RuntimeSettings)
    workers: WorkerSettings = Field(default_factory=WorkerSettings)
    api: ApiSettings = Field(default_factory=ApiSettings)
    slack: SlackSettings = Field(default_factory=SlackSettings)
    proof: ProofSettings = Field(default_factory=ProofSettings)
    web: WebSettings = Field(default_factory=WebSettings)
    email: EmailSettings = Field(default_factory=EmailSettings)
    _source: tuple[Path, str] | None = PrivateAttr(None)

    @property
    def source(self) -> tuple[Path, str] | None:
        """The configuration file read and its text, to say where a setting is."""
        return self._source

    @source.setter
    def source(self, value: tuple[Path, str]) -> None:
        self._source = value

    @model_validator(mode="before")
    @classmethod
    def _into_sections(cls, data: Any) -> Any:
        """Top-level keys (the file's, or `Settings(database_url=...)`) into their sections;
        a setting the environment gives keeps the environment's value."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for section, model in SECTIONS.items():
            given = data.get(section, {})
            if not isinstance(given, dict):
                continue  # a section model given whole
            given = dict(given)
            for name, (variable, key) in names_of(model).items():
                if key in data and key != section:
                    value = data.pop(key)
                    if not given.keys() & {variable, name}:
                        given[key] = value
                if variable in given:  # only one name may reach the model
                    given.pop(name, None)
                    given.pop(key, None)
            if given:
                data[section] = given
        return data

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
        return SectionVariables(settings_cls), GivenSections(settings_cls, init_settings)

    def secrets(self) -> list[str]:
        """The value of every secret setting that is set (to keep out of the logs)."""
        return [
            value.get_secret_value()
            for section in SECTIONS
            for value in vars(getattr(self, section)).values()
            if isinstance(value, SecretStr)
        ]


SECTIONS: dict[str, type[Section]] = {
    "database": DatabaseSettings,
    "runtime": RuntimeSettings,
    "workers": WorkerSettings,
    "api": ApiSettings,
    "slack": SlackSettings,
    "proof": ProofSettings,
    "web": WebSettings,
    "email": EmailSettings,
}


def names_of(model: type[Section]) -> dict[str, tuple[str, str]]:
    """Each field's environment variable and file key (its `setting(...)` aliases)."""
    found: dict[str, tuple[str, str]] = {}
    for name, info in model.model_fields.items():
        alias = info.validation_alias
        assert isinstance(alias, AliasChoices), f"{model.__name__}.{name} is not a setting()"
        variable, key = (str(choice) for choice in alias.choices)
        found[name] = (variable, key)
    return found


class GivenSections(PydanticBaseSettingsSource):
    """`Settings(...)`'s arguments (the file's values among them), a section given as a model
    read as the fields it set: the environment then still wins field by field, instead of
    replacing the whole section."""

    def __init__(self, settings_cls: type[BaseSettings], given: PydanticBaseSettingsSource):
        super().__init__(settings_cls)
        self.given = given

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # everything is in __call__

    def __call__(self) -> dict[str, Any]:
        return {
            key: value.model_dump(exclude_unset=True) if isinstance(value, Section) else value
            for key, value in self.given().items()
        }


class SectionVariables(EnvSettingsSource):
    """The environment, each section's field read from its own variable, decoded as
    pydantic-settings decodes a top-level field (JSON for a table, as-is for NoDecode)."""

    def __call__(self) -> dict[str, Any]:
        data: dict[str, dict[str, Any]] = {}
        for section, model in SECTIONS.items():
            for name, (variable, _) in names_of(model).items():
                raw = self.env_vars.get(self._apply_case_sensitive(variable))
                if raw is None:
                    continue
                info = model.model_fields[name]
                try:
                    value = self.prepare_field_value(name, info, raw, False)
                except ValueError as exc:
                    why = f"{variable}: not the JSON this setting needs ({exc})"
                    raise SettingsError(why) from None
                # keyed by the variable, so a validation error names it
                data.setdefault(section, {})[variable] = value
        return data


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
    if file.exists():
        import_from(file.resolve().parent)
    return settings


def import_from(folder: Path) -> None:
    """Put the configuration file's folder first on the import path, as Python does for a
    script's folder, so an agent module beside the file (`crm:agent`) imports without
    PYTHONPATH: the same for every command, `serve` and `dev`, whichever folder they run in."""
    entry = str(folder)
    if entry not in sys.path:
        sys.path.insert(0, entry)


def _explain(file: Path, text: str, exc: ValidationError) -> str:
    lines = _key_lines(text)
    problems = []
    for error in exc.errors():
        given = tuple(str(part) for part in error["loc"])
        loc = _as_written(given, lines)
        where = _where(file, loc, lines)
        problems.append(f"{where}: {_what(loc, where)}{_said(error)}{_hint(error, given)}")
    return "\n".join(problems)


def _hint(error: Any, loc: tuple[str, ...]) -> str:
    """For a setting nobody knows, the known one it is nearest to (`aprovers`: `approvers`;
    `[policy.default]`: `policies`)."""
    if error["type"] != "extra_forbidden" or not loc or loc[-1].isupper():
        return ""
    if len(loc) == 1:
        known = [*SECTIONS, *(key for m in SECTIONS.values() for _, key in names_of(m).values())]
    else:
        known = keys_at(Settings, loc[:-1])
    return did_you_mean(loc[-1], known)


def _as_written(loc: tuple[str, ...], lines: dict[tuple[str, ...], int]) -> tuple[str, ...]:
    """A section's setting as the file or the environment named it (`api_rate_per_minute`,
    `SIGNOFF_PORT`), unless the file wrote it inside its section (`[database] url`)."""
    if len(loc) < 2 or loc[0] not in SECTIONS:
        return loc
    if any(key[:2] == loc[:2] for key in lines):
        return loc
    return loc[1:]


def _what(loc: tuple[str, ...], where: str) -> str:
    """The setting a problem is about, unless the place already names it (an environment
    variable: "environment SIGNOFF_API_TOKENS: ci.scopes: ...")."""
    if where.startswith("environment ") and loc and where.endswith(f" {loc[0]}"):
        return f"{'.'.join(loc[1:])}: " if loc[1:] else ""
    return f"{'.'.join(loc) or 'config'}: "


def _said(error: Any) -> str:
    """pydantic's message in the words of a configuration file."""
    if error["type"] == "extra_forbidden":
        return "unknown setting"
    return str(error["msg"]).removeprefix("Value error, ")


def _where(file: Path, loc: tuple[str, ...], lines: dict[tuple[str, ...], int]) -> str:
    # a value from the environment carries its variable's name (it wins over the file)
    if loc and loc[0].isupper() and loc[0] in {key.upper() for key in os.environ}:
        return f"environment {loc[0]}"
    line = _line_of(loc, lines)
    return f"{file}:{line}" if line else str(file)


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
            for end in range(1, len(table) + 1):  # `[policy.default]` names `policy` too
                found.setdefault(table[:end], number)
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
