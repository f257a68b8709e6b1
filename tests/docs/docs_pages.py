"""The README and docs/*.md as the tests read them: fenced blocks with the note above each,
inline code, links and headings; and a reader who types a page's shell commands in order.

A shell block that cannot run on a test machine says so in the paragraph just above it:
"(Not run by the tests: <the reason>.)". Every other shell block is typed by `Reader`."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
import tomllib
import urllib.request
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

from support.helpers import clean_env
from support.helpers import free_port
from support.helpers import run_text

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = (README, *sorted((ROOT / "docs").glob("*.md")))
SHELL = {"bash", "sh", "console"}
LANGUAGES = SHELL | {"python", "toml", "text", "json"}
NOT_RUN = re.compile(r"^\(Not run by the tests: (?P<reason>\S.*)\)$", re.DOTALL)
FENCE = re.compile(r"^(?P<indent> *)```(?P<language>\S*)\s*$")
LONG_RUNNING = (["signoff", "dev"], ["signoff", "serve"])
CI_TEST_LINE = re.compile(r"^pip install .*&& python -m pytest")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    language: str
    body: str
    note: str  # the paragraph just above the fence, joined into one line

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def not_run_reason(self) -> str | None:
        found = NOT_RUN.match(self.note)
        return found["reason"] if found else None


def blocks(page: Path) -> list[Block]:
    lines = page.read_text("utf-8").splitlines()
    found: list[Block] = []
    number = 0
    while number < len(lines):
        fence = FENCE.match(lines[number])
        if not fence:
            number += 1
            continue
        indent, end = len(fence["indent"]), number + 1
        while not lines[end].strip().startswith("```"):
            end += 1
        body = "\n".join(line[indent:] for line in lines[number + 1 : end]) + "\n"
        found.append(Block(page, number + 1, fence["language"], body, _note(lines, number)))
        number = end + 1
    return found


def _note(lines: list[str], fence: int) -> str:
    above: list[str] = []
    for line in reversed(lines[:fence]):
        if not line.strip():
            if above:
                break
            continue
        above.insert(0, line.strip())
    return " ".join(above)


def prose(page: Path) -> str:
    """The page without its fenced blocks."""
    text = page.read_text("utf-8")
    return re.sub(r"^ *```.*?^ *```", "", text, flags=re.DOTALL | re.MULTILINE)


def inline_code(page: Path) -> list[str]:
    """Inline code spans, a span broken over lines joined into one."""
    spans = re.findall(r"`([^`]+)`", prose(page))
    return [" ".join(span.split()) for span in spans if "\n\n" not in span]


def links(page: Path) -> list[str]:
    return re.findall(r"\]\(([^)\s]+)\)", prose(page))


def anchors(page: Path) -> set[str]:
    """GitHub's ids for the page's headings."""
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6} (.+)$", prose(page), re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


def commands(block: Block) -> list[tuple[str, str | None]]:
    """Each command of a shell block (continuation lines joined, comments dropped), with the
    output a `console` block shows after it (None for other blocks)."""
    found: list[tuple[str, str | None]] = []
    pending = ""
    for line in block.body.splitlines():
        if block.language == "console":
            if line.startswith("$ ") or pending:
                pending += line.removeprefix("$ ")
                if not pending.endswith("\\"):
                    found.append((pending, ""))
                    pending = ""
                else:
                    pending = pending[:-1]
            elif found:
                command, output = found[-1]
                found[-1] = (command, f"{output}{line}\n")
            continue
        stripped = line.rstrip()
        if not pending and (not stripped or stripped.lstrip().startswith("#")):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1]
            continue
        found.append((pending + stripped, None))
        pending = ""
    return found


def extras() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    return set(project["optional-dependencies"])


def ci_test_command() -> str:
    """The line `.ci/run` takes from README.md and runs: the first that looks like one."""
    return next(line for line in README.read_text("utf-8").splitlines() if CI_TEST_LINE.match(line))


@dataclass
class Background:
    command: str
    typed: list[str]
    process: subprocess.Popen[bytes]
    log: Path
    stop_with: signal.Signals

    def output(self) -> str:
        return self.log.read_text("utf-8", "replace")


@dataclass
class Reader:
    """Types shell commands in order, in one folder, as a reader at a fresh clone would:
    `signoff dev`, `signoff serve` and a server that writes a `--ready-file` (the fake Slack)
    stay up for the commands after them (`signoff dev` and `serve` on a free port, put in
    place of their default one)."""

    folder: Path
    env: dict[str, str] = field(default_factory=dict)
    ports: dict[str, str] = field(default_factory=dict)
    background: list[Background] = field(default_factory=list)
    pages_seen: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.env = clean_env("SIGNOFF_", "SLACK_")
        self.env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{self.env.get('PATH', '')}"
        self.env["PYTHONPATH"] = str(ROOT)
        (self.folder / "examples").symlink_to(ROOT / "examples")  # what a clone has beside it
        self.fresh_env = dict(self.env)

    def turn_page(self) -> None:
        """A new page is typed in a new terminal: what an earlier page exported is gone."""
        self.env = dict(self.fresh_env)

    def type(self, command: str, expected: str | None, where: str) -> None:
        for default, actual in self.ports.items():
            command = command.replace(default, actual)
        command = self._installed(command, where)
        if not command:
            return
        words = shlex.split(command, comments=True)
        if words[0] == "export":
            self.env.update(word.split("=", 1) for word in words[1:])  # type: ignore[misc]
            return
        program = [w for w in words if not re.match(r"^[A-Z_]+=", w)]
        if program[:2] in LONG_RUNNING or (
            program[:2] == ["python", "-m"] and "--ready-file" in program
        ):
            self._start(words, where)
            return
        self._run(command, expected, where)

    def _installed(self, command: str, where: str) -> str:
        """`pip install X && rest`: X's extras must exist (`.ci/run` installs); rest runs."""
        if not command.startswith("pip install"):
            return command
        install, _, rest = command.partition("&&")
        for named in re.findall(r"\[([\w,-]+)\]", install):
            missing = set(named.split(",")) - extras()
            assert not missing, f"{where}: no such extra in pyproject.toml: {missing}"
        rest = rest.strip()
        if rest == "python -m pytest":  # the suite itself: `.ci/run` runs this very line
            assert command == ci_test_command(), f"{where}: not the line .ci/run runs"
            return ""
        return rest

    def _run(self, command: str, expected: str | None, where: str) -> None:
        done = run_text(
            ["bash", "-o", "pipefail", "-c", command], cwd=self.folder, env=self.env, timeout=180
        )
        assert done.returncode == 0, f"{where}: {command}\n{done.stdout}\n{done.stderr}"
        if expected is not None:
            got = [line.rstrip() for line in done.stdout.strip().splitlines()]
            assert got == [line.rstrip() for line in expected.strip().splitlines()], where

    def _start(self, words: list[str], where: str) -> None:
        if any(started.typed == words for started in self.background):
            return  # already up, from an earlier page
        assignments = [w for w in words if re.match(r"^[A-Z_]+=", w)]
        program = words[len(assignments) :]
        port = str(free_port())
        if program[1] == "dev":
            self.ports["127.0.0.1:8000"] = f"127.0.0.1:{port}"
            program = [*program, "--port", port]
        elif program[1] == "serve":
            self.ports["127.0.0.1:3000"] = f"127.0.0.1:{port}"
            assignments.append(f"SIGNOFF_PORT={port}")
        command = " ".join([*assignments, "exec", shlex.join(program)])
        log = self.folder / f"background-{len(self.background)}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                ["bash", "-c", command],
                cwd=self.folder,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        stop_with = signal.SIGINT if program[1] == "dev" else signal.SIGTERM
        started = Background(command, words, process, log, stop_with)
        self.background.append(started)
        self._wait_until_up(started, program, port, where)

    def _wait_until_up(
        self, started: Background, program: list[str], port: str, where: str
    ) -> None:
        deadline = time.monotonic() + 60
        while not self._up(program, port):
            assert started.process.poll() is None, f"{where}: {started.command}\n{started.output()}"
            assert time.monotonic() < deadline, f"{where}: not up\n{started.output()}"
            time.sleep(0.1)

    def _up(self, program: list[str], port: str) -> bool:
        if program[1] == "-m":  # the fake Slack writes its URL to --ready-file
            ready = self.folder / program[program.index("--ready-file") + 1]
            return ready.exists() and ready.read_text().strip().endswith("/api/")
        url = f"http://127.0.0.1:{port}" + ("/" if program[1] == "dev" else "/healthz")
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                self.pages_seen[url] = answer.read().decode()
                return True
        except OSError:
            return False

    def stop(self) -> list[tuple[Background, int]]:
        """Stop what still runs, last started first; each with its exit status."""
        stopped = []
        for started in reversed(self.background):
            assert started.process.poll() is None, f"{started.command} died\n{started.output()}"
            started.process.send_signal(started.stop_with)
            try:
                stopped.append((started, started.process.wait(timeout=20)))
            except subprocess.TimeoutExpired:
                started.process.kill()
                stopped.append((started, started.process.wait()))
        self.background.clear()
        return stopped
