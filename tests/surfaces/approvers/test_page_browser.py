"""The approvals page in headless Chromium, through a real OpenID Connect sign-in: bob signs
in on the provider's own form, sees the refund waiting with its card's content, approves it,
declines a second with a reason, and finds both among his recent decisions; the runs go on.
Nothing the page loads comes from anywhere but the server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.approvers_support import BOB
from support.approvers_support import BOB_MAIL
from support.approvers_support import PageServer
from support.approvers_support import browser_sign_in
from support.approvers_support import page_server
from support.approvers_support import wait_until
from support.dev_page import wait_for
from support.dev_support import NEEDS_CHROMIUM
from support.dev_support import chromium
from support.dev_support import requested_urls

pytestmark = [NEEDS_CHROMIUM, pytest.mark.slow]

POLICY = """
[policies.tools.issue_refund]
approvers = ["U0BOB"]
"""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[PageServer]:
    with page_server(tmp_path, POLICY) as server:
        yield server


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    driver = chromium(tmp_path)
    yield driver
    driver.quit()


def test_sign_in_approve_and_decline_in_the_browser(
    server: PageServer, browser: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    wait = wait_for(browser)
    server.start_run("run-one")
    server.start_run("run-two")
    first, second = server.pending("run-one"), server.pending("run-two")

    browser_sign_in(browser, server.base, BOB_MAIL)
    requested_urls(browser)  # the provider's own page is not ours: only what ours load counts
    assert browser.find_element(By.ID, "person").text == BOB
    card = browser.find_element(By.CSS_SELECTOR, f"[data-approval='{first['id']}']")
    assert "Refund $" in card.text
    assert "on order 4471" in card.text
    assert "Who may decide: U0BOB" in card.text
    assert "Refund order 4471" in card.text  # the run's task, as context
    browser.save_screenshot(str(tmp_path / "1-pending.png"))

    card.find_element(By.NAME, "approve").click()
    wait.until(lambda d: "Approved by U0BOB" in d.find_element(By.ID, "notice").text)
    wait_until(lambda: server.get("/v1/runs/run-one")[1]["status"] == "done")
    assert server.approval(first["id"])["decided_by"] == BOB

    browser.get(server.base + "/approvals")
    card = wait.until(
        lambda d: d.find_element(By.CSS_SELECTOR, f"#pending [data-approval='{second['id']}']")
    )
    card.find_element(By.NAME, "reason").send_keys("The customer has store credit")
    card.find_element(By.NAME, "decline").click()
    wait.until(lambda d: "Declined by U0BOB" in d.find_element(By.ID, "notice").text)
    declined = server.approval(second["id"])
    assert declined["state"] == "declined"
    assert declined["reason"] == "The customer has store credit"
    wait_until(lambda: server.get("/v1/runs/run-two")[1]["status"] in ("done", "failed"))

    browser.get(server.base + "/approvals")
    recent = wait.until(lambda d: d.find_element(By.ID, "recent"))
    assert first["id"] in recent.get_attribute("innerHTML")
    assert second["id"] in recent.get_attribute("innerHTML")
    assert not browser.find_elements(By.CSS_SELECTOR, "#pending [data-approval]")
    browser.save_screenshot(str(tmp_path / "2-decided.png"))
    web = [u for u in requested_urls(browser) if u.startswith(("http:", "https:"))]
    assert web
    assert [u for u in web if not u.startswith(server.base)] == []
