"""The run console acts as the person the `signoff dev` page plays (issue 39.2), in headless
Chromium against `signoff dev` as a real process: bob, an approver, opens riley's parked run
and sees its buttons; once the page plays eve, an outsider, the run pane is empty and stays
so through the console's polls, and she is offered nothing; riley, its requester, reads the
run but is offered no button she may not use."""

from __future__ import annotations

from typing import Any

from support.dev_page import open_page
from support.dev_page import select_run
from support.dev_page import start_refund
from support.dev_page import wait_for
from support.dev_support import APPROVER
from support.dev_support import NEEDS_CHROMIUM
from support.dev_support import OUTSIDER
from support.dev_support import REQUESTER
from support.dev_support import DevServer

pytestmark = NEEDS_CHROMIUM
BUTTONS = "#cancel-run, #resume-run, .fork, .dry-fork, .rollback"
LISTS = (
    "performance.getEntriesByType('resource')"
    ".filter(e => e.name.includes('/v1/console/runs?')).length"
)
"""How many times the console has fetched its runs list (it polls every 1.5 s)."""


def test_the_run_pane_clears_when_the_person_changes(dev: DevServer, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    wait = wait_for(browser)
    who = open_page(browser, dev.base)
    run_id = start_refund(browser, wait, who)

    who.select_by_value(APPROVER)
    pane = select_run(browser, wait, run_id, until_text="issue_refund")
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#run #resume-run"))
    assert pane.find_elements(By.CSS_SELECTOR, "#cancel-run")
    assert pane.find_elements(By.CSS_SELECTOR, ".rollback")

    browser.switch_to.default_content()
    who.select_by_value(OUTSIDER)
    browser.switch_to.frame("console")
    wait.until(lambda d: d.find_element(By.ID, "run").get_attribute("data-run-id") is None)
    polled = browser.execute_script("return " + LISTS)
    wait.until(lambda d: d.execute_script("return " + LISTS) >= polled + 2)  # two polls on
    pane = browser.find_element(By.ID, "run")
    assert not pane.is_displayed()
    assert pane.text == ""
    assert browser.find_elements(By.CSS_SELECTOR, BUTTONS) == []
    assert browser.find_elements(By.CSS_SELECTOR, f"tr[data-run-id='{run_id}']") == []

    browser.switch_to.default_content()
    who.select_by_value(REQUESTER)
    pane = select_run(browser, wait, run_id, until_text="issue_refund")
    assert "asked by @riley" in pane.text
    assert browser.find_elements(By.CSS_SELECTOR, BUTTONS) == []
