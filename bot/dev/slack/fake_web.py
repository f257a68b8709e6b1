"""One job, long because Signoff calls many Web API methods: the fake Slack's state.

The fake Slack's Web API methods: what they store, what they answer, what they reject.

Pure state and no HTTP, so that each answer can be read (and tested) apart from the server in
`bot.dev.slack.fake`. Shapes follow Slack's recorded answers; the limits are Slack's own
(`bot.dev.slack.block_limits`), so that a card the fake accepts is a card Slack accepts.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from decimal import Decimal
from decimal import InvalidOperation
from typing import Any

from bot.dev.slack.block_limits import block_errors
from bot.dev.slack.block_limits import view_errors

TEAM_ID = "T0SIGNOFF"
APP_ID = "A0SIGNOFF"
BOT_ID = "B0SIGNOFF"
BOT_USER_ID = "U0SIGNOFF"
BOT_NAME = "signoff"
MAX_MESSAGE_BLOCKS = 50
MAX_TEXT = 40_000
TRIGGER_LIFETIME = 3.0
"""Seconds a trigger_id can open a modal (Slack: 3 s, then `expired_trigger_id`)."""
BOT_PROFILE = {"id": "B0SIGNOFF", "app_id": "A0SIGNOFF", "name": "signoff", "deleted": False}


def trigger(issued: float | None = None) -> str:
    """A trigger_id as Slack hands one out with a click: it says when it was issued, so the
    fake can expire it as Slack does (`<epoch ms>.<team>.<nonce>`)."""
    stamp = int((time.time() if issued is None else issued) * 1000)
    return f"{stamp}.{TEAM_ID}.{time.monotonic_ns():x}"


def trigger_age(trigger_id: str) -> float | None:
    """Seconds since a trigger made by `trigger` was issued; None for another shape."""
    head = trigger_id.split(".", 1)[0]
    if not head.isdigit() or len(head) != 13:
        return None
    return time.time() - int(head) / 1000


def is_user_id(value: str) -> bool:
    return value[:1] in ("U", "W") and value[1:].isalnum() and value.isupper()


Args = dict[str, Any]


class SlackError(Exception):
    """A Slack `{"ok": false}` answer: the method refused, with Slack's error code."""

    def __init__(self, error: str, **extra: Any) -> None:
        super().__init__(error)
        self.error = error
        self.extra = extra

    def body(self) -> dict[str, Any]:
        return {"ok": False, "error": self.error, **self.extra}


@dataclass(frozen=True)
class Version:
    """One state of a message, kept so tests can see every edit, not only the last."""

    text: str
    blocks: list[dict[str, Any]]
    metadata: dict[str, Any] | None
    at: float


@dataclass
class Message:
    """A message the bot posted; `chat.update` changes it in place and appends to `history`."""

    ts: str
    channel: str
    text: str
    blocks: list[dict[str, Any]]
    metadata: dict[str, Any] | None = None
    thread_ts: str | None = None
    user: str = BOT_USER_ID
    edited: bool = False
    history: list[Version] = field(default_factory=list)


@dataclass(frozen=True)
class Ephemeral:
    """A `chat.postEphemeral`: only `user` would have seen it, and it is never in history."""

    channel: str
    user: str
    text: str
    blocks: list[dict[str, Any]]
    message_ts: str
    thread_ts: str | None = None


@dataclass(frozen=True)
class OpenedView:
    """A `views.open` (with its trigger_id), a `views.update` of an open modal (its id is the
    view's) or a `views.publish` (with its user_id)."""

    method: str
    trigger_id: str | None
    user_id: str | None
    view: dict[str, Any]


def as_bool(value: Any) -> bool:
    """Slack flags arrive as JSON booleans, "true"/"false" or "1"/"0" depending on the body."""
    return value is True or str(value).lower() in ("true", "1")


def as_json(value: Any, default: Any) -> Any:
    """Form bodies carry blocks, views and metadata as JSON strings; JSON bodies as objects."""
    if value is None or value == "":
        return default
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError as exc:
            messages = {"messages": [str(exc)]}
            raise SlackError("invalid_arguments", response_metadata=messages) from None
    return value


def ts_key(ts: Any) -> Decimal:
    try:
        return Decimal(str(ts))
    except InvalidOperation:
        raise SlackError("invalid_ts_latest") from None


class Clock:
    """Hands out message timestamps: wall time in microseconds, strictly increasing."""

    def __init__(self) -> None:
        self._last = 0

    def next_ts(self) -> str:
        self._last = max(self._last + 1, int(time.time() * 1_000_000))
        return f"{self._last // 1_000_000}.{self._last % 1_000_000:06d}"


class Workspace:
    """One fake workspace: channels, users, user groups, and everything the bot posted."""

    def __init__(
        self,
        *,
        channels: Iterable[str],
        users: Mapping[str, str],
        usergroups: Mapping[str, Sequence[str]],
    ) -> None:
        self.channels = set(channels)
        self.members: dict[str, set[str]] = {}
        """Who is in a channel, for those where it matters (absent: everyone is)."""
        self.users = dict(users)
        self.usergroups = {group: list(members) for group, members in usergroups.items()}
        self.messages: dict[str, list[Message]] = {channel: [] for channel in self.channels}
        self.ephemerals: list[Ephemeral] = []
        self.deleted: list[Message] = []
        self.views: list[OpenedView] = []
        self.clock = Clock()
        self._home_views: dict[str, str] = {}
        self._modals: dict[str, str] = {}
        """Each open modal's id and its hash (`views.update` names one, and may pass it)."""
        self.methods: dict[str, Callable[[Args], dict[str, Any]]] = {
            "auth.test": self.auth_test,
            "chat.postMessage": self.post_message,
            "chat.update": self.update,
            "chat.delete": self.delete,
            "chat.postEphemeral": self.post_ephemeral,
            "conversations.history": self.history,
            "conversations.info": self.conversation_info,
            "conversations.list": self.conversation_list,
            "conversations.replies": self.replies,
            "views.open": self.views_open,
            "views.update": self.views_update,
            "views.publish": self.views_publish,
            "usergroups.users.list": self.usergroup_users,
            "users.info": self.user_info,
        }

    def call(self, method: str, args: Args) -> dict[str, Any]:
        """Answer one Web API call; refusals come back as Slack's `{"ok": false}` bodies."""
        handler = self.methods.get(method)
        try:
            if handler is None:
                raise SlackError("unknown_method", req_method=method)
            return {"ok": True, **handler(args)}
        except SlackError as refusal:
            return refusal.body()

    # -- lookups used by tests ------------------------------------------------------------

    def message(self, channel: str, ts: str) -> Message:
        for message in self.messages.get(channel, []):
            if message.ts == ts:
                return message
        raise KeyError(f"no message {ts} in {channel}")

    def thread(self, channel: str, ts: str) -> list[Message]:
        """The parent (when it exists) then its replies, oldest first."""
        return [m for m in self.messages.get(channel, []) if ts in (m.ts, m.thread_ts)]

    # -- methods ----------------------------------------------------------------------------

    def auth_test(self, args: Args) -> dict[str, Any]:
        return {
            "url": "https://signoff-fake.slack.com/",
            "team": "Signoff Fake Workspace",
            "user": BOT_NAME,
            "team_id": TEAM_ID,
            "user_id": BOT_USER_ID,
            "bot_id": BOT_ID,
            "is_enterprise_install": False,
        }

    def post_message(self, args: Args) -> dict[str, Any]:
        channel = self._channel(args, dm=True)
        text, blocks = self._content(args)
        metadata = self._metadata(args)
        thread_ts = self._thread_of(channel, args.get("thread_ts"))
        ts = self.clock.next_ts()
        message = Message(ts, channel, text, blocks, metadata, thread_ts)
        message.history.append(Version(text, blocks, metadata, time.time()))
        self.messages[channel].append(message)
        return {"channel": channel, "ts": ts, "message": self._render(message, True)}

    def update(self, args: Args) -> dict[str, Any]:
        channel = self._channel(args)
        try:
            message = self.message(channel, str(args.get("ts", "")))
        except KeyError:
            raise SlackError("message_not_found") from None
        if "text" not in args and "blocks" not in args:
            raise SlackError("no_text")
        text, blocks = self._content(
            {"text": args.get("text", message.text), "blocks": args.get("blocks", message.blocks)}
        )
        if "metadata" in args:
            message.metadata = self._metadata(args)
        message.text, message.blocks, message.edited = text, blocks, True
        message.history.append(Version(text, blocks, message.metadata, time.time()))
        rendered = self._render(message, True)
        return {"channel": channel, "ts": message.ts, "text": text, "message": rendered}

    def delete(self, args: Args) -> dict[str, Any]:
        channel = self._channel(args)
        ts = str(args.get("ts", ""))
        try:
            message = self.message(channel, ts)
        except KeyError:
            raise SlackError("message_not_found") from None
        self.messages[channel].remove(message)
        self.deleted.append(message)
        return {"channel": channel, "ts": ts}

    def post_ephemeral(self, args: Args) -> dict[str, Any]:
        channel = self._channel(args)
        user = args.get("user")
        if not user:
            raise SlackError("user_not_found")
        if channel in self.members and user not in self.members[channel]:
            raise SlackError("user_not_in_channel")
        text, blocks = self._content(args)
        ts = self.clock.next_ts()
        self.ephemerals.append(
            Ephemeral(channel, str(user), text, blocks, ts, args.get("thread_ts") or None)
        )
        return {"message_ts": ts}

    def history(self, args: Args) -> dict[str, Any]:
        channel = self._channel(args)
        top = [m for m in self.messages[channel] if m.thread_ts is None]
        return self._page(channel, top[::-1], args)

    def conversation_info(self, args: Args) -> dict[str, Any]:
        return {"channel": _conversation(self._channel(args))}

    def conversation_list(self, args: Args) -> dict[str, Any]:
        """The workspace's channels (not DMs), `limit` a page, paged by `cursor`."""
        listed = sorted(c for c in self.channels if not c.startswith("D"))
        start, limit = int(args.get("cursor") or 0), int(args.get("limit") or 100)
        more = start + limit < len(listed)
        return {
            "channels": [_conversation(c) for c in listed[start : start + limit]],
            "response_metadata": {"next_cursor": str(start + limit) if more else ""},
        }

    def replies(self, args: Args) -> dict[str, Any]:
        channel = self._channel(args)
        thread = self.thread(channel, str(args.get("ts", "")))
        if not thread:
            raise SlackError("thread_not_found")
        return self._page(channel, thread, args)

    def views_open(self, args: Args) -> dict[str, Any]:
        trigger_id = args.get("trigger_id")
        if not trigger_id:
            raise _invalid_arguments("invalid `trigger_id`")
        age = trigger_age(str(trigger_id))
        if age is not None and age > TRIGGER_LIFETIME:
            raise SlackError("expired_trigger_id")
        view = self._view(args, "modal", view_id=None)
        self._modals[view["id"]] = view["hash"]
        self.views.append(OpenedView("views.open", str(trigger_id), None, view))
        return {"view": view}

    def views_update(self, args: Args) -> dict[str, Any]:
        """Replace an open modal (by `view_id`); with `hash`, only the version it names: a
        view updated since by someone else is a `hash_conflict`, as on Slack."""
        view_id = str(args.get("view_id") or "")
        if view_id not in self._modals:
            raise SlackError("not_found")
        if args.get("hash") and args["hash"] != self._modals[view_id]:
            raise SlackError("hash_conflict")
        view = self._view(args, "modal", view_id=view_id)
        self._modals[view_id] = view["hash"]
        self.views.append(OpenedView("views.update", None, None, view))
        return {"view": view}

    def views_publish(self, args: Args) -> dict[str, Any]:
        user_id = args.get("user_id")
        if not user_id:
            raise _invalid_arguments("invalid `user_id`")
        view = self._view(args, "home", view_id=self._home_views.get(str(user_id)))
        self._home_views[str(user_id)] = view["id"]
        self.views.append(OpenedView("views.publish", None, str(user_id), view))
        return {"view": view}

    def usergroup_users(self, args: Args) -> dict[str, Any]:
        group = args.get("usergroup")
        if group not in self.usergroups:
            raise SlackError("no_such_subteam")
        return {"users": list(self.usergroups[group])}

    def user_info(self, args: Args) -> dict[str, Any]:
        user = str(args.get("user", ""))
        if user == BOT_USER_ID:
            return {"user": _user(user, BOT_NAME, is_bot=True)}
        if user not in self.users:
            raise SlackError("user_not_found")
        return {"user": _user(user, self.users[user], is_bot=False)}

    # -- shared checks ----------------------------------------------------------------------

    def _channel(self, args: Args, *, dm: bool = False) -> str:
        """The channel named; a user id is not one, except that `chat.postMessage` (`dm`)
        takes it for the app's DM with that person, as Slack does."""
        channel = args.get("channel")
        if dm and isinstance(channel, str) and is_user_id(channel):
            direct = "D" + channel[1:]
            self.channels.add(direct)
            self.messages.setdefault(direct, [])
            return direct
        if channel not in self.channels:
            raise SlackError("channel_not_found")
        return str(channel)

    def _content(self, args: Args) -> tuple[str, list[dict[str, Any]]]:
        """Text and blocks, refused the way Slack refuses them (`no_text`, `invalid_blocks`)."""
        text = str(args.get("text") or "")
        blocks = as_json(args.get("blocks"), [])
        if not text and not blocks:
            raise SlackError("no_text")
        if len(text) > MAX_TEXT:
            raise SlackError("msg_too_long")
        errors = block_errors(blocks, max_blocks=MAX_MESSAGE_BLOCKS)
        if errors:
            raise SlackError(
                "invalid_blocks",
                errors=errors,
                response_metadata={"messages": [f"[ERROR] {e}" for e in errors]},
            )
        return text, blocks

    def _metadata(self, args: Args) -> dict[str, Any] | None:
        metadata = as_json(args.get("metadata"), None)
        if metadata is None:
            return None
        if not (
            isinstance(metadata, dict)
            and isinstance(metadata.get("event_type"), str)
            and isinstance(metadata.get("event_payload"), dict)
        ):
            raise SlackError("invalid_metadata_format")
        return metadata

    def _thread_of(self, channel: str, thread_ts: Any) -> str | None:
        """A reply to a reply joins the parent's thread, as in Slack."""
        if not thread_ts:
            return None
        try:
            return self.message(channel, str(thread_ts)).thread_ts or str(thread_ts)
        except KeyError:
            return str(thread_ts)

    def _view(self, args: Args, kind: str, *, view_id: str | None) -> dict[str, Any]:
        view = as_json(args.get("view"), None)
        errors = view_errors(view, kind)
        if errors:
            raise _invalid_arguments(*errors)
        view_id = view_id or "V" + self.clock.next_ts().replace(".", "")[-11:]
        return {
            "id": view_id,
            "team_id": TEAM_ID,
            "app_id": APP_ID,
            "bot_id": BOT_ID,
            "callback_id": "",
            "external_id": "",
            "private_metadata": "",
            "clear_on_close": False,
            "notify_on_close": False,
            "submit": None,
            "close": None,
            "previous_view_id": None,
            **view,
            "state": {"values": {}},
            "hash": self.clock.next_ts(),
            "root_view_id": view_id,
        }

    def _page(self, channel: str, ordered: list[Message], args: Args) -> dict[str, Any]:
        """`limit`, `oldest`, `latest`, `inclusive`, `cursor` over messages already in order."""
        kept = _between(ordered, args)
        limit = int(args.get("limit") or 100)
        page, rest = kept[:limit], kept[limit:]
        with_metadata = as_bool(args.get("include_all_metadata"))
        return {
            "messages": [self._render(m, with_metadata) for m in page],
            "has_more": bool(rest),
            "pin_count": 0,
            "response_metadata": {"next_cursor": _cursor(rest[0].ts) if rest else ""},
        }

    def _render(self, message: Message, with_metadata: bool) -> dict[str, Any]:
        """A message as Slack shows it: parents carry their thread, edits an `edited` mark."""
        body: dict[str, Any] = {
            "type": "message",
            "user": message.user,
            "bot_id": BOT_ID,
            "app_id": APP_ID,
            "team": TEAM_ID,
            "text": message.text,
            "ts": message.ts,
            "bot_profile": {**BOT_PROFILE, "team_id": TEAM_ID},
        }
        if message.blocks:
            body["blocks"] = message.blocks
        replies = [m for m in self.messages[message.channel] if m.thread_ts == message.ts]
        if message.thread_ts:
            body["thread_ts"] = message.thread_ts
        elif replies:
            body.update(thread_ts=message.ts, reply_count=len(replies))
            body["latest_reply"] = replies[-1].ts
        if message.edited:
            body["edited"] = {"user": message.user, "ts": f"{message.history[-1].at:.6f}"}
        if with_metadata and message.metadata is not None:
            body["metadata"] = message.metadata
        return body


def _between(ordered: list[Message], args: Args) -> list[Message]:
    inclusive = as_bool(args.get("inclusive"))
    oldest = ts_key(args.get("oldest") or 0)
    latest = ts_key(args.get("latest") or "9999999999.999999")
    cursor = args.get("cursor")
    if cursor:
        latest, inclusive_latest = ts_key(_uncursor(str(cursor))), True
    else:
        inclusive_latest = inclusive

    def keep(message: Message) -> bool:
        ts = ts_key(message.ts)
        above = ts >= oldest if inclusive else ts > oldest
        below = ts <= latest if inclusive_latest else ts < latest
        return above and below

    return [m for m in ordered if keep(m)]


def _cursor(ts: str) -> str:
    """Slack's cursors are opaque base64; this one says where the next page starts."""
    return base64.b64encode(f"next_ts:{ts}".encode()).decode()


def _uncursor(cursor: str) -> str:
    try:
        kind, _, ts = base64.b64decode(cursor).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        raise SlackError("invalid_cursor") from None
    if kind != "next_ts":
        raise SlackError("invalid_cursor")
    return ts


def _invalid_arguments(*messages: str) -> SlackError:
    return SlackError("invalid_arguments", response_metadata={"messages": list(messages)})


def _user(user_id: str, name: str, *, is_bot: bool) -> dict[str, Any]:
    return {
        "id": user_id,
        "team_id": TEAM_ID,
        "name": name,
        "deleted": False,
        "real_name": name,
        "tz": "UTC",
        "tz_label": "Coordinated Universal Time",
        "tz_offset": 0,
        "is_bot": is_bot,
        "is_admin": False,
        "profile": {"real_name": name, "display_name": name},
    }


def channel_name(channel: str) -> str:
    """The fake's name for a channel: `C0APPROVALS` is #approvals."""
    return channel.removeprefix("C0").removeprefix("G0").lower()


def _conversation(channel: str) -> dict[str, Any]:
    """A channel as `conversations.info` and `conversations.list` describe it."""
    return {
        "id": channel,
        "name": channel_name(channel),
        "is_channel": True,
        "is_private": channel.startswith("G"),
        "is_archived": False,
        "is_member": True,
    }
