"""What PostgreSQL's `text` and `jsonb` would change, stored losslessly: NUL characters and
floats written with an exponent.

A run's transcript or a tool's output may contain U+0000 (SQLite keeps it as is). On the
way in, U+FFFF (a noncharacter) becomes U+FFFF U+FFFF and NUL becomes U+FFFF "0" - in JSON,
the escape `\\u0000` does; on the way out the same pairs turn back. A value with neither
character (nearly all) passes through after one scan.

`jsonb` keeps a number as an exact decimal and writes it back without an exponent, so the
float 2.8e+16 would come back as the integer 28000000000000000; on the way in, such a float
is written out in full with a `.0`, which `jsonb` keeps and which parses back to the same
float.
"""

from __future__ import annotations

import re
from decimal import Decimal

ESC = "\uffff"
_PAIR = re.compile(f"{ESC}(.)", re.DOTALL)
# `\u0000` where its backslash is not itself escaped (an even run of backslashes before it).
_JSON_NUL = re.compile(r"(?<!\\)((?:\\\\)*)\\u0000")


def text_in(value: str) -> str:
    if "\x00" not in value and ESC not in value:
        return value
    return value.replace(ESC, ESC + ESC).replace("\x00", ESC + "0")


def text_out(value: str) -> str:
    if ESC not in value:
        return value
    return _PAIR.sub(lambda m: ESC if m[1] == ESC else "\x00", value)


_EXPONENT = re.compile(r"\d[eE]\+?\d")
# A JSON string (left as it is) or a number with a positive exponent (written out in full).
_STRING_OR_BIG_FLOAT = re.compile(r'"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?[eE]\+?\d+')


def json_in(value: str) -> str:
    if _EXPONENT.search(value):
        value = _STRING_OR_BIG_FLOAT.sub(_in_full, value)
    if "\\u0000" not in value and ESC not in value:
        return value
    return _JSON_NUL.sub(lambda m: f"{m[1]}{ESC}0", value.replace(ESC, ESC + ESC))


def _in_full(match: re.Match[str]) -> str:
    token = match[0]
    if token.startswith('"'):
        return token
    digits = f"{Decimal(token):f}"
    return digits if "." in digits else f"{digits}.0"


def json_out(value: str) -> str:
    if ESC not in value:
        return value
    return _PAIR.sub(lambda m: ESC if m[1] == ESC else "\\u0000", value)
