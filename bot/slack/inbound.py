"""What reaches `/slack/events` before bolt sees it: the signature checked on the raw bytes,
then the body decoded and parsed with limits, then its shape checked, so a request that
anyone (or a buggy Slack) sends is answered 400 with one log line instead of a traceback.

Nothing here is parsed before the signature is checked: an unsigned request costs one HMAC.
Events Slack retries (`X-Slack-Retry-Num`) are recognised by `event_id` and answered
without being handled twice.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import urllib.parse
from collections import OrderedDict
from collections.abc import Callable
from collections.abc import Mapping
from typing import Any

from runtime.limits import nesting_depth

MAX_BODY = 1024 * 1024
"""Slack's largest request (a modal's state) is far below this, in bytes."""
MAX_DEPTH = 24
"""How deep a Slack payload nests: a view submission's state is about 8 levels."""
MAX_DIGITS = 40
"""Digits in one JSON number: Slack sends timestamps and counts, never long numbers."""
EVENT_WINDOW = 3600.0
"""Seconds an event id is remembered: Slack retries 3 times over about 5 minutes."""

REPLAY_WINDOW = 300
"""Seconds a signed request stays valid (Slack's, and bolt's, 5 minutes)."""

Body = dict[str, Any]


class Malformed(ValueError):
    """A signed request that cannot be handled as Slack would send it; the message says why."""


class Signature:
    """Slack's request signature over the raw bytes: `v0=` + HMAC-SHA256(secret,
    `v0:<timestamp>:<body>`), the timestamp within 5 minutes. (slack_sdk's verifier decodes
    the body as UTF-8 first, which raises on bytes that are not: this never looks inside.)"""

    def __init__(self, secret: str, *, clock: Callable[[], float] = time.time) -> None:
        self._key = secret.encode()
        self.clock = clock

    def sign(self, timestamp: str, raw: bytes) -> str:
        message = b"v0:" + timestamp.encode() + b":" + raw
        return "v0=" + hmac.new(self._key, message, hashlib.sha256).hexdigest()

    def valid(self, raw: bytes, headers: Mapping[str, str]) -> bool:
        timestamp = headers.get("X-Slack-Request-Timestamp", "")
        signature = headers.get("X-Slack-Signature", "")
        if not (timestamp.isascii() and timestamp.isdigit()) or len(timestamp) > 12:
            return False
        if abs(self.clock() - int(timestamp)) > REPLAY_WINDOW:
            return False
        return hmac.compare_digest(self.sign(timestamp, raw), signature)


def verified(signature: Signature | None, raw: bytes, headers: Mapping[str, str]) -> bool:
    """Whether the raw bytes carry Slack's signature (always, without a signing secret:
    Socket Mode and tests without HTTP signing)."""
    return signature is None or signature.valid(raw, headers)


def parse(raw: bytes, content_type: str) -> Body:
    """The body as bolt would parse it, or Malformed: size, UTF-8, depth, digits."""
    if len(raw) > MAX_BODY:
        raise Malformed(f"the body is over {MAX_BODY} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Malformed("the body is not UTF-8") from None
    if content_type == "application/json" or text.startswith("{"):
        body = load_json(text)
        if not isinstance(body, dict):
            raise Malformed("the JSON body is not an object")
        return body
    form = dict(urllib.parse.parse_qsl(text, keep_blank_values=True))
    if "payload" in form:
        payload = load_json(form["payload"])
        if not isinstance(payload, dict):
            raise Malformed("the payload is not a JSON object")
        return payload
    return form


def load_json(text: str, *, max_depth: int = MAX_DEPTH) -> Any:
    """JSON with limits: no number longer than MAX_DIGITS, no NaN, no nesting past
    `max_depth` (the C parser stops a hostile depth with RecursionError before the stack
    runs out; the depth of what it parsed is then counted without recursion)."""
    try:
        value = json.loads(text, parse_int=_int, parse_float=_float, parse_constant=_constant)
    except RecursionError:
        raise Malformed(f"the JSON nests deeper than {max_depth} levels") from None
    except ValueError as exc:
        raise Malformed(str(exc) if isinstance(exc, Malformed) else "the JSON is invalid") from None
    if nesting_depth(value) > max_depth:
        raise Malformed(f"the JSON nests deeper than {max_depth} levels")
    return value


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise Malformed(f"a number has more than {MAX_DIGITS} digits")
    return int(text)


def _float(text: str) -> float:
    if len(text) > MAX_DIGITS + 10:
        raise Malformed(f"a number has more than {MAX_DIGITS} digits")
    return float(text)


def _constant(name: str) -> Any:
    raise Malformed(f"{name} is not a JSON number")


# -- shapes: what each kind of request must carry for the listeners to read it --------------


def shape_error(body: Body) -> str | None:
    """Why this body is not a request the listeners can read, or None when it is."""
    kind = body.get("type")
    check = _SHAPES.get(str(kind)) if isinstance(kind, str) else None
    if check is not None:
        return check(body)
    if "command" in body:
        return _strings(body, "user_id", "command") or _optional_string(body, "text")
    return None  # bolt answers anything else it does not handle (404)


def _user(body: Body) -> str | None:
    user = body.get("user")
    if not isinstance(user, dict) or not _is_text(user.get("id")):
        return "user.id is missing"
    return None


def _block_actions(body: Body) -> str | None:
    actions = body.get("actions")
    if not isinstance(actions, list) or not actions:
        return _user(body) or "actions is empty"
    first = actions[0]
    if not isinstance(first, dict) or not _is_text(first.get("action_id")):
        return "actions[0].action_id is missing"
    value = first.get("value")
    if value is not None and not isinstance(value, str):
        return "actions[0].value is not a string"
    if "trigger_id" in body and not isinstance(body["trigger_id"], str):
        return "trigger_id is not a string"
    return _user(body) or _container(body)


def _container(body: Body) -> str | None:
    for key in ("channel", "container"):
        if key in body and not isinstance(body[key], dict):
            return f"{key} is not an object"
    return None


def _view_submission(body: Body) -> str | None:
    view = body.get("view")
    if not isinstance(view, dict):
        return _user(body) or "view is missing"
    if not _is_text(view.get("type")):
        return "view.type is missing"
    if not isinstance(view.get("private_metadata", ""), str):
        return "view.private_metadata is not a string"
    state = view.get("state")
    values = state.get("values") if isinstance(state, dict) else None
    if not isinstance(values, dict) or not all(
        isinstance(block, dict) and all(isinstance(v, dict) for v in block.values())
        for block in values.values()
    ):
        return _user(body) or "view.state.values is not an object of inputs"
    return _user(body)


def _view_type(body: Body) -> str | None:
    view = body.get("view")
    return None if isinstance(view, dict) and _is_text(view.get("type")) else "view.type is missing"


def _event_callback(body: Body) -> str | None:
    event = body.get("event")
    if not isinstance(event, dict) or not _is_text(event.get("type")):
        return "event is missing"
    if not _is_text(body.get("event_id")):
        return "event_id is missing"
    if event["type"] == "app_home_opened" and not _is_text(event.get("user")):
        return "event.user is missing"
    return None


def _url_verification(body: Body) -> str | None:
    return _strings(body, "challenge")


_SHAPES: dict[str, Callable[[Body], str | None]] = {
    "block_actions": _block_actions,
    "view_submission": _view_submission,
    "view_closed": lambda body: _user(body) or _view_type(body),
    "event_callback": _event_callback,
    "url_verification": _url_verification,
}


def _strings(body: Body, *keys: str) -> str | None:
    for key in keys:
        if not _is_text(body.get(key)):
            return f"{key} is missing"
    return None


def _optional_string(body: Body, key: str) -> str | None:
    return None if isinstance(body.get(key, ""), str) else f"{key} is not a string"


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


class SeenEvents:
    """Event ids handled in the last `window` seconds, so a retried event is handled once."""

    def __init__(
        self,
        window: float = EVENT_WINDOW,
        *,
        most: int = 100_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.window = window
        self.most = most
        self.clock = clock
        self._seen: OrderedDict[str, float] = OrderedDict()

    def first_time(self, event_id: str) -> bool:
        """Remember `event_id`; False when it was already seen within the window."""
        now = self.clock()
        while self._seen and (
            len(self._seen) >= self.most or next(iter(self._seen.values())) < now - self.window
        ):
            self._seen.popitem(last=False)
        if event_id in self._seen:
            return False
        self._seen[event_id] = now
        return True
