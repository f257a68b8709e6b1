"""Batches on the approvals page: where two or more pending approvals of one tool wait for
the person, a form lists them with a box each (all ticked) and decides the ticked ones
together (`bot.batches`: each its own decision, checked against its own policy; those
refused are named). Plain HTML, no script."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from bot import batches
from bot import words
from bot.approvers import html
from bot.approvers.context import Approvers
from runtime.display import Display
from runtime.records import Approval

URL = "/approvals/batch"


def forms(pending: Sequence[Approval], displays: Mapping[str, Display], csrf: str) -> str:
    """One batch form per tool with two or more approvals waiting for the reader."""
    by_tool: dict[str, list[Approval]] = {}
    for approval in pending[: batches.MAX_BATCH]:
        by_tool.setdefault(approval.tool, []).append(approval)
    return "".join(
        _form(tool, found, displays.get(tool), csrf)
        for tool, found in by_tool.items()
        if len(found) > 1
    )


def _form(tool: str, found: Sequence[Approval], display: Display | None, csrf: str) -> str:
    boxes = "".join(
        f'<li><label><input type="checkbox" name="approval" value="{html.esc(a.id)}" checked> '
        f"{html.esc(html.title(a, display))}</label> "
        f'<a class="muted" href="/approvals/{html.esc(a.id)}">{html.esc(a.id)}</a></li>'
        for a in found
    )
    return (
        f'<details class="card batch" data-batch="{html.esc(tool)}">'
        f"<summary>{html.esc(words.batch_heading(len(found), tool))}</summary>"
        f'<form method="post" action="{URL}">{html.hidden("csrf", csrf)}'
        f"{html.hidden('tool', tool)}<ul>{boxes}</ul>"
        '<input type="text" name="reason" placeholder="Why not? (needed to decline)">'
        '<button class="primary" name="decision" value="approved">Approve the ticked</button> '
        '<button class="danger" name="decision" value="declined">Decline the ticked</button>'
        "</form></details>"
    )


async def decide(parts: Approvers, person: str, form: Any) -> tuple[str, bool]:
    """Decide the ticked approvals as `person`: what to say, and whether the whole batch
    was refused (nothing changed)."""
    decision = html.posted(form, "decision")
    tool = html.posted(form, "tool") or ""
    reason = (html.posted(form, "reason") or "").strip() or None
    if decision not in ("approved", "declined") or not tool:
        return "Choose Approve or Decline for the ticked requests.", True
    if decision == "declined" and reason is None:
        return "Say why you decline them, for the agent.", True
    ids = [v for v in form.getall("approval", []) if isinstance(v, str)]
    return await batches.decide_and_say(
        parts.rt, ids, decision, tool=tool, by=person, reason=reason, background=parts.background
    )
