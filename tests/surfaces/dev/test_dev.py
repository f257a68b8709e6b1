"""`signoff dev` as a real process, without a browser: Ctrl-C stops it cleanly even with a
page listening for news, a restart resumes the run it parked (its card still there to
click), every step is one log line, and the console's JSON needs the token and refuses bad
input without changing anything. `signoff serve` mounts the same console."""

from __future__ import annotations

import http.client
import json
import shlex
import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path
from typing import Any

from support.dev_support import APPROVER
from support.dev_support import OUTSIDER
from support.dev_support import REQUESTER
from support.dev_support import DevServer
from support.dev_support import _send
from support.dev_support import card_button
from support.dev_support import click
from support.helpers import SIGNOFF
from support.helpers import TOKEN
from support.helpers import clean_env
from support.helpers import free_port
from support.helpers import run_text


def _card(dev: DevServer, run_id: str) -> dict[str, Any] | None:
    status, workspace = dev.get(f"/dev/api/workspace?user={APPROVER}")
    assert status == 200
    approvals = next(c for c in workspace["channels"] if c["id"] == "C0APPROVALS")
    for message in approvals["messages"]:
        if run_id in json.dumps(message["blocks"]):
            return dict(message)
    return None


def _console(dev: DevServer, path: str, body: Any = None) -> tuple[int, Any]:
    token = dev.get("/dev/api/session")[1]["token"]
    headers = {"Authorization": f"Bearer {token}"}
    if body is None:
        return dev.get("/v1/console" + path, headers)
    return dev.post("/v1/console" + path, body, headers)


def _start_refund(dev: DevServer) -> str:
    status, started = dev.post("/dev/api/refund", {"user": REQUESTER})
    assert status == 201, started
    run_id = str(started["run_id"])
    dev.wait_until(lambda: (c := _card(dev, run_id)) and card_button(c, "approve"))
    return run_id


def _approve(dev: DevServer, run_id: str, user: str = APPROVER) -> dict[str, Any]:
    card = _card(dev, run_id)
    assert card is not None
    status, answer = click(dev, card, "approve", user=user)
    assert status == 200, answer
    return dict(answer)


def _refunds(folder: Path) -> list[tuple[str, int]]:
    with closing(sqlite3.connect(folder / "signoff-dev-world.db")) as conn:
        return conn.execute(
            "SELECT reference, amount_cents FROM payments WHERE kind = 'refund'"
        ).fetchall()


def test_ctrl_c_is_clean_and_a_restart_resumes_the_parked_run(tmp_path: Path) -> None:
    dev = DevServer(tmp_path)
    run_id = _start_refund(dev)
    assert _console(dev, f"/runs/{run_id}")[1]["run"]["status"] == "waiting_approval"
    page_token = dev.get("/dev/api/session")[1]["token"]
    # a page listening for news must not hold the shutdown up
    listening = http.client.HTTPConnection("127.0.0.1", dev.port, timeout=10)
    listening.request("GET", "/dev/events")
    assert listening.getresponse().status == 200
    assert dev.interrupt(within=10) == 0
    first_log = dev.log.read_text()
    assert "signoff stopping" in first_log
    assert f"run {run_id} step 2: calls issue_refund" in first_log
    assert f"run {run_id} step 2:" in first_log
    assert "-> waiting_approval" in first_log
    listening.close()

    again = DevServer(tmp_path)
    try:
        # a page left open across the restart still reaches the console with its token
        headers = {"Authorization": f"Bearer {page_token}"}
        assert again.get(f"/v1/console/runs/{run_id}", headers)[0] == 200
        card = _card(again, run_id)  # the workspace kept the card across the restart
        assert card is not None
        assert card_button(card, "approve") is not None
        assert _approve(again, run_id)["status"] == 200
        again.wait_until(lambda: _console(again, f"/runs/{run_id}")[1]["run"]["status"] == "done")
        again.wait_until(lambda: "Approved by" in str(_card(again, run_id)))
        assert _refunds(tmp_path) == [("4471", 2500)]
    finally:
        assert again.interrupt() == 0
    assert f"run {run_id} step 4: says Refunded order 4471" in again.log.read_text()


def test_refusals_change_nothing_and_forks_link_both_ways(tmp_path: Path) -> None:
    dev = DevServer(tmp_path)
    try:
        run_id = _start_refund(dev)
        # the outsider is no approver: told so, only them, and nothing is decided
        _approve(dev, run_id, user=OUTSIDER)
        dev.wait_until(
            lambda: any(
                e["user"] == OUTSIDER
                for e in dev.get(f"/dev/api/workspace?user={OUTSIDER}")[1]["ephemerals"]
            )
        )
        assert _console(dev, f"/runs/{run_id}")[1]["run"]["status"] == "waiting_approval"
        assert dev.post("/dev/api/refund", {"user": "U0NOBODY"})[0] == 400
        # another site's page, by a name that resolves here, or a cross-origin form: refused
        assert dev.get("/dev/api/session", {"Host": "evil.example:80"})[0] == 403
        form = {"Content-Type": "text/plain"}
        assert dev.post("/dev/api/refund", {"user": REQUESTER}, form)[0] == 415
        assert dev.post("/dev/api/action", {"user": 7})[0] == 400

        assert dev.get("/v1/console/runs")[0] == 401
        assert dev.get("/v1/console/runs", {"Authorization": "Bearer wrong"})[0] == 401
        assert _console(dev, "/runs?status=bogus")[0] == 400
        assert _console(dev, "/runs/no-such-run")[0] == 404
        assert _console(dev, f"/runs/{run_id}/rollback?to_step=abc")[0] == 400
        assert _console(dev, f"/runs/{run_id}/rollback?to_step=99")[0] == 400
        assert _console(dev, f"/runs/{run_id}/rollback", ["not", "an", "object"])[0] == 400
        assert _console(dev, f"/runs/{run_id}/fork", {"from_step": 1, "dry_run": "yes"})[0] == 400
        listed = _console(dev, "/runs")[1]["runs"]
        assert [r["id"] for r in listed] == [run_id]

        _approve(dev, run_id)
        dev.wait_until(lambda: _console(dev, f"/runs/{run_id}")[1]["run"]["status"] == "done")
        status, forked = _console(dev, f"/runs/{run_id}/fork", {"from_step": 1, "dry_run": True})
        assert status == 201, forked
        assert [e["tool"] for e in forked["already_happened"]] == ["issue_refund", "send_email"]
        child = _console(dev, f"/runs/{forked['run_id']}")[1]
        assert child["run"]["parent_id"] == run_id
        assert child["run"]["dry_run"] is True
        assert _console(dev, f"/runs/{run_id}")[1]["forks"] == [forked["run_id"]]
        assert _refunds(tmp_path) == [("4471", 2500)]  # the fork did not refund again

        preview = _console(dev, f"/runs/{run_id}/rollback?to_step=1")[1]
        assert [c["tool"] for c in preview["compensate"]] == ["issue_refund"]
        assert [p["tool"] for p in preview["page"]] == ["send_email"]
        assert _console(dev, f"/runs/{run_id}")[1]["run"]["status"] == "done"  # only looked
        assert _console(dev, "/runs?q=fork")[1]["runs"][0]["id"] == forked["run_id"]

        # cancel a parked run from the console: its card is withdrawn; resume is refused
        other = _start_refund(dev)
        status, cancelled = _console(dev, f"/runs/{other}/cancel", {})
        assert status == 200, cancelled
        assert cancelled["status"] == "cancelled"
        dev.wait_until(lambda: card_button(_card(dev, other) or {"blocks": []}, "approve") is None)
        status, refused = _console(dev, f"/runs/{other}/resume", {})
        assert status == 400
        assert "cancelled" in refused["error"]
        assert _refunds(tmp_path) == [("4471", 2500)]
    finally:
        assert dev.interrupt() == 0


def test_edit_approves_edited_arguments_and_runs_answers_in_the_box(tmp_path: Path) -> None:
    dev = DevServer(tmp_path)
    try:
        run_id = _start_refund(dev)
        card = _card(dev, run_id)
        assert card is not None
        status, opened = click(dev, card, "edit", opens_modal=True)
        assert status == 200, opened
        assert opened["view"]["callback_id"] == "edit_args", opened
        view = opened["view"]
        submission = {
            "user": APPROVER,
            "view_id": view["id"],
            "callback_id": view["callback_id"],
            "private_metadata": view["private_metadata"],
        }
        # not JSON: the modal says so under the field, and nothing is decided
        status, refused = dev.post("/dev/api/submit", submission | {"values": {"args": "{"}})
        assert refused["answer"]["response_action"] == "errors", refused
        assert _console(dev, f"/runs/{run_id}")[1]["run"]["status"] == "waiting_approval"
        # arguments the tool refuses: said in plain text, no invisible mrkdwn guards in it
        bad = json.dumps({"order_id": "4471", "amount_cents": "lots"})
        status, refused = dev.post("/dev/api/submit", submission | {"values": {"args": bad}})
        [said] = refused["answer"]["errors"].values()
        assert "issue_refund" in said, said
        assert "\u2060" not in said
        edited = {"order_id": "4471", "amount_cents": 1200, "restocking_fee_cents": 0}
        values = {"args": json.dumps(edited)}
        status, answer = dev.post("/dev/api/submit", submission | {"values": values})
        assert status == 200, answer
        assert answer["status"] == 200, answer
        dev.wait_until(lambda: _console(dev, f"/runs/{run_id}")[1]["run"]["status"] == "done")
        assert _refunds(tmp_path) == [("4471", 1200)]
        # the same form sent again: refused in words that name people (a modal shows no
        # mentions), once; and the console names them too
        status, late = dev.post("/dev/api/submit", submission | {"values": values})
        [said] = late["answer"]["errors"].values()
        assert said.startswith("Already approved by @bob at "), said
        assert "<@" not in said
        shown = _console(dev, f"/runs/{run_id}")[1]
        assert shown["names"][REQUESTER] == "riley"
        assert shown["names"][APPROVER] == "bob"

        status, reply = dev.post("/dev/api/command", {"user": APPROVER, "text": "status " + run_id})
        assert status == 200
        assert reply["status"] == 200
        assert reply["answer"]["response_type"] == "ephemeral"
        assert run_id in json.dumps(reply["answer"]["blocks"])
    finally:
        assert dev.interrupt() == 0


def test_serve_mounts_the_console_behind_the_api_token(tmp_path: Path) -> None:
    port = free_port()
    env = clean_env("SIGNOFF_", "SLACK_")
    env |= {
        "SIGNOFF_DATABASE_URL": f"sqlite:///{tmp_path / 'signoff.db'}",
        "SIGNOFF_API_TOKEN": TOKEN,
        "SIGNOFF_PORT": str(port),
        "SIGNOFF_API_ONLY": "1",
    }
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [SIGNOFF, "serve"], cwd=tmp_path, env=env, stdout=out, stderr=out
        )
    base = f"http://127.0.0.1:{port}"
    server = _Probe(process, base, log)
    try:
        server.wait_until(lambda: server.status("/healthz") == 200, within=20)
        assert server.status("/console/") == 200
        assert server.status("/console/static/console.js") == 200
        assert server.status("/v1/console/runs") == 401
        assert server.status("/v1/console/runs", token=TOKEN) == 200
        assert server.status("/") == 404  # the workspace view is `signoff dev`'s alone
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0


class _Probe(DevServer):
    """An already started process, probed like a DevServer."""

    def __init__(self, process: subprocess.Popen[bytes], base: str, log: Path) -> None:
        self.process, self.base, self.log = process, base, log

    def status(self, path: str, token: str | None = None) -> int:
        import urllib.request

        headers = {"Authorization": f"Bearer {token}"} if token else {}
        try:
            return _send(urllib.request.Request(self.base + path, headers=headers))[0]
        except OSError:
            return 0


def test_a_second_dev_on_a_taken_port_says_so_before_it_opens_anything(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = clean_env("SIGNOFF_", "SLACK_")
        done = run_text([SIGNOFF, "dev", "--port", str(port)], cwd=tmp_path, env=env)
    assert done.returncode == 2  # as serve's busy port: the setting (--port) is to change
    assert done.stderr.strip().splitlines() == [
        f"error: port {port} on 127.0.0.1 is in use (another signoff dev?); pick one with --port"
    ]
    assert "open" not in done.stdout
    assert list(tmp_path.iterdir()) == []  # no database, world or workspace file


def test_the_cli_it_prints_decides_under_the_demos_policy(tmp_path: Path) -> None:
    """The exports `signoff dev` prints carry its policy: the CLI in another terminal refuses
    an outsider as the page does (its own defaults would let anyone but the requester
    approve), and bob's approval there refunds once."""
    dev = DevServer(tmp_path)
    try:
        run_id = _start_refund(dev)
        lines = dev.log.read_text().splitlines()
        told = lines.index("signoff dev: the CLI on this database, in another terminal:")
        assert lines[told + 1].startswith("export SIGNOFF_DATABASE_URL=")  # to paste as it is
        exports = shlex.split(lines[told + 1].removeprefix("export "))
        env = clean_env("SIGNOFF_", "SLACK_") | dict(e.split("=", 1) for e in exports)
        listed = run_text([SIGNOFF, "approvals", "list", "--run", run_id, "--json"], env=env)
        assert listed.returncode == 0, listed.stderr
        [approval] = [a["id"] for a in json.loads(listed.stdout)]

        outsider = run_text(
            [SIGNOFF, "approvals", "decide", approval, "approve", "--by", OUTSIDER],
            cwd=tmp_path.parent,
            env=env,
        )
        assert outsider.returncode != 0
        assert OUTSIDER in outsider.stderr, outsider.stderr
        assert _console(dev, f"/runs/{run_id}")[1]["run"]["status"] == "waiting_approval"

        approved = run_text(
            [SIGNOFF, "approvals", "decide", approval, "approve", "--by", APPROVER],
            cwd=tmp_path.parent,
            env=env,
        )
        assert approved.returncode == 0, approved.stderr
        dev.wait_until(lambda: _console(dev, f"/runs/{run_id}")[1]["run"]["status"] == "done")
        assert _refunds(tmp_path) == [("4471", 2500)]
    finally:
        assert dev.interrupt() == 0
