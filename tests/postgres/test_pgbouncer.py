"""Workers through a real PgBouncer in transaction mode (`pool_mode=transaction`): each
transaction may land on another server connection, LISTEN goes straight to the server
(`listen_at`), and runs, effects and wake-ups behave as they do on a direct connection.

PgBouncer is Debian's package (`.ci/run` installs it); it will not run as root, so as root the
test starts it as the `postgres` user."""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.helpers import Finished
from support.helpers import free_port
from support.pg_support import HAVE_ASYNCPG
from support.pg_support import POSTGRES_URL
from support.pg_support import postgres

from examples import refund_agent
from runtime import Runtime
from runtime.runs.wakeups import Wakeups
from store import ApprovalState
from store import RunStatus
from store import errors
from store import open_store

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

PGBOUNCER = shutil.which("pgbouncer") or shutil.which("pgbouncer", path="/usr/sbin")
pytestmark = [
    pytest.mark.skipif(not HAVE_ASYNCPG, reason="asyncpg is not installed"),
    pytest.mark.skipif(PGBOUNCER is None, reason="pgbouncer is not installed (apt-get install)"),
]
SERVER = POSTGRES_URL.rsplit("/", 1)[0].split("@")[-1]  # host:port of the server itself


@pytest.fixture
def pgbouncer() -> Iterator[int]:
    """A PgBouncer in transaction mode with two server connections per database, on a free
    port; its port."""
    port = free_port()
    host, server_port = SERVER.split(":")
    folder = Path(tempfile.mkdtemp(prefix="signoff-pgbouncer-"))
    folder.chmod(0o777)
    (folder / "users.txt").write_text('"postgres" ""\n')
    (folder / "pgbouncer.ini").write_text(
        f"[databases]\n* = host={host} port={server_port}\n"
        f"[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n"
        f"auth_type = trust\nauth_file = {folder / 'users.txt'}\npool_mode = transaction\n"
        "default_pool_size = 2\nmax_client_conn = 200\n"
        "ignore_startup_parameters = extra_float_digits\n"
    )
    for path in folder.iterdir():
        path.chmod(0o644)
    command = [str(PGBOUNCER), str(folder / "pgbouncer.ini")]
    if os.geteuid() == 0:
        command = ["runuser", "-u", "postgres", "--", *command]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        wait_for_port(port, process)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()
        shutil.rmtree(folder, ignore_errors=True)


def wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if process.poll() is not None:
            output = process.stdout.read().decode() if process.stdout else ""
            raise RuntimeError(f"pgbouncer exited: {output}")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError("pgbouncer did not listen within 10 s")


@pytest.fixture
async def database() -> AsyncIterator[str]:
    """A fresh database (a transaction-mode pooler keeps no search_path); its name."""
    name = f"signoff_pgb_{secrets.token_hex(4)}"
    await postgres(f"CREATE DATABASE {name}")
    try:
        yield name
    finally:
        await postgres(f"DROP DATABASE {name} WITH (FORCE)")


def through(port: int, database: str) -> str:
    return (
        f"postgresql://postgres@127.0.0.1:{port}/{database}"
        f"?pool_mode=transaction&listen_at={SERVER}"
    )


async def test_the_pooler_hands_one_client_several_server_connections(
    pgbouncer: int, database: str
) -> None:
    import asyncpg

    clients = [
        await asyncpg.connect(through(pgbouncer, database).split("?")[0], statement_cache_size=0)
        for _ in range(4)
    ]
    try:
        pids: set[int] = set()
        for _ in range(5):
            answers = await asyncio.gather(
                *(c.fetchval("SELECT pg_backend_pid()") for c in clients)
            )
            pids.update(answers)
        assert len(pids) <= 2  # four clients, at most two server connections: shared
    finally:
        await asyncio.gather(*(c.close() for c in clients))


@pytest.mark.usefixtures("world")
async def test_runs_effects_and_wakeups_work_through_pgbouncer(
    pgbouncer: int, database: str
) -> None:
    from runtime_bench import agent_for
    from runtime_bench import lookup
    from runtime_bench import record

    url = through(pgbouncer, database)
    reads, writes = agent_for(4, lookup), agent_for(3, record)
    async with open_store(url, pool_size=4) as here_store, open_store(url) as there_store:
        told = Finished()
        agents = [reads, writes, refund_agent.agent]
        here = Runtime(here_store, agents, told, worker_id="here")
        there = Runtime(there_store, [reads, writes, refund_agent.agent], worker_id="there")
        ids = [f"read-{i}" for i in range(16)] + [f"write-{i}" for i in range(8)]
        await asyncio.gather(
            *(
                (here if i % 2 else there).start(
                    (reads if run_id.startswith("read") else writes).name, "t", run_id=run_id
                )
                for i, run_id in enumerate(ids)
            )
        )
        runs = [await here.get(run_id) for run_id in ids]
        assert {run.stop_reason for run in runs} == {"answered"}
        for run_id in ids[16:]:
            done = [e for e in await here_store.list_effects(run_id) if e.tool == "record"]
            assert len(done) == 3  # each call once, though pooled connections were shared

        wakeups = Wakeups(here)
        assert await wakeups.start()  # LISTEN at the server itself, not through the pooler
        try:
            await there.start("refund-agent", "Refund order 4471", run_id="order-4471")
            [approval] = await there.approvals(state=ApprovalState.PENDING)
            await there.decide(approval.id, "approved", by="U_APPROVER", resume=False)
            async with asyncio.timeout(10):  # no recovery poll runs: only the wake-up
                await told.event("order-4471").wait()
        finally:
            await wakeups.stop()
        assert (await there.get("order-4471")).status == RunStatus.DONE


@pytest.mark.parametrize(
    ("query", "fix"),
    [
        ("pool_mode=transaction", "listen_at=host:port"),
        (f"pool_mode=transaction&listen_at={SERVER}&search_path=s", "database of its own"),
        ("pool_mode=statement", "session or transaction"),
    ],
)
async def test_what_cannot_work_behind_a_transaction_pooler_is_refused_naming_the_fix(
    query: str, fix: str
) -> None:
    with pytest.raises(errors.UnsupportedURL, match=fix):
        await open_store(f"{POSTGRES_URL}?{query}")
