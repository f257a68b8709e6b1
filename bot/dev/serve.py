"""`signoff dev`: the whole product on one machine, in one process - the bot over HTTP, the
runtime with the project's agents (`bot.dev.project`; the demo's refund agent without a
signoff.toml), the scheduler, the outbox sender, a local fake Slack
workspace, and a page on 127.0.0.1 that shows that workspace and the run console.

Everything is `signoff serve` (`bot.server.serve`) with settings that point Slack at the
in-process fake; this package adds the workspace view and the step log on top.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import secrets
import shlex
import socket
from collections.abc import AsyncIterator
from collections.abc import Callable
from pathlib import Path

from aiohttp import web
from pydantic import SecretStr

from bot.dev import people
from bot.dev import slack_state
from bot.dev import workspace
from bot.dev.project import Project
from bot.dev.project import demo
from bot.dev.slack.fake import FakeSlack
from bot.dev.steplog import StepLog
from bot.masking import ResultMasks
from bot.sections import ApiSettings
from bot.sections import ApiToken
from bot.sections import DatabaseSettings
from bot.sections import SlackSettings
from bot.sections import WorkerSettings
from bot.settings import ConfigError
from bot.settings import Settings
from bot.wiring import Process

log = logging.getLogger("signoff.dev")
BOT_TOKEN = "xoxb-dev"
CONSOLE_TOKEN = "console"


def dev_settings(
    *,
    database: Path,
    port: int,
    slack_api_url: str,
    signing_secret: str,
    api_token: str,
    agent_token: str | None = None,
    project: Project | None = None,
) -> Settings:
    """`serve`'s settings for the dev process: SQLite at `database`, the fake Slack, bob as
    page resolver, and the project's agents and policies (the demo's: the refund agent, bob
    approves, may edit and write approval rules)."""
    project = project or demo()
    console = ApiToken(
        scopes=frozenset({"runs:read", "runs:write"}),
        sha256=hashlib.sha256(api_token.encode()).hexdigest(),
    )
    return Settings(
        database=DatabaseSettings(url=f"sqlite:///{database}"),
        runtime=project.runtime,
        # the same worker after a restart: runs it parked are its own at once
        workers=WorkerSettings(id="signoff-dev"),
        api=ApiSettings(
            host="127.0.0.1",
            port=port,
            token=None,
            # The console's token: it reads and operates runs, and cannot decide approvals
            # (people decide on their cards, as in Slack).
            tokens={CONSOLE_TOKEN: console} | _agents_token(agent_token),
            callback_secret=SecretStr(secrets.token_hex(16)),
            only=False,
        ),
        slack=SlackSettings(
            bot_token=SecretStr(BOT_TOKEN),
            signing_secret=SecretStr(signing_secret),
            app_token=None,
            api_url=slack_api_url,
            approvals_channel=people.APPROVALS,
            oncall_channel=people.ONCALL,
            # and settle an in-doubt page from its card, so the page's buttons can be tried
            page_resolvers=[people.APPROVER],
        ),
    )


async def run_dev(
    *,
    database: Path,
    port: int,
    stop: asyncio.Event | None = None,
    project: Project | None = None,
) -> None:
    """Run until Ctrl-C (or `stop`); a restart on the same database resumes parked runs."""
    from bot.server import serve

    project = project or demo()

    if port and not _port_free(port):  # before anything is opened or printed
        raise ConfigError(
            f"port {port} on 127.0.0.1 is in use (another signoff dev?); pick one with --port"
        )
    os.environ.setdefault("SIGNOFF_WORLD_DB", str(database.with_name(f"{database.stem}-world.db")))
    port = port or free_port()
    people.join(project.named_users())
    fake = FakeSlack(
        token=BOT_TOKEN,
        channels=tuple(dict.fromkeys([*people.CHANNEL_NAMES, *sorted(project.channels())])),
        users=people.NAMES,
        usergroups=project.user_groups(),
    )
    saved = database.with_name(f"{database.stem}-slack.json")
    restored = slack_state.load(fake.workspace, saved)
    hub = slack_state.Hub()
    slack_state.watch(fake.workspace, hub, saved)
    slack_url = await fake.start("127.0.0.1", 0)
    signing_secret, api_token = _dev_secrets(database.with_name(f"{database.stem}-secrets.json"))
    agent_token = os.environ.get("SIGNOFF_API_TOKEN") or _kept_token(
        database.with_name(f"{database.stem}-agent-token")
    )
    settings = dev_settings(
        database=database,
        port=port,
        slack_api_url=slack_url,
        signing_secret=signing_secret,
        api_token=api_token,
        agent_token=agent_token,
        project=project,
    )
    url = f"http://127.0.0.1:{port}/"

    def extend(app: web.Application, process: Process) -> None:
        dev = workspace.DevWorkspace(fake, hub, process, signing_secret, api_token, project)
        workspace.mount(app, dev)
        app.cleanup_ctx.append(_step_log(process))

        async def tell(app: web.Application) -> None:
            for line in project.lines():
                print(f"signoff dev: {line}", flush=True)
            print(f"signoff dev: open {url}  (database {database}; Ctrl-C stops)", flush=True)
            cli = {
                "SIGNOFF_DATABASE_URL": f"sqlite:///{database}",
                "SIGNOFF_WORLD_DB": os.environ["SIGNOFF_WORLD_DB"],
            } | project.cli_environment()
            exports = " ".join(f"{name}={shlex.quote(value)}" for name, value in cli.items())
            print("signoff dev: the CLI on this database, in another terminal:", flush=True)
            print(f"export {exports}", flush=True)  # a line of its own, to paste

        async def tell_agents(app: web.Application) -> None:
            print("signoff dev: agents on other stacks (examples/stacks):", flush=True)
            print(
                f"export SIGNOFF_URL={url.rstrip('/')} SIGNOFF_API_TOKEN={agent_token}", flush=True
            )

        app.on_startup.append(tell)
        app.on_startup.append(tell_agents)

    if restored:
        log.info("dev: %d Slack message(s) restored from %s", restored, saved)
    try:
        await serve(settings, stop=stop, extend=extend)
    finally:
        await fake.stop()


def _step_log(process: Process) -> Callable[[web.Application], AsyncIterator[None]]:
    """The step log as an aiohttp cleanup context: it follows the runs while the app runs."""

    async def follow(app: web.Application) -> AsyncIterator[None]:
        rt, stop = process.runtime, asyncio.Event()
        steps = StepLog(rt.queries, ResultMasks(rt.policies))
        task = asyncio.create_task(steps.follow(stop), name="step log")
        yield
        stop.set()
        await task

    return follow


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _port_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _dev_secrets(path: Path) -> tuple[str, str]:
    """The signing secret and console token of this dev database, kept across restarts so a
    page left open keeps working (made once, readable by this user only)."""
    try:
        kept = json.loads(path.read_text("utf-8"))
        return str(kept["signing_secret"]), str(kept["api_token"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    made = {"signing_secret": secrets.token_hex(16), "api_token": secrets.token_urlsafe(24)}
    path.touch(mode=0o600)
    path.write_text(json.dumps(made), "utf-8")
    return made["signing_secret"], made["api_token"]


AGENTS_TOKEN = "agents"


def _agents_token(secret: str | None) -> dict[str, ApiToken]:
    """The token agents on other stacks use here (the client, the MCP proxy, the adapters):
    it asks for approvals and starts and reads runs; people decide on their cards."""
    if not secret:
        return {}
    scopes = frozenset({"approvals:request", "runs:read", "runs:write"})
    return {
        AGENTS_TOKEN: ApiToken(scopes=scopes, sha256=hashlib.sha256(secret.encode()).hexdigest())
    }


def _kept_token(path: Path) -> str:
    """A token made once for this dev database (readable by this user only)."""
    try:
        kept = path.read_text("utf-8").strip()
    except OSError:
        kept = ""
    if kept:
        return kept
    made = secrets.token_urlsafe(24)
    path.touch(mode=0o600)
    path.write_text(made, "utf-8")
    return made
