"""How numbers are printed and written to JSON, in one place (a leaf: imports nothing of rankbridge).

* :func:`fmt_number` -- a value with a fixed number of decimals, optionally signed;
* :func:`fmt_p` -- a p-value (``"<0.0001"`` below the smallest printed value);
* :func:`fmt_ci` -- an interval's bounds, ``"[low, high]"``;
* :func:`json_float` -- a float for JSON: ``None`` for NaN, infinities and ``None`` (JSON has no NaN);
* :class:`JsonFields` -- ``to_dict()`` for a dataclass, over its fields, each value made JSON-ready by its
  declared type (floats through :func:`json_float`);
* :func:`text_rows` -- a table of such cells as aligned plain-text lines.

An undefined value (NaN, ``None``) prints as :data:`MISSING` everywhere; report tables, whose empty cells
are ``"-"``, pass ``missing="-"``.

Examples
--------
>>> fmt_number(0.51234), fmt_number(0.5, 3, sign=True), fmt_number(float("nan"))
('0.5123', '+0.500', 'n/a')
>>> fmt_p(0.03125), fmt_p(0.00001), fmt_p(0.00001, 3), fmt_p(float("nan"), missing="-")
('0.0312', '<0.0001', '<0.001', '-')
>>> from rankbridge.metrics.stats import Interval
>>> fmt_ci(Interval(0.5, 0.4, 0.6, 0.95, "t", 20), 3), fmt_ci(Interval(0.5, float("nan"), float("nan"), 0.95, "t", 1))
('[0.400, 0.600]', 'n/a')
>>> text_rows([["run", "mean"], ["bm25", "0.5"], ["dense", "0.75"]])
['  run    mean', '  bm25    0.5', '  dense  0.75']
>>> json_float(float("inf")), json_float(None), json_float(0.25)
(None, None, 0.25)
>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Point(JsonFields):
...     name: str
...     values: tuple[float, ...]
...     weight: float | None = None
>>> Point("p", (0.5, float("nan")), 1).to_dict()
{'name': 'p', 'values': [0.5, None], 'weight': 1.0}
"""

from __future__ import annotations

import dataclasses
import math
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Literal, Protocol, Union, cast, get_args, get_origin, get_type_hints

__all__ = ["MISSING", "JsonFields", "fmt_ci", "fmt_number", "fmt_p", "json_float", "text_rows"]

#: What an undefined value (NaN, None) prints as.
MISSING = "n/a"


class _Bounds(Protocol):
    """What :func:`fmt_ci` reads (a :class:`~rankbridge.metrics.stats.Interval`)."""

    @property
    def low(self) -> float: ...

    @property
    def high(self) -> float: ...


def json_float(x: float | None) -> float | None:
    """``float(x)``, or ``None`` when ``x`` is None, NaN or infinite (JSON has no NaN)."""
    return None if x is None or not math.isfinite(x) else float(x)


def fmt_number(x: float | None, digits: int = 4, *, sign: bool = False, missing: str = MISSING) -> str:
    """``x`` with ``digits`` decimals (``+``/``-`` always shown when ``sign``); ``missing`` when undefined."""
    if x is None or not math.isfinite(x):
        return missing
    return f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"


def fmt_p(p: float | None, digits: int = 4, *, missing: str = MISSING) -> str:
    """A p-value with ``digits`` decimals, ``"<0.0001"`` (for 4 digits) below what they can show."""
    if p is None or not math.isfinite(p):
        return missing
    floor = 10.0**-digits
    return f"<{floor:.{digits}f}" if p < floor else f"{p:.{digits}f}"


def fmt_ci(iv: _Bounds | None, digits: int = 4, *, sign: bool = False, missing: str = MISSING) -> str:
    """``"[low, high]"`` of an interval, each bound as :func:`fmt_number` prints it; ``missing`` without bounds."""
    if iv is None or not (math.isfinite(iv.low) and math.isfinite(iv.high)):
        return missing
    return f"[{fmt_number(iv.low, digits, sign=sign)}, {fmt_number(iv.high, digits, sign=sign)}]"


def text_rows(table: list[list[str]], indent: str = "  ") -> list[str]:
    """The rows of ``table`` (a header first) as lines: the first column left-aligned, the others right."""
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    return [
        indent
        + "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in table
    ]


_Convert = Callable[[Any], Any]


def _as_is(value: Any) -> Any:
    return value


def _optional(convert: _Convert) -> _Convert:
    return lambda value: None if value is None else convert(value)


def _items(convert: _Convert) -> _Convert:
    return lambda value: [convert(v) for v in value]


def _values(convert: _Convert) -> _Convert:
    return lambda value: {k: convert(v) for k, v in value.items()}


def _nested(value: Any) -> Any:
    return value.to_dict()


def _json_converter(tp: Any) -> _Convert:
    """How a value declared as ``tp`` becomes JSON-ready (see :class:`JsonFields`)."""
    if tp is float:
        return json_float
    if tp is Any or tp in (str, int, bool, type(None)):
        return _as_is
    origin, args = get_origin(tp), get_args(tp)
    if origin is Literal:
        return _as_is
    if origin in (Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            return _optional(_json_converter(inner[0]))
    elif origin in (tuple, list, Sequence):
        return _items(_json_converter(args[0]))
    elif origin in (dict, Mapping):
        return _values(_json_converter(args[1]))
    elif isinstance(tp, type) and callable(getattr(tp, "to_dict", None)):
        return _nested
    raise TypeError(f"JsonFields: no JSON form for a value declared as {tp!r}")


def _missing_key(cls: type, key: str) -> _Convert:
    def fail(value: Any) -> Any:
        raise TypeError(f"{cls.__name__}: JSON key {key!r} is neither a field, a property nor a key of _json_extra()")

    return fail


_JSON_PLANS: dict[type, tuple[tuple[str, _Convert], ...]] = {}


def _json_plan(cls: type[JsonFields]) -> tuple[tuple[str, _Convert], ...]:
    """``(key, converter)`` per JSON key of ``cls``, in order (a key of ``_json_extra()`` is taken from there)."""
    plan = _JSON_PLANS.get(cls)
    if plan is None:  # once per class: the type hints are read (and checked) on the first to_dict()
        plan = _JSON_PLANS[cls] = _make_json_plan(cls)
    return plan


def _make_json_plan(cls: type[JsonFields]) -> tuple[tuple[str, _Convert], ...]:
    hints = get_type_hints(cls)
    names = tuple(f.name for f in dataclasses.fields(cast(Any, cls)))
    unsaid = [n for n in names if n not in cls._json_keys and n not in cls._json_omit]
    if cls._json_keys and unsaid:  # a field added to the class must not drop out of its JSON unnoticed
        raise TypeError(f"{cls.__name__}: fields {unsaid} are neither in _json_keys nor in _json_omit")
    plan: list[tuple[str, _Convert]] = []
    for key in cls._json_keys or names:
        attr = getattr(cls, key, None)
        if key in names:
            plan.append((key, _json_converter(hints[key])))
        elif isinstance(attr, property) and attr.fget is not None:
            plan.append((key, _json_converter(get_type_hints(attr.fget)["return"])))
        else:
            plan.append((key, _missing_key(cls, key)))
    return tuple(plan)


class JsonFields:
    """A dataclass mixin: ``to_dict()`` over :func:`dataclasses.fields`, each value made JSON-ready by its type.

    The declared type decides: a ``float`` goes through :func:`json_float` (NaN and infinities become
    ``None``, an int becomes a float), a tuple or list becomes a list, a dict a dict (keys kept), a class
    with ``to_dict`` (a nested view, an ``Interval``) its dict; ``str``, ``int``, ``bool``, ``None``,
    ``Literal`` and ``Any`` stay as they are. A class whose JSON is not its fields in order says how,
    in two class-level places:

    * ``_json_keys``: the keys in order (default: the fields in order); a key is a field, a property
      (converted by its return type) or a key of :meth:`_json_extra`;
    * ``_json_omit``: the fields not written under their own name (left out, or renamed in
      :meth:`_json_extra`); with ``_json_keys`` every other field must be among the keys;
    * :meth:`_json_extra`: the keys computed apart (a count, a field written under another name, a
      value written exactly as given); a key found there is taken from there, even a field's.
    """

    #: The JSON keys in order; empty: every field in declaration order.
    _json_keys: ClassVar[tuple[str, ...]] = ()
    #: Fields that ``_json_keys`` leaves out on purpose.
    _json_omit: ClassVar[tuple[str, ...]] = ()

    def _json_extra(self) -> dict[str, Any]:
        """Keys of :attr:`_json_keys` that are neither a field nor a property, with their JSON-ready values."""
        return {}

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (non-finite numbers become ``None``)."""
        extra = self._json_extra()
        return {
            key: extra[key] if key in extra else convert(getattr(self, key, None))
            for key, convert in _json_plan(type(self))
        }
