"""The start-up check of approval rules: what CEL itself only finds when a condition runs.

cel-python has no type checker, so this walks a condition's syntax tree: every name must be
one a rule sees (`args`, `tool`, `run`, `now`, `limits`, or a macro's variable), every
`args.x` an argument of the tools the rule applies to, every `run.x` a field of the run,
every `limits.x` a limit that counts those tools' calls, and every
comparison of a field with a literal must compare values of one type (CEL finds no `1` equal
to `'1'`, and no int ordered against a double). Loaded only when a configuration has rules.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Collection
from collections.abc import Iterator
from collections.abc import Mapping
from typing import Any

from lark import Token
from lark import Tree

from runtime.approvals.rules import tree

CelType = str  # "int", "double", "string", "bool", "timestamp", "null", ... ; "" is unknown
RUN_FIELDS: dict[str, CelType] = {
    "id": "string",
    "agent": "string",
    "task": "string",
    "requested_by": "string",
}
USAGE_TYPES: dict[str, CelType] = {
    "steps": "int",
    "input_tokens": "int",
    "output_tokens": "int",
    "cost": "double",
}
LIMIT_FIELDS: dict[str, CelType] = {"used": "int", "left": "int", "max": "int"}
VARIABLES = ("args", "tool", "run", "now", "limits")
_MACROS = {"all", "exists", "exists_one", "map", "filter"}
_TYPE_NAMES = {"int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type"}
_LITERALS = {
    "INT_LIT": "int",
    "UINT_LIT": "uint",
    "FLOAT_LIT": "double",
    "STRING_LIT": "string",
    "MLSTRING_LIT": "string",
    "BYTES_LIT": "bytes",
    "BOOL_LIT": "bool",
    "NULL_LIT": "null",
}
_PY_TYPES: dict[Any, CelType] = {int: "int", float: "double", str: "string", bool: "bool"}


def arg_types(annotations: Mapping[str, Any]) -> dict[str, CelType]:
    """CEL types of a tool's arguments from their Python annotations ("" when any type)."""
    return {name: _cel_type(annotation) for name, annotation in annotations.items()}


def _cel_type(annotation: Any) -> CelType:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _cel_type(inner[0]) if len(inner) == 1 else ""
    return _PY_TYPES.get(annotation, "")


def check(
    when: str,
    tool: str | None,
    args: Mapping[str, CelType] | None,
    limits: Collection[str] | None = None,
) -> list[str]:
    """What is wrong with a condition for this tool (`args`: its argument types; None when
    the tool is not known here, so its arguments cannot be checked; `limits`: the names of
    the limits that count its calls)."""
    ast = tree(when)
    bound = _macro_variables(ast)
    known = tuple(limits or ())
    problems = [
        p for node in ast.iter_subtrees_topdown() for p in _names(node, bound, tool, args, known)
    ]
    for node in ast.iter_subtrees_topdown():
        problems.extend(_comparison(node, args or {}))
    return list(dict.fromkeys(problems))


def _names(
    node: Tree[Token],
    bound: set[str],
    tool: str | None,
    args: Mapping[str, CelType] | None,
    limits: tuple[str, ...],
) -> Iterator[str]:
    if node.data == "ident" and str(node.children[0]) not in bound:
        name = str(node.children[0])
        if name not in VARIABLES and name not in _TYPE_NAMES:
            yield f"unknown name {name!r}; a rule sees {', '.join(VARIABLES)}"
    path = _path(node)
    if path is None or len(path) < 2:
        return
    if path[0] == "args" and args is not None and path[1] not in args:
        known = ", ".join(args) or "none"
        yield f"{tool} has no argument {path[1]!r} (its arguments: {known})"
    elif path[0] == "run" and path[1] not in {*RUN_FIELDS, "usage"}:
        yield f"run has no field {path[1]!r} (it has {', '.join([*RUN_FIELDS, 'usage'])})"
    elif path[:2] == ("run", "usage") and len(path) > 2 and path[2] not in USAGE_TYPES:
        yield f"run.usage has no field {path[2]!r} (it has {', '.join(USAGE_TYPES)})"
    elif path[0] == "limits" and path[1] not in limits:
        named = ", ".join(limits) or "none"
        yield f"no limit {path[1]!r} counts {tool}'s calls (its limits: {named})"
    elif path[0] == "limits" and len(path) > 2 and path[2] not in LIMIT_FIELDS:
        yield f"a limit has no field {path[2]!r} (it has {', '.join(LIMIT_FIELDS)})"


def _path(node: Tree[Token]) -> tuple[str, ...] | None:
    """`args.amount_cents` and `args['amount_cents']` as ("args", "amount_cents")."""
    if node.data == "member_dot":
        base = _path(_unwrap(node.children[0]))
        return None if base is None else (*base, str(node.children[1]))
    if node.data == "member_index":
        base, key = _path(_unwrap(node.children[0])), _literal(_unwrap(node.children[1]))
        if base is None or key is None or key[0] != "string":
            return None
        return (*base, key[1])
    if node.data == "ident":
        return (str(node.children[0]),)
    return None


def _unwrap(node: Any) -> Any:
    """The meaningful node under a chain of one-child wrappers (expr → … → primary)."""
    while isinstance(node, Tree) and len(node.children) == 1 and isinstance(node.children[0], Tree):
        if node.data in ("member_dot", "member_index", "list_lit", "literal"):
            break
        node = node.children[0]
    return node


def _literal(node: Any) -> tuple[CelType, str] | None:
    if isinstance(node, Tree) and node.data == "literal" and isinstance(node.children[0], Token):
        token = node.children[0]
        value = str(token.value)
        if token.type in ("STRING_LIT", "MLSTRING_LIT"):
            value = value.strip("'\"")
        return _LITERALS.get(token.type, ""), value
    return None


def _type_of(node: Any, args: Mapping[str, CelType]) -> CelType:
    node = _unwrap(node)
    literal = _literal(node)
    if literal is not None:
        return literal[0]
    if isinstance(node, Tree) and node.data == "unary" and len(node.children) == 2:
        return _type_of(node.children[1], args)
    path = _path(node) if isinstance(node, Tree) else None
    if path == ("tool",):
        return "string"
    if path == ("now",):
        return "timestamp"
    if path and len(path) == 2 and path[0] == "args":
        return args.get(path[1], "")
    if path and len(path) == 2 and path[0] == "run":
        return RUN_FIELDS.get(path[1], "")
    if path and len(path) == 3 and path[:2] == ("run", "usage"):
        return USAGE_TYPES.get(path[2], "")
    if path and len(path) == 3 and path[0] == "limits":
        return LIMIT_FIELDS.get(path[2], "")
    return ""


def _comparison(node: Tree[Token], args: Mapping[str, CelType]) -> Iterator[str]:
    if node.data != "relation" or len(node.children) != 2:
        return
    op_node, right = node.children
    if not isinstance(op_node, Tree) or not op_node.data.startswith("relation_"):
        return
    left = op_node.children[0]
    op = op_node.data.removeprefix("relation_")
    left_type = _type_of(left, args)
    if op == "in":
        items = _unwrap(right)
        if isinstance(items, Tree) and items.data == "list_lit" and items.children:
            for item in items.children[0].children if items.children[0] is not None else ():
                yield from _mismatch(left, left_type, "in", _type_of(item, args), item)
        return
    yield from _mismatch(left, left_type, op, _type_of(right, args), right)


def _mismatch(
    left: Any, left_type: CelType, op: str, right_type: CelType, right: Any
) -> Iterator[str]:
    if not left_type or not right_type or left_type == right_type:
        return
    if "null" in (left_type, right_type) and op in ("eq", "ne", "in"):
        return
    hint = (
        " (write 1.0 for a double, 1 for an int)"
        if {left_type, right_type} == {"int", "double"}
        else ""
    )
    yield (
        f"compares {_source(left)} ({left_type}) with {_source(right)} ({right_type}); "
        f"CEL never finds these equal or ordered{hint}"
    )


def _source(node: Any) -> str:
    node = _unwrap(node)
    path = _path(node) if isinstance(node, Tree) else None
    if path:
        return ".".join(path)
    if isinstance(node, Tree) and node.data == "literal":
        return str(node.children[0])
    return "a value"


def _macro_variables(ast: Tree[Token]) -> set[str]:
    """Names bound by `list.exists(x, …)` and the other macros."""
    bound = set()
    for node in ast.iter_subtrees():
        if node.data == "member_dot_arg" and str(node.children[1]) in _MACROS:
            exprs = node.children[2]
            if isinstance(exprs, Tree) and exprs.children:
                first = _unwrap(exprs.children[0])
                if isinstance(first, Tree) and first.data == "ident":
                    bound.add(str(first.children[0]))
    return bound
