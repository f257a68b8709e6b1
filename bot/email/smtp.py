"""Sending one message over SMTP (the standard library's smtp, in a thread), within a
timeout: a server that is down or slow raises, and the outbox tries the row again later."""

from __future__ import annotations

import asyncio
import smtplib
import ssl
from email.message import EmailMessage

from bot.sections import EmailSettings
from bot.settings import secret


class Smtp:
    def __init__(self, settings: EmailSettings) -> None:
        self.settings = settings

    async def send(self, message: EmailMessage) -> None:
        await asyncio.to_thread(self._send, message)

    def _send(self, message: EmailMessage) -> None:
        s = self.settings
        host = s.host or "localhost"
        smtp: smtplib.SMTP
        if s.security == "tls":
            smtp = smtplib.SMTP_SSL(
                host, s.port, timeout=s.timeout, context=ssl.create_default_context()
            )
        else:
            smtp = smtplib.SMTP(host, s.port, timeout=s.timeout)
        with smtp:
            if s.security == "starttls":
                smtp.starttls(context=ssl.create_default_context())
            if s.username:
                smtp.login(s.username, secret(s.password) or "")
            smtp.send_message(message)
