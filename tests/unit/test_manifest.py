"""manifest.yml is a valid Slack app manifest (schema version 1, checked offline) that asks
for exactly what the bot uses: the scopes of the Web API methods it calls, the slash command
and events it listens to, and one request URL, the path the server mounts."""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from bot.slack.actions import Action
from bot.slack.actions import Modal
from bot.slack.app import EVENTS_PATH

ROOT = Path(__file__).parent.parent.parent
BOT = ROOT / "bot"
SLACK = BOT / "slack"
FAKE_SLACK = BOT / "dev" / "slack"
SCHEMA = Path(__file__).parent.parent / "fixtures" / "slack" / "manifest.schema.json"

# The bot scope each Web API method needs (slack_sdk's method name; None: no scope).
# A method the bot starts calling must be added here, with its scope from
# docs.slack.dev/reference/methods/<method>, and the scope added to manifest.yml.
SCOPES: dict[str, str | frozenset[str] | None] = {
    "chat_postMessage": "chat:write",
    "chat_update": "chat:write",
    "chat_delete": "chat:write",  # a duplicate card of its own (the reconciler)
    "chat_postEphemeral": "chat:write",
    # to look for an earlier post in public and in private channels
    "conversations_history": frozenset({"channels:history", "groups:history"}),
    "conversations_replies": frozenset({"channels:history", "groups:history"}),
    # the configured channels, checked at start-up (public and private)
    "conversations_info": frozenset({"channels:read", "groups:read"}),
    "conversations_list": frozenset({"channels:read", "groups:read"}),
    "usergroups_users_list": "usergroups:read",
    "users_info": "users:read",
    "views_open": None,
    "views_update": None,  # a modal that opened at once, completed when its work is done
    "views_publish": None,
    "auth_test": None,
    "send_socket_mode_response": None,  # a Socket Mode ack, on the socket: no Web API scope
}
COMMAND_SCOPE = "commands"  # any slash command needs it


def _manifest() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "manifest.yml").read_text("utf-8"))


def _schema() -> dict[str, Any]:
    return json.loads(SCHEMA.read_text("utf-8"))


def _sources(under: Path) -> Iterator[tuple[Path, ast.Module]]:
    """The bot's modules, without the fake Slack (bot/dev/slack/)."""
    for path in sorted(under.rglob("*.py")):
        if path.is_relative_to(FAKE_SLACK):
            continue
        yield path, ast.parse(path.read_text("utf-8"), filename=str(path))


def _receiver_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _name_argument(node: ast.Call, path: Path, what: str) -> str:
    """The call's first argument, which must be a string literal for the test to read it."""
    first = node.args[0] if node.args else None
    if isinstance(first, ast.Attribute) and isinstance(first.value, ast.Name):
        table = {"Action": Action, "Modal": Modal}.get(first.value.id)
        if table is not None:  # an id from bot.slack.actions
            return str(table[first.attr].value)
    if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
        pytest.fail(
            f"{path.relative_to(ROOT)}:{node.lineno}: {what} without a literal name; "
            "the manifest test cannot tell what it needs"
        )
    return first.value


def _web_api_calls() -> dict[str, list[str]]:
    """slack_sdk method name -> where it is called: `client.chat_postMessage(...)`,
    `self.client.conversations_history(...)`, or `client.api_call("users.info")`."""
    calls: dict[str, list[str]] = {}
    for path, tree in _sources(BOT):
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            receiver = _receiver_name(node.func.value)
            if receiver is None or not receiver.endswith("client"):
                continue
            method = node.func.attr
            if method == "api_call":
                method = _name_argument(node, path, "api_call").replace(".", "_")
            calls.setdefault(method, []).append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return calls


def _registered(kind: str) -> set[str]:
    """The string arguments of `app.<kind>("...")` in the Slack listeners (bot/slack/)."""
    found: set[str] = set()
    for path, tree in _sources(SLACK):
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == kind
                and _receiver_name(node.func.value) == "app"
            ):
                continue
            found.add(_name_argument(node, path, f"app.{kind}()"))
    return found


def test_manifest_validates_against_slacks_schema() -> None:
    manifest = _manifest()
    schema = _schema()

    jsonschema.Draft7Validator.check_schema(schema)
    errors = [
        f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
        for e in jsonschema.Draft7Validator(schema).iter_errors(manifest)
    ]

    assert errors == []
    assert manifest["display_information"]["name"] == "Signoff"
    assert manifest["features"]["bot_user"]["display_name"] == "Signoff"


def test_an_invalid_manifest_is_refused() -> None:
    schema = json.loads(SCHEMA.read_text("utf-8"))
    broken = {"display_information": {"name": ""}, "settings": {"not_a_setting": True}}

    errors = list(jsonschema.Draft7Validator(schema).iter_errors(broken))

    assert errors


def test_the_bot_scopes_are_exactly_those_of_the_methods_it_calls() -> None:
    calls = _web_api_calls()
    assert "chat_postMessage" in calls, "the scan found no chat_postMessage: is it broken?"

    unknown = {m: where for m, where in calls.items() if m not in SCOPES}
    assert not unknown, (
        f"Web API methods with no entry in SCOPES: {unknown}. Add each to SCOPES in "
        "tests/unit/test_manifest.py with the scope it needs (None if none), and the scope "
        "to manifest.yml."
    )
    needed: set[str] = set()
    for method in calls:
        scope = SCOPES[method]
        if isinstance(scope, str):
            needed.add(scope)
        elif scope is not None:
            needed |= scope
    if _registered("command"):
        needed.add(COMMAND_SCOPE)

    bot_scopes = _manifest()["oauth_config"]["scopes"]["bot"]

    assert len(bot_scopes) == len(set(bot_scopes)), "a scope is listed twice"
    assert set(bot_scopes) == needed, (
        f"unused scopes: {sorted(set(bot_scopes) - needed)}; "
        f"missing scopes: {sorted(needed - set(bot_scopes))}"
    )


def test_the_slash_commands_are_the_ones_the_bot_handles() -> None:
    commands = _manifest()["features"]["slash_commands"]

    assert {c["command"] for c in commands} == _registered("command") == {"/runs"}
    (runs,) = commands
    assert runs["should_escape"] is False
    assert runs["usage_hint"] == (
        "status <id> | list [status] | pending | history <id> | cancel <id> | help"
    )


def test_the_bot_events_are_the_ones_the_bot_handles() -> None:
    events = _manifest()["settings"]["event_subscriptions"]

    assert set(events["bot_events"]) == _registered("event") == {"app_home_opened"}
    assert len(events["bot_events"]) == len(set(events["bot_events"]))
    assert "user_events" not in events


def test_interactivity_and_the_home_tab_are_on_because_the_bot_uses_them() -> None:
    manifest = _manifest()

    assert _registered("action")  # buttons
    assert _registered("view")  # modals
    assert manifest["settings"]["interactivity"]["is_enabled"] is True
    assert "views_publish" in _web_api_calls()  # the Home tab
    assert manifest["features"]["app_home"]["home_tab_enabled"] is True


def test_the_three_request_urls_are_one_url_at_the_events_path() -> None:
    manifest = _manifest()
    settings = manifest["settings"]
    urls = [
        *(c["url"] for c in manifest["features"]["slash_commands"]),
        settings["event_subscriptions"]["request_url"],
        settings["interactivity"]["request_url"],
    ]

    assert len(urls) == 3
    assert len(set(urls)) == 1, f"request URLs differ: {urls}"
    assert urls[0].startswith("https://")
    assert urls[0].endswith(EVENTS_PATH)
    assert settings["socket_mode_enabled"] is False  # HTTP mode: Slack posts to the URL
