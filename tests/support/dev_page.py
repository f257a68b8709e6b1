"""Reading and clicking the `signoff dev` page in a selenium-driven Chromium: its cards, its
`/runs` box, its dialogs and the run console beside it. Every lookup is retried by an
explicit wait (the page redraws on news, the console every 1.5 s), never by a sleep."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

from .dev_support import REQUESTER

WAIT = 20
"""Seconds a wait looks again before failing: Chromium is slow on a busy 2-core machine."""


def wait_for(browser: Any) -> Any:
    """Waits that look again when the page redrew an element under them (news, polls)."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, WAIT, ignored_exceptions=(StaleElementReferenceException,))


def click(wait: Any, find: Callable[[Any], Any]) -> None:
    """Find and click in one go, again if the element was redrawn (or not there yet)."""

    def clicked(driver: Any) -> bool:
        found = find(driver)
        if found is None:
            return False
        found.click()
        return True

    wait.until(clicked)


def open_page(browser: Any, base: str) -> Any:
    """The workspace page, loaded; the `You are` select, to play a person."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    wait = wait_for(browser)
    browser.switch_to.default_content()
    browser.get(base + "/")
    wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "1")
    return Select(browser.find_element(By.ID, "who"))


def run_id_of_notice(wait: Any, not_this: str | None = None) -> str:
    """The run id the page's notice names after "Refund order 4471" was clicked."""
    from selenium.webdriver.common.by import By

    def found(driver: Any) -> str | None:
        words = driver.find_element(By.ID, "notice").text.split()
        ids = [w for w in words if w.startswith("run_") and w != not_this]
        return ids[0] if ids else None

    return str(wait.until(found))


def start_refund(browser: Any, wait: Any, who: Any, not_this: str | None = None) -> str:
    """riley clicks "Refund order 4471 for $25"; the run's id, once its card is shown."""
    from selenium.webdriver.common.by import By

    browser.switch_to.default_content()
    who.select_by_value(REQUESTER)
    browser.find_element(By.ID, "start-refund").click()
    run_id = run_id_of_notice(wait, not_this=not_this)
    wait.until(lambda d: card(d, run_id))
    return run_id


def open_channel(browser: Any, wait: Any, channel: str) -> None:
    from selenium.webdriver.common.by import By

    browser.switch_to.default_content()
    click(wait, lambda d: d.find_element(By.CSS_SELECTOR, f"[data-channel={channel}]"))
    wait.until(lambda d: "active" in d.find_element(By.CSS_SELECTOR, f"[data-channel={channel}]")
               .get_attribute("class"))  # fmt: skip


def card(driver: Any, mark: str) -> Any:
    """The top-level message in the open channel whose blocks name `mark`, or None."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    driver.switch_to.default_content()
    try:
        for message in driver.find_elements(By.CSS_SELECTOR, "#channel > article.message"):
            blocks = message.find_element(By.CSS_SELECTOR, ":scope > .blocks")
            if mark in blocks.text:
                return message
    except StaleElementReferenceException:
        return None
    return None


def button(driver: Any, mark: str, action_id: str) -> Any:
    """The card's button for this action, or None (no card yet, or no such button)."""
    from selenium.webdriver.common.by import By

    found = card(driver, mark)
    buttons = found.find_elements(By.CSS_SELECTOR, f"[data-action-id={action_id}]") if found else []
    return buttons[0] if buttons else None


def card_text(driver: Any, mark: str) -> str:
    """The card's text (its thread's too), or "" while it is missing or being redrawn."""
    from selenium.common.exceptions import StaleElementReferenceException

    found = card(driver, mark)
    try:
        return str(found.text) if found is not None else ""
    except StaleElementReferenceException:
        return ""


def card_actions(driver: Any, mark: str) -> list[str] | None:
    """The action ids of the buttons on the card itself (not its thread's); None while the
    card is missing or being redrawn."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    found = card(driver, mark)
    if found is None:
        return None
    try:
        buttons = found.find_elements(By.CSS_SELECTOR, ":scope > .blocks [data-action-id]")
        return [str(b.get_attribute("data-action-id")) for b in buttons]
    except StaleElementReferenceException:
        return None


def runs_command(browser: Any, wait: Any, text: str, *, until: str) -> str:
    """Type `/runs <text>` in the page's box; the reply's text once it says `until`."""
    from selenium.webdriver.common.by import By

    browser.switch_to.default_content()
    box = browser.find_element(By.ID, "runs-text")
    box.clear()
    box.send_keys(text)
    browser.find_element(By.CSS_SELECTOR, "#runs-form button[type=submit]").click()

    def replied(driver: Any) -> str | None:
        area = driver.find_element(By.ID, "ephemeral").text
        return str(area) if f"/runs {text}" in area and until in area else None

    return str(wait.until(replied))


def select_run(browser: Any, wait: Any, run_id: str, *, until_text: str) -> Any:
    """Open the run in the console (beside the workspace), wait for its timeline, and leave
    the driver in the console's frame; the timeline's element."""
    from selenium.webdriver.common.by import By

    browser.switch_to.default_content()
    browser.switch_to.frame("console")
    # the list is redrawn every 1.5 s: find the row and click it in one go
    click(wait, lambda d: d.find_element(By.CSS_SELECTOR, f"tr[data-run-id='{run_id}']"))
    wait.until(
        lambda d: (
            d.find_element(By.ID, "run").get_attribute("data-run-id") == run_id
            and until_text in d.find_element(By.ID, "run").text
        )
    )
    return browser.find_element(By.ID, "run")


def payments(folder: Path, kind: str) -> list[tuple[str, str, int]]:
    """The fake payment provider's ledger rows of this kind (`signoff-dev-world.db`)."""
    with closing(sqlite3.connect(folder / "signoff-dev-world.db")) as conn:
        return conn.execute(
            "SELECT kind, reference, amount_cents FROM payments WHERE kind = ? ORDER BY rowid",
            (kind,),
        ).fetchall()
