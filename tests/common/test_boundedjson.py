"""The bounded JSON reader: what the standard parser takes it takes the same, and every text beyond
its bounds (nesting, numbers, encodings) is a JSONError saying where, never another exception."""

from __future__ import annotations

import json

import pytest

from common.boundedjson import MAX_DEPTH, JSONError, loads


@pytest.mark.parametrize(
    "text",
    [
        '{"a": [1, -2, 3.5, true, false, null, "x"], "b": {}}',
        '"[[[[{{{{"',  # brackets inside strings are not nesting
        '"\\\\ud800"',  # an escaped backslash, then the letters ud800
        '"\\ud83d\\ude00"',  # a surrogate pair: one character
        "9223372036854775807",
        "-9223372036854775808",
        "1e308",
        "1e-400",
        "[" * MAX_DEPTH + "]" * MAX_DEPTH,
    ],
)
def test_json_within_the_bounds_reads_as_the_standard_parser_reads_it(text):
    assert loads(text) == json.loads(text)
    assert loads(text.encode()) == json.loads(text)


@pytest.mark.parametrize(
    ("text", "problem", "pos"),
    [
        ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "nested more than", MAX_DEPTH),
        ('{"a": ' * 100_000, "nested more than", 6 * MAX_DEPTH),
        ('["x", ' + '{"k": [' * 60, "nested more than", 6 + 7 * 49 + 6),  # the "[" at depth 101
        ("NaN", "is not a JSON number", 0),
        ('{"komi": -Infinity}', "is not a JSON number", 9),
        ("[1, 1e999]", "too large for a 64-bit float", 4),
        ("[9223372036854775808]", "beyond the 64-bit range", 1),
        ("1" * 5000, "beyond the 64-bit range", 0),
        ('{"a": "\\ud800"}', "unpaired surrogate", 7),
        ('["\\udc00\\ud800"]', "unpaired surrogate", 2),
        ('"\\\\\\udfff"', "unpaired surrogate", 3),
        ("{not json", "Expecting property name", 1),
        ('"unterminated \\', "Unterminated string", 0),
        ("", "Expecting value", 0),
    ],
)
def test_json_beyond_the_bounds_is_a_jsonerror_saying_where(text, problem, pos):
    with pytest.raises(JSONError) as caught:
        loads(text)
    assert problem in caught.value.msg
    assert caught.value.pos == pos
    assert isinstance(caught.value, json.JSONDecodeError) and isinstance(caught.value, ValueError)


def test_bytes_must_be_utf8():
    with pytest.raises(JSONError, match=r"byte 10 is not UTF-8.*char 9"):
        loads(b'{"name": \xff}')
    with pytest.raises(JSONError, match="unpaired surrogate"):
        loads('"\ud800"')  # a str that no UTF-8 can hold


def test_the_bound_is_a_parameter():
    assert loads("[[1]]", max_depth=2) == [[1]]
    with pytest.raises(JSONError, match="nested more than 1 deep"):
        loads("[[1]]", max_depth=1)
