"""The exact commands that settle a page, shown the same way in Slack and in the CLI."""

from __future__ import annotations

import shlex

from runtime.errors import EffectInDoubt
from runtime.records import Page

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
        return [*resolve_commands(run_id, page.call_id), f"signoff runs resume {run}"]
    return [f"signoff runs show {run}"]


def resolve_commands(run_id: str, call_id: str) -> list[str]:
    """The two ways a human resolves an effect in doubt, as commands."""
    resolve = f"signoff runs resolve {shlex.quote(run_id)} {shlex.quote(call_id)}"
    return [f"{resolve} --happened --by {YOU}", f"{resolve} --did-not-happen --by {YOU}"]


def refusal_text(exc: Exception) -> str:
    """A runtime refusal in words for a person at a terminal: an effect in doubt names the
    commands that resolve it."""
    lines = (" ".join(line.split()) for line in str(exc).splitlines())
    text = "; ".join(line for line in lines if line)
    if isinstance(exc, EffectInDoubt):
        text += ": " + " or ".join(f"`{c}`" for c in resolve_commands(exc.run_id, exc.call_id))
    return text
