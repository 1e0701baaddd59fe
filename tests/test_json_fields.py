"""JsonFields: the one to_dict of the report views and analysis results (rankbridge._numbers)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest

from rankbridge._numbers import JsonFields
from rankbridge.metrics.stats import Interval


@dataclass(frozen=True)
class Inner(JsonFields):
    label: str
    share: float


@dataclass(frozen=True)
class Outer(JsonFields):
    name: str
    count: int
    flag: bool
    mean: float
    kind: Literal["a", "b"]
    interval: Interval
    maybe: float | None
    items: tuple[Inner, ...]
    table: dict[str, dict[str, tuple[float, ...]]]
    settings: dict[str, Any] = field(default_factory=dict)


def test_values_follow_their_declared_type() -> None:
    iv = Interval(0.5, 0.25, math.nan, 0.95, "t", 3)
    obj = Outer(
        name="x",
        count=2,
        flag=True,
        mean=1,  # an int where a float is declared is written as a float
        kind="a",
        interval=iv,
        maybe=math.inf,
        items=(Inner("i", math.nan), Inner("j", 0.5)),
        table={"m": {"r": (0.25, math.nan)}},
        settings={"alpha": 1, "seed": None},
    )
    data = obj.to_dict()
    assert list(data) == ["name", "count", "flag", "mean", "kind", "interval", "maybe", "items", "table", "settings"]
    assert data["mean"] == 1.0 and isinstance(data["mean"], float)
    assert data["count"] == 2 and data["flag"] is True and data["kind"] == "a"
    assert data["interval"] == iv.to_dict()
    assert data["maybe"] is None
    assert data["items"] == [{"label": "i", "share": None}, {"label": "j", "share": 0.5}]
    assert data["table"] == {"m": {"r": [0.25, None]}}
    assert data["settings"] == {"alpha": 1, "seed": None}  # Any: as given
    json.dumps(data, allow_nan=False)  # strict JSON


@dataclass(frozen=True)
class Picked(JsonFields):
    a: float
    with_: str
    hidden: int = 0

    @property
    def double(self) -> float:
        return 2 * self.a

    _json_keys = ("with", "double", "a", "count")
    _json_omit = ("with_", "hidden")

    def _json_extra(self) -> dict[str, Any]:
        return {"with": self.with_, "count": 7}


def test_keys_properties_extras_and_left_out_fields() -> None:
    assert Picked(math.nan, "w", 3).to_dict() == {"with": "w", "double": None, "a": None, "count": 7}
    assert Picked(0.5, "w").to_dict() == {"with": "w", "double": 1.0, "a": 0.5, "count": 7}


@dataclass(frozen=True)
class Forgot(JsonFields):
    a: int
    b: int
    _json_keys = ("a",)


@dataclass(frozen=True)
class Unknown(JsonFields):
    a: int
    _json_keys = ("a", "nowhere")


@dataclass(frozen=True)
class NoForm(JsonFields):
    a: object


def test_a_field_never_drops_out_silently() -> None:
    with pytest.raises(TypeError, match=r"Forgot: fields \['b'\] are neither in _json_keys nor in _json_omit"):
        Forgot(1, 2).to_dict()
    with pytest.raises(TypeError, match="Unknown: JSON key 'nowhere' is neither a field"):
        Unknown(1).to_dict()
    with pytest.raises(TypeError, match="no JSON form for a value declared as"):
        NoForm(object()).to_dict()
