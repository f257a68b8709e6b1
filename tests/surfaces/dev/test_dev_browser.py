"""The `signoff dev` page in headless Chromium, against `signoff dev` as a real process: a
newcomer starts a refund, approves it on its card, declines another with a reason, and rolls
a finished run back from the console; and nothing the pages load comes from past 127.0.0.1.
Screenshots of each stage land in the test's temporary folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support.dev_page import button
from support.dev_page import card_actions
from support.dev_page import card_text
from support.dev_page import click
from support.dev_page import open_page
from support.dev_page import payments
from support.dev_page import select_run
from support.dev_page import start_refund
from support.dev_page import wait_for
from support.dev_support import APPROVER
from support.dev_support import NEEDS_CHROMIUM
from support.dev_support import REQUESTER
from support.dev_support import DevServer
from support.dev_support import requested_urls

pytestmark = NEEDS_CHROMIUM
LOADED = "['navigation', 'resource'].flatMap(t => performance.getEntriesByType(t)).map(e => e.name)"


def test_refund_approved_declined_and_rolled_back_in_the_browser(
    dev: DevServer, browser: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec

    wait = wait_for(browser)
    shot = _shots(browser, tmp_path)
    who = open_page(browser, dev.base)

    # riley asks for a refund; the run parks and its card appears in #approvals
    first = start_refund(browser, wait, who)
    shown = wait.until(lambda d: card_text(d, first))
    assert "Refund order 4471 for $25" in shown
    assert "Refund $25.00 on order 4471" in shown  # as the refund tool declares it reads
    assert "2500 cents" not in shown
    shot("1-card")

    # bob approves: Slack's confirm dialog first, then the card is edited in place
    who.select_by_value(APPROVER)
    click(wait, lambda d: button(d, first, "approve"))
    wait.until(ec.visibility_of_element_located((By.ID, "overlay")))
    assert "Approve" in browser.find_element(By.ID, "dialog-title").text
    browser.find_element(By.ID, "dialog-ok").click()
    # read through card_text and card_actions: the card may be redrawn between two reads
    decided = wait.until(lambda d: text if "Approved by" in (text := card_text(d, first)) else "")
    assert "@bob" in decided
    actions = wait.until(lambda d: (found := card_actions(d, first)) is not None and (found,))
    assert "approve" not in actions[0]
    shot("2-approved")

    # the console's timeline: the refund recorded once, completed, approved by bob
    select_run(browser, wait, first, until_text="send_email")
    run = browser.find_element(By.ID, "run")
    wait.until(lambda d: "done" in d.find_element(By.ID, "run").text)
    refunds = run.find_elements(By.CSS_SELECTOR, ".step:not(.undone) [data-tool=issue_refund]")
    assert len(refunds) == 1
    assert "completed" in refunds[0].find_element(By.CSS_SELECTOR, ".effect-state").text
    assert "Approved by @bob" in refunds[0].text  # people by name, as on the card
    assert "Refund $25.00 on order 4471" in refunds[0].text  # as the tool says it reads
    # what bob was shown beside the call (issue 42.1): the facts the refund's context read
    context = refunds[0].find_element(By.CSS_SELECTOR, ".context").text
    assert context.startswith("context: order total: $"), context
    assert APPROVER not in refunds[0].text
    labels = [s.text for s in run.find_elements(By.CSS_SELECTOR, ".step-head .status")]
    assert "running" not in labels, labels  # each finished step says what it came to
    assert "asked by @riley" in run.text
    assert payments(tmp_path, "refund") == [("refund", "4471", 2500)]
    shot("3-timeline")
    browser.switch_to.default_content()

    # riley asks again; bob declines with a reason, which the run's timeline shows
    second = start_refund(browser, wait, who, not_this=first)
    who.select_by_value(APPROVER)
    click(wait, lambda d: button(d, second, "decline"))
    reason_box = wait.until(
        ec.visibility_of_element_located((By.CSS_SELECTOR, "#dialog-body [data-block-id=reason]"))
    )
    reason_box.send_keys("The customer already has store credit")
    shot("4-decline-modal")
    browser.find_element(By.ID, "dialog-ok").click()
    wait.until(lambda d: "Declined by" in card_text(d, second))
    wait.until(lambda d: "store credit" in card_text(d, second))
    select_run(browser, wait, second, until_text="store credit")
    declined = browser.find_element(By.CSS_SELECTOR, "#run [data-tool=issue_refund] .approval")
    assert declined.get_attribute("data-state") == "declined"
    assert "The customer already has store credit" in declined.text
    assert payments(tmp_path, "refund") == [("refund", "4471", 2500)]
    shot("5-declined-timeline")

    # roll the finished first run back to step 1 (after the lookup, before the refund):
    # the console says what will happen first, then the refund is compensated and the
    # e-mail, which nothing can undo, pages a human
    select_run(browser, wait, first, until_text="send_email")
    click(wait, lambda d: d.find_element(By.CSS_SELECTOR, "#run .step[data-step='1'] .rollback"))
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
    assert "Page (" in paged.text
    assert payments(tmp_path, "refund_reversal") == [("refund_reversal", "4471", -2500)]
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
    click(wait, lambda d: d.find_element(By.CSS_SELECTOR, "[data-channel=C0ONCALL]"))
    wait.until(lambda d: "send_email" in d.find_element(By.ID, "channel").text)
    click(wait, lambda d: d.find_element(By.CSS_SELECTOR, "#channel [data-action-id=acknowledge]"))
    wait.until(lambda d: "Acknowledged" in d.find_element(By.ID, "channel").text)
    shot("8-oncall")


def test_the_pages_load_nothing_from_past_127_0_0_1(
    dev: DevServer, browser: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    wait = wait_for(browser)
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


def _shots(browser: Any, folder: Path) -> Any:
    def shot(name: str) -> None:  # the whole window, whichever frame the driver is in
        browser.save_screenshot(str(folder / f"{name}.png"))

    return shot


def test_approve_similar_opens_the_rule_modal_with_its_backtest_in_the_browser(
    dev: DevServer, browser: Any, tmp_path: Path
) -> None:
    """bob approves one refund and declines another, then "Approve + similar…" on a third:
    the modal proposes the rule at once, and its backtest, put in when done, counts the
    earlier requests, the declined one called out. The screenshot is the README's
    (docs/approve-similar.png)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec

    wait = wait_for(browser)
    who = open_page(browser, dev.base)
    runs: list[str] = []
    for action in ("approve", "decline", None):
        runs.append(start_refund(browser, wait, who, not_this=runs[-1] if runs else None))
        who.select_by_value(APPROVER)
        if action == "approve":
            click(wait, lambda d: button(d, runs[-1], "approve"))
            browser.find_element(By.ID, "dialog-ok").click()
            wait.until(lambda d: "Approved by" in card_text(d, runs[-1]))
        elif action == "decline":
            click(wait, lambda d: button(d, runs[-1], "decline"))
            box = wait.until(
                ec.visibility_of_element_located(
                    (By.CSS_SELECTOR, "#dialog-body [data-block-id=reason]")
                )
            )
            box.send_keys("Over the limit for this customer")
            browser.find_element(By.ID, "dialog-ok").click()
            wait.until(lambda d: "Declined by" in card_text(d, runs[-1]))

    click(wait, lambda d: button(d, runs[-1], "approve_similar"))
    wait.until(  # the modal opens at once; its backtest is put in when it is done
        lambda d: (
            d.find_element(By.ID, "overlay").is_displayed()
            and "of the last" in d.find_element(By.ID, "dialog-body").text
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

    # saved, the rule shows in the console's rules table, which was loaded before it existed
    browser.switch_to.frame("console")
    wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "1")
    assert not browser.find_elements(By.CSS_SELECTOR, "#rules tr[data-rule-id]")
    browser.switch_to.default_content()
    for field, text in (("reason", "Small refunds need no one"), ("confirm", "yes")):
        browser.find_element(
            By.CSS_SELECTOR, f"#dialog-body .input-field[data-block-id={field}]"
        ).send_keys(text)
    browser.find_element(By.ID, "dialog-ok").click()
    wait.until(lambda d: not d.find_element(By.ID, "overlay").is_displayed())
    browser.switch_to.frame("console")
    saved = wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#rules tr[data-rule-id]"))
    assert "Small refunds need no one" in saved[0].text
    assert 'tool == "issue_refund"' in saved[0].text


def test_the_buttons_of_a_runs_pending_reply_decide_as_the_cards_do(
    dev: DevServer, browser: Any, tmp_path: Path
) -> None:
    """bob types `/runs pending`: its Approve decides riley's refund (the card in #approvals
    says so) and its Decline opens the reason modal, as the same buttons do in Slack."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec

    wait = wait_for(browser)
    who = open_page(browser, dev.base)
    first = start_refund(browser, wait, who)
    second = start_refund(browser, wait, who, not_this=first)

    who.select_by_value(APPROVER)
    _pending_reply(browser, wait, first)
    click(wait, lambda d: _reply_button(d, first, "approve"))
    wait.until(ec.visibility_of_element_located((By.ID, "overlay")))
    browser.find_element(By.ID, "dialog-ok").click()
    wait.until(lambda d: "Approved by" in card_text(d, first))
    wait.until(lambda d: "@bob" in card_text(d, first))
    browser.save_screenshot(str(tmp_path / "runs-pending-approved.png"))

    _pending_reply(browser, wait, second)
    click(wait, lambda d: _reply_button(d, second, "decline"))
    reason_box = wait.until(
        ec.visibility_of_element_located((By.CSS_SELECTOR, "#dialog-body [data-block-id=reason]"))
    )
    reason_box.send_keys("Asked twice")
    browser.find_element(By.ID, "dialog-ok").click()
    # the card is redrawn as the decision's notes land: read it as card_text does, whole
    wait.until(lambda d: "Declined by" in card_text(d, second))
    wait.until(lambda d: "Asked twice" in card_text(d, second))
    assert payments(tmp_path, "refund") == [("refund", "4471", 2500)]


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


def test_the_edit_modal_says_an_error_once_and_the_requester_gets_the_one_refusal(
    dev: DevServer, browser: Any
) -> None:
    """bob edits a refund into something that is not JSON: the modal says why once, under the
    field; riley, who asked, clicks Approve and is told the one self-approval sentence."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec

    wait = wait_for(browser)
    who = open_page(browser, dev.base)
    run_id = start_refund(browser, wait, who)

    who.select_by_value(APPROVER)
    click(wait, lambda d: button(d, run_id, "edit"))
    editor = (By.CSS_SELECTOR, "#dialog-body .input-field[data-block-id=args]")
    box = wait.until(ec.visibility_of_element_located(editor))
    box.clear()
    box.send_keys("{")
    browser.find_element(By.ID, "dialog-ok").click()
    under = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "#dialog-body .input-error").text)
    assert "JSON" in under
    assert browser.find_element(By.ID, "dialog-error").text == ""  # said once, not twice
    assert browser.find_element(By.ID, "overlay").text.count(under) == 1
    browser.find_element(By.ID, "dialog-cancel").click()

    who.select_by_value(REQUESTER)
    click(wait, lambda d: button(d, run_id, "approve"))
    browser.find_element(By.ID, "dialog-ok").click()
    told = wait.until(
        lambda d: next(
            (
                e.text
                for e in d.find_elements(By.CSS_SELECTOR, ".ephemeral")
                if "asked for this action" in e.text
            ),
            None,
        )
    )
    assert "forbids self-approval" in told
    assert "not an approver" not in told
