"""The `signoff dev` page in headless Chromium, against `signoff dev` as a real process: a
newcomer starts a refund, approves it on its card, declines another with a reason, and rolls
a finished run back from the console; and nothing the pages load comes from past 127.0.0.1.
Screenshots of each stage land in the test's temporary folder."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from support.dev_support import (
    APPROVER,
    CHROMEDRIVER,
    CHROMIUM,
    REQUESTER,
    DevServer,
    chromium,
    requested_urls,
)

pytestmark = pytest.mark.skipif(
    not (shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER)),
    reason="needs Debian's chromium and chromium-driver (.ci/run installs them)",
)
WAIT = 20
LOADED = "['navigation', 'resource'].flatMap(t => performance.getEntriesByType(t)).map(e => e.name)"


@pytest.fixture
def dev(tmp_path: Path) -> Iterator[DevServer]:
    server = DevServer(tmp_path)
    yield server
    assert server.interrupt() == 0, server.log.read_text()


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    driver = chromium(tmp_path)
    driver.implicitly_wait(0)
    yield driver
    driver.quit()


def test_refund_approved_declined_and_rolled_back_in_the_browser(
    dev: DevServer, browser: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import Select

    wait = _wait(browser)
    shot = _shots(browser, tmp_path)
    browser.get(dev.base + "/")
    wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "1")
    who = Select(browser.find_element(By.ID, "who"))

    # riley asks for a refund; the run parks and its card appears in #approvals
    who.select_by_value(REQUESTER)
    browser.find_element(By.ID, "start-refund").click()
    first = _run_id_of_notice(wait)
    card = wait.until(lambda d: _card(d, first))
    assert "Refund order 4471 for $25" in card.text
    assert "2500" in card.text
    shot("1-card")

    # bob approves: Slack's confirm dialog first, then the card is edited in place
    who.select_by_value(APPROVER)
    _click(wait, lambda d: _button(d, first, "approve"))
    wait.until(ec.visibility_of_element_located((By.ID, "overlay")))
    assert "Approve" in browser.find_element(By.ID, "dialog-title").text
    browser.find_element(By.ID, "dialog-ok").click()
    wait.until(lambda d: "Approved by" in _card_text(d, first))
    decided = _card(browser, first)
    assert "@bob" in decided.text
    assert not decided.find_elements(By.CSS_SELECTOR, "[data-action-id=approve]")
    shot("2-approved")

    # the console's timeline: the refund recorded once, completed, approved by bob
    _select_run(browser, wait, first, until_text="send_email")
    run = browser.find_element(By.ID, "run")
    wait.until(lambda d: "done" in d.find_element(By.ID, "run").text)
    refunds = run.find_elements(By.CSS_SELECTOR, ".step:not(.undone) [data-tool=issue_refund]")
    assert len(refunds) == 1
    assert "completed" in refunds[0].find_element(By.CSS_SELECTOR, ".effect-state").text
    assert f"approved by {APPROVER}" in refunds[0].text
    assert _payments(tmp_path, "refund") == [("refund", "4471", 2500)]
    shot("3-timeline")
    browser.switch_to.default_content()

    # riley asks again; bob declines with a reason, which the run's timeline shows
    who.select_by_value(REQUESTER)
    browser.find_element(By.ID, "start-refund").click()
    second = _run_id_of_notice(wait, not_this=first)
    wait.until(lambda d: _card(d, second))
    who.select_by_value(APPROVER)
    _click(wait, lambda d: _button(d, second, "decline"))
    reason_box = wait.until(
        ec.visibility_of_element_located((By.CSS_SELECTOR, "#dialog-body [data-block-id=reason]"))
    )
    reason_box.send_keys("The customer already has store credit")
    shot("4-decline-modal")
    browser.find_element(By.ID, "dialog-ok").click()
    wait.until(lambda d: "Declined by" in _card_text(d, second))
    assert "store credit" in _card(browser, second).text
    _select_run(browser, wait, second, until_text="store credit")
    declined = browser.find_element(By.CSS_SELECTOR, "#run [data-tool=issue_refund] .approval")
    assert declined.get_attribute("data-state") == "declined"
    assert "The customer already has store credit" in declined.text
    assert _payments(tmp_path, "refund") == [("refund", "4471", 2500)]
    shot("5-declined-timeline")

    # roll the finished first run back to step 1 (after the lookup, before the refund):
    # the console says what will happen first, then the refund is compensated and the
    # e-mail, which nothing can undo, pages a human
    _select_run(browser, wait, first, until_text="send_email")
    _click(wait, lambda d: d.find_element(By.CSS_SELECTOR, "#run .step[data-step='1'] .rollback"))
    panel = wait.until(ec.visibility_of_element_located((By.ID, "panel")))
    planned = panel.text
    assert "issue_refund (step 2) will be compensated by reverse_refund" in planned
    assert "send_email" in planned
    assert "will page a human" in planned
    shot("6-rollback-preview")
    browser.find_element(By.ID, "panel-ok").click()
    wait.until(
        lambda d: (
            "compensated"
            in d.find_element(By.CSS_SELECTOR, "#run .step.undone [data-tool=issue_refund]").text
        )
    )
    paged = wait.until(
        lambda d: d.find_element(By.CSS_SELECTOR, "#run .step.undone [data-tool=send_email] .page")
    )
    assert "PAGE" in paged.text
    assert _payments(tmp_path, "refund_reversal") == [("refund_reversal", "4471", -2500)]
    # the run reads as the CLI says it, in its header and in the list
    wait.until(lambda d: "rolled back" in d.find_element(By.CSS_SELECTOR, "#run h2").text)
    wait.until(
        lambda d: (
            "rolled back"
            in d.find_element(By.CSS_SELECTOR, f"tr[data-run-id='{first}'] .status").text
        )
    )
    shot("7-rolled-back")

    # the page reached #oncall, with its Acknowledge button
    browser.switch_to.default_content()
    _click(wait, lambda d: d.find_element(By.CSS_SELECTOR, "[data-channel=C0ONCALL]"))
    wait.until(lambda d: "send_email" in d.find_element(By.ID, "channel").text)
    _click(wait, lambda d: d.find_element(By.CSS_SELECTOR, "#channel [data-action-id=acknowledge]"))
    wait.until(lambda d: "Acknowledged" in d.find_element(By.ID, "channel").text)
    shot("8-oncall")


def test_the_pages_load_nothing_from_past_127_0_0_1(
    dev: DevServer, browser: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    wait = _wait(browser)
    browser.get(dev.base + "/")
    wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "1")
    browser.switch_to.frame("console")
    wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "1")
    in_frame = browser.execute_script(f"return {LOADED}")
    browser.switch_to.default_content()
    on_page = browser.execute_script(f"return {LOADED}.concat([location.href])")
    # alone, as `signoff serve` serves it to someone without a token yet: it asks for one
    browser.execute_script("sessionStorage.clear()")
    browser.get(dev.base + "/console/")
    wait.until(lambda d: d.find_element(By.ID, "login").is_displayed())
    alone = browser.execute_script(f"return {LOADED}")
    sent = requested_urls(browser)
    browser.save_screenshot(str(tmp_path / "console-login.png"))

    everything = [*in_frame, *on_page, *alone, *sent]
    # what goes over a network (not data:, nor the browser's own chrome:// pages) is ours
    web = [url for url in everything if url.startswith(("http:", "https:", "ws:", "wss:"))]
    assert any(url.endswith("/dev/static/blocks.js") for url in web)
    assert any(url.endswith("/console/static/console.js") for url in web)
    assert any("/v1/console/runs" in url for url in web)
    elsewhere = [url for url in web if not url.startswith(dev.base + "/")]
    assert elsewhere == []


def _click(wait: Any, find: Any) -> None:
    """Find and click in one go, again if the element was redrawn (or not there yet)."""

    def clicked(driver: Any) -> bool:
        found = find(driver)
        if found is None:
            return False
        found.click()
        return True

    wait.until(clicked)


def _wait(browser: Any) -> Any:
    """Waits that look again when the page redrew an element under them (news, polls)."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, WAIT, ignored_exceptions=(StaleElementReferenceException,))


def _shots(browser: Any, folder: Path) -> Any:
    def shot(name: str) -> None:  # the whole window, whichever frame the driver is in
        browser.save_screenshot(str(folder / f"{name}.png"))

    return shot


def _run_id_of_notice(wait: Any, not_this: str | None = None) -> str:
    from selenium.webdriver.common.by import By

    def found(driver: Any) -> str | None:
        words = driver.find_element(By.ID, "notice").text.split()
        ids = [w for w in words if w.startswith("run_") and w != not_this]
        return ids[0] if ids else None

    return str(wait.until(found))


def _card(driver: Any, run_id: str) -> Any:
    """The top-level card in the open channel that names this run, or None."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    driver.switch_to.default_content()
    try:
        for message in driver.find_elements(By.CSS_SELECTOR, "#channel > article.message"):
            blocks = message.find_element(By.CSS_SELECTOR, ":scope > .blocks")
            if run_id in blocks.text:
                return message
    except StaleElementReferenceException:
        return None
    return None


def _button(driver: Any, run_id: str, action_id: str) -> Any:
    """The card's button for this action, or None (no card yet, or no such button)."""
    from selenium.webdriver.common.by import By

    card = _card(driver, run_id)
    found = card.find_elements(By.CSS_SELECTOR, f"[data-action-id={action_id}]") if card else []
    return found[0] if found else None


def _card_text(driver: Any, run_id: str) -> str:
    from selenium.common.exceptions import StaleElementReferenceException

    card = _card(driver, run_id)
    try:
        return str(card.text) if card is not None else ""
    except StaleElementReferenceException:  # the channel was redrawn with news
        return ""


def _select_run(browser: Any, wait: Any, run_id: str, *, until_text: str) -> None:
    """Open the run in the console (beside the workspace) and wait for its timeline."""
    from selenium.webdriver.common.by import By

    browser.switch_to.default_content()
    browser.switch_to.frame("console")
    # the list is redrawn every 1.5 s: find the row and click it in one go
    _click(wait, lambda d: d.find_element(By.CSS_SELECTOR, f"tr[data-run-id='{run_id}']"))
    wait.until(
        lambda d: (
            d.find_element(By.ID, "run").get_attribute("data-run-id") == run_id
            and until_text in d.find_element(By.ID, "run").text
        )
    )


def _payments(folder: Path, kind: str) -> list[tuple[str, str, int]]:
    with closing(sqlite3.connect(folder / "signoff-dev-world.db")) as conn:
        return conn.execute(
            "SELECT kind, reference, amount_cents FROM payments WHERE kind = ? ORDER BY rowid",
            (kind,),
        ).fetchall()


def test_approve_similar_opens_the_rule_modal_with_its_backtest_in_the_browser(
    dev: DevServer, browser: Any, tmp_path: Path
) -> None:
    """bob approves one refund and declines another, then "Approve + similar…" on a third:
    the modal proposes the rule, and its backtest counts the earlier requests, the declined
    one called out. The screenshot is the README's (docs/approve-similar.png)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import Select

    wait = _wait(browser)
    browser.get(dev.base + "/")
    wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "1")
    who = Select(browser.find_element(By.ID, "who"))
    runs: list[str] = []
    for action in ("approve", "decline", None):
        who.select_by_value(REQUESTER)
        browser.find_element(By.ID, "start-refund").click()
        runs.append(_run_id_of_notice(wait, not_this=runs[-1] if runs else None))
        wait.until(lambda d: _card(d, runs[-1]))
        who.select_by_value(APPROVER)
        if action == "approve":
            _click(wait, lambda d: _button(d, runs[-1], "approve"))
            browser.find_element(By.ID, "dialog-ok").click()
            wait.until(lambda d: "Approved by" in _card_text(d, runs[-1]))
        elif action == "decline":
            _click(wait, lambda d: _button(d, runs[-1], "decline"))
            box = wait.until(
                ec.visibility_of_element_located(
                    (By.CSS_SELECTOR, "#dialog-body [data-block-id=reason]")
                )
            )
            box.send_keys("Over the limit for this customer")
            browser.find_element(By.ID, "dialog-ok").click()
            wait.until(lambda d: "Declined by" in _card_text(d, runs[-1]))

    _click(wait, lambda d: _button(d, runs[-1], "approve_similar"))
    wait.until(
        lambda d: (
            d.find_element(By.ID, "overlay").is_displayed()
            and "Backtest" in d.find_element(By.ID, "dialog-body").text
        )
    )
    browser.save_screenshot(str(tmp_path / "approve-similar.png"))
    body = browser.find_element(By.ID, "dialog-body").text
    rule = browser.find_element(By.CSS_SELECTOR, "#dialog-body .input-field[data-block-id=when]")
    assert 'tool == "issue_refund"' in rule.get_property("value")
    assert "of the last 3 requests for issue" in body
    assert "the rule would have approved 3 at once" in body
    assert "declined" in body
    assert "Over the limit for this customer" in body


def test_the_buttons_of_a_runs_pending_reply_decide_as_the_cards_do(
    dev: DevServer, browser: Any, tmp_path: Path
) -> None:
    """bob types `/runs pending`: its Approve decides riley's refund (the card in #approvals
    says so) and its Decline opens the reason modal, as the same buttons do in Slack."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import Select

    wait = _wait(browser)
    browser.get(dev.base + "/")
    wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "1")
    who = Select(browser.find_element(By.ID, "who"))
    who.select_by_value(REQUESTER)
    browser.find_element(By.ID, "start-refund").click()
    first = _run_id_of_notice(wait)
    wait.until(lambda d: _card(d, first))
    browser.find_element(By.ID, "start-refund").click()
    second = _run_id_of_notice(wait, not_this=first)
    wait.until(lambda d: _card(d, second))

    who.select_by_value(APPROVER)
    _pending_reply(browser, wait, first)
    _click(wait, lambda d: _reply_button(d, first, "approve"))
    wait.until(ec.visibility_of_element_located((By.ID, "overlay")))
    browser.find_element(By.ID, "dialog-ok").click()
    wait.until(lambda d: "Approved by" in _card_text(d, first))
    assert "@bob" in _card(browser, first).text
    browser.save_screenshot(str(tmp_path / "runs-pending-approved.png"))

    _pending_reply(browser, wait, second)
    _click(wait, lambda d: _reply_button(d, second, "decline"))
    reason_box = wait.until(
        ec.visibility_of_element_located((By.CSS_SELECTOR, "#dialog-body [data-block-id=reason]"))
    )
    reason_box.send_keys("Asked twice")
    browser.find_element(By.ID, "dialog-ok").click()
    wait.until(lambda d: "Declined by" in _card_text(d, second))
    assert "Asked twice" in _card(browser, second).text
    assert _payments(tmp_path, "refund") == [("refund", "4471", 2500)]


def _pending_reply(browser: Any, wait: Any, run_id: str) -> None:
    from selenium.webdriver.common.by import By

    box = browser.find_element(By.ID, "runs-text")
    box.clear()
    box.send_keys("pending")
    browser.find_element(By.CSS_SELECTOR, "#runs-form button[type=submit]").click()
    wait.until(lambda d: run_id in d.find_element(By.ID, "ephemeral").text)


def _reply_button(driver: Any, run_id: str, action_id: str) -> Any:
    """The button of this run's approval in the `/runs` reply: the actions block right after
    the line that names the run, or None."""
    from selenium.webdriver.common.by import By

    line = (
        f"//*[@id='ephemeral']//*[contains(@class, 'block') and contains(., '{run_id}')]"
        "/following-sibling::*[1][starts-with(@data-block-id, 'approval:')]"
        f"//*[@data-action-id='{action_id}']"
    )
    found = driver.find_elements(By.XPATH, line)
    return found[0] if found else None
