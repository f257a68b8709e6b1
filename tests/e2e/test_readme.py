"""README cannot drift from the code: its Python runs, its configuration loads, its demo
command works offline, and every `signoff ...` command it names exists."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from bot.settings import load_settings

from .helpers import SIGNOFF, free_port

ROOT = Path(__file__).parent.parent.parent
README = (ROOT / "README.md").read_text("utf-8")
BLOCKS = re.findall(r"^```(\w*)\n(.*?)^```", README, re.DOTALL | re.MULTILINE)


def blocks(language: str) -> list[str]:
    return [body for lang, body in BLOCKS if lang == language]


def clean_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SIGNOFF_", "SLACK_"))}
    return env | {"SIGNOFF_WORLD_DB": str(tmp_path / "world.db"), "PYTHONPATH": str(ROOT)}


def test_the_python_in_readme_runs_and_prints_what_its_comments_say(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    program, _hosted = blocks("python")  # the quickstart; the hosted agent is checked below
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "readme"}

    exec(compile(program, "README.md", "exec"), namespace)
    asyncio.run(namespace["main"]())  # type: ignore[operator]

    assert capsys.readouterr().out.split() == ["waiting_approval", "done"]


def test_the_hosted_agent_in_readme_is_the_example_that_the_tests_run() -> None:
    _quickstart, hosted = blocks("python")
    example = (ROOT / "examples" / "hosted_refund_agent.py").read_text("utf-8")

    assert example.endswith(hosted)
    assert len(example.splitlines()) < 30


def test_the_model_configuration_in_readme_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    [config] = [b for b in blocks("") if b.startswith("# in signoff.toml: examples/refund")]
    for name in list(os.environ):
        if name.startswith(("SIGNOFF_", "SLACK_")):
            monkeypatch.delenv(name)
    path = tmp_path / "signoff.toml"
    path.write_text(config, "utf-8")

    settings = load_settings(path)

    assert settings.runtime.models["refund-agent"].model in settings.runtime.prices


def test_the_configuration_in_readme_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("SIGNOFF_", "SLACK_")):
            monkeypatch.delenv(name)
    for number, config in enumerate(blocks("toml")):
        path = tmp_path / f"signoff-{number}.toml"
        path.write_text(config, "utf-8")

        settings = load_settings(path)

        if config.lstrip().startswith("[learned_rules]"):  # a fragment: who may write rules
            assert settings.runtime.learned_rules.writers
        else:
            assert settings.runtime.policies.for_tool("issue_refund")[1].required_approvals == 2


def test_the_first_command_of_readme_brings_the_page_up_offline(tmp_path: Path) -> None:
    [shell, *_] = blocks("bash")
    first = shell.splitlines()[0]
    command = first.split("&&", 1)[1].strip()  # the install half needs no test
    assert command == "signoff dev"
    port = free_port()  # the README's default, 8000, may be taken on a test machine
    log = tmp_path / "dev.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [SIGNOFF, "dev", "--port", str(port)],
            cwd=tmp_path,  # a fresh folder: no database, no configuration
            env=clean_env(tmp_path),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        url = f"http://127.0.0.1:{port}/"
        deadline = time.monotonic() + 30
        while f"open {url}" not in log.read_text():
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        page = _get_when_up(url)
        assert "Refund order 4471 for $25" in page
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=15) == 0, log.read_text()
    assert (tmp_path / "signoff-dev.db").exists()


def test_the_terminal_demo_of_readme_runs_offline(tmp_path: Path) -> None:
    [command] = [
        line.split("&&", 1)[1].strip()
        for body in blocks("bash")
        for line in body.splitlines()
        if "examples.demo" in line
    ]
    args = re.findall(r'"[^"]*"|\S+', command.removeprefix("python "))
    args = [a.strip('"') for a in args]

    result = subprocess.run(
        [sys.executable, *args],
        cwd=tmp_path,
        env=clean_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 0, result.stderr
    assert "done" in result.stdout


def _get_when_up(url: str) -> str:
    deadline = time.monotonic() + 15
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return str(response.read().decode())
        except OSError:
            assert time.monotonic() < deadline, f"{url} did not answer"
            time.sleep(0.1)
GROUPS = {"serve", "dev", "runs", "approvals", "pages", "db", "policy", "audit"}


def named_commands() -> set[tuple[str, ...]]:
    """Every `signoff a b` README names, with `a|b` alternatives spelled out."""
    found: set[tuple[str, ...]] = set()
    for text in re.findall(r"`signoff ([^`]*)`", README):
        words = [w for w in text.split() if re.fullmatch(r"[a-z|]+", w)][:2]
        if not words or words[0] not in GROUPS:
            continue
        if len(words) == 1 or words[0] in {"serve", "dev"}:
            found.add((words[0],))
            continue
        found.update((words[0], sub) for sub in words[1].split("|"))
    return found


@pytest.mark.parametrize("command", sorted(named_commands()), ids=" ".join)
def test_every_command_readme_names_exists(command: tuple[str, ...], tmp_path: Path) -> None:
    result = subprocess.run(
        [SIGNOFF, *command, "--help"],
        cwd=tmp_path,
        env=clean_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 0, f"signoff {' '.join(command)}: {result.stderr}"
