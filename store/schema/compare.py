"""How a test says a freshly migrated database differs from the checked-in schema page."""

from __future__ import annotations

import difflib

from store import schema


def difference(dialect: str, fresh: str) -> str | None:
    """None when `fresh` is the checked-in text; otherwise a diff and the command that
    regenerates the file."""
    path = schema.checked_in_path(dialect)
    checked_in = path.read_text("utf-8") if path.exists() else ""
    fresh_page = schema.page(dialect, fresh)
    if fresh_page == checked_in:
        return None
    diff = difflib.unified_diff(
        checked_in.splitlines(keepends=True),
        fresh_page.splitlines(keepends=True),
        fromfile=f"docs/schema/{dialect}.md (checked in)",
        tofile=f"{dialect} database after every migration",
    )
    command = schema.REGENERATE.format(dialect=dialect)
    return (
        f"docs/schema/{dialect}.md is not the schema the migrations build; if the "
        f"migrations are right, regenerate it with `{command}`\n" + "".join(diff)
    )
