"""cel-python's parser, analysed once per machine rather than once per process.

Building the CEL grammar's LALR tables (lark) is most of what a first rule costs a process
(0.1-0.4 s here), and every `signoff` command that reads a configuration with rules pays it.
lark can save an analysed parser and load it again in a tenth of the time (`Lark.save`,
`Lark.load`). The file is named by a hash of what it was built from (the grammar, lark's and
Python's versions, the tree class), so an upgrade builds a new one; it is kept in the user's
own cache folder (`$XDG_CACHE_HOME/signoff`, else `~/.cache/signoff`, private to the user),
as it loads as a pickle; it is written under a name of its own and renamed into place, so no
process reads one half written. A file that does not load is built again; without a
writable folder of the user's the parser is built each time, as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any


def install(tree_class: type) -> None:
    """Make `tree_class`'s CEL parser the one cel-python uses (`CELParser.CEL_PARSER`)."""
    import celpy
    import lark
    from celpy.celparser import CELParser

    grammar = (Path(celpy.__file__).parent / "cel.lark").read_text("utf-8")
    made_of = f"{grammar}{lark.__version__}{sys.version_info[:2]}{tree_class.__qualname__}"
    name = f"cel-parser-{hashlib.sha256(made_of.encode()).hexdigest()[:16]}"
    folder = _folder()
    cached = None if folder is None else _loaded(folder / name)
    if cached is not None:
        CELParser.CEL_PARSER = cached
        return
    built = lark.Lark(  # the options cel-python's own CELParser gives lark
        grammar,
        parser="lalr",
        start="expr",
        debug=True,
        g_regex_flags=re.M,
        lexer_callbacks={"IDENT": CELParser.ambiguous_literals},
        propagate_positions=True,
        maybe_placeholders=False,
        priority="invert",
        tree_class=tree_class,
    )
    CELParser.CEL_PARSER = built
    if folder is not None:
        _save(built, folder / name)


def _folder() -> Path | None:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = Path(base) / "signoff"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        mine = folder.stat().st_uid == os.getuid() and os.access(folder, os.W_OK)
    except OSError:
        return None
    return folder if mine else None  # a cache someone else could write is never loaded


def _loaded(path: Path) -> Any:
    import lark

    try:
        with path.open("rb") as file:
            return lark.Lark.load(file)
    except Exception:  # missing, half a file from a crash, another lark's format: build it
        return None


def _save(parser: Any, path: Path) -> None:
    with contextlib.suppress(OSError):
        handle, scratch = tempfile.mkstemp(prefix=".cel-", dir=path.parent)
        try:
            with os.fdopen(handle, "wb") as file:
                parser.save(file)
            os.replace(scratch, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(scratch)
