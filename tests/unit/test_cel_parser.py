"""The CEL parser is analysed once per machine: the first process leaves its cache in the
user's private cache folder, later ones load it, and a damaged file is rebuilt, never
trusted."""

from __future__ import annotations

import stat
from pathlib import Path

import celpy
import pytest
from celpy.celparser import CELParser

from runtime.approvals import cel_parser
from runtime.approvals.rules import holds
from runtime.approvals.rules import program

TREE = celpy.CompiledRunner.tree_node_class


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path / "signoff"


def parses() -> bool:
    assert CELParser.CEL_PARSER is not None
    return CELParser.CEL_PARSER.parse("args.amount <= 2500") is not None


def test_the_first_parser_leaves_its_cache_in_a_private_folder(cache_home: Path) -> None:
    cel_parser.install(TREE)

    [cached] = list(cache_home.iterdir())
    assert cached.name.startswith("cel-parser-")
    assert cached.stat().st_size > 10_000
    assert stat.S_IMODE(cache_home.stat().st_mode) == 0o700
    assert parses()


def cache_file(cache_home: Path) -> Path:
    [cached] = list(cache_home.glob("cel-parser-*"))
    return cached


def test_a_later_parser_loads_the_cache_and_works(cache_home: Path) -> None:
    cel_parser.install(TREE)
    written = cache_file(cache_home).stat()

    CELParser.CEL_PARSER = None
    cel_parser.install(TREE)

    assert cache_file(cache_home).stat().st_mtime_ns == written.st_mtime_ns  # loaded, not saved
    assert list(cache_home.iterdir()) == [cache_file(cache_home)]
    assert parses()
    assert holds("args.amount <= 2500", {"args": celpy.json_to_cel({"amount": 10})})


def test_a_damaged_cache_is_rebuilt_not_trusted(cache_home: Path) -> None:
    cel_parser.install(TREE)
    damaged = cache_file(cache_home)
    damaged.write_bytes(b"not a parser\n")

    CELParser.CEL_PARSER = None
    cel_parser.install(TREE)

    assert damaged.read_bytes() != b"not a parser\n"
    assert parses()
    assert program("tool == 'x'") is not None


def test_without_a_writable_folder_the_parser_is_built_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("a file where the cache folder would go")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))

    cel_parser.install(TREE)

    assert parses()
