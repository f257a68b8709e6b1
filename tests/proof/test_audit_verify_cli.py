"""`signoff audit verify|anchor|export` as real subprocesses on a real SQLite file: the
trail verifies, a signed anchor verifies, an export verifies on its own and names the line a
copy had changed or lost, and an event edited in the database is named."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
from support.helpers import SIGNOFF
from support.helpers import clean_env
from support.helpers import run_text


def signoff(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = clean_env("SIGNOFF_", "SLACK_") | {
        "SIGNOFF_DATABASE_URL": f"sqlite:///{tmp_path / 'signoff.db'}",
        "SIGNOFF_WORLD_DB": str(tmp_path / "world.db"),
        "SIGNOFF_SIGNING_KEY_FILE": str(tmp_path / "key.pem"),
    }
    return run_text([SIGNOFF, *args], cwd=tmp_path, env=env)


@pytest.fixture(scope="module")
def decided_trail(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database with a decided refund's trail and a signing key: four CLI commands, made
    once for the module."""
    folder = tmp_path_factory.mktemp("trail")
    assert signoff(folder, "receipts", "new-key", "key.pem").returncode == 0
    started = signoff(
        folder, "runs", "start", "refund-agent", "Refund order 1004", "--requested-by", "U0REQ"
    )
    assert started.returncode == 0, started.stderr
    [approval] = json.loads(signoff(folder, "approvals", "list", "--json").stdout)
    decided = signoff(folder, "approvals", "decide", approval["id"], "approved", "--by", "U0BOB")
    assert decided.returncode == 0, decided.stderr
    return folder


@pytest.fixture
def trail(decided_trail: Path, tmp_path: Path) -> Path:
    """A copy of the decided trail of the test's own, to verify, export, edit and forge."""
    shutil.copytree(decided_trail, tmp_path, dirs_exist_ok=True)
    return tmp_path


def test_the_trail_and_a_signed_anchor_verify(trail: Path) -> None:
    anchored = signoff(trail, "audit", "anchor")
    assert anchored.returncode == 0, anchored.stderr
    assert json.loads(anchored.stdout)["signature"]["alg"] == "EdDSA"

    verified = signoff(trail, "audit", "verify")

    assert verified.returncode == 0, verified.stderr
    assert "audit trail intact" in verified.stdout
    assert "1 anchor signature(s) verified" in verified.stdout


def test_an_export_verifies_alone_and_a_changed_copy_is_named(trail: Path) -> None:
    assert signoff(trail, "audit", "export", "-o", "audit.jsonl").returncode == 0
    lines = (trail / "audit.jsonl").read_text().splitlines()
    assert all(json.loads(line)["hash"] for line in lines)
    (trail / "signoff.db").unlink()  # the copy is all there is

    alone = signoff(trail, "audit", "verify", "--file", "audit.jsonl")
    assert alone.returncode == 0, alone.stderr
    assert f"{len(lines)} event(s) chained" in alone.stdout

    changed = [json.loads(line) for line in lines]
    changed[2]["actor"] = "U0EVE"
    (trail / "changed.jsonl").write_text("".join(json.dumps(e) + "\n" for e in changed))
    edited = signoff(trail, "audit", "verify", "--file", "changed.jsonl")
    assert edited.returncode == 1
    assert f"event {changed[2]['id']} " in edited.stderr
    assert "was changed after it was written" in edited.stderr

    (trail / "short.jsonl").write_text("\n".join(lines[:1] + lines[2:]) + "\n")
    lost = signoff(trail, "audit", "verify", "--file", "short.jsonl")
    assert lost.returncode == 1
    assert f"an event before event {json.loads(lines[2])['id']}" in lost.stderr


def test_an_event_edited_in_the_database_is_named(trail: Path) -> None:
    conn = sqlite3.connect(trail / "signoff.db")
    with conn:
        conn.execute("DROP TRIGGER audit_events_append_only")
        edited = conn.execute(
            "SELECT id FROM audit_events WHERE action = 'approval_approved'"
        ).fetchone()[0]
        conn.execute("UPDATE audit_events SET actor = 'U0EVE' WHERE id = ?", (edited,))
    conn.close()

    found = signoff(trail, "audit", "verify")

    assert found.returncode == 1
    assert f"event {edited} (approval_approved) was changed" in found.stderr


def test_an_anchor_that_no_longer_matches_or_was_changed_is_refused(trail: Path) -> None:
    assert signoff(trail, "audit", "anchor").returncode == 0
    conn = sqlite3.connect(trail / "signoff.db")
    with conn:
        [(signed,)] = conn.execute("SELECT signed FROM audit_anchors").fetchall()
        forged = json.loads(signed) | {"hash": "f" * 64}
        conn.execute(
            "UPDATE audit_anchors SET hash = ?, signed = ?", ("f" * 64, json.dumps(forged))
        )
    conn.close()

    found = signoff(trail, "audit", "verify")
    assert found.returncode == 1
    assert "does not have the hash" in found.stderr

    conn = sqlite3.connect(trail / "signoff.db")
    with conn:  # the hash put back, the signed document left forged
        right = conn.execute("SELECT hash FROM audit_events ORDER BY id DESC").fetchone()[0]
        conn.execute("UPDATE audit_anchors SET hash = ?", (right,))
    conn.close()
    forged_doc = signoff(trail, "audit", "verify")
    assert forged_doc.returncode == 1
    assert "changed since signed" in forged_doc.stderr
