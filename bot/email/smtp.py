"""Sending one message over SMTP (the standard library's client, in a thread), within a
timeout: a server that is down or slow raises, and the outbox tries the row again later."""

from __future__ import annotations

import asyncio
import smtplib
import ssl
from email.message import EmailMessage

from bot.settings import EmailSettings, secret


class Smtp:
    def __init__(self, settings: EmailSettings) -> None:
        self.settings = settings

    async def send(self, message: EmailMessage) -> None:
        await asyncio.to_thread(self._send, message)

    def _send(self, message: EmailMessage) -> None:
        s = self.settings
        host = s.host or "localhost"
        client: smtplib.SMTP
        if s.security == "tls":
            client = smtplib.SMTP_SSL(
                host, s.port, timeout=s.timeout, context=ssl.create_default_context()
            )
        else:
            client = smtplib.SMTP(host, s.port, timeout=s.timeout)
        with client:
            if s.security == "starttls":
                client.starttls(context=ssl.create_default_context())
            if s.username:
                client.login(s.username, secret(s.password) or "")
            client.send_message(message)
