"""JSON from sources nobody vouches for (request bodies, upload fields, network file headers, queries
on standard input), read within bounds.

The standard library's parser recurses once per level of nesting, so text nested a few thousand
deep ends in ``RecursionError``; it takes ``NaN`` and ``Infinity``, which JSON does not have, reads
``1e999`` as infinity, and an integer of more than 4300 digits raises a bare ``ValueError``.
:func:`loads` checks the nesting before parsing (regular-expression passes over the text, strings
skipped), refuses those numbers and unpaired surrogates (``"\\ud800"``: no UTF-8 can hold one, so no
database or file can either), and turns every problem into :class:`JSONError`, a
``json.JSONDecodeError`` whose message says where.

orjson was considered: it bounds nesting and refuses NaN, but at a fixed depth, and it would be one
more compiled dependency for both the client and the server.
"""

from __future__ import annotations

import json
import math
import re
from itertools import accumulate
from typing import Any

MAX_DEPTH = 100  # arrays and objects inside each other; every document Sente reads needs fewer than 10
INT_BITS = 64  # integers beyond a signed 64-bit integer are refused (no database column holds them)

# A string, ending at its closing quote or, unterminated, at the end of the text (so that no
# attempt at a match scans to the end twice).
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', re.DOTALL)
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
# \\uD800 to \\uDFFF after an even number of backslashes (an odd one would be an escaped backslash)
_SURROGATE_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u([dD][89a-fA-F][0-9a-fA-F]{2})")
_INT_LIMIT = 1 << (INT_BITS - 1)
_LONG_DIGITS = re.compile(r"[0-9]{19}")
_LONG_EXPONENT = re.compile(r"[eE][+-]?[0-9]{3}")  # (two searches take half the time of one with both)
_UNPAIRED = "a string holds an unpaired surrogate (\\ud800 to \\udfff without its other half)"


class JSONError(json.JSONDecodeError):
    """Text that is not JSON, or JSON beyond the bounds; ``msg`` says what, ``pos`` where."""


class _Refused(Exception):
    def __init__(self, message: str, text: str) -> None:
        super().__init__(message)
        self.text = text


def _short(text: str, most: int = 24) -> str:
    return text if len(text) <= most else text[:most] + "…"


def _int(text: str) -> int:
    if len(text) > 20:  # more digits than any 64-bit integer: refused without converting them
        raise _Refused(f"the integer {_short(text)} ({len(text)} characters) is beyond the {INT_BITS}-bit range", text)
    value = int(text)
    if not -_INT_LIMIT <= value < _INT_LIMIT:
        raise _Refused(f"the integer {text} is beyond the {INT_BITS}-bit range", text)
    return value


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"the number {_short(text)} is too large for a 64-bit float", text)
    return value


def _constant(text: str) -> Any:
    raise _Refused(f"{text} is not a JSON number", text)


def _check_depth(text: str, max_depth: int) -> None:
    if text.count("[") + text.count("{") <= max_depth:
        return  # (the common case: found without looking at the strings)
    skeleton = _NOT_BRACKET.sub("", _STRING.sub("", text))
    if len(skeleton) <= max_depth or max(accumulate(map(_STEP.__getitem__, skeleton))) <= max_depth:
        return
    # Too deep: find where, for the message.
    depth = 0
    for m in _TOKEN.finditer(text):
        c = text[m.start()]
        if c in "[{":
            depth += 1
            if depth > max_depth:
                raise JSONError(f"nested more than {max_depth} deep", text, m.start())
        elif c in "]}":
            depth -= 1


def loads(data: str | bytes | bytearray, max_depth: int = MAX_DEPTH) -> Any:
    """The value of JSON text (bytes must be UTF-8), or :class:`JSONError`: not JSON, nested deeper
    than ``max_depth``, a number that is not finite or an integer beyond 64 bits, or an unpaired
    surrogate in a string."""
    if isinstance(data, (bytes, bytearray)):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as e:
            before = bytes(data[: e.start]).decode("utf-8")
            raise JSONError(f"byte {e.start + 1} is not UTF-8 ({e.reason})", before, len(before)) from None
    else:
        text = data
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as e:
            raise JSONError(_UNPAIRED, text, e.start) from None
    _check_depth(text, max_depth)
    # Numbers are checked one by one (a Python call each, slow) only in text where one might be out
    # of range: 19 digits in a row, or an exponent of 3 digits.
    large = _LONG_EXPONENT.search(text) or _LONG_DIGITS.search(text)
    try:
        value = json.loads(
            text, parse_constant=_constant, parse_int=_int if large else None, parse_float=_float if large else None
        )
    except json.JSONDecodeError as e:
        raise JSONError(e.msg, text, e.pos) from None
    except _Refused as e:
        raise JSONError(str(e), text, max(text.find(e.text), 0)) from None
    except RecursionError:  # not reached after the depth check; kept so that no parse ends in it
        raise JSONError(f"nested more than {max_depth} deep", text, 0) from None
    if _SURROGATE_ESCAPE.search(text) is not None:
        _check_surrogates(text)
    return value


def _check_surrogates(text: str) -> None:
    """JSONError at the first escaped surrogate that is not half of a pair (outside strings an
    escape is not JSON, which the parser has refused already)."""
    escapes = [(m.start(1) - 2, m.end(), m.group(1)[1].lower() in "89ab") for m in _SURROGATE_ESCAPE.finditer(text)]
    i = 0
    while i < len(escapes):
        start, end, high = escapes[i]
        if high and i + 1 < len(escapes) and escapes[i + 1][0] == end and not escapes[i + 1][2]:
            i += 2  # a high and a low half: one character
            continue
        raise JSONError(_UNPAIRED, text, start)
