"""`signoff dev` on a project of one's own, as a real process: the signoff.toml of the folder
it starts in (or the one `--config` names) gives its agents and policies, which it names on
start-up and on the page; a run of the project's agent reaches its approval card in the
channel its policy names, the approver its user group names decides it, and the result field
its policy marks sensitive is masked in the console and the step log. A configuration
that cannot load is one line and exit code 2, with nothing started."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import textwrap
from pathlib import Path
from typing import Any

from support.dev_support import APPROVER
from support.dev_support import NEEDS_CHROMIUM
from support.dev_support import REQUESTER
from support.dev_support import DevServer
from support.dev_support import chromium
from support.dev_support import click
from support.helpers import SIGNOFF
from support.helpers import clean_env
from support.helpers import free_port
from support.helpers import run_text

AGENT = """
from runtime import Agent, ScriptedModel, tool, tool_call


@tool(description="Send a gift card.", effect="irreversible")
async def send_gift_card(email: str, cents: int) -> dict:
    return {"sent_to": email, "code": "GIFT-7731"}


agent = Agent(
    "gift-agent",
    model=ScriptedModel(
        [tool_call("send_gift_card", {"email": "a@example.com", "cents": 500}), "Sent."]
    ),
    tools=[send_gift_card],
)
"""

CONFIG = """
agents = ["gift_shop:agent"]

[policies.default]
approvers = ["S0GIFTS"]
channel = "C0GIFTS"
escalate_to = "U0LEAD"

[policies.tools.send_gift_card]
sensitive_results = ["code"]
"""


def write_project(folder: Path, config: str = CONFIG) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "gift_shop.py").write_text(AGENT)
    path = folder / "signoff.toml"
    path.write_text(textwrap.dedent(config))
    return path


def _cards(dev: DevServer, channel: str, run_id: str) -> list[dict[str, Any]]:
    status, workspace = dev.get(f"/dev/api/workspace?user={APPROVER}")
    assert status == 200
    found = next((c for c in workspace["channels"] if c["id"] == channel), None)
    messages = found["messages"] if found else []
    return [m for m in messages if run_id in json.dumps(m["blocks"])]


def test_the_folders_project_runs_and_its_card_reaches_its_channel(tmp_path: Path) -> None:
    config = write_project(tmp_path)
    dev = DevServer(tmp_path)
    try:
        told = dev.wait_until(lambda: "policy default" in dev.log.read_text() and dev.log)
        lines = told.read_text()
        assert f"signoff dev: project {config.resolve()}" in lines
        assert "signoff dev: agent gift-agent (gift_shop:agent)" in lines
        assert "signoff dev: policy default: 1 approval from S0GIFTS in C0GIFTS" in lines
        assert "the demo" not in lines

        status, session = dev.get("/dev/api/session")
        assert status == 200
        assert session["project"]["config"] == str(config.resolve())
        assert session["project"]["agents"] == [{"name": "gift-agent", "task": "Try gift-agent"}]
        assert "agent gift-agent (gift_shop:agent)" in session["project"]["loaded"]
        # the people its policy names can be played; the demo's refund agent is not loaded
        assert "U0LEAD" in {person["id"] for person in session["people"]}
        assert dev.post("/dev/api/refund", {"user": REQUESTER})[0] == 404

        body = {"user": REQUESTER, "agent": "gift-agent", "task": "Send Ada a gift card"}
        status, started = dev.post("/dev/api/start", body)
        assert status == 201, started
        run_id = started["run_id"]
        cards = dev.wait_until(lambda: _cards(dev, "C0GIFTS", run_id))
        card = cards[0]
        assert "send_gift_card" in json.dumps(card["blocks"])
        assert not _cards(dev, "C0APPROVALS", run_id)

        # bob is the member of the user group the policy names, so his click decides it
        assert click(dev, card, "approve", channel="C0GIFTS")[0] == 200
        token = session["token"]
        auth = {"Authorization": f"Bearer {token}"}

        def finished() -> Any:
            status, shown = dev.get(f"/v1/console/runs/{run_id}", auth)
            return status == 200 and shown["run"]["status"] == "done" and shown

        shown = dev.wait_until(finished)
        assert shown["run"]["agent"] == "gift-agent"
        # the result field its policy marks sensitive is masked on the page and in the log
        assert "GIFT-7731" not in json.dumps(shown)
        returned = dev.wait_until(lambda: "send_gift_card returned" in dev.log.read_text())
        assert returned
        assert "GIFT-7731" not in dev.log.read_text()
        assert '"code":"[sensitive]"' in dev.log.read_text()
    finally:
        assert dev.interrupt() == 0


def test_config_names_a_project_in_another_folder(tmp_path: Path) -> None:
    config = write_project(tmp_path / "shop")
    here = tmp_path / "elsewhere"
    here.mkdir()
    dev = DevServer(here, args=["--config", str(config)])
    try:
        status, session = dev.get("/dev/api/session")
        assert status == 200
        assert session["project"]["config"] == str(config.resolve())
        assert [a["name"] for a in session["project"]["agents"]] == ["gift-agent"]
    finally:
        assert dev.interrupt() == 0


def test_without_a_signoff_toml_it_runs_the_demo_and_says_so(tmp_path: Path) -> None:
    dev = DevServer(tmp_path)
    try:
        status, session = dev.get("/dev/api/session")
        assert status == 200
        assert session["project"]["config"] is None
        assert [a["name"] for a in session["project"]["agents"]] == ["refund-agent"]
        assert "signoff dev: no signoff.toml here: the demo" in dev.log.read_text()
    finally:
        assert dev.interrupt() == 0


@NEEDS_CHROMIUM
def test_the_page_names_the_project_and_starts_its_agent(tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    config = write_project(tmp_path)
    dev = DevServer(tmp_path)
    browser = chromium(tmp_path)
    try:
        wait = WebDriverWait(browser, 20)
        browser.get(dev.base + "/")
        wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready"))
        assert browser.find_element(By.ID, "project").text == f"Project: {config.resolve()}"
        assert not browser.find_element(By.ID, "start-refund").is_displayed()
        start = browser.find_element(By.CSS_SELECTOR, "button[data-agent='gift-agent']")
        assert start.text == "Start gift-agent"
        browser.find_element(By.ID, "task").send_keys("Send Ada a gift card")
        start.click()
        notice = wait.until(lambda d: d.find_element(By.ID, "notice").text)
        found = re.search(r"run (run_\w+) of gift-agent", notice)
        assert found, notice
        assert dev.wait_until(lambda: _cards(dev, "C0GIFTS", found[1]))
    finally:
        browser.quit()
        assert dev.interrupt() == 0


def _dev(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    port = free_port()
    return subprocess.run(
        [SIGNOFF, "dev", "--port", str(port), *args],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_missing_or_bad_config_is_one_line_and_exit_code_2(tmp_path: Path) -> None:
    missing = _dev(tmp_path, "--config", "nowhere.toml")
    assert missing.returncode == 2
    assert missing.stderr == "error: nowhere.toml: no such configuration file\n"

    write_project(tmp_path, CONFIG + "\n[policies.tools.other]\ntimeout = 'soon'\n")
    bad = _dev(tmp_path)
    assert bad.returncode == 2
    assert bad.stderr.startswith("error: signoff.toml:")
    assert "timeout" in bad.stderr
    assert bad.stderr.count("\n") == 1

    write_project(tmp_path, CONFIG.replace("gift_shop:agent", "no_such_module:agent"))
    unimportable = _dev(tmp_path)
    assert unimportable.returncode == 2
    assert "cannot import 'no_such_module'" in unimportable.stderr
    assert unimportable.stderr.count("\n") == 1

    # nothing was started: no database, no secrets, no world
    assert not list(tmp_path.glob("signoff-dev*"))
    assert missing.stdout == bad.stdout == unimportable.stdout == ""


CLI_CONFIG = """
agents = ["gift_shop:agent"]

[policies.default]
approvers = ["U0BOB"]
"""


def test_the_export_line_dev_prints_is_enough_for_the_cli(tmp_path: Path) -> None:
    """The CLI loads the project `signoff dev` runs: its agent module beside signoff.toml
    imports without PYTHONPATH, in the project's folder, with only the printed line set."""
    write_project(tmp_path, CLI_CONFIG)
    dev = DevServer(tmp_path)
    try:
        line = dev.wait_until(lambda: _export_line(dev.log.read_text()))
    finally:
        assert dev.interrupt() == 0
    env = clean_env("SIGNOFF_", "SLACK_", "PYTHONPATH") | exported(line)

    def cli(*argv: str) -> str:
        done = run_text([SIGNOFF, *argv], cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
        return done.stdout

    checked = json.loads(
        cli("policy", "check", "send_gift_card", '{"email": "a@b", "cents": 5}', "--json")
    )
    assert checked["action"] == "ask"
    started = json.loads(
        cli("runs", "start", "gift-agent", "Send a gift", "--requested-by", REQUESTER, "--json")
    )
    assert started["status"] == "waiting_approval"
    [pending] = json.loads(cli("approvals", "list", "--json"))
    cli("approvals", "decide", pending["id"], "approve", "--by", APPROVER)
    assert json.loads(cli("runs", "show", started["id"], "--json"))["status"] == "done"


def _export_line(log: str) -> str | None:
    return next((ln for ln in log.splitlines() if ln.startswith("export SIGNOFF_DATABASE")), None)


def exported(line: str) -> dict[str, str]:
    """The variables an `export A=1 B='x y'` line sets."""
    return dict(word.split("=", 1) for word in shlex.split(line.removeprefix("export ")))
