"""A Run through a table and back: exact for to_pandas' frame, loud when a table's rank column disagrees.

A ranked run's scores need not follow its order (a reranker that kept the first stage's scores); tables are
ranked by score (trec_eval's convention) unless a rank column is chosen. ``Run.to_pandas()`` marks its
frame so that it reads back as the run; any other table whose unchosen ``rank`` column orders a query
otherwise than its scores gets a :class:`RankColumnWarning`.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import rankbridge as rb
from rankbridge import Hit, Run
from rankbridge.errors import RankColumnWarning
from rankbridge.io import read_run_parquet, run_from_table

QRELS = {"q1": {"a": 1, "c": 2}, "q2": {"y": 1}, "q3": {"m": 1}, "10": {"7": 1}}


def _reranked() -> Run:
    """Ranked lists whose scores disagree with their order: a missing score, ties, int-like ids."""
    return Run.from_ranked(
        {
            "q1": [Hit("a", 0.1), Hit("b", 0.9), Hit("c", None), Hit("d", 0.5)],
            "q2": [Hit("x", 0.5), Hit("y", 0.5)],  # a tie trec_eval breaks the other way (y > x)
            "q3": [Hit("m", 3.0), Hit("n", 2.0)],  # this one agrees
            "10": [Hit("7", None), Hit("12", None)],  # no scores at all
        },
        name="reranked",
    )


def _lists(run: Run) -> dict[str, list[tuple[str, float | None]]]:
    return {q: [(h.doc_id, h.score) for h in run.hits(q)] for q in run}


def _assert_same(got: Run, want: Run) -> None:
    assert list(got) == list(want)
    assert _lists(got) == _lists(want)  # rankings and scores, a missing score as None


def test_to_pandas_reads_back_as_the_run_in_pandas() -> None:
    run = _reranked()
    df = run.to_pandas()
    assert np.isnan(df["score"]).sum() == 3 and df.attrs["rankbridge"]["order"] == "rank"
    _assert_same(Run.from_pandas(df), run)  # warnings are errors: none was raised
    _assert_same(run_from_table(df), run)
    _assert_same(Run.from_pandas(df.copy()), run)  # pandas keeps the mark through a copy
    want = rb.evaluate(QRELS, run, ["ndcg@10", "mrr"])
    got = rb.evaluate(QRELS, df, ["ndcg@10", "mrr"])
    assert got.per_query == want.per_query
    scored = df.assign(score=df["score"].fillna(0.0))  # re-scored: the mark no longer holds, scores rank
    with pytest.warns(RankColumnWarning):
        by_score = rb.evaluate(QRELS, scored, ["ndcg@10", "mrr"])
    assert by_score.per_query != want.per_query  # what the reading by score would have given


def test_to_pandas_reads_back_as_the_run_through_parquet(tmp_path: Path) -> None:
    run = _reranked()
    path = tmp_path / "run.parquet"
    run.to_pandas().to_parquet(path)  # pandas writes df.attrs into the file's metadata
    _assert_same(read_run_parquet(path), run)
    _assert_same(run_from_table(pq.read_table(path)), run)
    _assert_same(Run.from_pandas(pd.read_parquet(path)), run)


def test_an_arrow_table_without_the_mark_is_ranked_by_score_and_warned_about() -> None:
    run = _reranked()
    table = pa.Table.from_pandas(run.to_pandas())  # pyarrow drops df.attrs
    with pytest.raises(rb.InputError, match=r"found NaN .*the table has a 'rank' column: .*rank_column='rank'"):
        run_from_table(table)  # missing scores cannot rank: refused, as before
    _assert_same(run_from_table(table, rank_column="rank"), run)
    scored = Run.from_ranked({q: [h for h in run.hits(q) if h.score is not None] for q in ("q1", "q2", "q3")})
    table = pa.Table.from_pandas(scored.to_pandas())
    with pytest.warns(RankColumnWarning) as caught:
        by_score = run_from_table(table)
    message = str(caught[0].message)
    assert "orders 2 of 3 queries otherwise (the first: 'q1')" in message  # q1 and q2; q3 agrees
    assert "rank_column='rank'" in message and "evaluate the Run itself" in message
    assert (by_score.ranking("q1"), by_score.ranking("q2")) == (["b", "d", "a"], ["y", "x"])
    _assert_same(run_from_table(table, rank_column="rank"), scored)


def test_the_scores_of_a_table_without_the_mark_rank_it_and_a_warning_names_the_fix() -> None:
    run = Run.from_ranked(
        {"q1": [Hit("a", 0.1), Hit("b", 0.9)], "q2": [Hit("x", 0.5), Hit("y", 0.5)], "q3": [Hit("m", 1.0)]}
    )
    df = run.to_pandas()
    df = df[df["query_id"] != "q3"]  # a filtered frame loses the mark (its columns changed)
    assert "rankbridge" in df.attrs
    fixes = {"Run.from_pandas": "rank_col='rank'", "run table": "rank_column='rank'"}
    for reader, feature in ((Run.from_pandas, "Run.from_pandas"), (run_from_table, "run table")):
        with pytest.warns(RankColumnWarning, match=r"orders 2 of 2 queries otherwise \(the first: 'q1'\)") as got:
            back = reader(df)
        assert str(got[0].message).startswith(f"{feature}: the run is ranked by the 'score' column")
        assert fixes[feature] in str(got[0].message) and got[0].filename == __file__
        assert (back.ranking("q1"), back.ranking("q2")) == (["b", "a"], ["y", "x"])
    with pytest.warns(RankColumnWarning, match=r"rank_column='rank'"):
        ev = rb.evaluate({"q1": {"a": 1}}, df, ["mrr"])
    assert ev.per_query["mrr"]["q1"] == 0.5
    assert Run.from_pandas(df, rank_col="rank").ranking("q1") == ["a", "b"]  # chosen: quiet


def test_a_rescored_frame_is_ranked_by_its_new_scores() -> None:
    df = _reranked().to_pandas()
    df["score"] = np.arange(len(df), 0, -1, dtype=float)  # a new reranker's scores, in row order: agree
    back = Run.from_pandas(df)
    assert back.ranking("q1") == ["a", "b", "c", "d"] and back.hits("q1")[0].score == float(len(df))
    df["score"] = np.arange(len(df), dtype=float)  # every list reversed
    with pytest.warns(RankColumnWarning, match=r"orders 4 of 4 queries otherwise \(the first: 'q1'\)"):
        assert run_from_table(df).ranking("q1") == ["d", "c", "b", "a"]


def test_quiet_when_the_ranks_agree_or_there_is_no_rank_column() -> None:
    scored = Run.from_scores({"q1": {"a": 0.2, "b": 0.9, "c": 0.9}, "q2": {"x": 1.0}})
    df = scored.to_pandas()
    assert "rankbridge" not in df.attrs  # a scored run's rank column is its scores' order (ties by doc id)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for table in (df, pa.Table.from_pandas(df), df.drop(columns="rank"), df.sample(frac=1, random_state=3)):
            got = run_from_table(table)
            assert got.ranking("q1") == ["c", "b", "a"]
        assert Run.from_pandas(df.sample(frac=1, random_state=3)).to_scores() == scored.to_scores()


def test_a_tie_ranked_against_trec_evals_rule_is_a_disagreement() -> None:
    agree = pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["b", "a"], "score": [1.0, 1.0], "rank": [1, 2]})
    run_from_table(agree)  # trec_eval puts "b" first: quiet
    with pytest.warns(RankColumnWarning, match="orders 1 of 1 queries"):
        run_from_table(agree.assign(rank=[2, 1]))
    ints = pd.DataFrame({"query_id": [5, 5], "doc_id": [9, 10], "score": [1.0, 1.0], "rank": [1, 2]})
    run_from_table(ints)  # ids compare as str: "9" > "10"
    with pytest.warns(RankColumnWarning, match=r"the first: '5'"):
        Run.from_pandas(ints.assign(rank=[2, 1]))


def test_a_rank_column_that_is_no_ranking_is_not_compared() -> None:
    twice = pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "score": [1.0, 2.0], "rank": [1, 1]})
    missing = twice.assign(rank=[1.0, np.nan])
    for table in (twice, missing):
        assert run_from_table(table).ranking("q") == ["b", "a"]
        assert Run.from_pandas(table).ranking("q") == ["b", "a"]


@pytest.mark.parametrize("seed", range(6))
def test_the_count_and_first_query_match_a_row_by_row_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_q = 40
    sizes = rng.integers(1, 6, n_q)
    qids = np.repeat([f"q{i}" for i in range(n_q)], sizes)
    docs = np.concatenate([rng.permutation(20)[:n] for n in sizes])  # distinct within a query
    df = pd.DataFrame(
        {"query_id": qids, "doc_id": [f"d{d}" for d in docs], "score": rng.integers(0, 3, len(qids)) / 2.0}
    )
    df["rank"] = pd.Series(rng.random(len(df))).groupby(df["query_id"]).rank(method="first").astype(int)
    df = df.sample(frac=1, random_state=seed).reset_index(drop=True)
    differ, by_score = [], {}
    for q in dict.fromkeys(df["query_id"]):  # in order of appearance
        rows = df[df["query_id"] == q]
        by_rank = rows.sort_values("rank")["doc_id"].tolist()
        by_score[q] = [d for _, d in sorted(zip(rows["score"], rows["doc_id"], strict=True), reverse=True)]
        if by_rank != by_score[q]:
            differ.append(q)
    assert differ  # random ranks and tied scores: some query differs
    expected = rf"orders {len(differ)} of {n_q} queries otherwise \(the first: '{differ[0]}'\)"
    runs = []
    for table in (df, pa.Table.from_pandas(df)):
        with pytest.warns(RankColumnWarning, match=expected):
            runs.append(run_from_table(table))
    with pytest.warns(RankColumnWarning, match=expected):
        runs.append(Run.from_pandas(df))
    for run in runs:  # ranked by trec_eval's score order, as before
        assert {q: run.ranking(q) for q in by_score} == by_score


# -- write_run / load_run by suffix ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["run.jsonl", "run.parquet", "run.PARQUET", "run.txt", "run.trec", "run"])
def test_each_suffix_write_run_writes_load_run_reads_back(tmp_path: Path, name: str) -> None:
    run = _reranked()
    path = tmp_path / name
    rb.io.write_run(run, path)
    back = rb.load_run(path)
    assert {q: back.ranking(q) for q in back} == {q: run.ranking(q) for q in run}
    head = path.read_bytes()[:4]
    if name.lower().endswith(".parquet"):
        assert head == b"PAR1" and pq.read_schema(path).names[:4] == ["query_id", "rank", "doc_id", "score"]
    else:
        assert head != b"PAR1"
    if name.lower().endswith((".jsonl", ".parquet")):  # TREC keeps the order, with scores made to follow it
        assert _lists(back) == _lists(run)


def test_a_parquet_run_keeps_texts_and_reads_a_mapping(tmp_path: Path) -> None:
    path = tmp_path / "dense.parquet"
    rb.io.write_run(Run.from_ranked({"q1": [Hit("d2", 0.2, "chunk"), Hit("d1", 0.9)]}), path)
    texts = pd.read_parquet(path)["text"]  # in the file for other tools; read_run_parquet reads no texts
    assert texts[0] == "chunk" and texts.isna().tolist() == [False, True]
    assert rb.load_run(path).name == "dense"  # named after the file
    rb.io.write_run({"q1": {"a": 0.5, "b": 0.7}}, path)
    assert rb.load_run(path).to_scores() == {"q1": {"a": 0.5, "b": 0.7}}
    with pytest.raises(rb.InputError, match=r"tag='bm25' names the run in TREC and JSON Lines files"):
        rb.io.write_run(_reranked(), tmp_path / "other.parquet", tag="bm25")
    assert not (tmp_path / "other.parquet").exists()


@pytest.mark.parametrize("suffix", [".json", ".csv", ".feather"])
def test_a_suffix_of_another_format_is_refused_both_ways(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"run{suffix}"
    expected = (
        rf"expected a run file named \.jsonl .*, \.parquet .* or any other name for a TREC run file .*found '\{suffix}'"
    )
    with pytest.raises(rb.InputError, match=r"write_run .*" + expected):
        rb.io.write_run(_reranked(), path)
    assert not path.exists()
    path.write_text("q1 Q0 a 1 1.0 run\n")
    with pytest.raises(rb.InputError, match=r"load_run .*" + expected):
        rb.load_run(path)


def test_the_cli_writes_a_parquet_run_and_refuses_another_format_before_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from rankbridge.cli import main

    (tmp_path / "my_retriever.py").write_text(
        "calls = []\ndef retrieve(query, k=10):\n    calls.append(query)\n    return [('d2', 0.1), ('d1', 0.9)]\n"
    )
    (tmp_path / "queries.tsv").write_text("q1\tscurvy\nq2\trickets\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["run", "my_retriever:retrieve", "--queries", "queries.tsv", "-o", "run.csv", "--quiet"]) == 2
    assert "found '.csv'" in capsys.readouterr().err and not (tmp_path / "run.csv").exists()
    import my_retriever  # type: ignore[import-not-found]

    assert my_retriever.calls == []  # refused before any query ran
    assert main(["run", "my_retriever:retrieve", "--queries", "queries.tsv", "-o", "run.parquet", "--quiet"]) == 0
    back = rb.load_run(tmp_path / "run.parquet")
    assert back.ranking("q1") == ["d2", "d1"] and [h.score for h in back.hits("q2")] == [0.1, 0.9]


def test_odd_rank_columns_are_not_compared_and_never_raise() -> None:
    base = pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "score": [1.0, 2.0]})
    odd = {
        "nullable with a missing rank": base.assign(rank=pd.array([2, None], dtype="Int64")),
        "text ranks": base.assign(rank=["first", "second"]),
        "two rank columns": pd.concat([base, pd.DataFrame({"rank": [1, 2]}), pd.DataFrame({"rank": [2, 1]})], axis=1),
    }
    for label, table in odd.items():
        assert run_from_table(table).ranking("q") == ["b", "a"], label
        assert Run.from_pandas(table).ranking("q") == ["b", "a"], label
    forged = base.assign(rank=[1, 2])
    forged.attrs["rankbridge"] = {"order": "rank", "check": "not the digest"}
    with pytest.warns(RankColumnWarning):  # a mark that does not match the columns is no mark
        assert Run.from_pandas(forged).ranking("q") == ["b", "a"]


def test_a_polars_frame_has_no_mark_and_is_warned_about() -> None:
    pl = pytest.importorskip("polars")
    run = Run.from_ranked({"q1": [Hit("a", 0.1), Hit("b", 0.9)], "q2": [Hit("x", 2.0), Hit("y", 1.0)]})
    frame = pl.from_pandas(run.to_pandas())
    with pytest.warns(RankColumnWarning, match=r"orders 1 of 2 queries otherwise \(the first: 'q1'\)"):
        assert run_from_table(frame).ranking("q1") == ["b", "a"]
    _assert_same(run_from_table(frame, rank_column="rank"), run)


def test_the_llamaindex_reorder_case_reads_back_exactly_or_warns() -> None:
    """The audit's case: LongContextReorder keeps BM25's scores on a list it reorders."""
    pytest.importorskip("llama_index.core")
    pytest.importorskip("llama_index.retrievers.bm25")
    from llama_index.core import Document
    from llama_index.core.llms import MockLLM
    from llama_index.core.postprocessor import LongContextReorder
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.retrievers.bm25 import BM25Retriever

    from rankbridge.demo import demo_golden_set

    full = demo_golden_set()
    assert full.corpus is not None
    queries = full.queries[:30]
    golden = rb.GoldenSet(queries, rb.Qrels({q.id: full.qrels[q.id] for q in queries}), corpus=full.corpus)
    bm25 = BM25Retriever.from_defaults(
        nodes=[Document(text=d["text"], doc_id=i) for i, d in full.corpus.items()], similarity_top_k=10
    )
    engine = RetrieverQueryEngine.from_args(bm25, node_postprocessors=[LongContextReorder()], llm=MockLLM())
    run = rb.run_retriever(engine, golden, progress=False)
    want = rb.evaluate(golden, run, ["ndcg@10"]).per_query
    df = run.to_pandas()
    assert rb.evaluate(golden, Run.from_pandas(df), ["ndcg@10"]).per_query == want
    assert rb.evaluate(golden, df, ["ndcg@10"]).per_query == want
    with pytest.warns(RankColumnWarning, match=r"queries otherwise .*rank_column='rank'"):
        by_score = rb.evaluate(golden, pa.Table.from_pandas(df), ["ndcg@10"]).per_query
    assert by_score != want  # the reorder is real: the scores give another order
    assert (
        rb.evaluate(golden, run_from_table(pa.Table.from_pandas(df), rank_column="rank"), ["ndcg@10"]).per_query == want
    )
