"""A real SMTP server in a test (`aiosmtpd`, in its own thread on 127.0.0.1) and the messages
it received, parsed."""

from __future__ import annotations

import re
from email import message_from_bytes
from email import policy
from email.message import EmailMessage
from typing import Any

from .approvers_support import wait_until


class Inbox:
    """An aiosmtpd handler that keeps every message it is given."""

    def __init__(self) -> None:
        self.received: list[EmailMessage] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        parsed = message_from_bytes(envelope.content, policy=policy.default)
        assert isinstance(parsed, EmailMessage)
        self.received.append(parsed)
        return "250 OK"

    def to(self, address: str, *, count: int = 1, within: float = 30.0) -> list[EmailMessage]:
        """The first `count` messages to `address`, once they came."""

        def came() -> list[EmailMessage] | None:
            mine = [m for m in self.received if m["To"] == address]
            return mine[:count] if len(mine) >= count else None

        return list(wait_until(came, within))


class SmtpServer:
    def __init__(self, port: int) -> None:
        from aiosmtpd.controller import Controller

        self.inbox = Inbox()
        self.controller = Controller(self.inbox, hostname="127.0.0.1", port=port)

    def __enter__(self) -> Inbox:
        self.controller.start()
        return self.inbox

    def __exit__(self, *exc: object) -> None:
        self.controller.stop()


def config(port: int) -> str:
    return (
        f'[email]\nhost = "127.0.0.1"\nport = {port}\nfrom = "signoff@example.com"\n'
        'security = "none"\ntimeout = 5\n'
    )


def parts(message: EmailMessage) -> tuple[str, str]:
    """The plain text and the HTML of a message."""
    plain = message.get_body(("plain",))
    rich = message.get_body(("html",))
    assert plain is not None, message
    assert rich is not None, message
    return str(plain.get_content()), str(rich.get_content())


def links(text: str) -> dict[str, str]:
    """The decision links of a message's plain text: {"approved": url, "declined": url}."""
    found = dict(re.findall(r"^(Approve|Decline): (\S+)\r?$", text, re.M))
    return {"approved": found["Approve"], "declined": found["Decline"]}
