"""What a person's App Home shows: theirs to decide, theirs to settle, their own requests,
their decisions; each row with its state and age (`bot.slack.home` chooses the rows)."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from datetime import datetime
from datetime import timedelta
from typing import Any

from bot import words
from bot.slack import action_text
from bot.slack import blocks as kit
from bot.slack import cards
from bot.slack import escape
from bot.slack import page_cards
from bot.slack import texts
from bot.slack.actions import Action
from bot.slack.away_view import Absence
from bot.slack.away_view import away_blocks
from bot.slack.blocks import Block
from runtime.records import Approval
from runtime.records import ApprovalState
from runtime.records import Page
from runtime.records import Run

SECTION = 10
"""Rows shown per section; the rest are counted."""


def home_view(
    *,
    pending: Sequence[Approval],
    pages: Sequence[Page],
    requests: Sequence[Approval],
    decisions: Sequence[Approval],
    now: datetime,
    resolver: bool,
    notice: str | None = None,
    runs: Mapping[str, Run] | None = None,
    waiting: int | None = None,
    absence: Absence | None = None,
) -> dict[str, Any]:
    """Sections in the order a person acts: theirs to decide, theirs to settle, their own
    requests, their decisions; each row with its state and age. `runs`: the requests' runs,
    by id; a request whose run ended says how (done, declined, failed, ...). `waiting`: how
    many approvals wait for this person in all (`pending` is the first of them). `absence`:
    whether the person is away and whom they decide for (`bot.slack.away`): an "Away"
    section last, always kept whole."""
    blocks: list[Block] = []
    if notice:
        blocks.append(kit.section(f":warning: {notice}"))
    blocks.append(kit.header(words.HOME_PENDING))
    if pending:
        blocks += batch_buttons(pending)
        for approval in pending[:SECTION]:
            line = f"{action_text.shown_action(approval)} · {_asked(approval, now)}"
            blocks += [kit.section(line), *_context(approval), cards.decision_actions(approval)]
        blocks += _more((len(pending) if waiting is None else waiting) - min(len(pending), SECTION))
    else:
        blocks.append(kit.section(words.NOTHING_PENDING))
    if pages:
        blocks += [kit.divider(), kit.header(words.HOME_PAGES)]
        for page in pages[:SECTION]:
            blocks.append(kit.section(words.page_opened(_page(page), age(now - page.created_at))))
            if resolver:
                blocks.append(page_cards.page_actions(page, resolve=True))
        blocks += _more(len(pages) - SECTION)
    blocks += [kit.divider(), kit.header(words.HOME_REQUESTS)]
    rows = [
        f"{action_text.shown_action(a)} · {_state(a, now)}{_ended(a, runs or {})}"
        for a in requests[:SECTION]
    ]
    blocks += kit.sections(rows) if rows else [kit.section(words.NO_REQUESTS)]
    blocks += _more(len(requests) - SECTION)
    blocks += [kit.divider(), kit.header(words.HOME_RECENT)]
    rows = [f"{action_text.shown_action(a)} · {_state(a, now)}" for a in decisions[:SECTION]]
    blocks += kit.sections(rows) if rows else [kit.section(words.NO_RECENT)]
    last = away_blocks(absence) if absence is not None else []
    return {"type": "home", "blocks": blocks[: kit.MAX_VIEW_BLOCKS - len(last)] + last}


def batch_buttons(pending: Sequence[Approval]) -> list[Block]:
    """A "decide together" button per tool with two or more of `pending` (`bot.slack.batch`
    opens its modal)."""
    counts: dict[str, int] = {}
    for approval in pending:
        counts[approval.tool] = counts.get(approval.tool, 0) + 1
    several = [
        kit.button(words.batch_heading(n, tool), Action.BATCH, tool)
        for tool, n in counts.items()
        if n > 1
    ]
    return [kit.actions("batches", several)] if several else []


def _asked(approval: Approval, now: datetime) -> str:
    asker = kit.mention(approval.requested_by)
    return words.waiting(approval, age(now - approval.created_at), asker=asker)


def _state(approval: Approval, now: datetime) -> str:
    if approval.state == ApprovalState.PENDING:
        return words.waiting(approval, age(now - approval.created_at))
    by = kit.mention(approval.decided_by) if approval.decided_by else words.UNKNOWN_PERSON
    by += f" for {kit.mention(approval.decided_for)}" if approval.decided_for else ""
    return words.decided(approval, age(now - _decided(approval)), by=by)


def _ended(approval: Approval, runs: Mapping[str, Run]) -> str:
    """` · run failed`: how the request's run ended, once it has."""
    run = runs.get(approval.run_id or "")
    outcome = words.outcome_of(run) if run else None
    return f" · {texts.run_outcome(outcome)}" if outcome else ""


def _page(page: Page) -> str:
    tool = escape.code(page.tool, limit=40) if page.tool else words.AN_EFFECT
    return f"{tool} · {escape.code(page.reason, limit=40)}"


def _context(approval: Approval) -> list[Block]:
    """The facts its tool read (masked) or why they could not be, and the agent's reason:
    what the card shows beside the call (issue 42.1)."""
    lines = cards.context_lines(approval)
    return [kit.context(*lines)] if lines else []


def _more(hidden: int) -> list[Block]:
    return [kit.context(words.and_more(hidden))] if hidden > 0 else []


def age(delta: timedelta) -> str:
    """`45s`, `12m`, `3h`, `2d`: the largest whole unit."""
    seconds = max(int(delta.total_seconds()), 0)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _decided(approval: Approval) -> datetime:
    return approval.decided_at or approval.created_at
