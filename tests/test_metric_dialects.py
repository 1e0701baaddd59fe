"""Metric names from every dialect (trec_eval, pytrec_eval, ranx, ir_measures, LlamaIndex) and their numbers.

Each spelling parses to one rankbridge measure, whose canonical string parses back to it; and where the
other tool is installed, the measure it names is checked to give *that tool's* numbers (ranx and
ir_measures are run here, on seeded random qrels and runs whose scores are distinct multiples of 1/8, so
that no tool's tie-break matters). ``rankbridge evaluate --format trec`` is checked line by line against
trec_eval's own expected outputs, threshold (``-l2``) and count formatting included.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest

from rankbridge import evaluate
from rankbridge.cli import main
from rankbridge.errors import MetricError
from rankbridge.metrics.measures import MEASURES, Measure, parse_measure

# spelling -> canonical string; every dialect's name for every measure we compute
DIALECTS: dict[str, dict[str, str]] = {
    "trec_eval": {
        "P.5": "precision@5",
        "P_5": "precision@5",
        "ndcg_cut.10": "ndcg@10",
        "ndcg_cut_10": "ndcg@10",
        "ndcg": "ndcg",
        "recall.100": "recall@100",
        "recall_100": "recall@100",
        "recip_rank": "mrr",
        "success.1": "hit_rate@1",
        "success_1": "hit_rate@1",
        "map": "map",
        "map_cut.10": "map@10",
        "map_cut_10": "map@10",
        "Rprec": "r_precision",
        "bpref": "bpref",
        "set_P": "set_precision",
        "set_recall": "set_recall",
        "set_F": "set_f1",
        "num_ret": "num_ret",
        "num_rel": "num_rel",
        "num_rel_ret": "num_rel_ret",
    },
    "ranx": {
        "hits@5": "hits@5",
        "hit_rate@5": "hit_rate@5",
        "precision@5": "precision@5",
        "recall@5": "recall@5",
        "f1@5": "f1@5",
        "mrr": "mrr",
        "mrr@5": "mrr@5",
        "map": "map",
        "map@5": "map@5",
        "ndcg@5": "ndcg@5",
        "ndcg_burges@5": "ndcg_exp@5",
        "dcg@5": "dcg@5",
        "dcg_burges@5": "dcg_exp@5",
        "r-precision": "r_precision",
        "bpref": "bpref",
    },
    "ir_measures": {
        "nDCG@10": "ndcg@10",
        'nDCG(dcg="exp-log2")@10': "ndcg_exp@10",
        "nDCG(dcg='exp-log2')@10": "ndcg_exp@10",
        "P@5": "precision@5",
        "P(rel=2)@5": "precision@5(rel=2)",
        "R@100": "recall@100",
        "AP": "map",
        "AP@100": "map@100",
        "RR": "mrr",
        "RR@10": "mrr@10",
        "RR(rel=2)@10": "mrr@10(rel=2)",
        "Success@10": "hit_rate@10",
        "NumRet": "num_ret",
        "NumRel": "num_rel",
        "NumRelRet": "num_rel_ret",
        "NumRet(rel=1)": "num_rel_ret",
        "NumRet(rel=2)": "num_rel_ret(rel=2)",
        "SetP": "set_precision",
        "SetR": "set_recall",
        "SetF": "set_f1",
        "Judged@10": "judged@10",
        "Rprec": "r_precision",
        "Bpref": "bpref",
    },
    "llamaindex": {
        "hit_rate@10": "hit_rate@10",
        "mrr": "mrr",
        "precision@10": "precision@10",
        "recall@10": "recall@10",
        "ap": "map",
        "ndcg@10": "ndcg@10",
    },
}
SPELLINGS = [(dialect, text, canonical) for dialect, names in DIALECTS.items() for text, canonical in names.items()]


@pytest.mark.parametrize(("dialect", "text", "canonical"), SPELLINGS, ids=[f"{d}:{t}" for d, t, _ in SPELLINGS])
def test_every_dialect_spelling_round_trips(dialect: str, text: str, canonical: str) -> None:
    measure = parse_measure(text)
    assert str(measure) == canonical
    assert parse_measure(str(measure)) == measure
    assert parse_measure(text.upper()) == measure or dialect == "ir_measures"  # ir_measures' quoted values
    if measure.trec_name is not None:  # trec_eval's name for it parses back to it too
        assert parse_measure(measure.trec_name) == measure


def test_every_measure_has_a_dialect_spelling_or_is_ours() -> None:
    named = {parse_measure(t).name for _, t, _ in SPELLINGS}
    assert set(MEASURES) - named == {"judged"} - named  # judged@k is ir_measures' Judged@k
    assert named <= set(MEASURES)


def test_hits_is_a_count_not_hit_rate() -> None:
    ev = evaluate(
        {"q": {"a": 1, "b": 1, "c": 2}}, {"q": ["a", "x", "b", "c"]}, ["hits@3", "hit_rate@3", "hits@3(rel=2)"]
    )
    assert ev.per_query["hits@3"]["q"] == 2.0
    assert ev.per_query["hit_rate@3"]["q"] == 1.0
    assert ev.per_query["hits@3(rel=2)"]["q"] == 0.0


def test_bpref_by_hand() -> None:
    # judged: a, b relevant; n1, n2 judged non-relevant; u unjudged (left out); neg has a negative label
    # ranking n1 a u neg n2 b: a has 1 non-relevant above (1 - 1/2), b has 2 (1 - 2/2) -> (1/2 + 0) / 2
    qrels = {"q": {"a": 1, "b": 1, "n1": 0, "n2": 0, "neg": -1}}
    ev = evaluate(qrels, {"q": ["n1", "a", "u", "neg", "n2", "b"]}, ["bpref"])
    assert ev.per_query["bpref"]["q"] == pytest.approx(0.25, abs=1e-15)


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("ERR@10", ["does not compute expected reciprocal rank", "mrr@k", "ndcg_exp@k"]),
        ("RBP(p=0.8)", ["does not compute rank-biased precision", "precision@k"]),
        ("nERR@10", ["does not compute"]),
        ("infAP", ["does not compute inferred AP", "map"]),
        ("ndgc@10", ["unknown metric 'ndgc@10'", "did you mean ndcg"]),
        ("recal@10", ["did you mean recall"]),
        ("hits", ["needs a cut-off", "num_rel_ret"]),
        ("f1", ["needs a cut-off", "set_f1"]),
        ("P.5,10", ["list form"]),
        ('nDCG(dcg="exp")@10', ["dcg="]),
        ("P(judged_only=True)@5", ["unknown parameter judged_only"]),
        ("SetF(beta=2)", ["only F1"]),
        ("ndcg(rel=2)@10", ["no relevance threshold"]),
    ],
)
def test_unsupported_names_say_what_we_compute_instead(text: str, fragments: list[str]) -> None:
    with pytest.raises(MetricError) as info:
        parse_measure(text)
    for fragment in fragments:
        assert fragment in str(info.value), f"{fragment!r} not in {info.value}"


def test_measure_facts_live_on_the_definition() -> None:
    counts = {name for name in MEASURES if Measure(name, 5 if MEASURES[name].k == "required" else None).is_count}
    assert counts == {"hits", "num_ret", "num_rel", "num_rel_ret"}
    assert [m for m in ("hits@5", "num_ret", "num_rel", "num_rel_ret") if parse_measure(m).summed] == [
        "num_ret",
        "num_rel",
        "num_rel_ret",
    ]
    assert parse_measure("num_rel(rel=2)").aggregate(np.array([12.0, 9.0, 8.0])) == 29.0
    assert parse_measure("num_rel(rel=2)").format_value(29.0, aggregate=True) == "29"
    assert parse_measure("hits@5").format_value(7 / 3, aggregate=True) == "2.3333"
    assert parse_measure("P@5").format_value(1.0) == "1.0000"


# --------------------------------------------------------------------------------------------------
# the numbers, against the reference tools
# --------------------------------------------------------------------------------------------------


def _random_case(seed: int, n_queries: int = 40) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """Qrels (labels 0..3, at least one relevant) and runs of 1..15 docs with distinct float32-exact scores."""
    rng = np.random.default_rng(seed)
    pool = [f"d{i}" for i in range(25)]
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for i in range(n_queries):
        qid = f"q{i}"
        judged = rng.choice(pool, size=int(rng.integers(1, 10)), replace=False)
        labels = rng.integers(0, 4, size=len(judged))
        labels[0] = max(labels[0], 1)
        qrels[qid] = {str(d): int(v) for d, v in zip(judged, labels, strict=True)}
        docs = rng.choice(pool, size=int(rng.integers(1, 16)), replace=False)
        scores = rng.permutation(200)[: len(docs)] / 8
        run[qid] = {str(d): float(s) for d, s in zip(docs, scores, strict=True)}
    return qrels, run


RANX_NAMES = {
    **{f"hits@{k}": f"hits@{k}" for k in (1, 3, 5, 10)},
    **{f"f1@{k}": f"f1@{k}" for k in (1, 3, 5, 10)},
    **{f"dcg_burges@{k}": f"dcg_exp@{k}" for k in (1, 3, 5, 10)},
    **{f"ndcg_burges@{k}": f"ndcg_exp@{k}" for k in (1, 3, 5, 10)},
    "hit_rate@5": "hit_rate@5",
    "mrr@5": "mrr@5",
    "map@5": "map@5",
    "map@10": "map@10",
    "precision@5": "precision@5",
    "recall@5": "recall@5",
    "r-precision": "r_precision",
    "hits": "num_rel_ret",  # ranx with no cut-off: the whole list
    "f1": "set_f1",
}


@pytest.mark.parametrize("seed", [0, 1])
def test_ranx_names_give_ranx_numbers(seed: int) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba's JIT warnings while compiling ranx kernels
        import ranx

        qrels, run = _random_case(seed)
        ranx_run = ranx.Run(run)
        ranx.evaluate(ranx.Qrels(qrels), ranx_run, list(RANX_NAMES), return_mean=False, threads=1)
    ours = evaluate(qrels, run, list(RANX_NAMES.values())).per_query
    checked = 0
    for ranx_name, our_name in RANX_NAMES.items():
        if "@" in ranx_name or ranx_name == "r-precision":
            assert str(parse_measure(ranx_name)) == our_name
        for qid, want in ranx_run.scores[ranx_name].items():
            got = ours[our_name][qid]
            assert got == pytest.approx(float(want), abs=1e-12), f"{our_name} (ranx {ranx_name}) on {qid}"
            checked += 1
    assert checked == len(RANX_NAMES) * len(qrels)
    # the hits counts are not all 0/1: the check would catch hits@k read as hit rate
    assert max(ours["hits@10"].values()) >= 2


# nDCG(dcg="exp-log2")@10 is left out: ir_measures computes it with gdeval (a perl script) or ranx
# (ndcg_burges, which fails under pandas 3 through ir_measures); ranx's ndcg_burges is checked above.
IR_MEASURES_NAMES = [
    "nDCG@10",
    "P@5",
    "P(rel=2)@5",
    "R@100",
    "R(rel=2)@10",
    "AP",
    "AP@100",
    "RR",
    "RR@10",
    "RR(rel=2)",
    "Success@10",
    "NumRet",
    "NumRel",
    "NumRelRet",
    "NumRet(rel=2)",
    "SetP",
    "SetR",
    "SetF",
    "SetP(rel=2)",
    "Rprec",
    "Bpref",
    "Bpref(rel=2)",
]


@pytest.mark.parametrize("seed", [0, 1])
def test_ir_measures_names_give_ir_measures_numbers(seed: int) -> None:
    ir_measures = pytest.importorskip("ir_measures")
    qrels, run = _random_case(seed)
    theirs: dict[tuple[str, str], float] = {}
    for name in IR_MEASURES_NAMES:
        # one measure at a time, so each is computed by the provider ir_measures picks for it
        for metric in ir_measures.iter_calc([ir_measures.parse_measure(name)], qrels, run):
            theirs[(name, metric.query_id)] = float(metric.value)
    ours = evaluate(qrels, run, IR_MEASURES_NAMES).per_query
    for (name, qid), want in theirs.items():
        got = ours[str(parse_measure(name))][qid]
        assert got == pytest.approx(want, abs=1e-9), f"{name} on {qid}: ours {got!r}, ir_measures {want!r}"
    assert len(theirs) == len(IR_MEASURES_NAMES) * len(qrels)


def test_judged_divides_by_k_where_ir_measures_divides_by_the_list_length() -> None:
    """docs/metrics.md: judged@k is out of k; ir_measures' Judged@k is out of min(k, |L|)."""
    ir_measures = pytest.importorskip("ir_measures")
    qrels, run = _random_case(3)
    theirs = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.Judged @ 10], qrels, run)}
    ours = evaluate(qrels, run, ["Judged@10"]).per_query["judged@10"]
    shorter = 0
    for qid, docs in run.items():
        scale = min(10, len(docs)) / 10
        assert ours[qid] == pytest.approx(theirs[qid] * scale, abs=1e-12), qid
        shorter += len(docs) < 10
    assert shorter and shorter < len(run)  # both cases occur


# --------------------------------------------------------------------------------------------------
# rankbridge evaluate --format trec against trec_eval's own expected outputs
# --------------------------------------------------------------------------------------------------

# (expected output, qrels, run, missing policy, -l level)
TREC_CASES = [
    ("out.test.aq", "qrels.test", "results.test", "skip", 1),
    ("out.test.aql", "qrels.rel_level", "results.test", "skip", 2),
    ("out.test.aqc", "qrels.test", "results.trunc", "zero", 1),
]


def _read_trec_output(text: str) -> dict[tuple[str, str], str]:
    out = {}
    for line in text.splitlines():
        measure, qid, value = (f.strip() for f in line.split("\t"))
        out[(measure, qid)] = value
    return out


@pytest.mark.parametrize(("expected", "qrels", "run", "missing", "level"), TREC_CASES, ids=[c[0] for c in TREC_CASES])
def test_cli_trec_format_prints_what_trec_eval_prints(
    trec_eval_data: Path,
    capsys: pytest.CaptureFixture[str],
    expected: str,
    qrels: str,
    run: str,
    missing: str,
    level: int,
) -> None:
    want = _read_trec_output((trec_eval_data / expected).read_text())
    names = sorted({m for m, _ in want})
    # every trec_eval measure rankbridge computes, spelled as trec_eval spells it, at the file's -l level
    metrics = []
    for name in names:
        try:
            measure = parse_measure(name)
        except MetricError:
            continue
        if level != 1 and MEASURES[measure.name].takes_rel:
            measure = Measure(measure.name, measure.k, level)
        metrics.append(str(measure))
    assert len(metrics) >= 50
    argv = ["evaluate", str(trec_eval_data / qrels), str(trec_eval_data / run), "--format", "trec", "--per-query"]
    argv += ["--missing", missing, "--single-precision"]
    for metric in metrics:
        argv += ["-m", metric]
    assert main(argv) == 0
    got = _read_trec_output(capsys.readouterr().out)
    assert {m for m, _ in got} <= set(names)  # trec_eval's own names, nothing else
    differ = [f"{key}: ours {value}, trec_eval {want.get(key)}" for key, value in got.items() if want.get(key) != value]
    assert not differ, f"{len(differ)} of {len(got)} lines differ:\n" + "\n".join(differ[:20])
    assert len(got) >= 50 * 4
    counts = [key for key in got if key[0] in ("num_rel", "num_rel_ret", "num_ret")]
    assert counts and all(re.fullmatch(r"\d+", got[key]) for key in counts)


def test_cli_trec_format_keeps_canonical_names_when_levels_differ(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q 0 a 2\nq 0 b 1\n")
    run = tmp_path / "run.txt"
    run.write_text("q Q0 b 1 2.0 r\nq Q0 a 2 1.0 r\n")
    argv = ["evaluate", str(qrels), str(run), "--format", "trec", "-m", "P@1", "-m", "P@1(rel=2)", "-m", "mrr@5"]
    assert main(argv) == 0
    got = _read_trec_output(capsys.readouterr().out)
    # two -l levels cannot come from one trec_eval run: both keep our names; mrr@5 has no trec_eval name
    assert got == {
        ("precision@1", "all"): "1.0000",
        ("precision@1(rel=2)", "all"): "0.0000",
        ("mrr@5", "all"): "1.0000",
    }


# --------------------------------------------------------------------------------------------------
# DataFrames out (issue 19 point 4): Evaluation.to_pandas, Comparison.to_pandas
# --------------------------------------------------------------------------------------------------


def _evaluation():
    qrels = {"q1": {"a": 1}, "q2": {"b": 2}, "q3": {"c": 1}}
    return evaluate(qrels, {"q1": ["x", "a"], "q2": ["b"]}, ["mrr", "P@1", "num_rel_ret"])


def test_evaluation_to_pandas_long_and_wide() -> None:
    pytest.importorskip("pandas")
    ev = _evaluation()
    long = ev.to_pandas()
    assert list(long.columns) == ["query_id", "metric", "value"]
    assert len(long) == 3 * 3
    got = {(r.query_id, r.metric): r.value for r in long.itertuples()}
    assert got == {(q, m): v for m, per in ev.per_query.items() for q, v in per.items()}
    wide = ev.to_pandas("wide")
    assert list(wide.columns) == ["query_id", "mrr", "precision@1", "num_rel_ret"]
    assert wide["query_id"].tolist() == ["q1", "q2", "q3"]
    assert wide["mrr"].tolist() == [0.5, 1.0, 0.0]
    # the long form pivots into the wide one
    pivot = long.pivot(index="query_id", columns="metric", values="value")
    assert pivot.loc["q2", "precision@1"] == wide.set_index("query_id").loc["q2", "precision@1"] == 1.0
    with pytest.raises(ValueError, match="form must be 'long' or 'wide'"):
        ev.to_pandas("tall")  # type: ignore[arg-type]


def test_comparison_to_pandas_one_row_per_run_and_metric() -> None:
    pytest.importorskip("pandas")
    from rankbridge import compare

    qrels = {f"q{i}": {"a": 1} for i in range(8)}
    runs = {
        "bm25": {f"q{i}": (["a"] if i < 3 else ["x", "a"]) for i in range(8)},
        "dense": {f"q{i}": (["a"] if i < 6 else ["x", "y", "a"]) for i in range(8)},
    }
    cmp = compare(runs, qrels, ["mrr", "P@1"], baseline="bm25", n_resamples=500)
    df = cmp.to_pandas()
    assert len(df) == 2 * 2
    assert df[["run", "metric"]].values.tolist() == [
        ["bm25", "mrr"],
        ["bm25", "precision@1"],
        ["dense", "mrr"],
        ["dense", "precision@1"],
    ]
    assert df["baseline"].tolist() == [True, True, False, False]
    row = df[(df.run == "dense") & (df.metric == "mrr")].iloc[0]
    pc = cmp.paired["mrr"]["dense"]
    assert row["mean"] == cmp.means["mrr"]["dense"].estimate
    assert (row.ci_low, row.ci_high) == (cmp.means["mrr"]["dense"].low, cmp.means["mrr"]["dense"].high)
    assert row.delta == pc.difference.estimate == pytest.approx((6 + 2 / 3) / 8 - (3 + 5 / 2) / 8)
    assert (row.pvalue, row.pvalue_adjusted, row.effect_size) == (pc.pvalue, pc.pvalue_adjusted, pc.effect_size)
    assert (row.wins, row.ties, row.losses) == (pc.wins, pc.ties, pc.losses) == (3, 3, 2)
    base = df[df.baseline].iloc[0]
    assert np.isnan(base.delta) and base.wins is pd_na()


def pd_na():
    import pandas as pd

    return pd.NA


def test_to_pandas_without_pandas_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    from rankbridge import compare
    from rankbridge.errors import MissingExtraError

    real_import = builtins.__import__

    def no_pandas(name: str, *args, **kwargs):
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("No module named 'pandas'")
        return real_import(name, *args, **kwargs)

    ev = _evaluation()
    cmp = compare({"a": ev, "b": ev}, None, ["mrr"], n_resamples=100)
    monkeypatch.setattr(builtins, "__import__", no_pandas)
    for call in (ev.to_pandas, cmp.to_pandas):
        with pytest.raises(MissingExtraError, match="pip install pandas"):
            call()
