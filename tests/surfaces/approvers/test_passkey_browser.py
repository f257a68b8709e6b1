"""Step-up with a passkey, in headless Chromium with a virtual authenticator (the DevTools
WebAuthn domain), through a real OpenID Connect sign-in: under a policy with
`step_up = "passkey"` a plain approval (the API's, a Slack click's) is refused; ann and bob
each register a passkey on the page; bob approves with his; an assertion sent again is
refused, for the same approval and for another; an assertion by ann's passkey in bob's
session is refused. Each refusal changes nothing."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.approvers_support import ANN_MAIL
from support.approvers_support import BOB
from support.approvers_support import BOB_MAIL
from support.approvers_support import PageServer
from support.approvers_support import ask
from support.approvers_support import browser_sign_in
from support.approvers_support import page_server
from support.approvers_support import wait_until
from support.dev_page import wait_for
from support.dev_support import NEEDS_CHROMIUM
from support.dev_support import chromium

pytestmark = [NEEDS_CHROMIUM, pytest.mark.slow]

POLICY = """
[policies.tools.issue_refund]
approvers = ["U0BOB", "U0ANN"]
step_up = "passkey"
"""

TWICE = """
const [url, otherUrl, done] = arguments;
(async () => {
  const p = window.signoffPasskey;
  const options = await p.post(url + "/options");
  const credential = await p.get(options.options);
  const first = await p.post(url, {credential});
  const again = await p.post(url, {credential});
  const elsewhere = await p.post(otherUrl, {credential});
  return [first, again, elsewhere];
})().then(done, (error) => done(String(error)));
"""

SOMEONE_ELSES = """
const [url, theirs, done] = arguments;
(async () => {
  const p = window.signoffPasskey;
  const options = await p.post(url + "/options");
  options.options.allowCredentials = [{type: "public-key", id: theirs}];
  const credential = await p.get(options.options);
  return await p.post(url, {credential});
})().then(done, (error) => done(String(error)));
"""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[PageServer]:
    with page_server(tmp_path, POLICY, host="localhost") as server:
        yield server


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    driver = chromium(tmp_path)
    driver.execute_cdp_cmd("WebAuthn.enable", {})
    driver.execute_cdp_cmd(
        "WebAuthn.addVirtualAuthenticator",
        {
            "options": {
                "protocol": "ctap2",
                "transport": "internal",
                "hasResidentKey": True,
                "hasUserVerification": True,
                "isUserVerified": True,
                "automaticPresenceSimulation": True,
            }
        },
    )
    yield driver
    driver.quit()


def big_refund(n: int) -> dict[str, object]:
    return {"order_id": f"o{n}", "amount_cents": 5_000_000 + n}


def register(browser: Any, base: str) -> None:
    from selenium.webdriver.common.by import By

    wait = wait_for(browser)
    browser.get(base + "/approvals/passkeys")
    wait.until(lambda d: d.find_element(By.ID, "register")).click()
    said = wait.until(lambda d: d.find_element(By.ID, "passkey-said").text and d)
    assert "registered" in said.find_element(By.ID, "passkey-said").text


def passkey_of(folder: Path, person: str) -> str:
    with sqlite3.connect(folder / "signoff.db") as db:
        (found,) = db.execute("SELECT id FROM passkeys WHERE person = ?", (person,)).fetchall()
    return str(found[0])


def test_register_approve_replay_and_someone_elses_passkey(
    server: PageServer, browser: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    wait = wait_for(browser)
    first, second, third = (ask(server, big_refund(n), "U0REQ") for n in (1, 2, 3))

    # without the passkey, no door approves it
    status, said = server.api(
        "POST", f"/v1/approvals/{first}/decision", {"decision": "approved", "by": BOB}
    )
    assert status >= 400, said
    assert "passkey" in str(said)
    assert server.approval(first)["state"] == "pending"

    browser_sign_in(browser, server.base, ANN_MAIL)
    register(browser, server.base)
    browser.find_element(By.ID, "sign-out").click()
    # the sign-out must land before the next page is asked for, or that page still
    # carries ann's session and never offers the provider's form
    wait.until(lambda d: "/approvals/signin" in d.current_url)
    browser_sign_in(browser, server.base, BOB_MAIL)
    register(browser, server.base)
    anns = passkey_of(tmp_path, "U0ANN")
    assert anns != passkey_of(tmp_path, BOB)

    # bob approves with his passkey, on the approval's page
    browser.get(f"{server.base}/approvals/{first}")
    wait.until(lambda d: d.find_element(By.NAME, "approve")).click()
    wait.until(lambda d: "Approved by U0BOB" in d.find_element(By.ID, "passkey-said").text)
    decided = server.approval(first)
    assert (decided["state"], decided["decided_by"]) == ("approved", BOB)

    # the same assertion sent again is refused: for the same approval, and for another
    browser.get(f"{server.base}/approvals/{second}")
    wait.until(lambda d: d.find_element(By.NAME, "approve"))
    url, other = f"/approvals/{second}/passkey", f"/approvals/{third}/passkey"
    first_use, again, elsewhere = browser.execute_async_script(TWICE, url, other)
    assert first_use["status"] == 200, first_use
    assert again["status"] == 400
    assert "used already" in again["message"]
    assert elsewhere["status"] == 400
    _, trail = server.get(f"/v1/audit?approval_id={second}")
    assert [e["action"] for e in trail["events"]].count("approval_approved") == 1
    assert server.approval(third)["state"] == "pending"

    # ann's passkey, in bob's session, is not his
    browser.get(f"{server.base}/approvals/{third}")
    wait.until(lambda d: d.find_element(By.NAME, "approve"))
    theirs = browser.execute_async_script(SOMEONE_ELSES, other, anns)
    assert theirs["status"] == 400, theirs
    assert "not one of yours" in theirs["message"]
    wait_until(lambda: server.approval(third)["state"] == "pending")
    assert server.approval(third)["decided_by"] is None
