"""`python -m store.schema DIALECT [URL] [--write]`: print (or write to the checked-in page)
the schema a fresh database of DIALECT has after every migration."""

from __future__ import annotations

import argparse
import asyncio
import sys

from store import schema


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m store.schema", description=__doc__)
    parser.add_argument("dialect", choices=["sqlite", "postgres"])
    parser.add_argument(
        "url", nargs="?", default=schema.DEFAULT_POSTGRES_URL, help="the PostgreSQL server"
    )
    parser.add_argument("--write", action="store_true", help="write docs/schema/<dialect>.md")
    args = parser.parse_args(argv)
    if args.dialect == "sqlite":
        text = asyncio.run(schema.fresh_sqlite_schema())
    else:
        text = asyncio.run(schema.fresh_postgres_schema(args.url))
    if args.write:
        path = schema.checked_in_path(args.dialect)
        path.write_text(schema.page(args.dialect, text), "utf-8")
        print(f"wrote {path}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
