"""The sections of the configuration: each setting with its key in `signoff.toml`, its
environment variable, its default and its checks (`setting(...)`), and the API's tokens.

`bot.settings` puts the sections together, reads them from the file and the environment
and says where a mistake is; this module only declares them. The database's section, and the
`setting(...)` and `Section` every section is made of, live in `bot.settings_source`, and
Slack's in `bot.settings_slack`: a read command builds those alone, without the others.
"""

from __future__ import annotations

import hashlib
import os
import re
from typing import Annotated
from typing import Any
from typing import Literal
from typing import Self
from typing import get_args

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import PrivateAttr
from pydantic import SecretStr
from pydantic import StringConstraints
from pydantic import field_validator
from pydantic import model_validator

from bot.callback_policy import parse_allowed
from bot.policy_ids import SlackLearnedRules
from bot.policy_ids import SlackPolicies
from bot.settings_slack import CommaList as CommaList
from bot.settings_slack import SlackSettings as SlackSettings
from bot.settings_source import DatabaseSettings as DatabaseSettings
from bot.settings_source import Section as Section
from bot.settings_source import setting as setting
from runtime.models import ModelConfig
from runtime.models import Price
from runtime.spend import EnvelopesConfig
from runtime.spend import LimitConfig
from runtime.spend import SpendConfig
from runtime.spend import check_names

Scope = Literal["runs:read", "runs:write", "approvals:request", "approvals:decide", "audit:read"]
SCOPES: tuple[Scope, ...] = get_args(Scope)
TokenName = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_.-]{0,63}$")]


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
