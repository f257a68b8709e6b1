"""`python -m bot.dev.slack`: the fake Slack on its own (its options: `--help`), until SIGTERM
or SIGINT; with `--ready-file PATH`, its base URL is written there once it listens."""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
from collections.abc import Sequence
from pathlib import Path

from bot.dev.slack import fake
from bot.dev.slack.fake import FakeSlack


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bot.dev.slack", description=fake.__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--ready-file", type=Path, help="write the base URL here once listening")
    parser.add_argument("--token", default="xoxb-test")
    parser.add_argument("--app-token", default="xapp-test")
    parser.add_argument("--channel", action="append", help="known channel id (repeatable)")
    parser.add_argument("--user", action="append", default=[], help="ID=NAME (repeatable)")
    parser.add_argument("--usergroup", action="append", default=[], help="ID=U1,U2 (repeatable)")
    return parser.parse_args(argv)


async def _serve(options: argparse.Namespace) -> None:
    """Run until SIGTERM or SIGINT; the ready file appears whole, once the port is open."""
    slack = FakeSlack(
        token=options.token,
        app_token=options.app_token,
        channels=options.channel or ("C0APPROVALS", "C0ONCALL"),
        users=dict(item.split("=", 1) for item in options.user),
        usergroups={
            group: members.split(",")
            for group, members in (item.split("=", 1) for item in options.usergroup)
        },
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    base_url = await slack.start(options.host, options.port)
    if options.ready_file is not None:
        partial = options.ready_file.with_name(options.ready_file.name + ".partial")
        partial.write_text(base_url)
        partial.replace(options.ready_file)
    print(json.dumps({"base_url": base_url}), flush=True)
    try:
        await stop.wait()
    finally:
        await slack.stop()


def main(argv: Sequence[str] | None = None) -> None:
    asyncio.run(_serve(_parse(argv)))


if __name__ == "__main__":
    main()
