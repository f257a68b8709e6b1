"""`@requires_signoff(policy="refunds")`: a human approves each call of a function first.

A call asks for an approval (the function's name is the tool, its bound arguments the args),
waits for the decision, then calls the function with the approved arguments (edited, when
the approver edited them) or raises `Declined` with the reason. Nobody deciding within
`timeout` seconds raises `TimedOut`, or `Declined` with `on_timeout="decline"`: either way
the function is not called: a gate that cannot ask never fails open. Sync and async functions
both work; an async one uses `AsyncClient`, a sync one `Client`. A caller that leaves while
the call waits (its task cancelled; Ctrl-C) withdraws the approval on its way out, so nobody
decides a call no one will make.

`request_id(arguments) -> str` names the approval after what the call is about (an order
id): calling again for the same thing then finds the approval already asked for (and its
decision) instead of asking again. Without it each call asks anew.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any
from typing import Literal
from typing import ParamSpec
from typing import TypeVar

from signoff.client import AsyncClient
from signoff.client import Client
from signoff.errors import Declined
from signoff.errors import TimedOut
from signoff.models import Approval

P = ParamSpec("P")
R = TypeVar("R")
OnTimeout = Literal["raise", "decline"]


def requires_signoff(
    policy: str | None = None,
    *,
    tool: str | None = None,
    timeout: float = 3600.0,
    on_timeout: OnTimeout = "raise",
    client: Client | AsyncClient | None = None,
    requested_by: str | None = None,
    request_id: Callable[[Mapping[str, Any]], str] | None = None,
    sensitive: Sequence[str] = (),
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    if on_timeout not in ("raise", "decline"):
        raise ValueError(f"on_timeout: {on_timeout!r} is not 'raise' or 'decline'")

    def wrap(function: Callable[P, R]) -> Callable[P, R]:
        call: Callable[..., Any] = function  # called with the approved arguments, by name
        signature = inspect.signature(function)
        _check_keywords(function, signature)
        name = tool or function.__name__

        def ask(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            arguments = dict(bound.arguments)
            for parameter in signature.parameters.values():  # **extra: its names, flat
                if parameter.kind == parameter.VAR_KEYWORD:
                    arguments |= arguments.pop(parameter.name, {})
            return arguments

        def options(arguments: Mapping[str, Any]) -> dict[str, Any]:
            return {
                "approval_id": request_id(arguments) if request_id else None,
                "policy": policy,
                "requested_by": requested_by,
                "sensitive": sensitive,
            }

        if inspect.iscoroutinefunction(function):

            @functools.wraps(function)
            async def gated_async(*args: Any, **kwargs: Any) -> Any:
                arguments = ask(args, kwargs)
                chosen = client if isinstance(client, AsyncClient) else AsyncClient()
                try:
                    started = time.monotonic()
                    asked = await chosen.request(name, arguments, **options(arguments))
                    decided = (
                        asked if asked.decided else await chosen.wait(asked.id, timeout=timeout)
                    )
                finally:
                    if chosen is not client:
                        await chosen.close()
                approved = _outcome(decided, on_timeout, time.monotonic() - started)
                return await call(**approved)

            return gated_async  # type: ignore[return-value]

        @functools.wraps(function)
        def gated(*args: Any, **kwargs: Any) -> Any:
            arguments = ask(args, kwargs)
            chosen = client if isinstance(client, Client) else Client()
            started = time.monotonic()
            asked = chosen.request(name, arguments, **options(arguments))
            decided = asked if asked.decided else chosen.wait(asked.id, timeout=timeout)
            approved = _outcome(decided, on_timeout, time.monotonic() - started)
            return call(**approved)

        return gated

    return wrap


def _outcome(approval: Approval, on_timeout: OnTimeout, waited: float) -> dict[str, Any]:
    """The arguments to call with, or the error that says why there is no call."""
    if approval.state == "approved":
        return dict(approval.final_args)
    if approval.state == "declined":
        raise Declined(approval)
    if on_timeout == "decline":
        raise Declined(approval.model_copy(update={"reason": "timed out", "decided_by": None}))
    raise TimedOut(approval, waited)


def _check_keywords(function: Callable[..., Any], signature: inspect.Signature) -> None:
    """The approved arguments are passed by name, so every parameter must take one."""
    for parameter in signature.parameters.values():
        if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.VAR_POSITIONAL):
            raise TypeError(
                f"{function.__name__}: @requires_signoff passes the approved arguments by "
                f"name; {parameter.name} cannot take one"
            )
