"""`signoff serve` as a real process: it serves, parks runs, stops cleanly on SIGTERM, and on
start-up recovers a run whose worker died holding its lease."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any
from typing import ClassVar

import pytest
from support.helpers import SIGNOFF
from support.helpers import TOKEN
from support.helpers import clean_env
from support.helpers import free_port
from support.helpers import run_text
from support.helpers import terminate

from bot.callbacks import sign
from examples.refund_agent import agent as refund_agent
from runtime import Runtime
from store import open_store
from store.records import utcnow

SECRET = "serve-callback-secret"


def environment(tmp_path: Path, world: Path, port: int) -> dict[str, str]:
    """The process environment for `signoff` on the test's database, world and port."""
    env = clean_env("SIGNOFF_", "SLACK_")
    return env | {
        "SIGNOFF_DATABASE_URL": f"sqlite:///{tmp_path / 'signoff.db'}",
        "SIGNOFF_WORLD_DB": str(world),
        "SIGNOFF_API_TOKEN": TOKEN,
        "SIGNOFF_CALLBACK_SECRET": SECRET,
        # The test's callback receiver is http on loopback: allowed only because it is listed.
        "SIGNOFF_CALLBACK_ALLOWED_HOSTS": "http://127.0.0.1",
        "SIGNOFF_HOST": "127.0.0.1",
        "SIGNOFF_PORT": str(port),
        "SIGNOFF_API_ONLY": "1",
    }


class Server:
    def __init__(
        self, process: subprocess.Popen[bytes], port: int, log: Path, env: dict[str, str]
    ) -> None:
        self.process = process
        self.base = f"http://127.0.0.1:{port}"
        self.log = log
        self.env = env

    def call(
        self, method: str, path: str, body: Any = None, token: str | None = TOKEN
    ) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        if token is not None:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    def wait_until(self, check: Callable[[], bool], within: float = 10.0) -> None:
        deadline = time.monotonic() + within
        while not check():
            assert self.process.poll() is None, self.log.read_text()
            assert time.monotonic() < deadline, f"not within {within}s:\n{self.log.read_text()}"
            time.sleep(0.05)

    def healthy(self) -> bool:
        try:
            return self.call("GET", "/healthz", token=None)[0] == 200
        except (urllib.error.URLError, ConnectionError):
            return False

    def parked(self, run_id: str) -> bool:
        status, view = self.call("GET", f"/v1/runs/{run_id}")
        return status == 200 and view["status"] == "waiting_approval"

    def stop(self) -> int:
        """SIGTERM, and the exit code (it must exit within a few seconds)."""
        return terminate(self.process, self.log, within=8)


@pytest.fixture
def serve(tmp_path: Path, world: Path) -> Iterator[Callable[[], Server]]:
    """Start `signoff serve` on the test's database and a free port; kill what is left after."""
    started: list[Server] = []

    def start() -> Server:
        port = free_port()
        env = environment(tmp_path, world, port)
        log = tmp_path / f"serve-{len(started)}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [SIGNOFF, "serve"], cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT
            )
        server = Server(process, port, log, env)
        started.append(server)
        server.wait_until(server.healthy, within=15)
        return server

    yield start
    for server in started:
        if server.process.poll() is None:
            server.process.kill()
            server.process.wait()


def test_serve_answers_healthz_and_wants_a_token(serve: Callable[[], Server]) -> None:
    server = serve()
    assert server.call("GET", "/healthz", token=None) == (200, {"ok": True})
    assert server.call("GET", "/v1/runs/x", token=None)[0] == 401
    assert server.call("GET", "/v1/runs/x", token="wrong")[0] == 401
    assert server.call("GET", "/v1/runs/x")[0] == 404
    assert server.stop() == 0
    assert "Traceback" not in server.log.read_text()


def test_serve_on_a_busy_port_fails_with_one_line(tmp_path: Path, world: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        env = environment(tmp_path, world, port)
        done = run_text([SIGNOFF, "serve"], cwd=tmp_path, env=env, timeout=30)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert str(port) in done.stderr.strip().splitlines()[-1]


def test_serve_parks_a_run_and_exits_cleanly_on_sigterm(serve: Callable[[], Server]) -> None:
    server = serve()
    body = {"agent": "refund-agent", "task": "Refund order 4471", "run_id": "order-4471"}
    status, view = server.call("POST", "/v1/runs", body)
    assert status == 201
    assert view["id"] == "order-4471"
    server.wait_until(lambda: server.parked("order-4471"))
    assert server.stop() == 0
    assert "Traceback" not in server.log.read_text()


def test_restart_recovers_a_run_left_running_by_a_dead_worker(
    serve: Callable[[], Server], tmp_path: Path
) -> None:
    first = serve()
    body = {"agent": "refund-agent", "task": "Refund order 4471", "run_id": "order-4471"}
    assert first.call("POST", "/v1/runs", body)[0] == 201
    first.wait_until(lambda: first.parked("order-4471"))
    assert first.stop() == 0

    asyncio.run(leave_orphan(f"sqlite:///{tmp_path / 'signoff.db'}", "orphan"))

    second = serve()
    second.wait_until(lambda: second.parked("orphan"))
    _, orphan = second.call("GET", "/v1/runs/orphan")
    assert [a["tool"] for a in orphan["pending_approvals"]] == ["issue_refund"]
    _, parked = second.call("GET", "/v1/runs/order-4471")
    assert len(parked["pending_approvals"]) == 1  # untouched: not driven again
    assert parked["step"] == 2
    assert second.stop() == 0
    assert "recovering 1 run(s)" in second.log.read_text()
    assert "Traceback" not in second.log.read_text()


async def leave_orphan(url: str, run_id: str) -> None:
    """A run in `running` whose worker died holding a lease that has since expired."""
    store = await open_store(url)
    try:
        rt = Runtime(store, [refund_agent], worker_id="dead-worker")
        await rt.create("refund-agent", "Refund order 5150", run_id=run_id)
        now = utcnow()  # a lease of negative length: lapsed by the database's clock already
        assert await store.acquire_lease(
            run_id, "dead-worker", until=now - timedelta(minutes=5), now=now
        )
        run = await store.get_run(run_id)
        assert run.status == "running"
        assert run.lease_owner == "dead-worker"
    finally:
        await store.close()


class Hook(BaseHTTPRequestHandler):
    """A callback receiver: records each POST and answers 204."""

    received: ClassVar[list[tuple[dict[str, str], bytes]]]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((dict(self.headers), body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return None


@pytest.fixture
def hook() -> Iterator[tuple[str, list[tuple[dict[str, str], bytes]]]]:
    received: list[tuple[dict[str, str], bytes]] = []
    handler = type("RecordingHook", (Hook,), {"received": received})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook", received
    server.shutdown()
    server.server_close()
    thread.join()


def test_decision_from_the_cli_reaches_the_callback_of_a_served_approval(
    serve: Callable[[], Server], tmp_path: Path, hook: tuple[str, list[Any]]
) -> None:
    url, received = hook
    server = serve()
    status, approval = server.call("POST", "/v1/approvals", {"tool": "wire", "callback_url": url})
    assert status == 201
    decided = run_text(
        [SIGNOFF, "approvals", "decide", approval["id"], "approve", "--by", "U0BOSS"],
        cwd=tmp_path,
        env=server.env,
        timeout=30,
    )
    assert decided.returncode == 0, decided.stderr
    server.wait_until(lambda: bool(received), within=10)
    [(headers, body)] = received
    assert json.loads(body)["state"] == "approved"
    assert headers["X-Signoff-Signature"] == sign(SECRET, headers["X-Signoff-Timestamp"], body)
    assert server.stop() == 0
