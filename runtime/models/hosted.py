"""What the hosted-model adapters share: the provider's client, loaded only when first used;
its own retries (rate limits, 5xx, `Retry-After`), then one `ProviderError`; usage priced
from configuration; an estimate of the next call for the run's budget."""

from __future__ import annotations

import asyncio
import copy
import importlib
import json
import os
from collections.abc import Mapping
from collections.abc import Sequence
from functools import cached_property
from types import ModuleType
from typing import Any

from runtime.model import ProviderError
from runtime.model import Reply
from runtime.models.pricing import Price
from runtime.models.pricing import Tokens
from runtime.models.pricing import estimated_prompt
from runtime.models.pricing import usage
from runtime.models.timeouts import DEFAULT_MAX_RETRIES
from runtime.models.timeouts import DEFAULT_TIMEOUT
from runtime.tools import ToolSpec
from store import Message
from store import ToolCall
from store import Usage


class HostedModel:
    """A model behind a provider's official SDK. Subclasses say how to translate and send."""

    provider = ""
    package = ""
    """The SDK's import name, and the extra that installs it (`signoff[<package>]`)."""
    client_class = ""
    example = ""
    key_env = ""
    """The environment variable the SDK reads the API key from."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        price: Price | None = None,
        max_tokens: int | None = None,
        client: Any = None,
    ) -> None:
        if not model:
            raise ValueError(f"{self.provider}: name the model, e.g. {self.example!r}")
        if timeout <= 0 or max_retries < 0:
            raise ValueError(f"{self.provider}: timeout must be > 0 and max_retries >= 0")
        self.model = model
        self.price = price
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.max_retries = max_retries
        self._options = {"api_key": api_key, "base_url": base_url}
        self._client = client
        self._own_client = client is None
        self._loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.model}>"

    def identity(self) -> dict[str, Any]:
        """What a run records of its model: which one, where, and its reply limit (not the
        timeouts, retries or price, which do not change what it answers)."""
        return {
            "class": type(self).__name__,
            "provider": self.provider,
            "model": self.model,
            "base_url": self._options["base_url"],
            "max_tokens": self.max_tokens,
        }

    def priced(self, price: Price) -> HostedModel:
        """The same model with this price (one from configuration)."""
        other = copy.copy(self)
        other.price = price
        if other._own_client:  # each makes (and closes) its own connections
            other._client = None
        return other

    def check(self) -> None:
        """Refuse at start-up what would fail every call: the SDK missing (ImportError
        naming the extra) or no API key (ValueError naming the variable)."""
        self.sdk  # noqa: B018  (importing it is the check)
        given = self._options["api_key"] or os.environ.get(self.key_env)
        if self._own_client and not given:
            raise ValueError(
                f"{type(self).__name__}({self.model!r}) has no API key: set {self.key_env}"
            )

    @cached_property
    def sdk(self) -> ModuleType:
        try:
            return importlib.import_module(self.package)
        except ImportError:
            raise ImportError(
                f"{type(self).__name__} needs the {self.package!r} package: "
                f"pip install 'signoff[{self.package}]'"
            ) from None

    @property
    def client(self) -> Any:
        """The SDK's async client; it reads its key (and base URL) from the environment when
        none is given. Its connections belong to one event loop, so a model used under a
        new loop (a second `asyncio.run`) gets a new client."""
        loop = asyncio.get_running_loop()
        if self._client is None or (self._own_client and self._loop is not loop):
            options = {k: v for k, v in self._options.items() if v is not None}
            self._client = getattr(self.sdk, self.client_class)(
                timeout=self.timeout, max_retries=self.max_retries, **options
            )
            self._loop = loop
        return self._client

    async def close(self) -> None:
        """Close the client's connections (a process closes its agents' models on exit)."""
        if self._client is not None and self._own_client:
            await self._client.close()
            self._client = None

    def request(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        """The provider request for this transcript: a function of it alone."""
        raise NotImplementedError

    async def send(self, body: dict[str, Any]) -> Mapping[str, Any]:
        """Send a request through the SDK; its response as JSON data."""
        raise NotImplementedError

    def parse(self, data: Mapping[str, Any]) -> tuple[str, tuple[ToolCall, ...], Tokens]:
        raise NotImplementedError

    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Reply:
        body = self.request(messages, tools)
        try:
            data = await self.send(body)
        except self.sdk.APIStatusError as exc:
            raise ProviderError(self._status_error(exc)) from exc
        except self.sdk.APITimeoutError as exc:
            raise ProviderError(
                f"{self.provider}: no answer within {self.timeout:g}s "
                f"(after {self.max_retries} retries)"
            ) from exc
        except self.sdk.APIConnectionError as exc:
            raise ProviderError(
                f"{self.provider}: {exc} (after {self.max_retries} retries)"
            ) from exc
        try:
            content, calls, tokens = self.parse(data)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ProviderError(f"{self.provider}: unexpected response: {exc}") from exc
        return Reply(content, calls, usage(tokens, self.price))

    def _status_error(self, exc: Any) -> str:
        request = f" (request {exc.request_id})" if getattr(exc, "request_id", None) else ""
        retries = _retries(exc)
        retried = f" after {retries} retries" if retries else ""
        return f"{self.provider} {exc.status_code}{retried}: {_error_message(exc)}{request}"

    def estimate(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Usage:
        """The next call's prompt, estimated low from the text it sends, and what that costs."""
        body = self.request(messages, tools)
        prompt = estimated_prompt(_text_length(body))
        return usage(Tokens(input=prompt), self.price)


def _retries(exc: Any) -> int:
    """How many times the SDK retried before this answer (it numbers each attempt)."""
    try:
        return int(exc.response.request.headers.get("x-stainless-retry-count", 0))
    except (AttributeError, ValueError):
        return 0


def _error_message(exc: Any) -> str:
    body = exc.body
    if isinstance(body, Mapping):
        error = body.get("error", body)
        if isinstance(error, Mapping) and error.get("message"):
            kind = error.get("type") or error.get("code")
            return f"{error['message']}" + (f" ({kind})" if kind else "")
    return str(exc)


def _text_length(body: Any) -> int:
    """Characters of text in a request: message texts, arguments and tool schemas."""
    if isinstance(body, str):
        return len(body)
    if isinstance(body, Mapping):
        return sum(_text_length(v) for k, v in body.items() if k not in ("model", "type"))
    if isinstance(body, list | tuple):
        return sum(_text_length(v) for v in body)
    return len(json.dumps(body)) if body is not None else 0
