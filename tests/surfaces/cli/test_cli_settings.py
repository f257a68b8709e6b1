"""A read command builds only the database's settings (`bot.settings_source`), and Slack's
when it names people, and they are the full settings' sections, case by case: the
environment, `signoff.toml` at its top level or in the section's table, both (the
environment wins), a file named by SIGNOFF_CONFIG or `--config`, the defaults. In process
for every case, and through the real command (`signoff -v runs list` names the database it
read) for each source; a mistake in the database's settings is refused as the full settings
refuse it, naming the file's line."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from bot.cli.session import database_label
from bot.cli.session import database_of
from bot.settings import load_settings
from bot.settings_slack import SlackSettings
from bot.settings_source import ConfigError
from bot.settings_source import DatabaseSettings
from bot.settings_source import database_settings
from bot.settings_source import section_settings

from .test_cli_decide import fresh_cli
from .test_cli_decide import parked

CASES = {
    "defaults": ({}, ""),
    "environment": ({"SIGNOFF_DATABASE_URL": "sqlite:///from-env.db"}, ""),
    "lower-case variable": ({"signoff_database_url": "sqlite:///lower.db"}, ""),
    "file, top level": ({}, 'database_url = "sqlite:///top.db"\nsynchronous = "NORMAL"'),
    "file, its table": ({}, '[database]\nurl = "sqlite:///table.db"\nsynchronous = "OFF"'),
    "file, key in table": ({}, '[database]\ndatabase_url = "postgresql://db/s"\npool_size = 7'),
    "environment over file": (
        {"SIGNOFF_DATABASE_URL": "postgresql://env/s", "SIGNOFF_DATABASE_POOL_SIZE": "20"},
        'database_url = "sqlite:///file.db"\n[database]\npool_size = 3',
    ),
    "environment over table": (
        {"SIGNOFF_SQLITE_SYNCHRONOUS": "FULL"},
        '[database]\nurl = "sqlite:///t.db"\nsynchronous = "OFF"',
    ),
    "other sections": ({}, 'agents = ["x:agent"]\n[policies.default]\napprovers = ["U0BOB"]'),
}


SLACK_CASES = {
    "defaults": ({}, ""),
    "environment": (
        {
            "SLACK_BOT_TOKEN": "xoxb-env",
            "SLACK_API_URL": "http://127.0.0.1:9/api/",
            "SIGNOFF_SLACK_READERS": "U0AMY, C0OPS",
            "SIGNOFF_PAGE_REMIND_EVERY": "2h",
            "SIGNOFF_HOME_PUBLISH_PER_MINUTE": "12.5",
        },
        "",
    ),
    "file, top level": (
        {},
        'slack_bot_token = "xoxb-file"\napprovals_channel = "C0APPROVE"\n'
        'page_resolvers = ["U0ONE", "U0TWO"]',
    ),
    "file, its table": ({}, '[slack]\nbot_token = "xoxb-t"\nreaders = ["S0GROUP"]'),
    "environment over file": (
        {"SLACK_BOT_TOKEN": "xoxb-env", "SIGNOFF_PAGE_RESOLVERS": "U0ENV"},
        'slack_bot_token = "xoxb-file"\n[slack]\npage_resolvers = ["U0FILE"]',
    ),
}
"""Slack's section, read alone to name people: text, durations, numbers and the
comma-separated lists the environment gives as one string."""
VARIABLES = {"SIGNOFF_CONFIG"} | {
    v for env, _ in [*CASES.values(), *SLACK_CASES.values()] for v in env
}


@pytest.fixture(autouse=True)
def no_settings_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in VARIABLES | {"SIGNOFF_DATABASE_POOL_SIZE", "SIGNOFF_SQLITE_SYNCHRONOUS"}:
        monkeypatch.delenv(variable, raising=False)
        monkeypatch.delenv(variable.lower(), raising=False)


def _case(
    name: str,
    folder: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    named: bool,
    cases: dict[str, tuple[dict[str, str], str]] = CASES,
) -> str | None:
    """The case's environment set and its file written; the path to pass, if `named`."""
    env, text = cases[name]
    for variable, value in env.items():
        monkeypatch.setenv(variable, value)
    file = folder / ("custom.toml" if named else "signoff.toml")
    file.write_text(textwrap.dedent(text), "utf-8")
    monkeypatch.chdir(folder)
    return str(file) if named else None


@pytest.mark.parametrize("named", [False, True], ids=["signoff.toml", "--config"])
@pytest.mark.parametrize("name", CASES)
def test_the_database_section_alone_is_the_full_settings_database(
    name: str, named: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _case(name, tmp_path, monkeypatch, named=named)

    alone = database_settings(path)

    assert isinstance(alone, DatabaseSettings)
    assert alone == load_settings(path).database == database_of(path)


@pytest.mark.parametrize("named", [False, True], ids=["signoff.toml", "--config"])
@pytest.mark.parametrize("name", SLACK_CASES)
def test_the_slack_section_alone_is_the_full_settings_slack(
    name: str, named: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _case(name, tmp_path, monkeypatch, named=named, cases=SLACK_CASES)

    alone = section_settings(path, "slack", SlackSettings)

    assert isinstance(alone, SlackSettings)
    assert alone == load_settings(path).slack
    assert name == "defaults" or alone != SlackSettings()  # the case did set something


def test_signoff_config_names_the_file_for_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file = tmp_path / "elsewhere.toml"
    file.write_text('database_url = "sqlite:///named.db"\n', "utf-8")
    monkeypatch.setenv("SIGNOFF_CONFIG", str(file))

    alone = database_settings()

    assert alone is not None
    assert alone.url == "sqlite:///named.db" == load_settings().database.url


@pytest.mark.parametrize(
    "text",
    ['[database]\nsynchronous = "SOMETIMES"', "database_pool_size = 0", 'database = "x"'],
)
def test_a_mistake_in_the_database_settings_is_refused_as_the_full_settings_refuse_it(
    text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "signoff.toml").write_text(text + "\n", "utf-8")
    with pytest.raises(ConfigError) as full:
        load_settings()

    with pytest.raises(ConfigError) as alone:
        database_of(None)

    assert database_settings() is None
    assert str(alone.value) == str(full.value)
    assert "signoff.toml:" in str(alone.value)


def test_a_named_file_that_is_missing_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such configuration file"):
        database_of(str(tmp_path / "nowhere.toml"))


READS = {
    "environment": (True, ""),
    "file, its table": (False, '[database]\nurl = "{url}"'),
    "environment over file": (True, 'database_url = "sqlite:///{folder}/elsewhere.db"'),
}
"""Where `runs list` is told its database: the environment (the test's database), the
file's table, or both (the file names a database that does not exist)."""


@pytest.mark.parametrize("source", READS)
def test_runs_list_reads_the_database_the_full_settings_name(
    source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli = fresh_cli(tmp_path, monkeypatch)
    parked(cli)
    from_env, text = READS[source]
    url = cli.env.pop("SIGNOFF_DATABASE_URL")
    (tmp_path / "signoff.toml").write_text(text.format(url=url, folder=tmp_path) + "\n", "utf-8")
    if from_env:
        cli.env["SIGNOFF_DATABASE_URL"] = url
        monkeypatch.setenv("SIGNOFF_DATABASE_URL", url)
    monkeypatch.chdir(tmp_path)
    full = database_label(load_settings().database.url)

    listed = cli("-v", "runs", "list")

    assert listed.code == 0, listed.err
    assert f"database: {full}" in listed.err.splitlines()
    assert full == str(cli.db.resolve())
    assert "r1" in listed.out
