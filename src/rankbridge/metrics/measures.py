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

import ast
import difflib
import functools
import math
import numbers
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from rankbridge.errors import MetricError

__all__ = [
    "JOINED_COLUMNS",
    "MEASURES",
    "METRIC_DEFINITIONS_VERSION",
    "ColumnFacts",
    "Measure",
    "column_facts",
    "column_name",
    "is_joined_column",
    "parse_measure",
    "parse_measures",
    "register_column",
]

#: Version of the metric *definitions* (what ``ndcg@10`` etc. compute), saved with every history record.
#: Bump it whenever a metric's definition or its edge-case policy changes (a different number for the
#: same run and qrels), so that a trend never silently joins numbers that mean different things.
METRIC_DEFINITIONS_VERSION = "1"


@dataclass(frozen=True)
class _Spec:
    """What a measure is: its parameters, the facts reports and printers need, and its trec_eval name."""

    name: str
    k: str  # "required" | "optional" | "none"
    takes_rel: bool
    doc: str
    trec: str | None  # trec_eval name (with {k} for the cut-off), when trec_eval has it
    count: bool = False  # integer values per query (printed without decimals)
    summed: bool = False  # trec_eval's "all" line sums it over queries instead of averaging
    upper: float | None = 1.0  # the largest value a query can get (None: unbounded); the smallest is 0
    uncut: str | None = None  # for a measure that needs k: the measure over the whole list, for error hints


#: Every measure rankbridge computes, by canonical name.
MEASURES: dict[str, _Spec] = {
    s.name: s
    for s in [
        _Spec("hit_rate", "required", True, "1 if any relevant doc is in the top k", "success_{k}"),
        _Spec(
            "hits",
            "required",
            True,
            "number of relevant docs in the top k (ranx hits@k)",
            None,
            count=True,
            upper=None,
            uncut="num_rel_ret",
        ),
        _Spec("mrr", "optional", True, "1 / rank of the first relevant doc (in the top k)", "recip_rank"),
        _Spec(
            "precision", "required", True, "relevant docs in the top k, divided by k", "P_{k}", uncut="set_precision"
        ),
        _Spec(
            "recall",
            "required",
            True,
            "relevant docs in the top k, divided by all relevant",
            "recall_{k}",
            uncut="set_recall",
        ),
        _Spec("f1", "required", True, "harmonic mean of precision@k and recall@k (ranx f1@k)", None, uncut="set_f1"),
        _Spec("map", "optional", True, "average precision (cut at k), divided by all relevant", "map_cut_{k}"),
        _Spec("ndcg", "optional", False, "nDCG with linear gain (cut at k)", "ndcg_cut_{k}"),
        _Spec("ndcg_exp", "optional", False, "nDCG with exponential gain 2^label - 1 (cut at k)", None),
        _Spec("dcg", "required", False, "DCG with linear gain, unnormalised", None, upper=None),
        _Spec("dcg_exp", "required", False, "DCG with exponential gain, unnormalised", None, upper=None),
        _Spec("r_precision", "none", True, "precision at rank |R|", "Rprec"),
        _Spec("bpref", "none", True, "binary preference: relevant docs ranked above judged non-relevant ones", "bpref"),
        _Spec("judged", "required", False, "share of the top k that has any judgment", None),
        _Spec("set_precision", "none", True, "relevant docs retrieved, divided by docs retrieved", "set_P"),
        _Spec("set_recall", "none", True, "relevant docs retrieved, divided by all relevant", "set_recall"),
        _Spec("set_f1", "none", True, "harmonic mean of set_precision and set_recall", "set_F"),
        _Spec("num_ret", "none", False, "number of docs retrieved", "num_ret", count=True, summed=True, upper=None),
        _Spec(
            "num_rel",
            "none",
            True,
            "number of relevant docs in the qrels",
            "num_rel",
            count=True,
            summed=True,
            upper=None,
        ),
        _Spec(
            "num_rel_ret",
            "none",
            True,
            "number of relevant docs retrieved",
            "num_rel_ret",
            count=True,
            summed=True,
            upper=None,
        ),
    ]
}

# Lower-cased alias -> canonical name, for every dialect (trec_eval, pytrec_eval, ranx, ir_measures,
# LlamaIndex). The canonical names map to themselves. '-' and '_' are interchangeable in names.
_ALIASES: dict[str, str] = {name: name for name in MEASURES}
_ALIASES.update(
    {
        "success": "hit_rate",  # trec_eval success_k, ir_measures Success@k
        "hitrate": "hit_rate",
        "hit": "hit_rate",
        "rr": "mrr",  # ir_measures
        "recip_rank": "mrr",  # trec_eval
        "p": "precision",  # trec_eval P_k, ir_measures P@k
        "r": "recall",  # ir_measures R@k
        "ap": "map",  # ir_measures AP, LlamaIndex ap
        "map_cut": "map",  # trec_eval
        "ndcg_cut": "ndcg",  # trec_eval
        "ndcg_burges": "ndcg_exp",  # ranx
        "dcg_burges": "dcg_exp",  # ranx
        "rprec": "r_precision",  # trec_eval, ir_measures
        "rprecision": "r_precision",
        "setp": "set_precision",  # ir_measures SetP
        "set_p": "set_precision",  # trec_eval set_P
        "setr": "set_recall",  # ir_measures SetR
        "setf": "set_f1",  # ir_measures SetF (beta=1)
        "set_f": "set_f1",  # trec_eval set_F
        "numret": "num_ret",  # ir_measures NumRet; NumRet(rel=N) is num_rel_ret(rel=N)
        "numrel": "num_rel",  # ir_measures
        "numrelret": "num_rel_ret",  # ir_measures NumRelRet
    }
)

# Measures other tools compute and rankbridge does not: lower-cased name -> (what it is, nearest ours).
_NOT_COMPUTED: dict[str, tuple[str, str]] = {
    "err": ("expected reciprocal rank (ir_measures ERR@k)", "mrr@k, ndcg_exp@k"),
    "nerr": ("normalised expected reciprocal rank (ir_measures nERR@k)", "mrr@k, ndcg_exp@k"),
    "rbp": ("rank-biased precision (ir_measures RBP(p=...), trec_eval 10 rbp, ranx rbp)", "precision@k, dcg@k"),
    "infap": ("inferred AP (trec_eval infAP)", "map"),
    "gm_map": ("geometric mean of AP (trec_eval gm_map)", "map"),
    "iprec_at_recall": ("interpolated precision at a recall level (trec_eval)", "map, r_precision"),
    "ipatr": ("interpolated precision at a recall level (ir_measures IPrec@r)", "map, r_precision"),
    "iprec": ("interpolated precision at a recall level (ir_measures IPrec@r)", "map, r_precision"),
    "11pt_avg": ("11-point interpolated average precision (trec_eval)", "map"),
    "num_q": ("number of queries (trec_eval num_q)", "Evaluation.num_queries"),
    "numq": ("number of queries (ir_measures NumQ)", "Evaluation.num_queries"),
    "alpha_ndcg": ("diversity nDCG (ir_measures alpha_nDCG)", "ndcg@k"),
    "sdcg": ("scaled DCG (ir_measures SDCG@k)", "dcg@k, ndcg@k"),
    "bpm": ("bejeweled player model (ir_measures BPM)", "ndcg@k"),
    "compat": ("compatibility (ir_measures Compat)", "ndcg@k"),
    "utility": ("utility (trec_eval)", "precision@k"),
    "unj": ("unjudged share (trec_eval 10 unj_k)", "judged@k (1 - unj_k)"),
}

_NUM_RE = r"[+-]?\d+(?:\.\d*)?"
_PARAMS_RE = r"\((?P<{g}>[^()]*)\)"
# name [ (params) ] [ @k | _k | .k ] [ (params) ]; params are key=value, e.g. rel=2, dcg="exp-log2"
_MEASURE_RE = re.compile(
    rf"""^\s*(?P<name>[a-z0-9][a-z0-9_\-]*?)\s*
         (?:{_PARAMS_RE.format(g="params1")})?
         (?:(?:@|_|\.)(?P<k>{_NUM_RE}))?
         (?:{_PARAMS_RE.format(g="params2")})?\s*$""",
    re.IGNORECASE | re.VERBOSE,
)
_LIST_RE = re.compile(r"^\s*[a-z_]+[._]\d+(?:,\d+)+\s*$", re.IGNORECASE)


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
            whole = f" (over the whole list: {spec.uncut})" if spec.uncut else ""
            raise MetricError(f"{self.name} needs a cut-off, e.g. {self.name}@10{whole}.")
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
    def trec_equivalent(self) -> tuple[str, int | None] | None:
        """``(trec_eval name, -l level)`` of the trec_eval measure printing this number, if there is one.

        The level is the ``rel`` threshold that trec_eval takes as ``-l`` (None for measures that ignore
        it, such as nDCG). This is the name ``rankbridge evaluate --format trec`` prints.

        Examples
        --------
        >>> parse_measure("P@5(rel=2)").trec_equivalent
        ('P_5', 2)
        >>> parse_measure("ndcg@10").trec_equivalent
        ('ndcg_cut_10', None)
        >>> parse_measure("mrr@10").trec_equivalent is None  # only under trec_eval -M 10
        True
        """
        spec = MEASURES[self.name]
        name = Measure(self.name, self.k).trec_name if spec.takes_rel else self.trec_name
        if name is None:
            return None
        return name, (self.rel if spec.takes_rel else None)

    @property
    def is_count(self) -> bool:
        """True for counts (``num_ret``, ``num_rel``, ``num_rel_ret``, ``hits@k``): integers per query."""
        return MEASURES[self.name].count

    @property
    def summed(self) -> bool:
        """True when trec_eval's ``all`` line sums the measure over queries (its ``num_*`` counts)."""
        return MEASURES[self.name].summed

    @property
    def bounds(self) -> tuple[float, float | None]:
        """``(lowest, highest)`` value one query can get; the highest is None when unbounded.

        Examples
        --------
        >>> parse_measure("ndcg@10").bounds, parse_measure("num_ret").bounds
        ((0.0, 1.0), (0.0, None))
        >>> parse_measure("hits@5").bounds
        (0.0, 5.0)
        """
        upper = MEASURES[self.name].upper
        if upper is None and self.name == "hits":
            upper = float(self.k)  # type: ignore[arg-type]
        return 0.0, upper

    def aggregate(self, values: np.ndarray) -> float:
        """The value over all queries as trec_eval prints it on its ``all`` line: a sum or a mean.

        Examples
        --------
        >>> import numpy as np
        >>> parse_measure("num_rel").aggregate(np.array([12.0, 77.0]))
        89.0
        >>> parse_measure("P@5").aggregate(np.array([0.2, 0.4]))
        0.30000000000000004
        """
        if self.summed:
            return float(np.sum(values))
        return float(np.mean(values)) if len(values) else math.nan

    def format_value(self, value: float, *, aggregate: bool = False) -> str:
        """``value`` as trec_eval prints it: an integer for a count, else four decimals.

        ``aggregate=True`` formats the value over all queries (:meth:`aggregate`): an integer only for the
        summed counts, four decimals for a mean (``hits@k`` averaged over queries).

        Examples
        --------
        >>> parse_measure("num_rel(rel=2)").format_value(29.0), parse_measure("P@5").format_value(0.2)
        ('29', '0.2000')
        >>> parse_measure("hits@10").format_value(3.0), parse_measure("hits@10").format_value(3.0, aggregate=True)
        ('3', '3.0000')
        """
        integral = self.is_count and (self.summed or not aggregate)
        if integral and not math.isnan(value) and float(value).is_integer():
            return str(int(value))
        return f"{value:.4f}"

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


_CANNOT_PARSE = "cannot parse metric {text}; expected e.g. ndcg@10, P@5, mrr@10, recall@100 or precision@5(rel=2)"
_BARE_VALUE = re.compile(r"^[A-Za-z][\w\-]*$")


def _parse_params(body: str, original: str) -> dict[str, object]:
    """``rel=2, dcg="exp-log2"`` -> ``{"rel": 2, "dcg": "exp-log2"}``, values read with :func:`ast.literal_eval`."""
    out: dict[str, object] = {}
    for part in body.split(","):
        if not part.strip():
            raise MetricError(f"{original!r}: empty parameter in ({body}); expected key=value, e.g. (rel=2)")
        key, eq, raw = part.partition("=")
        key, raw = key.strip().lower(), raw.strip()
        if not eq or not key.isidentifier() or not raw:
            raise MetricError(f"{original!r}: cannot read parameter {part.strip()!r}; expected key=value, e.g. rel=2")
        if key in out:
            raise MetricError(f"{original!r}: {key}= given twice")
        try:
            value: object = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            if not _BARE_VALUE.match(raw):
                raise MetricError(f"{original!r}: cannot read the value of {key}= ({raw!r})") from None
            value = raw  # an unquoted word, e.g. dcg=exp-log2
        out[key] = value
    return out


def _param_int(value: object, key: str, original: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise MetricError(f"{original!r}: {key} must be an integer. Got {value!r}.")
    return _int_param(str(value), key, original)


def _unknown(text: str, raw: str) -> MetricError:
    """The error for a name no dialect maps to a measure rankbridge computes, naming the nearest ones."""
    if raw in _NOT_COMPUTED:
        what, nearest = _NOT_COMPUTED[raw]
        return MetricError(f"{text!r}: rankbridge does not compute {what}; the nearest measures it computes: {nearest}")
    names = sorted(set(_ALIASES) | set(MEASURES))
    close = difflib.get_close_matches(raw, names, n=3, cutoff=0.6)
    guesses = list(dict.fromkeys(_ALIASES[c] for c in close))
    hint = f" (did you mean {' or '.join(guesses)}?)" if guesses else ""
    known = ", ".join(MEASURES)
    return MetricError(
        f"unknown metric {text!r}{hint}; rankbridge computes: {known} (and aliases such as P@5, nDCG@10)"
    )


def parse_measure(text: str | Measure) -> Measure:
    """Parse a metric name from any dialect (case-insensitive) into a :class:`Measure`.

    Accepted, beside the canonical names (``ndcg@10``, ``precision@5(rel=2)``):

    * trec_eval / pytrec_eval: ``P_5``, ``P.5``, ``ndcg_cut_10``, ``ndcg_cut.10``, ``map_cut_100``,
      ``recall.100``, ``success_1``, ``recip_rank``, ``Rprec``, ``bpref``, ``set_P``, ``set_recall``,
      ``set_F``, ``num_ret``, ``num_rel``, ``num_rel_ret`` (a threshold ``-l2`` is ``(rel=2)``);
    * ranx: ``hits@k`` (a count), ``hit_rate@k``, ``precision@k``, ``recall@k``, ``f1@k``, ``mrr@k``,
      ``map@k``, ``ndcg@k``, ``ndcg_burges@k``, ``dcg@k``, ``dcg_burges@k``, ``r-precision``, ``bpref``;
    * ir_measures: ``nDCG@10``, ``nDCG(dcg="exp-log2")@10``, ``P@5``, ``P(rel=2)@5``, ``R@100``, ``AP``,
      ``AP@100``, ``RR``, ``RR@10``, ``Success@10``, ``Rprec``, ``Bpref``, ``SetP``, ``SetR``, ``SetF``,
      ``NumRet``, ``NumRet(rel=2)``, ``NumRel``, ``NumRelRet``, ``Judged@10``;
    * LlamaIndex ``RetrieverEvaluator`` names (``hit_rate``, ``mrr``, ``precision``, ``recall``, ``ap``,
      ``ndcg``) with a cut-off where the measure needs one.

    Raises
    ------
    MetricError
        For a name no dialect maps to a measure rankbridge computes (naming the nearest ones it does),
        and for a bad parameter (k, rel, dcg).

    Examples
    --------
    >>> str(parse_measure("P.5")), str(parse_measure('nDCG(dcg="exp-log2")@10')), str(parse_measure("hits@3"))
    ('precision@5', 'ndcg_exp@10', 'hits@3')
    >>> str(parse_measure("NumRet(rel=2)"))
    'num_rel_ret(rel=2)'
    """
    if isinstance(text, Measure):
        return text
    if not isinstance(text, str):
        raise MetricError(f"expected a metric name as str, found {type(text).__name__} {text!r}")
    if _LIST_RE.match(text):
        raise MetricError(
            f"{text!r}: trec_eval's list form names several measures; give one cut-off each, e.g. P.5 and P.10"
        )
    m = _MEASURE_RE.match(text)
    if m is None:
        raise MetricError(_CANNOT_PARSE.format(text=repr(text)))
    raw = m.group("name").lower().replace("-", "_")
    if raw.endswith("_") and len(raw) > 1:
        raise MetricError(_CANNOT_PARSE.format(text=repr(text)))
    name = _ALIASES.get(raw)
    if name is None:
        glued = re.match(r"^([a-z_]+?)_?(\d+)$", raw)  # ndcg10: a cut-off without its separator
        if glued and glued.group(1) in _ALIASES:
            raise MetricError(
                f"{_CANNOT_PARSE.format(text=repr(text))}; did you mean {glued.group(1)}@{glued.group(2)}?"
            )
        raise _unknown(text, raw)
    k = _int_param(m.group("k"), "k", text) if m.group("k") is not None else None
    if raw in ("ndcg_cut", "map_cut") and k is None:
        # trec_eval's bare ndcg_cut/map_cut mean a list of cut-offs; ours name one measure each
        raise MetricError(f"{text!r}: give one cut-off, e.g. {raw}_10 (or {name}@10); the uncut measure is {name!r}")
    if m.group("params1") is not None and m.group("params2") is not None:
        p1 = _parse_params(m.group("params1"), text)
        p2 = _parse_params(m.group("params2"), text)
        twice = sorted(set(p1) & set(p2))
        if twice:
            raise MetricError(f"{text!r}: {twice[0]}= given twice")
        params = {**p1, **p2}
    else:
        body = m.group("params1") if m.group("params1") is not None else m.group("params2")
        params = _parse_params(body, text) if body is not None else {}
    rel_given = "rel" in params
    rel = _param_int(params.pop("rel"), "rel", text) if rel_given else 1
    if raw == "numret" and rel_given:
        name = "num_rel_ret"  # ir_measures: NumRet(rel=N) counts retrieved docs with label >= N
    if "dcg" in params:
        dcg = params.pop("dcg")
        dcg = dcg.lower() if isinstance(dcg, str) else dcg
        if name not in ("ndcg", "ndcg_exp", "dcg", "dcg_exp") or dcg not in ("log2", "exp-log2"):
            raise MetricError(
                f"{text!r}: dcg= applies to nDCG and DCG, as 'log2' (linear gain) or 'exp-log2' (gain 2^label - 1). "
                f"Got dcg={dcg!r}."
            )
        if dcg == "exp-log2":
            name = name if name.endswith("_exp") else f"{name}_exp"
        elif name.endswith("_exp"):
            raise MetricError(f"{text!r}: {raw} already uses exponential gain; dcg='log2' contradicts it")
    if "beta" in params:
        beta = params.pop("beta")
        if name not in ("set_f1", "f1") or isinstance(beta, bool) or beta != 1:
            raise MetricError(f"{text!r}: only F1 is computed (beta=1, on set_f1 and f1@k). Got beta={beta!r}.")
    if params.get("judged_only") is False:
        params.pop("judged_only")
    if params:
        key = sorted(params)[0]
        raise MetricError(
            f"{text!r}: unknown parameter {key}={params[key]!r}; "
            "rankbridge measures take rel=N (binary measures) and dcg='log2'|'exp-log2' (nDCG, DCG)"
        )
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


# --------------------------------------------------------------------------------------------------
# Column facts: ranking measures and joined columns (RAGAS scores) alike
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ColumnFacts:
    """What :func:`~rankbridge.analysis.compare`, :func:`~rankbridge.analysis.slices`, :func:`~rankbridge.analysis.gate`
    and the reports need to know about one column of :attr:`Evaluation.values <rankbridge.Evaluation.values>`.

    Attributes
    ----------
    name:
        The column's canonical name (``"ndcg@10"``, ``"ragas.faithfulness"``).
    lower, upper:
        The smallest and largest value one query can get (``upper`` None: unbounded). Intervals are
        clipped to them, and when every value sits at one of them the interval is Clopper-Pearson.
    higher_is_better:
        Which way is better (the best run, the gate's "drop").
    aggregation:
        ``"mean"`` (over the queries that have a value) or ``"sum"`` (trec_eval's ``num_*`` counts).
    source:
        ``"ranking"`` (computed from the run and qrels) or what joined it, e.g. ``"ragas"``.
    may_be_missing:
        Whether a query can lack a value (NaN: a RAGAS row that failed); such queries are counted and left
        out of means, never averaged as NaN.
    doc:
        One line for reports.
    """

    name: str
    lower: float
    upper: float | None
    higher_is_better: bool = True
    aggregation: Literal["mean", "sum"] = "mean"
    source: str = "ranking"
    may_be_missing: bool = False
    doc: str = ""

    @property
    def bounds(self) -> tuple[float, float]:
        """``(lower, upper)`` with an unbounded upper end as ``inf``, as the interval code takes them."""
        return self.lower, (math.inf if self.upper is None else self.upper)

    @property
    def span(self) -> float:
        """``upper - lower`` (``inf`` when unbounded): the largest per-query difference between two runs."""
        lo, hi = self.bounds
        return hi - lo

    def aggregate(self, values: np.ndarray) -> float:
        """The column over all queries: the sum or the mean of the values that are not NaN (NaN if none)."""
        v = np.asarray(values, dtype=np.float64)
        ok = v[~np.isnan(v)]
        if self.aggregation == "sum":
            return float(ok.sum())
        return float(ok.mean()) if len(ok) else math.nan


def _ragas(name: str, doc: str, *, higher_is_better: bool = True) -> ColumnFacts:
    return ColumnFacts(
        "ragas." + name, 0.0, 1.0, higher_is_better, "mean", source="ragas", may_be_missing=True, doc=doc
    )


#: Facts of the joined columns rankbridge knows, by column name (see :func:`register_column` for others).
#: Every RAGAS score here lies in [0, 1]; all but ``noise_sensitivity`` are better higher.
JOINED_COLUMNS: dict[str, ColumnFacts] = {
    f.name: f
    for f in [
        _ragas("context_precision", "AP-like rank quality of the contexts an LLM judges useful (not precision@k)"),
        _ragas("context_recall", "share of the reference answer's claims an LLM attributes to the contexts"),
        _ragas("faithfulness", "share of the answer's claims the contexts support"),
        _ragas("answer_relevancy", "similarity of the question to questions an LLM derives from the answer"),
        _ragas("id_based_context_precision", "set precision of retrieved ids against reference ids"),
        _ragas("id_based_context_recall", "set recall of reference ids among retrieved ids"),
        _ragas(
            "non_llm_context_precision_with_reference",
            "AP-like, a context counts when its string similarity to a reference context is >= 0.5",
        ),
        _ragas("non_llm_context_recall", "share of reference contexts matched by a retrieved context"),
        _ragas("llm_context_precision_with_reference", "context precision judged against the reference answer"),
        _ragas("llm_context_precision_without_reference", "context precision judged against the response"),
        _ragas("context_utilization", "context precision judged against the response"),
        _ragas("context_entity_recall", "share of the reference's entities found in the contexts"),
        _ragas("answer_correctness", "factual and semantic agreement of the answer with the reference"),
        _ragas("answer_similarity", "embedding similarity of the answer to the reference"),
        _ragas("semantic_similarity", "embedding similarity of the answer to the reference"),
        _ragas("factual_correctness", "claim-level precision/recall/F1 of the answer against the reference"),
        _ragas(
            "noise_sensitivity", "share of the answer's claims that are wrong (lower is better)", higher_is_better=False
        ),
    ]
}


def register_column(facts: ColumnFacts) -> None:
    """Make a joined column known (a custom RAGAS metric, another evaluator's score), or replace its facts.

    Examples
    --------
    >>> register_column(ColumnFacts("ragas.tone", 0.0, 1.0, source="ragas", may_be_missing=True))
    >>> column_facts("ragas.tone").bounds
    (0.0, 1.0)
    >>> del JOINED_COLUMNS["ragas.tone"]
    """
    if not isinstance(facts, ColumnFacts):
        raise MetricError(f"register_column: expected ColumnFacts, found {type(facts).__name__}")
    if "." not in facts.name or facts.name.split(".", 1)[0] in ("", *MEASURES):
        raise MetricError(
            f"register_column: a joined column is named '<source>.<name>' (e.g. 'ragas.tone'). Got {facts.name!r}."
        )
    if facts.upper is not None and not facts.upper > facts.lower:
        raise MetricError(f"register_column: {facts.name}: upper must exceed lower. Got {facts.lower}, {facts.upper}.")
    JOINED_COLUMNS[facts.name] = facts


def _joined(name: str) -> ColumnFacts | None:
    facts = JOINED_COLUMNS.get(name)
    if facts is None and name.endswith(")") and "(" in name:  # ragas.noise_sensitivity(mode=relevant)
        base = JOINED_COLUMNS.get(name[: name.index("(")])
        if base is not None:
            facts = replace(base, name=name)
    return facts


def is_joined_column(name: str | Measure) -> bool:
    """Whether ``name`` names a joined column (``"ragas.<metric>"``, or any ``source.name``) rather than a measure.

    Examples
    --------
    >>> is_joined_column("ragas.faithfulness"), is_joined_column("ndcg@10"), is_joined_column("P.5")
    (True, False, False)
    """
    if isinstance(name, Measure) or not isinstance(name, str):
        return False
    head, dot, rest = name.partition(".")
    return bool(dot) and bool(rest) and not rest[:1].isdigit() and head.lower() not in _ALIASES


def column_name(name: str | Measure) -> str:
    """The canonical name of a column: a joined column's name as is, a measure's canonical string.

    Examples
    --------
    >>> column_name("ragas.faithfulness"), column_name("P@5")
    ('ragas.faithfulness', 'precision@5')
    """
    if isinstance(name, str) and is_joined_column(name):
        return name
    return str(parse_measure(name))


def column_facts(name: str | Measure) -> ColumnFacts:
    """The facts of one column of an evaluation: a ranking measure (any spelling) or a joined column.

    The single place compare, slices, the gate and the reports take bounds, direction and aggregation from.

    Raises
    ------
    MetricError
        An unknown measure, or a joined column with no registered facts (:func:`register_column`).

    Examples
    --------
    >>> f = column_facts("ragas.faithfulness")
    >>> f.bounds, f.higher_is_better, f.aggregation, f.may_be_missing
    ((0.0, 1.0), True, 'mean', True)
    >>> column_facts("nDCG@10").bounds, column_facts("hits@5").bounds, column_facts("dcg@5").bounds
    ((0.0, 1.0), (0.0, 5.0), (0.0, inf))
    >>> column_facts("num_rel").aggregation
    'sum'
    """
    if isinstance(name, str) and is_joined_column(name):
        facts = _joined(name)
        if facts is None:
            known = ", ".join(sorted(JOINED_COLUMNS))
            raise MetricError(
                f"no facts (bounds, direction) for the joined column {name!r}; known: {known}. Register it with "
                "rankbridge.metrics.measures.register_column(ColumnFacts(name, lower, upper, ...))"
            )
        return facts
    m = parse_measure(name)
    lower, upper = m.bounds
    return ColumnFacts(str(m), lower, upper, True, "sum" if m.summed else "mean", source="ranking", doc=m.description)
