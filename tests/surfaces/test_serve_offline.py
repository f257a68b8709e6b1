"""`signoff serve` as a real process with Slack unreachable, over HTTP and over Socket Mode,
against an endpoint that refuses connections and one that accepts them and never answers:
it answers /healthz, is ready within 3 s of that, says once per failed attempt that Slack
is away (no traceback), acks a signed `/runs pending` at once, and stops on SIGTERM or
SIGINT within 5 s."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.helpers import SIGNOFF
from support.helpers import free_port
from support.slack_harness import SlackServer
from support.slack_harness import environment
from support.slack_harness import slash
from support.slack_harness import wait_while_alive

pytestmark = pytest.mark.slow  # real processes, stopped by signals

READY_WITHIN = 3.0
STOP_WITHIN = 5.0
GROUP_POLICY = """
[policies.tools.issue_refund]
channel = "C0APPROVALS"
approvers = ["S0LEADS"]
"""


@pytest.fixture(params=["refuses", "hangs"])
def unreachable(request: pytest.FixtureRequest) -> Iterator[str]:
    """A Slack Web API URL on 127.0.0.1 that refuses every connection, or accepts every
    connection (the kernel's backlog does) and never answers a byte."""
    if request.param == "refuses":
        yield f"http://127.0.0.1:{free_port()}/api/"
        return
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(64)
        yield f"http://127.0.0.1:{silent.getsockname()[1]}/api/"


def start(
    tmp_path: Path, world: Path, slack_url: str, *, socket_mode: bool, policy: str = ""
) -> tuple[SlackServer, float]:
    """`signoff serve` pointed at `slack_url`; the server and the seconds from its first
    /healthz answer to its first ready /readyz."""
    (tmp_path / "signoff.toml").write_text(policy, "utf-8")
    port = free_port()
    env = environment(tmp_path, world, port, slack_url)
    if socket_mode:
        env = {k: v for k, v in env.items() if k != "SLACK_SIGNING_SECRET"}
        env["SLACK_APP_TOKEN"] = "xapp-test"
    log = tmp_path / f"serve-{port}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [SIGNOFF, "serve"], cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    server = SlackServer(process, port, log)
    try:
        server.wait_until(server.healthy, within=30)
        healthy = time.monotonic()
        server.wait_until(lambda: ready(server), within=10)
    except BaseException:
        server.kill()
        raise
    return server, time.monotonic() - healthy


def ready(server: SlackServer) -> bool:
    try:
        with urllib.request.urlopen(server.base + "/readyz", timeout=2) as answer:
            return bool(json.loads(answer.read())["ready"])
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def stopped_within(server: SlackServer, signum: int) -> float:
    """Send `signum`; the seconds until the process exited (exit code 0)."""
    sent = time.monotonic()
    server.process.send_signal(signum)
    try:
        code = server.process.wait(timeout=STOP_WITHIN + 5)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()
        raise AssertionError(f"running 10 s after {signum}:\n{server.log.read_text()}") from None
    assert code == 0, server.log.read_text()
    return time.monotonic() - sent


@pytest.mark.parametrize("socket_mode", [False, True], ids=["http", "socket-mode"])
def test_serves_at_once_and_stops_on_sigterm_within_5s_while_slack_is_unreachable(
    tmp_path: Path, world: Path, unreachable: str, socket_mode: bool
) -> None:
    stops_in_time(tmp_path, world, unreachable, socket_mode, signal.SIGTERM)


@pytest.mark.parametrize("socket_mode", [False, True], ids=["http", "socket-mode"])
def test_ctrl_c_stops_it_within_5s_while_slack_hangs(
    tmp_path: Path, world: Path, socket_mode: bool
) -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(64)
        hanging = f"http://127.0.0.1:{silent.getsockname()[1]}/api/"
        stops_in_time(tmp_path, world, hanging, socket_mode, signal.SIGINT)


def stops_in_time(
    tmp_path: Path, world: Path, slack_url: str, socket_mode: bool, signum: int
) -> None:
    server, became_ready = start(tmp_path, world, slack_url, socket_mode=socket_mode)
    try:
        assert became_ready <= READY_WITHIN, server.log.read_text()
        assert "signoff serving on" in server.log.read_text()
        time.sleep(1.5)  # a few attempts at Slack (a refused one fails at once)
        took = stopped_within(server, signum)
    finally:
        if server.process.poll() is None:
            server.kill()
    log = server.log.read_text()
    assert took <= STOP_WITHIN, log
    assert "Traceback" not in log
    assert "signoff stopping" in log


def test_each_failed_attempt_is_one_line_with_a_longer_wait(tmp_path: Path, world: Path) -> None:
    refusing = f"http://127.0.0.1:{free_port()}/api/"
    server, _ = start(tmp_path, world, refusing, socket_mode=True)
    try:
        said = server.wait_until(lambda: _attempts(server.log.read_text(), 3), within=15)
        assert stopped_within(server, signal.SIGTERM) <= STOP_WITHIN
    finally:
        if server.process.poll() is None:
            server.kill()
    waits = [float(line.rsplit("again in ", 1)[1].split(" s")[0]) for line in said]
    assert waits[-1] > waits[0], said
    assert all("cannot connect" in line.lower() or "connect call failed" in line for line in said)
    assert "Traceback" not in server.log.read_text()


def _attempts(log: str, count: int) -> list[str] | None:
    lines = [line for line in log.splitlines() if "slack: auth.test failed (attempt" in line]
    return lines if len(lines) >= count else None


@pytest.mark.parametrize(
    ("policy", "answer"),
    [("", "Waiting for your decision"), (GROUP_POLICY, "answer follows")],
    ids=["people", "user-group"],
)
def test_a_signed_runs_pending_is_acked_at_once_while_slack_hangs(
    tmp_path: Path, world: Path, policy: str, answer: str
) -> None:
    """No Slack call holds the ack: not bolt's `auth.test`, and not a user group's members
    (the answer then follows through the response_url)."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(64)
        hanging = f"http://127.0.0.1:{silent.getsockname()[1]}/api/"
        server, _ = start(tmp_path, world, hanging, socket_mode=False, policy=policy)
        try:
            body = {"tool": "issue_refund", "args": {"order_id": "1", "amount_cents": 5},
                    "requested_by": "U0REQ"}  # fmt: skip
            status, created = server.api("POST", "/v1/approvals", body)
            assert status == 201, created
            status, reply, took = server.slack(slash("pending", user="U0BOB"))
        finally:
            server.kill()
    assert status == 200, reply
    assert took < 1.5, took
    assert answer in reply.decode(), reply


def test_serve_takes_a_port_and_names_a_busy_one(tmp_path: Path, world: Path) -> None:
    port = free_port()
    env = environment(tmp_path, world, 1, f"http://127.0.0.1:{free_port()}/api/")
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [SIGNOFF, "serve", "--port", str(port)],
            cwd=tmp_path,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    server = SlackServer(process, port, log)
    try:
        wait_while_alive(process, log, server.healthy, within=30)
        again = subprocess.run(
            [SIGNOFF, "serve", "--port", str(port)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        server.stop()
    assert again.returncode != 0
    assert "Traceback" not in again.stderr
    said = again.stderr.strip().splitlines()[-1]
    assert said == (
        f"error: port {port} on 127.0.0.1 is in use (another signoff serve?): choose another "
        "with `signoff serve --port N` or SIGNOFF_PORT"
    ), again.stderr
