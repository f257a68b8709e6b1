"""Reading a request: its JSON body once, with the API's limits (depth, size, no NaN), into
its request model, and its query parameters against those the endpoint reads: a malformed
body or an unknown parameter is a 400 naming what is wrong."""

from __future__ import annotations

import json
import math
from collections.abc import Collection
from collections.abc import Mapping
from typing import Any
from typing import TypeVar

from aiohttp import web
from pydantic import BaseModel
from pydantic import ValidationError

from bot.http_errors import BadRequest
from runtime.limits import MAX_DEPTH
from runtime.limits import plain_reason

M = TypeVar("M", bound=BaseModel)


async def parse_body(request: web.Request, model: type[M]) -> M:
    try:
        data = await request.json(loads=_strict_json)
    except (json.JSONDecodeError, UnicodeDecodeError, LookupError):
        raise BadRequest("the body is not valid JSON (UTF-8)") from None
    except ValueError as exc:
        raise BadRequest(plain_reason(exc)) from None
    except RecursionError:
        raise BadRequest(
            f"the body is nested deeper than the limit of {MAX_DEPTH} levels"
        ) from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        raise BadRequest(f"{where}: {first['msg']}") from None


def refuse_unknown(
    query: Mapping[str, str], known: Collection[str], *, name_known: bool = False
) -> None:
    """A 400 naming each query parameter the endpoint does not read (and, with `name_known`,
    those it does)."""
    unknown = sorted(set(query) - set(known))
    if unknown:
        use = f" (use {', '.join(sorted(known))})" if name_known else ""
        raise BadRequest(f"unknown query parameter(s): {', '.join(unknown)}{use}")


def _strict_json(text: str) -> Any:
    """JSON as RFC 8259 has it: NaN and Infinity are not numbers anyone can approve."""

    def refuse(constant: str) -> Any:
        raise ValueError(f"the body holds {constant}, which JSON does not allow")

    def finite(literal: str) -> float:
        value = float(literal)
        if math.isinf(value):
            raise ValueError(f"the body holds {literal[:40]}, too large for a number")
        return value

    return json.loads(text, parse_constant=refuse, parse_float=finite)
