"""What a metric *is*: a small value object with one canonical string that parses back.

``parse_measure("nDCG@10")``, ``parse_measure("ndcg_cut_10")`` and ``parse_measure("NDCG@10")`` all give
the measure whose canonical string is ``ndcg@10``. A relevance threshold for binary measures is written
``precision@5(rel=2)`` (ir_measures' ``P(rel=2)@5`` is accepted too). Definitions are in
``docs/metrics.md``; they equal trec_eval's wherever trec_eval has the measure.

Examples
--------
>>> str(parse_measure("P@5"))
'precision@5'
>>> str(parse_measure("MRR@10"))
'mrr@10'
>>> str(parse_measure("P(rel=2)@5"))
'precision@5(rel=2)'
>>> parse_measure("recall_100") == parse_measure("R@100")
True
"""

from __future__ import annotations

import functools
import numbers
import re
from collections.abc import Iterable
from dataclasses import dataclass

from rankbridge.errors import MetricError

__all__ = ["MEASURES", "METRIC_DEFINITIONS_VERSION", "Measure", "parse_measure", "parse_measures"]

#: Version of the metric *definitions* (what ``ndcg@10`` etc. compute), saved with every history record.
#: Bump it whenever a metric's definition or its edge-case policy changes (a different number for the
#: same run and qrels), so that a trend never silently joins numbers that mean different things.
METRIC_DEFINITIONS_VERSION = "1"


@dataclass(frozen=True)
class _Spec:
    name: str
    k: str  # "required" | "optional" | "none"
    takes_rel: bool
    doc: str
    trec: str | None  # trec_eval name (with {k} for the cut-off), when trec_eval has it


#: Every measure rankbridge computes, by canonical name.
MEASURES: dict[str, _Spec] = {
    s.name: s
    for s in [
        _Spec("hit_rate", "required", True, "1 if any relevant doc is in the top k", "success_{k}"),
        _Spec("mrr", "optional", True, "1 / rank of the first relevant doc (in the top k)", "recip_rank"),
        _Spec("precision", "required", True, "relevant docs in the top k, divided by k", "P_{k}"),
        _Spec("recall", "required", True, "relevant docs in the top k, divided by all relevant", "recall_{k}"),
        _Spec("map", "optional", True, "average precision (cut at k), divided by all relevant", "map_cut_{k}"),
        _Spec("ndcg", "optional", False, "nDCG with linear gain (cut at k)", "ndcg_cut_{k}"),
        _Spec("ndcg_exp", "optional", False, "nDCG with exponential gain 2^label - 1 (cut at k)", None),
        _Spec("dcg", "required", False, "DCG with linear gain, unnormalised", None),
        _Spec("dcg_exp", "required", False, "DCG with exponential gain, unnormalised", None),
        _Spec("r_precision", "none", True, "precision at rank |R|", "Rprec"),
        _Spec("judged", "required", False, "share of the top k that has any judgment", None),
        _Spec("num_ret", "none", False, "number of docs retrieved", "num_ret"),
        _Spec("num_rel", "none", True, "number of relevant docs in the qrels", "num_rel"),
        _Spec("num_rel_ret", "none", True, "number of relevant docs retrieved", "num_rel_ret"),
    ]
}

# Lower-cased alias -> canonical name. The canonical names map to themselves.
_ALIASES: dict[str, str] = {name: name for name in MEASURES}
_ALIASES.update(
    {
        "success": "hit_rate",
        "hitrate": "hit_rate",
        "hit": "hit_rate",
        "hits": "hit_rate",
        "rr": "mrr",
        "recip_rank": "mrr",
        "p": "precision",
        "r": "recall",
        "ap": "map",
        "map_cut": "map",
        "ndcg_cut": "ndcg",
        "ndcg_burges": "ndcg_exp",
        "rprec": "r_precision",
        "r-precision": "r_precision",
        "rprecision": "r_precision",
    }
)

_NUM_RE = r"[+-]?\d+(?:\.\d*)?"
# name [ (rel=N) ] [ @k | _k ] [ (rel=N) ]
_MEASURE_RE = re.compile(
    rf"""^\s*(?P<name>[a-z][a-z_\-]*?)
         (?:\(\s*rel\s*=\s*(?P<rel1>{_NUM_RE})\s*\))?
         (?:(?:@|_)(?P<k>{_NUM_RE}))?
         (?:\(\s*rel\s*=\s*(?P<rel2>{_NUM_RE})\s*\))?\s*$""",
    re.IGNORECASE | re.VERBOSE,
)


@functools.total_ordering
@dataclass(frozen=True)
class Measure:
    """A metric with its parameters. ``str(m)`` is the canonical form and parses back to ``m``.

    Parameters
    ----------
    name:
        Canonical name, a key of :data:`MEASURES`.
    k:
        Rank cut-off, or None for the whole list.
    rel:
        Minimum label that counts as relevant for binary measures (default 1).
    """

    name: str
    k: int | None = None
    rel: int = 1

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Measure):
            return NotImplemented
        return self._key() < other._key()

    def _key(self) -> tuple[str, int, int]:
        return (self.name, 0 if self.k is None else self.k, self.rel)  # uncut sorts before any cut-off

    def __post_init__(self) -> None:
        # numpy integers and other Integral types are accepted and stored as int
        for attr in ("k", "rel"):
            value = getattr(self, attr)
            if isinstance(value, numbers.Integral) and not isinstance(value, (bool, int)):
                object.__setattr__(self, attr, int(value))
        spec = MEASURES.get(self.name)
        if spec is None:
            raise MetricError(f"unknown measure {self.name!r}; expected one of {', '.join(MEASURES)}")
        if self.k is not None:
            if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1:
                raise MetricError(f"{self.name}: k must be an int >= 1. Got {self.k!r} instead.")
            if spec.k == "none":
                raise MetricError(f"{self.name} takes no cut-off k. Got @{self.k}.")
        elif spec.k == "required":
            raise MetricError(f"{self.name} needs a cut-off, e.g. {self.name}@10.")
        if isinstance(self.rel, bool) or not isinstance(self.rel, int) or self.rel < 1:
            raise MetricError(f"{self.name}: rel must be an int >= 1. Got {self.rel!r} instead.")
        if self.rel != 1 and not spec.takes_rel:
            raise MetricError(
                f"{self.name} uses graded gains and takes no relevance threshold (as in trec_eval). Got rel={self.rel}."
            )

    def __str__(self) -> str:
        s = self.name if self.k is None else f"{self.name}@{self.k}"
        return s if self.rel == 1 else f"{s}(rel={self.rel})"

    @property
    def trec_name(self) -> str | None:
        """The trec_eval measure name computing the same number, if trec_eval has one (rel must be 1)."""
        spec = MEASURES[self.name]
        if spec.trec is None or self.rel != 1:
            return None
        if self.name in ("mrr", "map", "ndcg") and self.k is None:
            return {"mrr": "recip_rank", "map": "map", "ndcg": "ndcg"}[self.name]
        if self.name == "mrr":
            return None  # trec_eval has recip_rank@k only under -M k
        return spec.trec.format(k=self.k)

    @property
    def description(self) -> str:
        return MEASURES[self.name].doc


def _int_param(text: str, what: str, original: str) -> int:
    try:
        value = float(text)
    except ValueError:
        raise MetricError(f"{original!r}: {what} must be an integer. Got {text!r}.") from None
    if not value.is_integer():
        raise MetricError(f"{original!r}: {what} must be an integer. Got {text!r}.")
    return int(value)


def parse_measure(text: str | Measure) -> Measure:
    """Parse a metric name (case-insensitive, with the common aliases) into a :class:`Measure`.

    Accepted: canonical names (``ndcg@10``, ``precision@5(rel=2)``), common short forms (``P@5``,
    ``R@100``, ``nDCG@10``, ``MRR@10``, ``RR``, ``Success@10``, ``AP@100``, ``MAP``, ``Rprec``), ir_measures
    style ``P(rel=2)@5``, and trec_eval names (``P_5``, ``ndcg_cut_10``, ``map_cut_100``, ``recall_100``,
    ``success_10``, ``recip_rank``).
    """
    if isinstance(text, Measure):
        return text
    if not isinstance(text, str):
        raise MetricError(f"expected a metric name as str, found {type(text).__name__} {text!r}")
    m = _MEASURE_RE.match(text)
    if m is None:
        raise MetricError(
            f"cannot parse metric {text!r}; expected e.g. ndcg@10, P@5, mrr@10, recall@100 or precision@5(rel=2)"
        )
    raw = m.group("name").lower()
    name = _ALIASES.get(raw)
    if name is None:
        known = ", ".join(sorted(MEASURES))
        raise MetricError(f"unknown metric {text!r}; known metrics: {known} (and aliases such as P@5, nDCG@10)")
    k = _int_param(m.group("k"), "k", text) if m.group("k") is not None else None
    if raw in ("ndcg_cut", "map_cut") and k is None:
        # trec_eval's bare ndcg_cut/map_cut mean a list of cut-offs; ours name one measure each
        raise MetricError(f"{text!r}: give one cut-off, e.g. {raw}_10 (or {name}@10); the uncut measure is {name!r}")
    if m.group("rel1") is not None and m.group("rel2") is not None:
        raise MetricError(f"{text!r}: rel= given twice")
    rel_text = m.group("rel1") or m.group("rel2")
    rel = _int_param(rel_text, "rel", text) if rel_text is not None else 1
    try:
        return Measure(name, k, rel)
    except MetricError as exc:
        raise MetricError(f"{text!r}: {exc}") from None


def parse_measures(texts: str | Measure | Iterable[str | Measure]) -> list[Measure]:
    """Parse several metric names; duplicates (after canonicalisation) are kept once, in order."""
    if isinstance(texts, (str, Measure)):
        texts = [texts]
    out: list[Measure] = []
    for t in texts:
        m = parse_measure(t)
        if m not in out:
            out.append(m)
    if not out:
        raise MetricError("no metrics given; expected at least one, e.g. ndcg@10")
    return out
