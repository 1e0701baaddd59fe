"""Conformance with trec_eval's own regression outputs (../shared/data/trec_eval).

Each expected output was produced by trec_eval from the qrels/run/flags listed in
``shared/data/SOURCES.md``. For every measure rankbridge shares with trec_eval (found through
:attr:`Measure.trec_name`, for every cut-off K the file prints) we check every per-query line and the
``all`` line to the printed precision: our value formatted with ``%.4f`` must equal trec_eval's string.
trec_eval's ``all`` line is the mean over queries, except for the ``num_*`` counts, where it is the sum.

trec_eval compares scores as C floats (float32) before its doc-id tie-break, so every evaluation here passes
``single_precision=True``. These runs happen to have no pair of scores that differ as doubles but tie as
float32 (checked by :func:`test_runs_have_no_float32_only_ties`), so the double-precision default must
conform as well, and is checked too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from rankbridge import Run, evaluate
from rankbridge.errors import MetricError
from rankbridge.io.trec import read_qrels, read_run
from rankbridge.metrics.measures import MEASURES, Measure
from rankbridge.types import Qrels

# trec_eval measures we implement: every one must be mapped by Measure.trec_name, none may be skipped.
SHARED = re.compile(
    r"^(map|ndcg|recip_rank|Rprec|bpref|set_P|set_recall|set_F|num_ret|num_rel|num_rel_ret|(map_cut|P|recall|ndcg_cut|success)_\d+)$"
)


@dataclass(frozen=True)
class Case:
    id: str
    out: str  # expected output, relative to the trec_eval folder
    qrels: str
    run: str
    missing: str  # "skip" = trec_eval default, "zero" = trec_eval -c
    rel: int = 1  # trec_eval -l<rel>
    max_docs: int | None = None  # trec_eval -M<max_docs>
    ranked: bool = False  # feed the (truncated) run as a ranked list instead of scores

    def __str__(self) -> str:
        return self.id


CASES = [
    # -m all_trec -q
    Case("aq", "out.test.aq", "qrels.test", "results.test", "skip"),
    # -m all_trec (means only)
    Case("a", "out.test.a", "qrels.test", "results.test", "skip"),
    # defaults
    Case("default", "out.test", "qrels.test", "results.test", "skip"),
    # the same qrels with whole-line '#' comments
    Case("with-comments", "out.test", "qrels.test.with-comments", "results.test", "skip"),
    # graded qrels (-1..4), -l2: binary measures count label >= 2; nDCG ignores the threshold
    Case("aql", "out.test.aql", "qrels.rel_level", "results.test", "skip", rel=2),
    # -c: topic 302 is missing from results.trunc and scores 0; junk columns after the run tag
    Case("aqc", "out.test.aqc", "qrels.test", "results.trunc", "zero"),
    # -c -M100: only the top 100 of each ranking count
    Case("aqcM", "out.test.aqcM", "qrels.test", "results.trunc", "zero", max_docs=100),
    Case("aqcM-ranked", "out.test.aqcM", "qrels.test", "results.trunc", "zero", max_docs=100, ranked=True),
    # TREC RAG run: ids contain '#', 301 topics in the run, 31 judged
    Case("comment", "out.comment.test", "qrels.comment.test", "results.comment.test", "skip"),
    # the 9.0.8 outputs (what pytrec_eval bundles)
    Case("v908-aq", "v9.0.8/out.test.aq", "qrels.test", "results.test", "skip"),
    Case("v908-a", "v9.0.8/out.test.a", "qrels.test", "results.test", "skip"),
    Case("v908-default", "v9.0.8/out.test", "qrels.test", "results.test", "skip"),
    Case("v908-aql", "v9.0.8/out.test.aql", "qrels.rel_level", "results.test", "skip", rel=2),
    Case("v908-aqc", "v9.0.8/out.test.aqc", "qrels.test", "results.trunc", "zero"),
    Case("v908-aqcM", "v9.0.8/out.test.aqcM", "qrels.test", "results.trunc", "zero", max_docs=100),
]


# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------


def parse_trec_eval_output(path: Path) -> dict[tuple[str, str], str]:
    """``{(measure, query): printed value}`` from ``measure<TAB>query<TAB>value`` lines (names padded)."""
    out: dict[tuple[str, str], str] = {}
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split("\t")
        assert len(fields) == 3, f"{path.name}:{lineno}: expected 3 tab-separated fields, found {line!r}"
        measure, qid, value = (f.strip() for f in fields)
        key = (measure, qid)
        assert key not in out, f"{path.name}:{lineno}: {key} printed twice"
        out[key] = value
    return out


def shared_measures(trec_names: set[str], rel: int) -> dict[str, Measure]:
    """trec_eval name -> our Measure, derived from :attr:`Measure.trec_name` over the registry.

    Every cut-off K printed in the file is tried for every registry measure; with ``rel`` > 1 the binary
    measures get ``Measure(name, k, rel=rel)`` (trec_eval ``-l``) while nDCG keeps its graded gains.
    """
    ks = sorted({int(m) for name in trec_names for m in re.findall(r"_(\d+)$", name)})
    mapping: dict[str, Measure] = {}
    for name, spec in MEASURES.items():
        for k in [None, *ks]:
            try:
                m = Measure(name, k)
            except MetricError:
                continue
            trec = m.trec_name
            if trec is None or trec not in trec_names:
                continue
            ours = Measure(name, k, rel=rel) if rel != 1 and spec.takes_rel else m
            assert trec not in mapping, f"two measures claim trec_eval's {trec}: {mapping[trec]} and {ours}"
            mapping[trec] = ours
    return mapping


@cache
def _load_qrels(path: Path) -> Qrels:
    return read_qrels(path)


@cache
def _load_run(path: Path) -> Run:
    return read_run(path)


def _truncated(run: Run, max_docs: int, ranked: bool) -> Run:
    """The run cut to its top ``max_docs`` (trec_eval -M), as scores or as a ranked hit list."""
    if ranked:
        return Run.from_ranked({q: run.hits(q)[:max_docs] for q in run}, name=run.name)
    return Run.from_scores({q: {h.doc_id: h.score for h in run.hits(q)[:max_docs]} for q in run}, name=run.name)


def _format(measure: Measure, value: float) -> str:
    if measure.name.startswith("num_"):
        assert float(value).is_integer(), f"{measure}: a count must be an integer, got {value!r}"
        return str(int(value))
    return f"{value:.4f}"


def _evaluate_case(data: Path, case: Case, single_precision: bool):
    expected = parse_trec_eval_output(data / case.out)
    trec_names = {m for m, _ in expected}
    mapping = shared_measures(trec_names, case.rel)
    qrels = _load_qrels(data / case.qrels)
    run = _load_run(data / case.run)
    if case.max_docs is not None:
        run = _truncated(run, case.max_docs, case.ranked)
    ev = evaluate(qrels, run, list(mapping.values()), missing=case.missing, single_precision=single_precision)
    return expected, mapping, ev


# --------------------------------------------------------------------------------------------------
# tests
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("single_precision", [True, False], ids=["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_matches_trec_eval_output(trec_eval_data: Path, case: Case, single_precision: bool) -> None:
    expected, mapping, ev = _evaluate_case(trec_eval_data, case, single_precision)

    # Every measure we share with trec_eval that the file prints is mapped (none silently dropped).
    printed_shared = {m for m, _ in expected if SHARED.match(m)}
    assert printed_shared, f"{case.out}: no shared measure found; is the file parsed right?"
    assert set(mapping) == printed_shared

    # Per-query lines: the queries trec_eval printed must all be evaluated by us.
    printed_queries = {q for _, q in expected if q != "all"}
    assert printed_queries <= set(ev.query_ids), f"trec_eval printed {printed_queries - set(ev.query_ids)}"
    if ("num_q", "all") in expected:
        assert ev.num_queries == int(expected[("num_q", "all")])

    per_query = ev.per_query
    mismatches: list[str] = []
    checked = 0
    for trec, measure in mapping.items():
        values = ev[measure]
        for qid in ev.query_ids:
            want = expected.get((trec, qid))
            if want is None:
                continue
            checked += 1
            got = _format(measure, per_query[str(measure)][qid])
            if got != want:
                mismatches.append(
                    f"{trec} ({measure}) query {qid}: ours {per_query[str(measure)][qid]!r}, trec_eval {want}"
                )
        total = float(values.sum()) if measure.name.startswith("num_") else float(values.mean())
        got = _format(measure, total)
        checked += 1
        if got != expected[(trec, "all")]:
            mismatches.append(f"{trec} ({measure}) all: ours {total!r}, trec_eval {expected[(trec, 'all')]}")
    assert not mismatches, f"{case.out}: {len(mismatches)} of {checked} values differ:\n" + "\n".join(mismatches)
    # every per-query line of every shared measure, plus the all lines, was compared
    expected_checked = sum(1 for (m, _) in expected if m in mapping)
    assert checked == expected_checked


def test_all_trec_covers_every_shared_measure(trec_eval_data: Path) -> None:
    """out.test.aq prints every measure we share; pin the exact list (50 names) so none is lost."""
    expected = parse_trec_eval_output(trec_eval_data / "out.test.aq")
    mapping = shared_measures({m for m, _ in expected}, rel=1)
    ks = [5, 10, 15, 20, 30, 100, 200, 500, 1000]
    want = {"map", "ndcg", "recip_rank", "Rprec", "bpref", "set_P", "set_recall", "set_F"}
    want |= {"num_ret", "num_rel", "num_rel_ret"}
    want |= {f"{p}_{k}" for p in ("P", "recall", "map_cut", "ndcg_cut") for k in ks}
    want |= {"success_1", "success_5", "success_10"}
    assert set(mapping) == want
    spot = {"recip_rank": "mrr", "success_5": "hit_rate@5", "Rprec": "r_precision", "map_cut_10": "map@10"}
    assert {trec: str(mapping[trec]) for trec in spot} == spot


def test_rel_level_mapping_thresholds_binary_measures_only(trec_eval_data: Path) -> None:
    expected = parse_trec_eval_output(trec_eval_data / "out.test.aql")
    mapping = shared_measures({m for m, _ in expected}, rel=2)
    assert mapping["P_5"] == Measure("precision", 5, rel=2)
    assert mapping["recip_rank"] == Measure("mrr", None, rel=2)
    assert mapping["num_rel"] == Measure("num_rel", None, rel=2)
    assert mapping["ndcg_cut_10"] == Measure("ndcg", 10)  # nDCG ignores -l
    assert mapping["ndcg"] == Measure("ndcg")


def test_missing_topic_bookkeeping(trec_eval_data: Path) -> None:
    """results.trunc lacks topic 302: -c scores it 0 and counts it; the default leaves it out."""
    qrels = _load_qrels(trec_eval_data / "qrels.test")
    run = _load_run(trec_eval_data / "results.trunc")
    zero = evaluate(qrels, run, ["map", "num_rel"], missing="zero", single_precision=True)
    assert zero.query_ids == ("301", "302", "303")
    assert zero.missing == ("302",)
    assert zero.per_query["map"]["302"] == 0.0
    assert zero.per_query["num_rel"]["302"] == 77.0  # still counted: trec_eval prints num_rel 302 77
    skip = evaluate(qrels, run, ["map"], missing="skip", single_precision=True)
    assert skip.query_ids == ("301", "303")
    assert skip.missing == ("302",)
    # the -c mean is the skip mean diluted by the zero
    assert zero.mean["map"] == pytest.approx(skip.mean["map"] * 2 / 3, abs=1e-15)


def test_comment_ids_and_unjudged_topics(trec_eval_data: Path) -> None:
    """The RAG-track files: '#' inside an id is part of it; 270 run topics have no qrels."""
    qrels = _load_qrels(trec_eval_data / "qrels.comment.test")
    run = _load_run(trec_eval_data / "results.comment.test")
    assert len(qrels) == 31
    assert len(run) == 301
    assert qrels["2024-127266"]["msmarco_v2.1_doc_00_880019750#4_1633802806"] == 1
    assert "msmarco_v2.1_doc_50_2286987788#13_3087841662" in run["2024-224960"]
    ev = evaluate(qrels, run, ["P@5"], missing="skip", single_precision=True)
    assert ev.num_queries == 31
    assert len(ev.unjudged) == 270
    assert not set(ev.unjudged) & set(ev.query_ids)


def test_qrels_with_comments_equal_plain(trec_eval_data: Path) -> None:
    """Whole-line comments are dropped; the one '#' inside a docno (CR#93E-1860) is kept in the id."""
    commented = _load_qrels(trec_eval_data / "qrels.test.with-comments").to_dict()
    plain = _load_qrels(trec_eval_data / "qrels.test").to_dict()
    assert commented["301"].pop("CR#93E-1860") == 0
    assert plain["301"].pop("CR93E-1860") == 0
    assert commented == plain


@pytest.mark.parametrize("name", ["results.test", "results.trunc", "results.comment.test"])
def test_runs_have_no_float32_only_ties(trec_eval_data: Path, name: str) -> None:
    """Why the float64 default also conforms on these files: no two scores differ only beyond float32."""
    run = _load_run(trec_eval_data / name)
    for qid in run:
        scores = np.fromiter(run[qid].values(), dtype=np.float64)
        assert len(np.unique(scores)) == len(np.unique(scores.astype(np.float32))), qid
