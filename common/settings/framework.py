"""The settings framework: JSON round trip, the checks a field declares, and the error that names
a bad key.

A section is a frozen dataclass deriving from :class:`Settings`. Each field says its default and
its bounds once, with :func:`setting` (``lo``/``hi``, open or closed) or :func:`probability`;
:meth:`Settings.validate` runs those checks, validates the nested sections, then calls the
section's :meth:`Settings.check` for the rules that tie fields together.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import reprlib
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, get_args, get_origin, get_type_hints

# The key of a field's metadata that says the search kernel reads it (client/search/tree.py's
# SEARCH_PARAMS record holds it under the same name).
KERNEL = "kernel"
_BOUNDS = "bounds"


class SettingsError(ValueError):
    """Settings that cannot be used; the message names the key (``path``, dotted) and the problem."""

    def __init__(self, path: str, problem: str, what: str = "settings") -> None:
        super().__init__(f"{what} {path}: {problem}")
        self.path = path
        self.problem = problem


# --- checks ----------------------------------------------------------------------------------------
def need(ok: bool, path: str, problem: str) -> None:
    if not ok:
        raise SettingsError(path, problem)


def finite(value: float) -> bool:
    """A finite number that is a float or becomes one (float() of an integer beyond 2**1023 fails)."""
    return abs(value) < 2**1023 if isinstance(value, int) else math.isfinite(value)


_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 60


def show(value: Any) -> str:
    """A value as messages quote it: shortened (a message must not echo a whole upload) and never
    failing (an integer of more than 4300 digits has no repr)."""
    if isinstance(value, int) and value.bit_length() > 128:
        return f"an integer of {value.bit_length()} bits"
    return _REPR.repr(value)


def in_range(
    path: str,
    value: float,
    lo: float | None = None,
    hi: float | None = None,
    lo_open: bool = False,
    hi_open: bool = False,
) -> None:
    need(finite(value), path, f"must be a finite number, got {show(value)}")
    if lo is not None:
        if lo_open:
            need(value > lo, path, f"must be greater than {lo}, got {show(value)}")
        else:
            need(value >= lo, path, f"must be at least {lo}, got {show(value)}")
    if hi is not None:
        if hi_open:
            need(value < hi, path, f"must be less than {hi}, got {show(value)}")
        else:
            need(value <= hi, path, f"must be at most {hi}, got {show(value)}")


def at(path: str, name: str) -> str:
    """The dotted path of key ``name`` under ``path``."""
    return f"{path}.{name}" if path else name


# --- fields ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Bounds:
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False


def setting(
    default: Any,
    lo: float | None = None,
    hi: float | None = None,
    *,
    lo_open: bool = False,
    hi_open: bool = False,
    kernel: bool = False,
) -> Any:
    """A field of a settings section: its default, the bounds :meth:`Settings.validate` holds it to
    (none given: only its type is checked), and whether the search kernel reads it."""
    metadata: dict[str, Any] = {KERNEL: kernel}
    if lo is not None or hi is not None:
        metadata[_BOUNDS] = Bounds(lo, hi, lo_open, hi_open)
    return field(default=default, metadata=metadata)


def probability(default: float, *, kernel: bool = False) -> Any:
    """A field that is a probability (or a share): from 0 to 1."""
    return setting(default, 0.0, 1.0, kernel=kernel)


def kernel_fields(cls: type) -> tuple[dataclasses.Field[Any], ...]:
    """The fields of a settings section that the search kernel reads, in order."""
    return tuple(f for f in fields(cls) if f.metadata.get(KERNEL))


# --- JSON ------------------------------------------------------------------------------------------
def _convert(value: Any, hint: Any, path: str) -> Any:
    """Check a JSON value against a field's type and convert it (lists to tuples, ints to floats)."""
    origin = get_origin(hint)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _from_dict(hint, value, path)
    if origin is tuple:
        need(isinstance(value, (list, tuple)), path, f"must be a list, got {type(value).__name__}")
        inner = get_args(hint)[0]
        return tuple(_convert(v, inner, f"{path}[{i}]") for i, v in enumerate(value))
    if hint is bool:
        need(isinstance(value, bool), path, f"must be true or false, got {show(value)}")
        return value
    if hint is int:
        need(isinstance(value, int) and not isinstance(value, bool), path, f"must be an integer, got {show(value)}")
        return value
    if hint is float:
        need(
            isinstance(value, (int, float)) and not isinstance(value, bool),
            path,
            f"must be a number, got {show(value)}",
        )
        need(finite(value), path, f"must be a finite number, got {show(value)}")
        return float(value)
    if hint is str:
        need(isinstance(value, str), path, f"must be a string, got {show(value)}")
        return value
    raise TypeError(f"unsupported settings type {hint!r}")


@functools.cache
def hints(cls: type) -> dict[str, Any]:
    """A settings class's field types, resolved once: resolving them compiles every annotation, and
    every upload reads its task's settings."""
    return get_type_hints(cls)


def _from_dict(cls: type, data: Any, path: str) -> Any:
    need(isinstance(data, dict), path or "(top level)", f"must be an object, got {type(data).__name__}")
    types = hints(cls)
    names = {f.name for f in fields(cls)}
    for key in data:
        need(key in names, at(path, key), f"unknown key (known: {', '.join(sorted(names))})")
    for f in fields(cls):
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            need(f.name in data, at(path, f.name), "is missing")
    kwargs = {}
    for f in fields(cls):
        if f.name in data:
            kwargs[f.name] = _convert(data[f.name], types[f.name], at(path, f.name))
    obj = cls(**kwargs)
    obj.validate(path)
    return obj


def _to_json(value: Any) -> Any:
    if dataclasses.is_dataclass(value):
        return {f.name: _to_json(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, tuple):
        return [_to_json(v) for v in value]
    return value


class Settings:
    """JSON round trip and validation shared by the settings sections."""

    # set by @dataclass on each subclass; declared here so that dataclasses.replace takes self
    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    def to_dict(self) -> dict[str, Any]:
        return _to_json(self)

    @classmethod
    def from_dict(cls, data: Any) -> Any:
        return _from_dict(cls, data, "")

    def replace(self, **changes: Any) -> Any:
        obj = dataclasses.replace(self, **changes)
        obj.validate("")
        return obj

    def validate(self, path: str = "") -> None:
        """Raise SettingsError naming the first key that is out of its bounds or breaks the
        section's own rules (:meth:`check`); nested sections are validated in their turn."""
        for f in fields(self):  # every subclass is a dataclass
            value = getattr(self, f.name)
            if isinstance(value, Settings):
                value.validate(at(path, f.name))
            bounds = f.metadata.get(_BOUNDS)
            if bounds is not None:
                in_range(at(path, f.name), value, bounds.lo, bounds.hi, bounds.lo_open, bounds.hi_open)
        self.check(path)

    def check(self, path: str) -> None:
        """The section's rules beyond each field's bounds (none by default)."""


# --- shared by the sections ------------------------------------------------------------------------
def check_sizes(path: str, sizes: tuple[int, ...], weights: tuple[float, ...]) -> None:
    need(len(sizes) > 0, at(path, "board_sizes"), "must not be empty")
    need(
        len(sizes) == len(weights),
        at(path, "board_size_weights"),
        f"needs one weight per board size ({len(sizes)}), got {len(weights)}",
    )
    for i, s in enumerate(sizes):
        in_range(f"{at(path, 'board_sizes')}[{i}]", s, 2, 19)
    for i, w in enumerate(weights):
        in_range(f"{at(path, 'board_size_weights')}[{i}]", w, 0.0)
    need(sum(weights) > 0, at(path, "board_size_weights"), "must not all be zero")


def sizes_in_play(sizes: tuple[int, ...], weights: tuple[float, ...]) -> tuple[int, ...]:
    """The board sizes a game can be drawn on: those of positive weight."""
    return tuple(s for s, w in zip(sizes, weights) if w > 0)


def paper_size_weights() -> tuple[float, ...]:
    # Appendix C: sizes 9..19 with weights 1..11, the weight of 19 multiplied by 3 (early in a run).
    weights = [float(w) for w in range(1, 12)]
    weights[-1] *= 3
    return tuple(weights)


def decayed(early: float, late: float, turn: int, half_life: float) -> float:
    """A value going from early to late with the given half-life in turns (temperatures)."""
    return late + (early - late) * 0.5 ** (turn / half_life)
