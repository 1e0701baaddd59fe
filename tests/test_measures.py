"""Metric names: parsing (aliases, trec_eval and ir_measures spellings), canonical round trip, errors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rankbridge import evaluate
from rankbridge.errors import InputError, MetricError
from rankbridge.metrics.measures import MEASURES, Measure, parse_measure, parse_measures

PARSE_CASES = {
    # common short forms
    "P@5": Measure("precision", 5),
    "p@5": Measure("precision", 5),
    "precision@5": Measure("precision", 5),
    "nDCG@10": Measure("ndcg", 10),
    "NDCG@10": Measure("ndcg", 10),
    "ndcg": Measure("ndcg"),
    "R@100": Measure("recall", 100),
    "Recall@100": Measure("recall", 100),
    "MRR@10": Measure("mrr", 10),
    "MRR": Measure("mrr"),
    "RR": Measure("mrr"),
    "RR@10": Measure("mrr", 10),
    "Success@10": Measure("hit_rate", 10),
    "hit_rate@10": Measure("hit_rate", 10),
    "HitRate@3": Measure("hit_rate", 3),
    "hits@3": Measure("hits", 3),  # ranx: the number of relevant docs in the top 3, not hit rate
    "AP@100": Measure("map", 100),
    "AP": Measure("map"),
    "MAP": Measure("map"),
    "map@10": Measure("map", 10),
    "Rprec": Measure("r_precision"),
    "R-precision": Measure("r_precision"),
    "r_precision": Measure("r_precision"),
    "ndcg_burges@10": Measure("ndcg_exp", 10),
    "ndcg_exp@10": Measure("ndcg_exp", 10),
    "dcg@5": Measure("dcg", 5),
    "dcg_exp@5": Measure("dcg_exp", 5),
    "Judged@10": Measure("judged", 10),
    "num_ret": Measure("num_ret"),
    "num_rel": Measure("num_rel"),
    "num_rel_ret": Measure("num_rel_ret"),
    # trec_eval names
    "P_5": Measure("precision", 5),
    "ndcg_cut_10": Measure("ndcg", 10),
    "map_cut_100": Measure("map", 100),
    "recall_100": Measure("recall", 100),
    "success_10": Measure("hit_rate", 10),
    "recip_rank": Measure("mrr"),
    # relevance thresholds: ours and ir_measures'
    "precision@5(rel=2)": Measure("precision", 5, rel=2),
    "P(rel=2)@5": Measure("precision", 5, rel=2),
    "P@5(rel=2)": Measure("precision", 5, rel=2),
    "mrr(rel=2)": Measure("mrr", None, rel=2),
    "RR(rel=2)@10": Measure("mrr", 10, rel=2),
    "AP(rel=2)": Measure("map", None, rel=2),
    "R(rel=3)@100": Measure("recall", 100, rel=3),
    "mrr(rel=1)": Measure("mrr"),  # rel=1 is the default, not a variant
    # whitespace around the name
    "  ndcg@10 ": Measure("ndcg", 10),
}


@pytest.mark.parametrize(("text", "expected"), list(PARSE_CASES.items()), ids=list(PARSE_CASES))
def test_parse(text: str, expected: Measure) -> None:
    assert parse_measure(text) == expected


def test_canonical_strings() -> None:
    assert str(parse_measure("P@5")) == "precision@5"
    assert str(parse_measure("nDCG@10")) == "ndcg@10"
    assert str(parse_measure("Success@10")) == "hit_rate@10"
    assert str(parse_measure("P(rel=2)@5")) == "precision@5(rel=2)"
    assert str(parse_measure("RR")) == "mrr"
    assert str(parse_measure("Rprec")) == "r_precision"
    assert str(Measure("map", 100)) == "map@100"


@given(st.sampled_from(sorted(PARSE_CASES)), st.randoms(use_true_random=False))
def test_parse_is_case_insensitive(text: str, rnd) -> None:
    mixed = "".join(c.upper() if rnd.random() < 0.5 else c.lower() for c in text)
    assert parse_measure(mixed) == PARSE_CASES[text]


def test_parse_measure_passes_measures_through() -> None:
    m = Measure("ndcg", 10)
    assert parse_measure(m) is m


def test_parse_measures_dedups_after_canonicalisation() -> None:
    assert parse_measures(["P@5", "precision@5", "P_5", "ndcg@10", "nDCG@10"]) == [
        Measure("precision", 5),
        Measure("ndcg", 10),
    ]
    assert parse_measures("mrr") == [Measure("mrr")]
    assert parse_measures(("RR", Measure("mrr"))) == [Measure("mrr")]


def _every_measure() -> list[Measure]:
    out = []
    for name, spec in MEASURES.items():
        ks = [None] if spec.k == "none" else [1, 10, 1000] if spec.k == "required" else [None, 1, 10, 1000]
        rels = [1, 2, 3] if spec.takes_rel else [1]
        out += [Measure(name, k, rel) for k in ks for rel in rels]
    return out


@pytest.mark.parametrize("measure", _every_measure(), ids=str)
def test_canonical_round_trip(measure: Measure) -> None:
    text = str(measure)
    assert parse_measure(text) == measure
    assert str(parse_measure(text)) == text
    assert parse_measure(text.upper()) == measure


def test_round_trip_covers_the_whole_registry() -> None:
    assert {m.name for m in _every_measure()} == set(MEASURES)
    assert len(MEASURES) == 20


@pytest.mark.parametrize("measure", [m for m in _every_measure() if m.trec_name is not None], ids=str)
def test_trec_name_parses_back(measure: Measure) -> None:
    assert parse_measure(measure.trec_name) == measure


@pytest.mark.parametrize(
    ("text", "trec"),
    [
        ("ndcg", "ndcg"),
        ("ndcg@10", "ndcg_cut_10"),
        ("map", "map"),
        ("map@100", "map_cut_100"),
        ("P@5", "P_5"),
        ("recall@1000", "recall_1000"),
        ("hit_rate@5", "success_5"),
        ("mrr", "recip_rank"),
        ("r_precision", "Rprec"),
        ("num_ret", "num_ret"),
        ("num_rel", "num_rel"),
        ("num_rel_ret", "num_rel_ret"),
        # trec_eval has no measure computing these (mrr@k exists only under -M k; rel needs -l)
        ("mrr@10", None),
        ("P@5(rel=2)", None),
        ("ndcg_exp@10", None),
        ("dcg@10", None),
        ("dcg_exp@10", None),
        ("judged@10", None),
    ],
)
def test_trec_name(text: str, trec: str | None) -> None:
    assert parse_measure(text).trec_name == trec


def test_descriptions_exist() -> None:
    for m in _every_measure():
        assert m.description and isinstance(m.description, str)


# --------------------------------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("foo@10", ["unknown metric 'foo@10'", "ndcg", "precision"]),
        ("bleu", ["unknown metric 'bleu'"]),
        ("ndcg@0", ["'ndcg@0'", "k must be an int >= 1", "0"]),
        ("P@-5", ["k must be an int >= 1"]),
        ("ndcg@1.5", ["'ndcg@1.5'", "k must be an integer", "1.5"]),
        ("precision", ["'precision'", "needs a cut-off", "precision@10"]),
        ("P", ["needs a cut-off"]),
        ("success", ["needs a cut-off", "hit_rate@10"]),
        ("dcg", ["needs a cut-off"]),
        ("judged", ["needs a cut-off"]),
        ("r_precision@5", ["'r_precision@5'", "takes no cut-off"]),
        ("Rprec@10", ["takes no cut-off"]),
        ("num_ret@10", ["takes no cut-off"]),
        ("ndcg@10(rel=2)", ["'ndcg@10(rel=2)'", "no relevance threshold", "rel=2"]),
        ("ndcg_exp(rel=2)", ["no relevance threshold"]),
        ("dcg@5(rel=2)", ["no relevance threshold"]),
        ("judged@5(rel=2)", ["no relevance threshold"]),
        ("P@5(rel=0)", ["rel must be an int >= 1"]),
        ("P@5(rel=1.5)", ["rel must be an integer"]),
        ("P(rel=2)@5(rel=3)", ["rel= given twice"]),
        ("", ["cannot parse metric ''", "ndcg@10"]),
        ("@5", ["cannot parse"]),
        ("P.5,10", ["list form", "P.5 and P.10"]),
        ("ndcg@ten", ["cannot parse"]),
    ],
)
def test_parse_errors(text: str, fragments: list[str]) -> None:
    with pytest.raises(MetricError) as info:
        parse_measure(text)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"


def test_metric_error_is_an_input_error_and_value_error() -> None:
    with pytest.raises(InputError):
        parse_measure("nope")
    with pytest.raises(ValueError):
        parse_measure("nope")


@pytest.mark.parametrize("value", [5, None, ["P@5"], 2.5])
def test_parse_rejects_non_strings(value: object) -> None:
    with pytest.raises(MetricError, match="expected a metric name as str"):
        parse_measure(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"name": "bogus"}, "unknown measure 'bogus'"),
        ({"name": "precision"}, "needs a cut-off"),
        ({"name": "precision", "k": 0}, "k must be an int >= 1"),
        ({"name": "precision", "k": 1.5}, "k must be an int >= 1"),
        ({"name": "precision", "k": True}, "k must be an int >= 1"),
        ({"name": "precision", "k": "5"}, "k must be an int >= 1"),
        ({"name": "r_precision", "k": 5}, "takes no cut-off"),
        ({"name": "ndcg", "k": 10, "rel": 2}, "no relevance threshold"),
        ({"name": "mrr", "rel": 0}, "rel must be an int >= 1"),
        ({"name": "mrr", "rel": True}, "rel must be an int >= 1"),
    ],
)
def test_measure_constructor_errors(kwargs: dict, fragment: str) -> None:
    with pytest.raises(MetricError, match=fragment.replace("(", r"\(")):
        Measure(**kwargs)


def test_parse_measures_needs_one() -> None:
    with pytest.raises(MetricError, match="no metrics given"):
        parse_measures([])


def test_evaluate_reports_bad_metric_names() -> None:
    with pytest.raises(MetricError, match="unknown metric 'ndgc@10'"):
        evaluate({"q": {"a": 1}}, {"q": ["a"]}, ["ndgc@10"])
    with pytest.raises(MetricError, match=r"cannot parse metric 'ndcg10'; expected e\.g\. ndcg@10"):
        evaluate({"q": {"a": 1}}, {"q": ["a"]}, ["ndcg10"])
    with pytest.raises(MetricError, match="needs a cut-off"):
        evaluate({"q": {"a": 1}}, {"q": ["a"]}, "precision")


def test_evaluate_accepts_aliases_and_reports_canonical_names() -> None:
    ev = evaluate({"q": {"a": 1}}, {"q": ["b", "a"]}, ["nDCG@10", "P_1", "RR", "Success@2", "P(rel=2)@2"])
    assert ev.metric_names == ["ndcg@10", "precision@1", "mrr", "hit_rate@2", "precision@2(rel=2)"]
    assert ev.mean["mrr"] == 0.5
    assert ev.mean["hit_rate@2"] == 1.0
    assert ev.mean["precision@2(rel=2)"] == 0.0
    # lookups by any spelling
    assert float(ev["recip_rank"][0]) == 0.5
    assert float(ev["success_2"][0]) == 1.0


def test_measure_is_hashable_and_frozen() -> None:
    m = Measure("ndcg", 10)
    assert {m: 1}[parse_measure("nDCG@10")] == 1
    with pytest.raises(AttributeError):
        m.k = 5  # type: ignore[misc]


def test_measures_sort() -> None:
    assert sorted([Measure("ndcg", 10), Measure("ndcg")]) == [Measure("ndcg"), Measure("ndcg", 10)]


def test_numpy_integer_cutoff_is_accepted() -> None:
    import numpy as np

    m = Measure("precision", np.int64(5))  # type: ignore[arg-type]
    assert m == Measure("precision", 5) and type(m.k) is int


@pytest.mark.parametrize("name", ["ndcg_cut", "map_cut"])
def test_bare_trec_cut_names_need_a_cutoff(name: str) -> None:
    with pytest.raises(MetricError, match="give one cut-off"):
        parse_measure(name)
