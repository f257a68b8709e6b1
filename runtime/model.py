"""Models: the `Model` protocol, its `Reply`, and `ScriptedModel` for offline runs.

`ScriptedModel` picks its reply from the number of assistant turns already in the transcript,
never from an in-memory counter, so a run resumed in a fresh process gets the reply it would
have got. An entry may be a function of the transcript, and one function alone is a policy
used for every turn.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import Protocol
from typing import runtime_checkable

from runtime.tools import ToolSpec
from store import Message
from store import ToolCall
from store import Usage


@dataclass(frozen=True, slots=True)
class Reply:
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)


class Model(Protocol):
    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Reply: ...


@runtime_checkable
class Estimating(Protocol):
    """A model that can tell, before calling, what a call will cost at least."""

    def estimate(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Usage: ...


def identity(model: Model) -> dict[str, Any] | None:
    """The model and the settings that shape its replies, as a run records them, for a model
    that describes itself (`identity()`, as the hosted ones and `ScriptedModel` do); None for
    one that does not (a wrapper, a test double), which nothing is checked against."""
    described = getattr(model, "identity", None)
    return dict(described()) if callable(described) else None


def estimate(model: Model, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Usage:
    """What the next call will use at least; nothing known for a model that cannot say."""
    if isinstance(model, Estimating):
        return model.estimate(messages, tools)
    return Usage()


class ModelError(Exception):
    """The model call failed."""


class RateLimited(ModelError):
    """The provider asked us to slow down; the engine waits and retries."""

    def __init__(self, message: str = "rate limited", *, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ProviderError(ModelError):
    """A hosted model's API refused or failed, after its client's own retries."""


class ScriptExhausted(ModelError):
    """The script has no reply for this turn."""


UNPARSED_ARGUMENTS = "__unparsed_arguments__"
"""The key under which a call keeps arguments that were not a JSON object, as sent."""


def unparsed_arguments(call: ToolCall) -> str | None:
    """The model's raw arguments text when it was not a JSON object, else None."""
    raw = call.arguments.get(UNPARSED_ARGUMENTS)
    return raw if len(call.arguments) == 1 and isinstance(raw, str) else None


def tool_call(name: str, args: dict[str, Any] | None = None, *, id: str = "") -> ToolCall:
    """A tool call for a script; an empty id is filled in from the turn and position."""
    return ToolCall(id=id, name=name, arguments=args or {})


Entry = str | ToolCall | Sequence[ToolCall] | Reply | Exception
Policy = Callable[[Sequence[Message]], Entry]


class ScriptedModel:
    """A deterministic model: a list of replies and/or policies, or one policy for every turn.

    Token usage is estimated like a provider would count it (about four characters a token),
    and priced per thousand tokens if a price is given.
    """

    def __init__(
        self,
        replies: Sequence[Entry | Policy] | Policy,
        *,
        cost_per_1k_input: float = 0.0,
        cost_per_1k_output: float = 0.0,
    ) -> None:
        self._policy = replies if callable(replies) else None
        self._replies: Sequence[Entry | Policy] = () if callable(replies) else list(replies)
        for number, entry in enumerate(self._replies, start=1):
            if not (callable(entry) or _is_entry(entry)):
                raise TypeError(
                    f"ScriptedModel reply {number} is {entry!r}: use a string, tool_call(...), "
                    "a list of tool calls, a Reply, an exception, or a function of the transcript"
                )
        self._cost_in = cost_per_1k_input
        self._cost_out = cost_per_1k_output
        self._tallies = Tallies()

    def identity(self) -> dict[str, Any]:
        """A script is code: the run records that it ran on one, not which (a changed script
        is a changed program, like any other code)."""
        return {"class": "ScriptedModel"}

    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Reply:
        turn, chars = self._tallies.count(messages)
        entry = self._entry(turn, messages)
        if isinstance(entry, Exception):
            raise entry
        reply = _as_reply(entry, turn)
        return Reply(reply.content, reply.tool_calls, self._usage(chars, len(messages), reply))

    def _entry(self, turn: int, messages: Sequence[Message]) -> Entry:
        if self._policy is not None:
            return self._policy(messages)
        if turn >= len(self._replies):
            raise ScriptExhausted(f"the script has {len(self._replies)} replies; turn {turn + 1}")
        entry = self._replies[turn]
        return entry(messages) if callable(entry) else entry

    def _usage(self, chars: int, messages: int, reply: Reply) -> Usage:
        # Like a provider, the whole prompt counts every turn: about four characters a token,
        # plus a few tokens of framing per message.
        prompt = chars + 16 * messages
        input_tokens = max(1, prompt // 4)
        output_tokens = max(1, _chars(reply.content, reply.tool_calls) // 4)
        cost = (input_tokens * self._cost_in + output_tokens * self._cost_out) / 1000
        return Usage(input_tokens=input_tokens, output_tokens=output_tokens, cost=cost)


class Tallies:
    """Assistant turns and prompt characters of transcripts, counted once per message.

    A run's transcript only grows, so the count for the previous call is extended with the
    new messages instead of recounting hundreds of messages on every turn.
    """

    def __init__(self, keep: int = 256) -> None:
        self._keep = keep
        self._known: OrderedDict[int, tuple[Message, Message, int, int, int]] = OrderedDict()

    def count(self, messages: Sequence[Message]) -> tuple[int, int]:
        if not messages:
            return 0, 0
        first = messages[0]
        start, turns, chars = 0, 0, 0
        known = self._known.pop(id(first), None)
        if known is not None:
            was_first, was_last, length, was_turns, was_chars = known
            if was_first is first and length <= len(messages) and messages[length - 1] is was_last:
                start, turns, chars = length, was_turns, was_chars
        for message in messages[start:]:
            turns += message.role == "assistant"
            chars += len(message.content)
        self._known[id(first)] = (first, messages[-1], len(messages), turns, chars)
        if len(self._known) > self._keep:
            self._known.popitem(last=False)
        return turns, chars


def _chars(content: str, calls: Sequence[ToolCall]) -> int:
    return len(content) + sum(len(c.name) + len(str(c.arguments)) for c in calls)


def _is_entry(entry: object) -> bool:
    if isinstance(entry, str | ToolCall | Reply | Exception):
        return True
    return isinstance(entry, list | tuple) and all(isinstance(c, ToolCall) for c in entry)


def _as_reply(entry: Entry, turn: int) -> Reply:
    if not _is_entry(entry):
        raise TypeError(f"a scripted policy returned {entry!r}, which is not a reply")
    if isinstance(entry, Reply):
        reply = entry
    elif isinstance(entry, str):
        reply = Reply(content=entry)
    elif isinstance(entry, ToolCall):
        reply = Reply(tool_calls=(entry,))
    elif isinstance(entry, Exception):
        raise entry
    else:
        reply = Reply(tool_calls=tuple(entry))
    if all(c.id for c in reply.tool_calls):
        return reply
    calls = tuple(
        c if c.id else c.model_copy(update={"id": f"call_{turn + 1}_{i + 1}"})
        for i, c in enumerate(reply.tool_calls)
    )
    return Reply(reply.content, calls, reply.usage)
