"""Did you mean: the known name a mistyped one is near (a setting, a tool, an attribute), so
a mistake in the configuration names its fix instead of only refusing."""

from __future__ import annotations

import difflib
import types
from collections.abc import Iterable
from typing import Annotated
from typing import Any
from typing import Union
from typing import get_args
from typing import get_origin

from pydantic import AliasChoices
from pydantic import BaseModel

TYPO = 0.75
"""How alike (difflib's ratio) a name must be to a known one to count as that name typed
wrong, which stops start-up: a letter dropped, doubled or swapped (`delete_custmer`,
`sned`, `agnet`). Two names that only share a word are not (`refund` and `issue_refund`:
0.67; `issue_refund` and `reverse_refund`: 0.69)."""
HINT = 0.7
"""How alike a name must be for a refusal to suggest it (`policy` -> `policies`: 0.71)."""


def near(word: str, known: Iterable[str], *, cutoff: float = TYPO) -> str | None:
    """The known name `word` is nearest to, if one is at least `cutoff` alike."""
    found = difflib.get_close_matches(word, sorted(set(known) - {word}), n=1, cutoff=cutoff)
    return found[0] if found else None


def did_you_mean(word: str, known: Iterable[str], *, cutoff: float = HINT) -> str:
    """`; did you mean `approvers`?`, or nothing when no name is near."""
    found = near(word, known, cutoff=cutoff)
    return f"; did you mean `{found}`?" if found else ""


def keys_at(model: type[BaseModel], path: Iterable[str | int]) -> list[str]:
    """The names a TOML table may hold at `path` under `model` (a validation error's location
    without its last part): each field's name and the names it may be given by. Empty when
    the path leads to no model (a free-form table)."""
    annotation: Any = model
    for part in path:
        annotation = _step(annotation, part)
        if annotation is None:
            return []
    found = _model(annotation)
    return [] if found is None else _names(found)


def _step(annotation: Any, part: str | int) -> Any:
    """The type one location part leads to: a model's field, a table's value, a list's item."""
    model = _model(annotation)
    if model is not None:
        for name, info in model.model_fields.items():
            if part in (name, *_aliases(info.validation_alias)):
                return info.annotation
        return None
    inner = _plain(annotation)
    origin = get_origin(inner)
    if origin is dict:
        return get_args(inner)[1]
    if origin in (list, tuple, set, frozenset) and get_args(inner):
        return get_args(inner)[0]
    return None


def _model(annotation: Any) -> type[BaseModel] | None:
    inner = _plain(annotation)
    if isinstance(inner, type) and issubclass(inner, BaseModel):
        return inner
    return None


def _plain(annotation: Any) -> Any:
    """`Annotated[X, ...]` and `X | None` as X."""
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) in (Union, types.UnionType):
        choices = [arg for arg in get_args(annotation) if arg is not type(None)]
        if len(choices) == 1:
            return _plain(choices[0])
    return annotation


def _names(model: type[BaseModel]) -> list[str]:
    names: list[str] = []
    for name, info in model.model_fields.items():
        names += [name, *(a for a in _aliases(info.validation_alias) if not a.isupper())]
    return names


def _aliases(alias: Any) -> list[str]:
    if isinstance(alias, str):
        return [alias]
    if isinstance(alias, AliasChoices):
        return [str(choice) for choice in alias.choices if isinstance(choice, str)]
    return []
