"""Local fakes of the OpenAI Chat Completions and Anthropic Messages HTTP APIs, on 127.0.0.1.

Each answers as its provider documents: the response object with its usage fields, error
bodies of the provider's shape, 429 with `retry-after`, 5xx, and 400 for a request the real
API would refuse (roles out of order, a tool call left unanswered, a missing key or header).
What to answer comes from a `brain`, a function of the request body; every request is
recorded with its raw bytes and headers, so tests can compare them.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from aiohttp import web

KEY = "sk-test-fake-key"


@dataclass(frozen=True)
class Turn:
    """What the model says: text and/or calls (arguments as a dict, or raw text for OpenAI)."""

    text: str = ""
    calls: tuple[tuple[str, dict[str, Any] | str], ...] = ()
    cached_tokens: int = 0


@dataclass(frozen=True)
class Failure:
    status: int
    retry_after: str | None = None


@dataclass(frozen=True)
class Seen:
    path: str
    headers: Mapping[str, str]
    body: bytes
    at: float

    @property
    def json(self) -> dict[str, Any]:
        return json.loads(self.body)


Brain = Callable[[dict[str, Any]], Turn]


@dataclass
class FakeProvider:
    kind: str  # "openai" or "anthropic"
    brain: Brain
    failures: deque[Failure] = field(default_factory=deque)
    fail_always: Failure | None = None
    delay: float = 0.0
    stalled: asyncio.Event | None = None
    seen: list[Seen] = field(default_factory=list)
    reported: list[dict[str, Any]] = field(default_factory=list)
    """The usage object of every successful response, as sent."""
    _ids: int = 0

    @property
    def path(self) -> str:
        return "/v1/chat/completions" if self.kind == "openai" else "/v1/messages"

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post(self.path, self._handle)
        return app

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        self.seen.append(Seen(request.path, dict(request.headers), body, time.monotonic()))
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.stalled is not None:  # the model "thinks" until the test lets it answer
            await self.stalled.wait()
        if problem := self._auth_problem(request):
            kind = "invalid_request_error" if self.kind == "openai" else "authentication_error"
            return self._error(401, problem, kind)
        failure = self.failures.popleft() if self.failures else self.fail_always
        if failure is not None:
            return self._failure(failure)
        try:
            data = json.loads(body)
        except json.JSONDecodeError:
            return self._error(400, "We could not parse the JSON body of your request.")
        problem = (check_openai if self.kind == "openai" else check_anthropic)(data)
        if problem:
            return self._error(400, problem)
        turn = self.brain(data)
        prompt = max(1, len(body) // 4)
        output = max(1, (len(turn.text) + len(json.dumps(turn.calls))) // 4)
        build = self._openai if self.kind == "openai" else self._anthropic
        answer = build(data, turn, prompt, output)
        self.reported.append(answer["usage"])
        return web.json_response(answer, headers=self._request_id())

    def _auth_problem(self, request: web.Request) -> str | None:
        if self.kind == "openai":
            if request.headers.get("Authorization") != f"Bearer {KEY}":
                return "Incorrect API key provided."
            return None
        # The key travels as x-api-key, or as a bearer token (newer SDKs send that).
        bearer = request.headers.get("Authorization") == f"Bearer {KEY}"
        if request.headers.get("x-api-key") != KEY and not bearer:
            return "invalid x-api-key"
        if not request.headers.get("anthropic-version"):
            return "anthropic-version: header is required"
        return None

    def _next_id(self, prefix: str) -> str:
        self._ids += 1
        return f"{prefix}{self._ids:06d}"

    def _request_id(self) -> dict[str, str]:
        name = "x-request-id" if self.kind == "openai" else "request-id"
        return {name: self._next_id("req_")}

    def _openai(self, data: dict[str, Any], turn: Turn, prompt: int, output: int) -> dict:
        calls = [
            {
                "id": self._next_id("call_"),
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                },
            }
            for name, args in turn.calls
        ]
        message = {
            "role": "assistant",
            "content": turn.text or None,
            "refusal": None,
            "annotations": [],
            **({"tool_calls": calls} if calls else {}),
        }
        return {
            "id": self._next_id("chatcmpl-"),
            "object": "chat.completion",
            "created": 1764530000,
            "model": data["model"],
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": "tool_calls" if calls else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": output,
                "total_tokens": prompt + output,
                "prompt_tokens_details": {"cached_tokens": turn.cached_tokens, "audio_tokens": 0},
                "completion_tokens_details": {
                    "reasoning_tokens": 0,
                    "audio_tokens": 0,
                    "accepted_prediction_tokens": 0,
                    "rejected_prediction_tokens": 0,
                },
            },
            "service_tier": "default",
            "system_fingerprint": "fp_fake",
        }

    def _anthropic(self, data: dict[str, Any], turn: Turn, prompt: int, output: int) -> dict:
        content: list[dict[str, Any]] = [{"type": "text", "text": turn.text}] if turn.text else []
        content += [
            {"type": "tool_use", "id": self._next_id("toolu_"), "name": name, "input": args}
            for name, args in turn.calls
        ]
        return {
            "id": self._next_id("msg_"),
            "type": "message",
            "role": "assistant",
            "model": data["model"],
            "content": content,
            "stop_reason": "tool_use" if turn.calls else "end_turn",
            "stop_sequence": None,
            "usage": {
                # Anthropic counts cache reads apart from input_tokens.
                "input_tokens": prompt - turn.cached_tokens,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": turn.cached_tokens,
                "output_tokens": output,
            },
        }

    def _failure(self, failure: Failure) -> web.Response:
        kinds = {
            429: ("rate_limit_error", "Rate limit reached for requests"),
            500: ("api_error", "The server had an error while processing your request."),
            529: ("overloaded_error", "Overloaded"),
        }
        kind, text = kinds.get(failure.status, ("api_error", "Internal server error"))
        if self.kind == "openai" and failure.status == 429:
            kind = "requests"
        response = self._error(failure.status, text, kind)
        if failure.retry_after is not None:
            response.headers["retry-after"] = failure.retry_after
        return response

    def _error(
        self, status: int, message: str, kind: str = "invalid_request_error"
    ) -> web.Response:
        if self.kind == "openai":
            code = {429: "rate_limit_exceeded", 401: "invalid_api_key"}.get(status)
            body: dict[str, Any] = {
                "error": {"message": message, "type": kind, "param": None, "code": code}
            }
        else:
            body = {"type": "error", "error": {"type": kind, "message": message}}
        headers = self._request_id()
        if self.kind == "anthropic":
            body["request_id"] = headers["request-id"]
        return web.json_response(body, status=status, headers=headers)


def check_openai(data: dict[str, Any]) -> str | None:
    """Why Chat Completions would refuse this body (400), or None."""
    if not isinstance(data.get("model"), str) or not data.get("messages"):
        return "you must provide a model parameter and a non-empty messages array"
    for tool in data.get("tools") or ():
        function = tool.get("function") or {}
        if tool.get("type") != "function" or not isinstance(function.get("parameters"), dict):
            return "tools: each tool is {'type': 'function', 'function': {name, parameters}}"
    open_calls: list[str] = []
    for i, m in enumerate(data["messages"]):
        role = m.get("role")
        if role == "tool":
            if m.get("tool_call_id") not in open_calls:
                return f"messages[{i}]: tool message does not answer a preceding tool_call"
            open_calls.remove(m["tool_call_id"])
            continue
        if open_calls:
            return (
                "An assistant message with 'tool_calls' must be followed by tool messages "
                f"responding to each 'tool_call_id'. Missing: {open_calls}"
            )
        if role not in ("system", "developer", "user", "assistant"):
            return f"messages[{i}].role: invalid value {role!r}"
        for call in m.get("tool_calls") or ():
            if not isinstance(call["function"]["arguments"], str):
                return f"messages[{i}]: function.arguments must be a string"
            open_calls.append(call["id"])
        if role != "assistant" and not isinstance(m.get("content"), str):
            return f"messages[{i}].content must be a string"
    return None


def check_anthropic(data: dict[str, Any]) -> str | None:
    """Why the Messages API would refuse this body (400), or None."""
    turns = data.get("messages") or []
    problem = _anthropic_fields(data, turns)
    if problem:
        return problem
    expected: list[str] = []
    for i, turn in enumerate(turns):
        if i and turn["role"] == turns[i - 1]["role"]:
            return f"messages: roles must alternate between user and assistant (at {i})"
        blocks = turn["content"]
        blocks = [{"type": "text", "text": blocks}] if isinstance(blocks, str) else blocks
        problem = _anthropic_blocks(i, blocks, expected)
        if problem:
            return problem
        expected = [b["id"] for b in blocks if b.get("type") == "tool_use"]
        if expected and turn["role"] != "assistant":
            return f"messages.{i}: tool_use blocks are only for the assistant"
    return None


def _anthropic_fields(data: dict[str, Any], turns: list[dict[str, Any]]) -> str | None:
    """What is wrong with the body's fields around its turns, or None."""
    if not isinstance(data.get("model"), str) or not isinstance(data.get("max_tokens"), int):
        return "model and max_tokens: Field required"
    if not turns or turns[0].get("role") != "user":
        return "messages: the first message must use the user role"
    if "system" in data and not isinstance(data["system"], str | list):
        return "system: must be a string or a list of text blocks"
    for tool in data.get("tools") or ():
        if not tool.get("name") or not isinstance(tool.get("input_schema"), dict):
            return "tools: each tool needs a name and an input_schema"
    return None


def _anthropic_blocks(i: int, blocks: list[dict[str, Any]], expected: list[str]) -> str | None:
    """What is wrong with turn `i`'s blocks, which must answer the `expected` tool uses."""
    results = [b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"]
    if sorted(results) != sorted(expected):
        return (
            f"messages.{i}: tool_use ids were found without tool_result blocks "
            f"immediately after: {sorted(set(expected) - set(results))}"
        )
    if results and blocks[: len(results)] != [b for b in blocks if b.get("type") == "tool_result"]:
        return f"messages.{i}: tool_result blocks must come first in the content"
    for b in blocks:
        if b.get("type") == "text" and not b.get("text"):
            return f"messages.{i}: text content blocks must be non-empty"
    return None
