"""One model call of a run: whether the budget allows it (steps, tokens, cost, counting the
call about to be made), and asking the model, waiting out rate limits (as long as the
provider says, capped, with jitter) a few times. Any other failure is the run's end."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Sequence
from functools import partial

from tenacity import AsyncRetrying
from tenacity import RetryCallState
from tenacity import retry_if_exception_type
from tenacity import stop_after_attempt

from runtime.agent import Agent
from runtime.model import ModelError
from runtime.model import RateLimited
from runtime.model import Reply
from runtime.model import estimate
from runtime.runs.budget import StopReason
from runtime.runs.budget import exhausted
from runtime.runs.budget import watches_usage
from runtime.runs.budget import would_exceed
from store import Budget
from store import Message
from store import Usage

log = logging.getLogger("signoff.driver")

MAX_RATE_LIMIT_RETRIES = 5
MAX_RETRY_AFTER = 60.0


class ModelFailed(Exception):
    """The model gave no reply: the run fails with this text as its error."""


def over_budget(
    budget: Budget, usage: Usage, agent: Agent, transcript: Sequence[Message]
) -> tuple[StopReason, str | None] | None:
    """Why the next model call may not be made: a limit is spent, or the call would overrun
    a token or cost limit (with the numbers)."""
    reason = exhausted(budget, usage)
    if reason is not None:
        return reason, None
    if not watches_usage(budget):
        return None
    call = estimate(agent.model, transcript, agent.specs)
    over = would_exceed(budget, usage, call)
    if over is None:
        return None
    return over, (
        f"the next model call (at least {call.input_tokens} prompt tokens, "
        f"${call.cost:.6f}) would exceed the budget {budget.model_dump(exclude_none=True)} "
        f"with {usage.input_tokens} input tokens, {usage.output_tokens} output tokens and "
        f"${usage.cost:.6f} used"
    )


async def ask(agent: Agent, transcript: Sequence[Message], run_id: str) -> Reply:
    """The model's reply; a rate limit is waited out up to MAX_RATE_LIMIT_RETRIES times.
    `ModelFailed` when there is none."""
    complete = partial(agent.model.complete, transcript, agent.specs)
    try:
        try:
            return await complete()
        except RateLimited as limited:  # rare: only now pay for the retry machinery
            await asyncio.sleep(_wait_for(limited))
            return await _retried(complete)
    except RateLimited as exc:
        raise ModelFailed(f"model: {exc}") from exc
    except Exception as exc:
        log.exception("model call failed in run %s", run_id)
        # A model error's message is the provider's own word; anything else is a bug.
        said = str(exc) if isinstance(exc, ModelError) and str(exc) else repr(exc)
        raise ModelFailed(f"model: {said}") from exc


async def _retried(complete: Callable[[], Awaitable[Reply]]) -> Reply:
    """The tries after a first rate limit, up to MAX_RATE_LIMIT_RETRIES of them."""
    async for attempt in AsyncRetrying(
        retry=retry_if_exception_type(RateLimited),
        stop=stop_after_attempt(MAX_RATE_LIMIT_RETRIES),
        wait=_retry_after,
        reraise=True,
    ):
        with attempt:
            return await complete()
    raise AssertionError("unreachable: the last try returns or raises")


def _retry_after(retry: RetryCallState) -> float:
    failure = retry.outcome.exception() if retry.outcome else None
    return _wait_for(failure if isinstance(failure, RateLimited) else None)


def _wait_for(limited: RateLimited | None) -> float:
    """As long as the provider asked (capped), plus up to a tenth more: runs limited at once
    do not all come back at once."""
    asked = limited.retry_after if limited is not None else 1.0
    wait = min(asked, MAX_RETRY_AFTER)
    return wait + random.uniform(0, wait / 10)
