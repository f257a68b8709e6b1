"""The key `serve` makes for itself when none is configured: processes that start together
in one data directory agree on one key (two workers started at once once failed with "a key
is there already"); a write that fails leaves no key file behind and says why; filesystems
without hard links, or that refuse to sync a directory, still get their key."""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support.helpers import clean_env

from runtime import signing
from runtime.errors import SigningKeyError
from runtime.signing import create_key
from runtime.signing import key_at
from runtime.signing import key_id

STARTERS = 6

START_TOGETHER = textwrap.dedent(
    """
    import json, logging, sys
    from pathlib import Path
    from bot.settings import load_settings
    from bot.signing_keys import load_signer
    logging.basicConfig(level=logging.WARNING)
    go = Path(sys.argv[1])
    settings = load_settings()
    print("ready", flush=True)
    while not go.exists():  # spin, so that starters see it within microseconds of each other
        pass
    print(json.dumps({"kid": load_signer(settings, create=True).kid}))
    """
)


def test_processes_starting_together_agree_on_one_key(tmp_path: Path) -> None:
    go, path = tmp_path / "go", tmp_path / "data" / "signoff-signing-key.pem"
    env = clean_env("SIGNOFF_", "SLACK_") | {"SIGNOFF_DATA_DIR": str(path.parent)}
    starters = [
        subprocess.Popen(
            [sys.executable, "-c", START_TOGETHER, str(go)],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(STARTERS)
    ]
    for starter in starters:
        assert starter.stdout is not None
        assert starter.stdout.readline() == b"ready\n", starter.communicate()[1].decode()
    go.touch()
    kids, logs = [], ""
    for starter in starters:
        out, err = starter.communicate(timeout=60)
        assert starter.returncode == 0, err.decode()
        kids.append(json.loads(out)["kid"])
        logs += err.decode()
    assert set(kids) == {key_id(signing.load_private_key(path).public_key())}
    assert logs.count(f"created one at {path}") == 1, logs
    assert [p.name for p in path.parent.iterdir()] == [path.name]
    assert path.stat().st_mode & 0o077 == 0


def test_a_key_already_there_is_loaded_not_replaced(tmp_path: Path) -> None:
    path = tmp_path / "k.pem"
    first, made = key_at(path)
    again, made_again = key_at(path)
    assert (made, made_again) == (True, False)
    assert key_id(again.public_key()) == key_id(first.public_key())
    with pytest.raises(SigningKeyError, match="not replaced"):
        create_key(path)
    assert key_id(signing.load_private_key(path).public_key()) == key_id(first.public_key())


def test_a_disk_that_fills_while_the_key_is_written_leaves_no_key_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    path = tmp_path / "k.pem"
    with monkeypatch.context() as patched:
        patched.setattr(signing.os, "fsync", full)
        with pytest.raises(SigningKeyError, match="cannot write the signing key: No space left"):
            key_at(path)
    assert list(tmp_path.iterdir()) == []
    key, made = key_at(path)
    assert made
    assert key_id(signing.load_private_key(path).public_key()) == key_id(key.public_key())


def test_a_filesystem_without_hard_links_gets_its_key_written_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_links(source: object, target: object) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(signing.os, "link", no_links)
    path = tmp_path / "k.pem"
    key, made = key_at(path)
    assert made
    assert key_id(signing.load_private_key(path).public_key()) == key_id(key.public_key())
    assert [p.name for p in tmp_path.iterdir()] == ["k.pem"]
    assert path.stat().st_mode & 0o077 == 0
    with pytest.raises(SigningKeyError, match="not replaced"):
        create_key(path)


def test_a_directory_that_cannot_be_synced_still_gets_its_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_fsync = os.fsync

    def files_only(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "Invalid argument")
        real_fsync(fd)

    monkeypatch.setattr(signing.os, "fsync", files_only)
    key, made = key_at(tmp_path / "k.pem")
    assert made
    assert key_id(signing.load_private_key(tmp_path / "k.pem").public_key()) == key_id(
        key.public_key()
    )


def test_a_read_only_data_directory_says_so_and_nothing_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def read_only(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EROFS, "Read-only file system")

    path = tmp_path / "k.pem"
    with monkeypatch.context() as patched:
        patched.setattr(signing.os, "open", read_only)
        patched.setattr(Path, "unlink", read_only)  # as a read-only mount refuses it
        with pytest.raises(SigningKeyError, match="cannot write the signing key: Read-only"):
            key_at(path)
    assert list(tmp_path.iterdir()) == []


def test_a_data_directory_that_cannot_be_made_says_which(tmp_path: Path) -> None:
    (tmp_path / "data").write_text("a file where the directory should be")
    with pytest.raises(SigningKeyError, match=f"{tmp_path / 'data'}: cannot make the directory"):
        key_at(tmp_path / "data" / "k.pem")
