"""Who is calling the HTTP API and what they may do: named tokens with scopes, a rate each.
Shared by every surface the HTTP app serves (the API, the console, the workspace page), and
owned by none of them.

A token is recognised by the SHA-256 of what the client sends, compared with every
configured hash by `hmac.compare_digest` (no early exit), so neither the configuration nor
the comparison's timing gives a token away. Each handler names the scopes that let a caller
in (`requires`); the caller's name goes into the audit events the API writes.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import logging
import math
import time
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Middleware

from bot.sections import SCOPES
from bot.sections import ApiToken
from bot.sections import Scope

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
LEGACY = "SIGNOFF_API_TOKEN"
OFF = (
    "the HTTP API is off: configure api_tokens (SIGNOFF_API_TOKENS) or SIGNOFF_API_TOKEN "
    "to turn it on"
)
log = logging.getLogger("signoff.api")


@dataclass(frozen=True)
class Caller:
    """A configured token, by name; never the token itself."""

    name: str
    digest: bytes
    scopes: frozenset[str]
    revoked: bool = False
    rate_per_minute: int | None = None

    @property
    def actor(self) -> str:
        """How the audit log names this token."""
        return f"token:{self.name}"


CALLER = web.RequestKey("caller", Caller)


def callers(token: str | None, tokens: Mapping[str, ApiToken] | None = None) -> list[Caller]:
    """The single legacy token (every scope) and the named ones."""
    found = [legacy(token)] if token else []
    for name, config in (tokens or {}).items():
        if config.digest is not None:
            found.append(
                Caller(name, config.digest, config.scopes, config.revoked, config.rate_per_minute)
            )
    return found


def legacy(token: str) -> Caller:
    return Caller(LEGACY, _digest(token), frozenset(SCOPES))


def identify(known: list[Caller], presented: str) -> Caller | None:
    digest = _digest(presented)
    found = None
    for caller in known:  # every one compared: the time taken does not say which matched
        if hmac.compare_digest(caller.digest, digest):
            found = caller
    return found


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


class RateLimiter:
    """A token bucket per API token, in this process's memory.

    Each token may send `per_minute` requests at once and then `per_minute / 60` a second.
    A bucket is two numbers, so this is a few lines rather than a dependency: aiohttp has no
    limiter of its own, and the libraries that do either throttle by waiting (aiolimiter),
    where a 429 with `Retry-After` must refuse at once, or bring a storage layer we do not
    need. Buckets exist only for configured tokens (a request is counted once its token is
    known), so memory stays bounded. Several `serve` processes each keep their own buckets:
    the limit is per process.
    """

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_minute = per_minute
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}

    def take(self, caller: Caller) -> float:
        """Spend one request: 0.0 if allowed, else the seconds until one is."""
        capacity = float(caller.rate_per_minute or self.per_minute)
        rate = capacity / 60
        now = self.clock()
        tokens, then = self._buckets.get(caller.name, (capacity, now))
        tokens = min(capacity, tokens + (now - then) * rate)
        if tokens >= 1:
            self._buckets[caller.name] = (tokens - 1, now)
            return 0.0
        self._buckets[caller.name] = (tokens, now)
        return (1 - tokens) / rate


def error(
    status: int, reason: str, *, headers: dict[str, str] | None = None, **more: Any
) -> web.Response:
    return web.json_response({"error": reason, **more}, status=status, headers=headers)


PUBLIC = frozenset({"/v1/keys"})
"""Paths anyone may read: the public keys that verify Signoff's signatures."""


def authenticate(known: list[Caller], limiter: RateLimiter) -> Middleware:
    """`Authorization: Bearer <token>` (the scheme in any case, RFC 7235) on /v1/, then the
    token's rate; the caller is `request[CALLER]`."""

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not request.path.startswith("/v1/") or request.path in PUBLIC:
            return await handler(request)
        if not known:
            return error(503, OFF)
        scheme, _, given = request.headers.get("Authorization", "").strip().partition(" ")
        caller = identify(known, given.strip()) if scheme.lower() == "bearer" else None
        if caller is not None and caller.revoked:
            log.warning(
                "revoked API token %r refused: %s %s", caller.name, request.method, request.path
            )
            caller = None
        if caller is None:
            return error(
                401, "missing or invalid bearer token", headers={"WWW-Authenticate": "Bearer"}
            )
        wait = limiter.take(caller)
        if wait > 0:
            retry = str(max(1, math.ceil(wait)))
            return error(
                429,
                f"token {caller.name!r} is over its rate of "
                f"{caller.rate_per_minute or limiter.per_minute} requests a minute; "
                f"retry in {retry} s",
                headers={"Retry-After": retry},
            )
        request[CALLER] = caller
        return await handler(request)

    return check


def requires(*scopes: Scope) -> Callable[[Handler], Handler]:
    """Let in a caller whose token has any of `scopes`; 403 naming them otherwise."""

    def wrap(handler: Handler) -> Handler:
        @functools.wraps(handler)
        async def guarded(request: web.Request) -> web.StreamResponse:
            caller = request[CALLER]
            if caller.scopes.isdisjoint(scopes):
                log.warning(
                    "token %r refused %s %s: no scope %s",
                    caller.name,
                    request.method,
                    request.path,
                    " or ".join(scopes),
                )
                needed = " or ".join(scopes)
                return error(
                    403,
                    f"token {caller.name!r} does not have the scope {needed}, which "
                    f"{request.method} {request.path} needs",
                )
            return await handler(request)

        return guarded

    return wrap
