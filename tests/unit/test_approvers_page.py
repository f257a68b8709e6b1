"""The approvals page's pure parts: who a signed-in address is, what an agent wrote stays
text on the page, and a half-configured sign-in stops start-up."""

from __future__ import annotations

import pytest

from bot.addresses import People
from bot.approvers import check_settings
from bot.approvers import html
from bot.sections import WebSettings
from bot.settings import ConfigError
from store import Approval


def test_an_address_signs_in_as_its_slack_id_or_as_itself() -> None:
    people = People({"Bob@Example.com": "U0BOB"})
    assert people.person_of(" bob@EXAMPLE.com ") == "U0BOB"
    assert people.person_of("Finance@Example.com") == "finance@example.com"
    assert people.address_of("U0BOB") == "bob@example.com"
    assert people.address_of("finance@example.com") == "finance@example.com"
    assert people.address_of("U0ANN") is None


def test_what_an_agent_wrote_stays_text_on_the_page() -> None:
    approval = Approval(
        id="ap_1",
        tool="issue_refund",
        args={"order_id": '<script>alert("x")</script>'},
        agent_reason='<a href="https://evil.example">click</a>',
        requested_by="<b>eve</b>",
    )
    shown = html.card(html.Card(approval=approval, actions=("approved",)), "token")
    assert "<script>" not in shown
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in shown
    assert '<a href="https://evil.example">' not in shown
    assert "<b>eve</b>" not in shown
    assert 'name="csrf" value="token"' in shown


def test_a_half_configured_sign_in_stops_start_up() -> None:
    with pytest.raises(ConfigError, match="oidc_client_id"):
        check_settings(WebSettings(oidc_issuer="https://id.example"))
    with pytest.raises(ConfigError, match="public_url"):
        check_settings(WebSettings(oidc_issuer="https://id.example", oidc_client_id="s"))
    check_settings(WebSettings())
    check_settings(
        WebSettings(oidc_issuer="https://id.example", oidc_client_id="s", public_url="https://x")
    )
