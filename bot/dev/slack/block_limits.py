"""The Block Kit limits Slack checks on a message's blocks and a view, worded as Slack words
its refusals (with a JSON pointer), so that a card the fake Slack accepts is one Slack
accepts (docs.slack.dev/reference/block-kit; enforced alike by slack_sdk.models).

Pure functions, apart from the fake's state (`bot.dev.slack.fake_web`), which calls them."""

from __future__ import annotations

from typing import Any

BLOCK_TYPES = frozenset(
    {
        "actions", "context", "divider", "file", "header", "image", "input", "markdown",
        "rich_text", "section", "video", "table", "context_actions", "rich_text_section",
    }
)  # fmt: skip
"""Block types Slack knows; any other is `invalid_blocks`."""
_CHARS: dict[tuple[str, str], int] = {
    ("header", "text.text"): 150,
    ("section", "text.text"): 3000,
    ("markdown", "text"): 12000,
    ("input", "label.text"): 2000,
    ("input", "hint.text"): 2000,
    ("button", "text.text"): 75,
    ("button", "value"): 2000,
    ("button", "url"): 3000,
    ("button", "accessibility_label"): 75,
    ("confirm", "title.text"): 100,
    ("confirm", "text.text"): 300,
    ("confirm", "confirm.text"): 30,
    ("confirm", "deny.text"): 30,
    ("option", "text.text"): 75,
    ("option", "value"): 150,
    ("*", "block_id"): 255,
    ("*", "action_id"): 255,
    ("*", "placeholder.text"): 150,
}
_ITEMS: dict[tuple[str, str], int] = {
    ("section", "fields"): 10,
    ("context", "elements"): 10,
    ("actions", "elements"): 25,
    ("static_select", "options"): 100,
    ("multi_static_select", "options"): 100,
    ("overflow", "options"): 5,
}
_FIELD_CHARS = 2000
_VIEW_CHARS = {"title.text": 24, "submit.text": 24, "close.text": 24, "private_metadata": 3000}
_VIEW_IDS = {"callback_id": 255, "external_id": 255}
MAX_VIEW_BLOCKS = 100


def block_errors(blocks: Any, *, max_blocks: int, at: str = "/blocks") -> list[str]:
    """Every broken Block Kit limit, worded as Slack words them, with a JSON pointer."""
    if not isinstance(blocks, list):
        return [f"must be an array [json-pointer:{at}]"]
    errors = [f"no more than {max_blocks} items allowed [json-pointer:{at}]"]
    errors = errors if len(blocks) > max_blocks else []
    for i, block in enumerate(blocks):
        errors += _block_errors(block, f"{at}/{i}")
    return errors


def _block_errors(block: Any, at: str) -> list[str]:
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        return [f"failed to match all allowed schemas [json-pointer:{at}]"]
    kind = block["type"]
    if kind not in BLOCK_TYPES:
        return [f"unsupported type: {kind[:40]} [json-pointer:{at}/type]"]
    errors = _limits(block, kind, at)
    if kind == "header" and _get(block, "text.type") != "plain_text":
        errors.append(f"must be a plain_text text object [json-pointer:{at}/text]")
    if kind == "section" and not block.get("text") and not block.get("fields"):
        errors.append(f"must provide either text or fields [json-pointer:{at}]")
    for i, text in enumerate(block.get("fields") or []):
        if len(str(_get(text, "text") or "")) > _FIELD_CHARS:
            errors.append(_too_long(_FIELD_CHARS, f"{at}/fields/{i}/text"))
    children = [("accessory", block.get("accessory")), ("element", block.get("element"))]
    children += [(f"elements/{i}", e) for i, e in enumerate(block.get("elements") or [])]
    for where, element in children:
        if isinstance(element, dict):
            errors += _element_errors(element, f"{at}/{where}")
    return errors


def _element_errors(element: dict[str, Any], at: str) -> list[str]:
    kind = str(element.get("type", ""))
    errors = _limits(element, kind, at)
    if kind == "button" and element.get("style") not in (None, "primary", "danger"):
        errors.append(f"must be one of primary, danger [json-pointer:{at}/style]")
    if isinstance(element.get("confirm"), dict):
        errors += _limits(element["confirm"], "confirm", f"{at}/confirm")
    for i, option in enumerate(element.get("options") or []):
        if isinstance(option, dict):
            errors += _limits(option, "option", f"{at}/options/{i}")
    return errors


def _limits(node: dict[str, Any], kind: str, at: str) -> list[str]:
    errors = []
    for (owner, path), limit in _CHARS.items():
        value = _get(node, path)
        if owner in (kind, "*") and isinstance(value, str) and len(value) > limit:
            errors.append(_too_long(limit, f"{at}/{path.replace('.', '/')}"))
    for (owner, path), limit in _ITEMS.items():
        value = node.get(path)
        if owner == kind and isinstance(value, list) and len(value) > limit:
            errors.append(f"must provide at most {limit} items [json-pointer:{at}/{path}]")
    return errors


def view_errors(view: Any, kind: str) -> list[str]:
    """What `views.open` (modal) or `views.publish` (home) refuses in a view."""
    if not isinstance(view, dict):
        return ["missing required field: view"]
    if view.get("type") != kind:
        return [f"must be {kind} [json-pointer:/view/type]"]
    errors = []
    if kind == "modal" and not isinstance(_get(view, "title.text"), str):
        errors.append("missing required field: title [json-pointer:/view/title]")
    limits = {**_VIEW_CHARS, **_VIEW_IDS}
    for path, limit in limits.items():
        value = _get(view, path)
        if isinstance(value, str) and len(value) > limit:
            errors.append(_too_long(limit, f"/view/{path.replace('.', '/')}"))
    blocks = view.get("blocks", [])
    return errors + block_errors(blocks, max_blocks=MAX_VIEW_BLOCKS, at="/view/blocks")


def _get(node: Any, path: str) -> Any:
    for key in path.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def _too_long(limit: int, at: str) -> str:
    return f"must be less than {limit + 1} characters [json-pointer:{at}]"
