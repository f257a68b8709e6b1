"""Every `/v1` answer the end-to-end tests get, checked against the OpenAPI document: the
status must be one the operation documents and the JSON body must match its schema. A
middleware on the test's app records what does not match; the surfaces conftest fails the test
that saw it (`VIOLATIONS`)."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from aiohttp import web
from jsonschema import Draft202012Validator

from bot.openapi import document

VIOLATIONS: list[str] = []


@cache
def _validator(schema: str) -> Draft202012Validator:
    """`schema` (JSON) with the document's components beside it, so its refs resolve."""
    root = {"components": document()["components"], "allOf": [json.loads(schema)]}
    return Draft202012Validator(root, format_checker=Draft202012Validator.FORMAT_CHECKER)


def problems(method: str, template: str | None, status: int, body: Any) -> list[str]:
    """What is wrong with one answer (`template`: the route's path, None if none matched)."""
    where = f"{method} {template or '(no route)'} -> {status}"
    if template is None:
        if status < 400:
            return [f"{where}: a success without a documented route"]
        schema: Any = {"$ref": "#/components/schemas/Error"}
    else:
        operation = document()["paths"].get(template, {}).get(method.lower())
        if operation is None:
            return [f"{where}: the document has no such operation"]
        response = operation["responses"].get(str(status))
        if response is None:
            return [f"{where}: status not documented"]
        schema = response["content"]["application/json"]["schema"]
    validator = _validator(json.dumps(schema, sort_keys=True))
    return [f"{where}: {error.message}" for error in validator.iter_errors(body)]


@web.middleware
async def check_against_document(request: web.Request, handler: Any) -> web.StreamResponse:
    response: web.StreamResponse = await handler(request)
    if not request.path.startswith("/v1/") or not isinstance(response, web.Response):
        return response
    if response.content_type != "application/json":
        VIOLATIONS.append(f"{request.method} {request.path}: not JSON ({response.content_type})")
        return response
    body = json.loads(response.body) if response.body else None  # type: ignore[arg-type]
    route = request.match_info.route.resource
    template = route.canonical if route is not None else None
    VIOLATIONS.extend(problems(request.method, template, response.status, body))
    return response


def watch(app: web.Application) -> web.Application:
    """The app with its answers checked (outermost: it sees what the client gets)."""
    app.middlewares.insert(0, check_against_document)
    return app
