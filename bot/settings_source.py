"""Where settings come from, and the rules that put them in their sections: the file
(`signoff.toml`, or the one `--config` or SIGNOFF_CONFIG names), each setting's names (its
environment variable, its file key, its field name), and the one precedence: the
environment, then the file, then the default.

`bot.settings` builds every section from these with pydantic-settings; `section_settings`
builds one section alone from the same file, the same environment and the same rules, for a
command that needs nothing else (a CLI read needs the database's, and Slack's to name people:
it starts without the other sections' models). Only pydantic is imported here.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from typing import Literal
from typing import TypeVar

from pydantic import AliasChoices
from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import ValidationError
from pydantic_core import PydanticUndefined

DEFAULT_CONFIG = "signoff.toml"


class ConfigError(Exception):
    """The configuration is invalid; the message says where and why."""


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


def names_of(model: type[Section]) -> dict[str, tuple[str, str]]:
    """Each field's environment variable and file key (its `setting(...)` aliases)."""
    found: dict[str, tuple[str, str]] = {}
    for name, info in model.model_fields.items():
        alias = info.validation_alias
        if not isinstance(alias, AliasChoices):
            raise TypeError(f"{model.__name__}.{name} is not a setting()")
        variable, key = (str(choice) for choice in alias.choices)
        found[name] = (variable, key)
    return found


def config_path(explicit: str | Path | None = None) -> Path:
    return Path(explicit or os.environ.get("SIGNOFF_CONFIG") or DEFAULT_CONFIG)


def read_config(path: str | Path | None = None) -> tuple[Path, str, dict[str, Any]]:
    """The configuration file, its text and its TOML. The default `signoff.toml` may be
    absent (no text, no values); a file named by `--config` or SIGNOFF_CONFIG must exist."""
    named = path or os.environ.get("SIGNOFF_CONFIG")
    file = config_path(path)
    if named and not file.exists():
        raise ConfigError(f"{file}: no such configuration file")
    text = file.read_text("utf-8") if file.exists() else ""
    try:
        return file, text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file}: {exc}") from None


def into_sections(data: Any, sections: Mapping[str, type[Section]]) -> Any:
    """Top-level keys (the file's, or `Settings(database_url=...)`) into their sections; a
    setting the environment gives (keyed by its variable) keeps the environment's value."""
    if not isinstance(data, dict):
        return data
    data = dict(data)
    for section, model in sections.items():
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


def variables_of(
    model: type[Section], environ: Mapping[str, str | None], decode: Callable[[str, str], Any]
) -> dict[str, Any]:
    """The section's settings the environment gives, keyed by their variable (so that a
    mistake names it). Variables are matched without regard to case, as pydantic-settings
    matches them; `decode(name, raw)` turns a variable's text into the field's value."""
    lowered = {key.lower(): value for key, value in environ.items()}
    found = {}
    for name, (variable, _) in names_of(model).items():
        raw = lowered.get(variable.lower())
        if raw is not None:  # (pydantic-settings' own mapping may hold None)
            found[variable] = decode(name, raw)
    return found


SectionT = TypeVar("SectionT", bound=Section)


def section_settings(
    path: str | Path | None, section: str, model: type[SectionT]
) -> SectionT | None:
    """One section as the full settings would read it (the same file, variables and
    precedence), without reading the others; None when it has a mistake, which the full
    settings report (they say where it is). A mistake in another section is left to the
    commands that use that section. For sections whose settings are text, numbers and
    comma-separated lists (the database's, Slack's): the environment gives them as they are,
    as pydantic-settings does (it decodes JSON only for tables and lists of other kinds)."""
    _, _, data = read_config(path)
    file_section = data.get(section, {})
    if not isinstance(file_section, dict):
        return None
    given = file_section | variables_of(model, os.environ, lambda _, raw: raw)
    found = into_sections({**data, section: given}, {section: model})
    try:
        return model.model_validate(found.get(section, {}))
    except ValidationError:
        return None


def database_settings(path: str | Path | None = None) -> DatabaseSettings | None:
    """The database's section alone (`section_settings`)."""
    return section_settings(path, "database", DatabaseSettings)
