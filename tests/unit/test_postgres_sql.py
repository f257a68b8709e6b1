"""The PostgreSQL dialect's queries: `:name` parameters become `$n`, casts stay, and every
value `jsonb` or `text` would change is escaped on the way in and restored on the way out."""

from __future__ import annotations

import json
import re

import pytest

from store.postgres import lossless
from store.postgres.sql import compile_query
from store.postgres.sql import load


def test_named_parameters_become_numbered_once_each_and_casts_stay() -> None:
    query = compile_query("SELECT :a::text WHERE x = :b OR y = :a AND z::int = 1")

    assert query.sql == "SELECT $1::text WHERE x = $2 OR y = $1 AND z::int = 1"
    assert query.names == ("a", "b")
    assert query.args({"b": 2, "a": 1, "unused": 3}) == [1, 2]


def test_every_postgres_query_compiles_to_numbered_parameters_only() -> None:
    for name, query in load().items():
        outside_literals = re.sub(r"'[^']*'", "''", query.sql)
        assert ":" not in outside_literals.replace("::", ""), name


@pytest.mark.parametrize(
    "value",
    ["plain", "nul \x00 inside", "\uffff", "\uffff0", "\\u0000 as text", "\x00\uffff\x00"],
)
def test_text_and_json_strings_round_trip(value: str) -> None:
    stored = lossless.text_in(value)
    assert "\x00" not in stored
    assert lossless.text_out(stored) == value
    as_json = json.dumps({"v": value, "n": [value]})
    assert "\\u0000" not in lossless.json_in(as_json).replace("\\\\", "")
    assert json.loads(lossless.json_out(lossless.json_in(as_json))) == json.loads(as_json)


@pytest.mark.parametrize("number", [2.860608192342735e16, 1e300, -3e20, 7.205759403792206e16])
def test_floats_with_an_exponent_are_written_out_so_they_come_back_as_floats(
    number: float,
) -> None:
    text = lossless.json_in(json.dumps({"x": number, "s": "1e5 stays"}))

    assert re.search(r"\d[eE]", text.split('"s"')[0]) is None, text
    assert json.loads(text) == {"x": number, "s": "1e5 stays"}
    assert isinstance(json.loads(text)["x"], float)
