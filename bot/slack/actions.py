"""Every id Slack sends back to the app, defined once: the action ids of buttons and the
callback ids of modals.

The block builders (`bot.slack.cards`, `replies`, `similar`, `envelopes`) put them in cards, modals,
`/runs` replies and the Home tab; `bot.slack.listeners.register` attaches a listener to each;
a test builds every message and modal and checks both sets against a real bolt App.
"""

from __future__ import annotations

from enum import StrEnum


class Action(StrEnum):
    """A button's `action_id`; its `value` is the id of the record it acts on."""

    APPROVE = "approve"
    APPROVE_SEPARATE = "approve_separate"
    """Approve a call whose key an earlier effect used with other arguments, as its own."""
    EDIT = "edit"
    APPROVE_SIMILAR = "approve_similar"
    DECLINE = "decline"
    ASK = "ask"
    """Ask the agent a question instead of deciding (a modal takes the question)."""
    ACKNOWLEDGE = "acknowledge"
    SETTLE_HAPPENED = "resolve_happened"
    SETTLE_NOT_HAPPENED = "resolve_did_not_happen"
    CONFIRM_RULE = "confirm_rule"
    """A second rule-writer confirms a learned rule for an effect that cannot be undone."""
    BATCH = "batch"
    """Decide several pending approvals of one tool together; its value is the tool."""
    APPROVE_ENVELOPE = "approve_envelope"
    """Approve, and hand out a budget for the next calls like it (`bot.slack.envelopes`)."""
    CONFIRM_ENVELOPE = "confirm_envelope"
    REVOKE_ENVELOPE = "revoke_envelope"
    CANCEL_COOL_OFF = "cancel_cool_off"
    """Cancel an approved call waiting out its cool-off (issue 42.6); the value: its approval."""
    UNDO = "undo"
    """Undo the call an approval let run, within its undo window; the value: its approval."""
    AWAY = "away"
    """On the Home: say "away until …, delegate to …" (a modal asks both)."""
    BACK = "back"
    """On the Home: back now; the delegate no longer decides for the person."""


class Modal(StrEnum):
    """A modal's `callback_id`, which its submission comes back with."""

    DECLINE_REASON = "decline_reason"
    EDIT_ARGS = "edit_args"
    ASK_QUESTION = "ask_question"
    SIMILAR_RULE = "similar_rule"
    BATCH = "batch_decide"
    ENVELOPE = "envelope"
    AWAY = "away_until"


OPENS_MODAL = frozenset(
    {
        Action.DECLINE,
        Action.EDIT,
        Action.APPROVE_SIMILAR,
        Action.APPROVE_ENVELOPE,
        Action.BATCH,
        Action.ASK,
        Action.AWAY,
    }
)
"""Buttons whose listener answers by opening a modal (with the click's trigger id)."""
