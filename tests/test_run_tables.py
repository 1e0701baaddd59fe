"""Runs as tables (pandas, Arrow, Parquet): the same numbers as the dict path and pytrec_eval, clear errors."""

from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import pytrec_eval

import rankbridge
from rankbridge.errors import InputError, RankColumnWarning
from rankbridge.evaluate import evaluate
from rankbridge.io.run_tables import read_run_parquet, run_from_table

METRICS = ["ndcg@10", "map", "mrr", "P@5", "recall@10", "bpref", "num_ret", "ndcg"]
TREC = {"ndcg_cut_10": "ndcg@10", "map": "map", "recip_rank": "mrr", "P_5": "precision@5"}
TREC |= {"recall_10": "recall@10", "bpref": "bpref", "num_ret": "num_ret", "ndcg": "ndcg"}


def _case(seed: int) -> tuple[dict[str, dict[str, int]], pd.DataFrame]:
    rng = np.random.default_rng(seed)
    rows = []
    qrels: dict[str, dict[str, int]] = {}
    for q in range(25):
        docs = rng.choice(50, size=rng.integers(1, 20), replace=False)
        # integer-valued scores tie often: the doc-id tie-break is exercised
        scores = rng.integers(0, 6, size=len(docs)) / 2 if seed % 2 else rng.normal(size=len(docs))
        rows += [(f"q{q}", f"d{d}", float(s)) for d, s in zip(docs, scores, strict=True)]
        judged = rng.choice(50, size=rng.integers(0, 8), replace=False)
        if len(judged):
            qrels[f"q{q}"] = {f"d{d}": int(rng.integers(0, 3)) for d in judged}
    order = rng.permutation(len(rows))  # rows in any order
    df = pd.DataFrame([rows[i] for i in order], columns=["query_id", "doc_id", "score"])
    return qrels, df


def _as_dict(df: pd.DataFrame) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for q, d, s in zip(df["query_id"], df["doc_id"], df["score"], strict=True):
        out.setdefault(q, {})[d] = s
    return out


@pytest.mark.parametrize("seed", range(10))
def test_tables_equal_the_dict_path_and_pytrec_eval(seed: int, tmp_path: Path) -> None:
    qrels, df = _case(seed)
    run_dict = _as_dict(df)
    ref = evaluate(qrels, run_dict, METRICS, check_ids=False)
    path = tmp_path / "run.parquet"
    df.to_parquet(path)
    forms = {
        "pandas": df,
        "arrow": pa.Table.from_pandas(df),
        "arrow dictionary": pa.table({c: pa.array(df[c]).dictionary_encode() if c != "score" else df[c] for c in df}),
        "arrow chunks": pa.concat_tables([pa.Table.from_pandas(df.iloc[:7]), pa.Table.from_pandas(df.iloc[7:])]),
        "parquet": read_run_parquet(path),
    }
    for form, run in forms.items():
        ev = evaluate(qrels, run, METRICS, check_ids=False)
        assert ev.query_ids == ref.query_ids, form
        for m in ref.values:
            np.testing.assert_array_equal(ev.values[m], ref.values[m], err_msg=f"{form} {m}")
    # pytrec_eval on the same hits (float32 comparison, as trec_eval)
    ours = evaluate(qrels, df, METRICS, check_ids=False, single_precision=True, missing="skip").per_query
    got = pytrec_eval.RelevanceEvaluator(qrels, set(TREC)).evaluate(run_dict)
    for qid, values in got.items():
        for trec_name, name in TREC.items():
            assert ours[name][qid] == pytest.approx(values[trec_name], abs=1e-12), (seed, qid, trec_name)


def test_ranked_tables_follow_the_rank_column() -> None:
    df = pd.DataFrame({"query_id": [1, 1, 1, 2], "doc_id": [7, 8, 9, 7], "rank": [3, 1, 2, 1]})
    run = run_from_table(df)  # int ids are kept as str; no score column: the 'rank' column ranks
    assert run.ranking("1") == ["8", "9", "7"]
    df["score"] = [0.9, 0.1, 0.5, 1.0]
    with pytest.warns(RankColumnWarning, match=r"'rank' column orders 1 of 2 queries otherwise \(the first: '1'\)"):
        assert run_from_table(df).ranking("1") == ["7", "9", "8"]  # scores rank unless rank_column is named
    assert run_from_table(df, rank_column="rank").ranking("1") == ["8", "9", "7"]
    ev = evaluate({"1": {"7": 1}}, pa.Table.from_pandas(df[["query_id", "doc_id", "rank"]]), ["mrr"])
    assert ev.per_query["mrr"] == {"1": 1 / 3}


def test_table_errors_name_the_row_and_column() -> None:
    df = pd.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["a", "b", "a"], "score": [0.2, float("nan"), 1.0]})
    with pytest.raises(InputError, match=r"row 1, column 'score': expected a numeric score, found NaN"):
        evaluate({"q1": {"a": 1}}, df, ["mrr"])
    with pytest.raises(InputError, match=r"row 1, column 'score': expected a numeric score, found NaN"):
        evaluate({"q1": {"a": 1}}, pa.Table.from_pandas(df), ["mrr"])
    dup = pd.DataFrame({"query_id": ["q1", "q2", "q1"], "doc_id": ["a", "a", "a"], "score": [0.2, 0.3, 1.0]})
    with pytest.raises(InputError, match=r"rows 0 and 2: doc 'a' appears twice for query 'q1'"):
        run_from_table(dup)
    kept = run_from_table(dup, duplicates="first")
    assert kept.to_scores() == {"q1": {"a": 0.2}, "q2": {"a": 0.3}} and kept.duplicates == {"q1": 1}
    with pytest.raises(
        InputError, match=r"score_column='score' is not a column of the table; its columns are: 'query_id', 'd"
    ):
        run_from_table(pd.DataFrame({"query_id": ["q1"], "doc_id": ["a"]}))
    with pytest.raises(
        InputError, match=r"query_column='query_id' is not a column of the table; its columns are: 'q', 'd'"
    ):
        run_from_table(pd.DataFrame({"q": ["q1"], "d": ["a"]}))
    none_id = pd.DataFrame({"query_id": ["q1", None], "doc_id": ["a", "b"], "score": [1.0, 2.0]})
    with pytest.raises(InputError, match=r"row 1, column 'query_id': expected a query id, found a missing value"):
        run_from_table(none_id)
    with pytest.raises(InputError, match=r"row 1, column 'query_id': expected a query id, found a missing value"):
        run_from_table(pa.Table.from_pandas(none_id))
    float_ids = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": [1.0, 2.5], "score": [1.0, 2.0]})
    with pytest.raises(InputError, match=r"row 0, column 'doc_id': expected a doc id as str \(or int\), found float"):
        run_from_table(float_ids)
    text_scores = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "score": [1.0, "high"]})
    with pytest.raises(InputError, match=r"row 1, column 'score': expected a numeric score, found 'high'"):
        run_from_table(text_scores)
    ranks = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "rank": [1, 1]})
    with pytest.raises(InputError, match="rank 1 twice"):
        run_from_table(ranks)
    ranks["rank"] = [1.0, 2.5]
    with pytest.raises(InputError, match=r"row 1, column 'rank': expected an integer rank, found 2.5"):
        run_from_table(ranks)


def test_parquet_reader_reads_only_its_columns(tmp_path: Path) -> None:
    path = tmp_path / "bm25.parquet"
    table = pa.table({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "score": [0.1, 0.7], "text": ["x", "y"]})
    pq.write_table(table, path)
    run = read_run_parquet(path)
    assert run.name == "bm25" and run.ranking("q1") == ["b", "a"]
    assert rankbridge.io.read_run_parquet is read_run_parquet
    assert rankbridge.io.run_from_table is run_from_table


def _reference(df: pd.DataFrame, ranked: bool) -> rankbridge.Run:
    # the row-by-row construction the table readers must equal
    qs = [str(v) for v in df["query_id"].tolist()]
    ds = [str(v) for v in df["doc_id"].tolist()]
    if ranked:
        return rankbridge.Run.from_columns(qs, ds, df["score"].tolist(), ranks=df["rank"].tolist(), duplicates="first")
    return rankbridge.Run.from_columns(qs, ds, df["score"].tolist(), duplicates="first")


@pytest.mark.parametrize("shape", ["fixed depth", "ragged", "one long list"])
@pytest.mark.parametrize("seed", range(4))
def test_every_id_form_builds_the_columns_row_by_row_construction_builds(shape: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_q = 30
    sizes = {
        "fixed depth": np.full(n_q, 8),
        "ragged": rng.integers(1, 12, n_q),
        "one long list": np.r_[200, np.ones(n_q - 1, int)],
    }[shape]
    qids = np.repeat(np.arange(n_q), sizes)
    docs = rng.integers(0, 25, len(qids))  # repeats within a query are common
    perm = rng.permutation(len(qids))
    df = pd.DataFrame({"query_id": qids[perm] * 7, "doc_id": docs[perm], "score": rng.integers(0, 4, len(qids)) / 2})
    # ranks distinct within a query, in an order other than the rows'
    df["rank"] = pd.Series(rng.random(len(df))).groupby(df["query_id"]).rank(method="first").astype(int)
    str_df = df.assign(query_id=df["query_id"].map(str), doc_id=df["doc_id"].map(lambda d: f"d{d}"))
    forms = {
        "int pandas": df,
        "int arrow": pa.Table.from_pandas(df),
        "str pandas": str_df,
        "object pandas": str_df.astype({"query_id": object, "doc_id": object}),
        "str arrow": pa.Table.from_pandas(str_df),
        "dictionary arrow": pa.table(
            {c: pa.array(str_df[c]).dictionary_encode() if c in ("query_id", "doc_id") else str_df[c] for c in str_df}
        ),
    }
    for form, table in forms.items():
        source = str_df if form.startswith(("str", "object", "dictionary")) else df
        for ranked in (False, True):
            # the random ranks disagree with the scores: ranked by score, the table is warned about
            with contextlib.nullcontext() if ranked else pytest.warns(RankColumnWarning, match="queries otherwise"):
                got = run_from_table(table, rank_column="rank" if ranked else None, duplicates="first")
            ref = _reference(source, ranked)
            assert got.columns is not None and ref.columns is not None
            assert got.columns.query_ids == ref.columns.query_ids, form
            assert got.columns.doc_ids == ref.columns.doc_ids, (form, ranked)
            np.testing.assert_array_equal(got.columns.offsets, ref.columns.offsets)
            np.testing.assert_array_equal(got.columns.scores, ref.columns.scores)
            assert got.duplicates == ref.duplicates and got.duplicates, form
            with pytest.raises(InputError, match=r"rows \d+ and \d+: doc '?d?\d+'? appears twice for query"):
                run_from_table(table, rank_column="rank" if ranked else None)


def test_ids_that_read_the_same_are_one_id() -> None:
    # 7 and "7" in an object column are both the id "7": a repeat, as Run.from_columns sees it
    df = pd.DataFrame({"query_id": ["q", "q", "q"], "doc_id": [7, "7", "8"], "score": [1.0, 2.0, 3.0]})
    with pytest.raises(InputError, match=r"rows 0 and 1: doc '7' appears twice for query 'q'"):
        run_from_table(df)
    assert run_from_table(df, duplicates="first").to_scores() == {"q": {"7": 1.0, "8": 3.0}}
    # a dictionary that lists a value twice
    doc = pa.DictionaryArray.from_arrays(pa.array([0, 1, 2]), pa.array(["a", "a", "b"]))
    table = pa.table({"query_id": ["q", "q", "q"], "doc_id": doc, "score": [1.0, 2.0, 3.0]})
    with pytest.raises(InputError, match=r"rows 0 and 1: doc 'a' appears twice for query 'q'"):
        run_from_table(table)
    # a dictionary in another order than the rows: queries still listed in the order they first appear
    query = pa.DictionaryArray.from_arrays(pa.array([1, 1, 0, 3]), pa.array(["q2", "q1", "never", "q3"]))
    table = pa.table({"query_id": query, "doc_id": ["a", "b", "a", "c"], "score": [1.0, 2.0, 3.0, 4.0]})
    assert list(run_from_table(table)) == ["q1", "q2", "q3"]  # a value no row holds is no query
    assert run_from_table(table).ranking("q1") == ["b", "a"]
    # chunks with dictionaries of their own, read chunk by chunk
    chunks = pa.chunked_array([pa.array(["a", "b"]).dictionary_encode(), pa.array(["b", "b"]).dictionary_encode()])
    table = pa.table({"query_id": ["q", "q", "r", "q"], "doc_id": chunks, "score": [1.0, 2.0, 3.0, 4.0]})
    with pytest.raises(InputError, match=r"rows 1 and 3: doc 'b' appears twice for query 'q'"):
        run_from_table(table)
    assert run_from_table(table, duplicates="first").to_scores() == {"q": {"a": 1.0, "b": 2.0}, "r": {"b": 3.0}}
