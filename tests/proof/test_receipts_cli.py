"""Receipts through the real console script and a real `signoff serve`: the key `serve`
makes when none is configured (where it says, never its content), a key file that cannot be
used stopping start-up, `/v1/keys`, and `signoff receipts verify` checking a file offline."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

from support.helpers import SIGNOFF
from support.helpers import TOKEN
from support.helpers import clean_env
from support.helpers import free_port
from support.helpers import run_text


def environment(tmp_path: Path, **more: str) -> dict[str, str]:
    env = clean_env("SIGNOFF_", "SLACK_")
    return env | {
        "SIGNOFF_DATABASE_URL": f"sqlite:///{tmp_path / 'signoff.db'}",
        "SIGNOFF_WORLD_DB": str(tmp_path / "world.db"),
        "SIGNOFF_API_TOKEN": TOKEN,
        "SIGNOFF_API_ONLY": "1",
        **more,
    }


def signoff(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_text([SIGNOFF, *args], cwd=tmp_path, env=environment(tmp_path, **env))


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.loads(response.read())


def test_serve_makes_a_key_in_its_data_directory_says_where_and_serves_its_jwks(
    tmp_path: Path,
) -> None:
    port = free_port()
    data = tmp_path / "data"
    env = environment(tmp_path, SIGNOFF_PORT=str(port), SIGNOFF_DATA_DIR=str(data))
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [SIGNOFF, "serve"], cwd=tmp_path, env=env, stdout=out, stderr=out
        )
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                jwks = get(f"http://127.0.0.1:{port}/v1/keys")  # no token needed
                break
            except OSError:
                assert process.poll() is None, log.read_text()
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.1)
    finally:
        process.terminate()
        process.wait(timeout=10)
    key = data / "signoff-signing-key.pem"
    assert key.exists()
    assert key.stat().st_mode & 0o077 == 0
    text = log.read_text()
    [kid] = [k["kid"] for k in jwks["keys"]]
    assert f"created one at {key} (key id {kid})" in text
    pem_body = key.read_text().splitlines()[1]
    assert pem_body not in text
    assert "PRIVATE KEY" not in text
    assert "PRIVATE" not in json.dumps(jwks)
    assert "d" not in jwks["keys"][0]


def test_a_key_file_that_cannot_be_used_stops_start_up_with_its_path(tmp_path: Path) -> None:
    bad = tmp_path / "broken.pem"
    bad.write_text("-----BEGIN PRIVATE KEY-----\nnot base64\n-----END PRIVATE KEY-----\n")
    port = str(free_port())

    malformed = signoff(tmp_path, "serve", SIGNOFF_SIGNING_KEY_FILE=str(bad), SIGNOFF_PORT=port)
    missing = signoff(
        tmp_path, "serve", SIGNOFF_SIGNING_KEY_FILE=str(tmp_path / "no.pem"), SIGNOFF_PORT=port
    )

    assert malformed.returncode != 0
    assert f"{bad}: not an unencrypted PEM private key" in malformed.stderr
    assert missing.returncode != 0
    assert f"{tmp_path / 'no.pem'}: cannot read" in missing.stderr
    assert not (tmp_path / "signoff.db").exists()  # nothing was started or created


def test_receipts_verify_checks_a_saved_receipt_offline(tmp_path: Path) -> None:
    made = signoff(tmp_path, "receipts", "new-key", "key.pem")
    assert made.returncode == 0, made.stderr
    key = {"SIGNOFF_SIGNING_KEY_FILE": str(tmp_path / "key.pem")}
    started = signoff(
        tmp_path, "runs", "start", "refund-agent", "Refund order 1004", "--requested-by",
        "U0REQ", "--json", **key,
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    listed = json.loads(signoff(tmp_path, "approvals", "list", "--json", **key).stdout)
    [approval] = listed
    decided = signoff(
        tmp_path, "approvals", "decide", approval["id"], "approved", "--by", "U0BOB", **key
    )
    assert decided.returncode == 0, decided.stderr
    shown = signoff(tmp_path, "receipts", "show", approval["id"], **key)
    assert shown.returncode == 0, shown.stderr
    (tmp_path / "receipt.json").write_text(shown.stdout)
    (tmp_path / "jwks.json").write_text(signoff(tmp_path, "receipts", "keys", **key).stdout)
    args = json.dumps(approval["args"])

    ok = signoff(
        tmp_path, "receipts", "verify", "receipt.json", "--keys", "jwks.json", "--args", args
    )
    assert ok.returncode == 0, ok.stderr
    assert f"valid: approved {approval['id']}" in ok.stdout

    other = json.dumps({**approval["args"], "amount_cents": 1})
    refused = signoff(
        tmp_path, "receipts", "verify", "receipt.json", "--keys", "jwks.json", "--args", other
    )
    assert refused.returncode == 1
    assert "other arguments" in refused.stderr

    receipt = json.loads(shown.stdout)
    (tmp_path / "tampered.json").write_text(json.dumps({**receipt, "decided_by": "U0EVE"}))
    tampered = signoff(tmp_path, "receipts", "verify", "tampered.json", **key)
    assert tampered.returncode == 1
    assert "a field was changed" in tampered.stderr
