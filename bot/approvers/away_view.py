"""The approvals page's "Away" section: the person's absence, and the form that sets or
ends it (the handlers are `bot.approvers.away`)."""

from __future__ import annotations

from bot.approvers import html
from bot.approvers.context import Approvers
from bot.approvers.session import Session


async def section(parts: Approvers, session: Session) -> str:
    """The person's absence, and the form that sets or ends it."""
    mine = [a for a in await parts.rt.away() if a.person == session.person]
    token = html.hidden("csrf", session.csrf)
    if mine:
        away = mine[0]
        return (
            f'<h2>Away</h2><p id="away">You are away until {html.esc(html.when(away.until))}; '
            f"{html.esc(away.delegate)} decides for you.</p>"
            f'<form method="post" action="/approvals/back">{token}'
            '<button id="back">I\'m back</button></form>'
        )
    return (
        "<h2>Away</h2><p>While you are away, your delegate decides for you what names you "
        "(never what a group decides).</p>"
        f'<form method="post" action="/approvals/away">{token}'
        '<label>Away until (UTC) <input type="datetime-local" name="until" required></label> '
        '<label>Delegate to <input type="text" name="delegate" required '
        'placeholder="a Slack user id or an e-mail address"></label> '
        '<button id="set-away">Set</button></form>'
    )
