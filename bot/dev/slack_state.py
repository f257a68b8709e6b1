"""The dev workspace's messages kept in a JSON file beside the dev database, so a restarted
`signoff dev` still shows the cards of the runs it parked (and can update them in place);
and a `Hub` that tells the open pages, by server-sent events, that the workspace changed."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from contextlib import suppress
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bot.dev.slack.fake_web import Message
from bot.dev.slack.fake_web import Version
from bot.dev.slack.fake_web import Workspace

log = logging.getLogger("signoff.dev")
CHANGING = (
    "chat.postMessage",
    "chat.update",
    "chat.postEphemeral",
    "views.open",
    "views.update",
    "views.publish",
)


class Hub:
    """Wakes every open event stream; a stream that is slow to read just coalesces news."""

    def __init__(self) -> None:
        self._queues: set[asyncio.Queue[str]] = set()
        self.closed = asyncio.Event()

    def publish(self, kind: str) -> None:
        for queue in self._queues:
            with suppress(asyncio.QueueFull):
                queue.put_nowait(kind)

    def subscribe(self) -> asyncio.Queue[str]:
        queue: asyncio.Queue[str] = asyncio.Queue(maxsize=16)
        self._queues.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[str]) -> None:
        self._queues.discard(queue)

    def close(self) -> None:
        """Let every stream end, so shutting down does not wait for the pages to go."""
        self.closed.set()


def load(workspace: Workspace, path: Path) -> int:
    """Put back the messages saved in `path`; how many. A missing file is a new workspace."""
    if not path.exists():
        return 0
    try:
        saved = json.loads(path.read_text("utf-8"))
    except ValueError:
        log.warning("dev: %s is not JSON; starting with an empty workspace", path)
        return 0
    count = 0
    for channel, messages in saved.get("messages", {}).items():
        if channel not in workspace.messages:
            continue
        for raw in messages:
            history = [Version(**version) for version in raw.pop("history", [])]
            workspace.messages[channel].append(Message(**raw, history=history))
            count += 1
    return count


def save(workspace: Workspace, path: Path) -> None:
    """Write the messages whole, then rename: a crash leaves the old file or the new one."""
    data = {
        "messages": {
            channel: [asdict(message) for message in messages]
            for channel, messages in workspace.messages.items()
        }
    }
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(data), "utf-8")
    partial.replace(path)


def watch(workspace: Workspace, hub: Hub, path: Path) -> None:
    """After every call that changes what a person sees: save the messages, tell the pages."""
    for method in CHANGING:
        workspace.methods[method] = _watched(workspace.methods[method], workspace, hub, path)


def _watched(
    handler: Callable[[dict[str, Any]], dict[str, Any]], workspace: Workspace, hub: Hub, path: Path
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def call(args: dict[str, Any]) -> dict[str, Any]:
        answer = handler(args)
        try:
            save(workspace, path)
        except OSError as exc:
            log.warning("dev: could not save the workspace to %s: %s", path, exc)
        hub.publish("workspace")
        return answer

    return call
