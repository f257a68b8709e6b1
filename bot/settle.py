"""The exact commands that settle a page, shown the same way in Slack and in the CLI."""

from __future__ import annotations

import shlex

from store import Page

IN_DOUBT = frozenset({"in_doubt"})
YOU = "<you>"
"""Who settles the effect: the person reading the command fills it in."""


def settle_commands(page: Page, run_id: str | None = None) -> list[str]:
    """Plain text: resolve (then resume) when the effect is in doubt, else show the run."""
    run_id = run_id or page.run_id
    if not run_id:
        return []
    run = shlex.quote(run_id)
    if page.reason in IN_DOUBT and page.call_id:
        resolve = f"signoff runs resolve {run} {shlex.quote(page.call_id)}"
        return [
            f"{resolve} --happened --by {YOU}",
            f"{resolve} --did-not-happen --by {YOU}",
            f"signoff runs resume {run}",
        ]
    return [f"signoff runs show {run}"]
