"""A package's public names, each imported from its module when first used (PEP 562).

A sub-package's `__init__` lists what other packages may import (`__all__`) and where each
name lives; `lazy(__name__, homes)` gives it the module `__getattr__` and `__dir__` that load
a name on first use, so importing the package (or one of its modules) loads nothing else.
The same names are imported under `TYPE_CHECKING` for the type checker; the import graph of
`tests/unit/test_layers.py` reads those lines to see which module a name really comes from.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from collections.abc import Mapping
from typing import Any


def lazy(
    package: str, homes: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`. `homes`: each public name's module, or
    `module:name` where the module calls it otherwise."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = home.partition(":")
        value = getattr(importlib.import_module(module), attribute or name)
        vars(sys.modules[package])[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *homes})

    return __getattr__, __dir__
