"""Configuration from the environment and an optional `signoff.toml`, read once at the edge.

The environment wins over the file. A file with a mistake fails at start-up with the file,
the line and the reason, e.g. `signoff.toml:12: policies.tools.issue_refund.timeout: ...`.
Each setting is declared and checked in its section (`bot.sections`); here they are put
together, read, and a mistake is mapped back to its line.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

from pydantic import Field
from pydantic import PrivateAttr
from pydantic import SecretStr
from pydantic import ValidationError
from pydantic import model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings
from pydantic_settings import EnvSettingsSource
from pydantic_settings import PydanticBaseSettingsSource
from pydantic_settings import SettingsConfigDict
from pydantic_settings import SettingsError

from bot.near import did_you_mean
from bot.near import keys_at
from bot.sections import ApiSettings
from bot.sections import DatabaseSettings
from bot.sections import EmailSettings
from bot.sections import ProofSettings
from bot.sections import RuntimeSettings
from bot.sections import Section
from bot.sections import SlackSettings
from bot.sections import WebSettings
from bot.sections import WorkerSettings
from bot.settings_source import DEFAULT_CONFIG as DEFAULT_CONFIG
from bot.settings_source import ConfigError as ConfigError
from bot.settings_source import config_path as config_path
from bot.settings_source import into_sections
from bot.settings_source import names_of
from bot.settings_source import read_config
from bot.settings_source import variables_of


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
        return into_sections(data, SECTIONS)

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

            def decode(name: str, raw: str, model: type[Section] = model) -> Any:
                try:
                    return self.prepare_field_value(name, model.model_fields[name], raw, False)
                except ValueError as exc:
                    variable = names_of(model)[name][0]
                    why = f"{variable}: not the JSON this setting needs ({exc})"
                    raise SettingsError(why) from None

            if found := variables_of(model, self.env_vars, decode):
                data[section] = found
        return data


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
    file, text, data = read_config(path)
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
