"""An audit of the forms users hold going in, written as a new user meets them (issue 16, after the restructure).

Golden sets (CSV, JSON Lines, pandas, HF ``datasets`` built in memory, BEIR folders, ir_datasets-like objects,
RAGAS testsets, TREC qrels) and runs (TREC files, JSON Lines, pandas / pyarrow tables, Parquet,
``table_from_arrays``) are written the messy way teams have them -- a byte-order mark, CRLF, a space after each
comma, int ids, NaN cells, extra columns, ids with spaces, duplicate rows, 0 labels, list columns as strings --
and every form is scored against pytrec_eval on dicts built here by hand. Refusals are checked to name the
file and line (or row) and the column, and to say what was expected and what was found. The last part checks
the documentation: the CLI's ``--help`` examples parse, the README's shell commands print trec_eval's
numbers, and the ``docs/ray.md`` recipes give ``evaluate``'s result.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import json
import math
import random
import re
import shlex
import sys
import types
import warnings
from collections import namedtuple
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rankbridge as rb
from rankbridge.errors import GoldenSetWarning, InputError, ParseError
from rankbridge.io import (
    golden_from_ir_datasets,
    golden_from_pandas,
    golden_from_ragas,
    golden_from_rows,
    read_golden,
    read_golden_beir,
    read_golden_csv,
    read_golden_jsonl,
    read_qrels,
    read_run,
    read_run_parquet,
    run_from_table,
    write_run,
)
from rankbridge.metrics import table_from_arrays

pytrec_eval = pytest.importorskip("pytrec_eval")

ROOT = Path(__file__).resolve().parents[1]
#: trec_eval's name -> rankbridge's canonical name
MEASURES = {
    "ndcg_cut_10": "ndcg@10",
    "map": "map",
    "recall_10": "recall@10",
    "P_5": "precision@5",
    "recip_rank": "mrr",
    "Rprec": "r_precision",
}


def trec_means(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]) -> dict[str, float]:
    """pytrec_eval's means as trec_eval -c gives them: every judged query counts (0 when the run lacks it)."""
    per_query = pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES)).evaluate(run)
    return {
        ours: sum(per_query[q][theirs] if q in per_query else 0.0 for q in qrels) / len(qrels)
        for theirs, ours in MEASURES.items()
    }


def assert_trec_equal(qrels: Any, run: Any, reference: dict[str, float]) -> None:
    ev = rb.evaluate(qrels, run, list(MEASURES.values()))
    assert set(ev.mean) == set(reference)
    for name, value in reference.items():
        assert ev.mean[name] == pytest.approx(value, abs=1e-12), name


# -- the data: 30 queries, graded labels with 0s and -1s, ties, queries only in the qrels or only in the run -----------
@pytest.fixture(scope="module")
def data() -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    rng = random.Random(16)
    docs = [f"D{j}" for j in range(40)]
    qrels = {str(q): {d: rng.choice([-1, 0, 0, 1, 2, 3]) for d in rng.sample(docs, 6)} for q in range(1, 26)}
    qrels["26"] = {"D1": 0, "D2": 0}  # judged, nothing relevant
    run = {}
    for q in range(4, 31):  # 1-3 are judged and never retrieved; 27-30 are retrieved and never judged
        # three decimals: ties at 0.25 / 0.5 (broken by doc id, descending) that float32 keeps apart from the rest
        run[str(q)] = {d: rng.choice([0.5, 0.25, round(rng.random(), 3)]) for d in rng.sample(docs, 12)}
    return qrels, run


@pytest.fixture(scope="module")
def reference(data: Any) -> dict[str, float]:
    return trec_means(*data)


def _trec_lines(run: dict[str, dict[str, float]]) -> list[str]:
    """Run lines with tabs, a rank column that disagrees with the scores (trec_eval ignores it) and a tag with
    a space after it (an extra column, ignored too), shuffled."""
    lines = [
        f"{q}\tQ0\t{d}\t{99 - i}\t{s}\tmy run\r\n" for q, docs in run.items() for i, (d, s) in enumerate(docs.items())
    ]
    random.Random(3).shuffle(lines)
    return lines


# -- runs in every form, scored as pytrec_eval scores the dicts ---------------------------------------------------
def test_run_dicts_and_trec_files_with_bom_crlf_tabs(data: Any, reference: Any, tmp_path: Path) -> None:
    qrels, run = data
    assert_trec_equal(qrels, run, reference)
    run_file = tmp_path / "run.trec"
    run_file.write_bytes(("\ufeff" + "".join(_trec_lines(run))).encode())
    qrels_file = tmp_path / "qrels.txt"
    qrels_file.write_bytes(
        (
            "\ufeff# judged by hand\r\n"
            + "".join(f"{q} 0 {d} {lab}\r\n" for q, ds in qrels.items() for d, lab in ds.items())
        ).encode()
    )
    assert read_qrels(qrels_file).to_dict() == qrels
    assert_trec_equal(read_qrels(qrels_file), read_run(run_file), reference)
    assert_trec_equal(rb.load_qrels(qrels_file), rb.load_run(run_file), reference)
    # with a comment line at the end, the line-by-line reader (not the bulk one) reads the file: the same numbers
    run_file.write_text("".join(_trec_lines(run)) + "# a comment\n", encoding="utf-8")
    assert_trec_equal(qrels, read_run(run_file), reference)


def test_run_table_polars(data: Any, reference: Any) -> None:
    pl = pytest.importorskip("polars")
    qrels, run = data
    rows = [(int(q), d, s) for q, docs in run.items() for d, s in docs.items()]
    table = pl.DataFrame(rows, schema=["query_id", "doc_id", "score"], orient="row")
    assert_trec_equal(qrels, table, reference)
    categorical = table.with_columns(pl.col("doc_id").cast(pl.Categorical))
    assert_trec_equal(qrels, run_from_table(categorical), reference)
    with pytest.raises(InputError, match=r"row 1, column 'score': expected a numeric score, found NaN"):
        run_from_table(pl.DataFrame({"query_id": ["1", "1"], "doc_id": ["a", "b"], "score": [1.0, None]}))
    # a golden set is read from pandas, and the refusal says so (it said "expected ... a DataFrame ... found DataFrame")
    with pytest.raises(
        InputError, match=r"a DataFrame \(pandas: a polars or pyarrow table's \.to_pandas\(\)\).*found polars\."
    ):
        read_golden(pl.DataFrame({"question": ["a"], "relevant_ids": [["d1"]]}))


def test_run_jsonl_written_and_read_back(data: Any, reference: Any, tmp_path: Path) -> None:
    qrels, run = data
    write_run(rb.Run.from_scores(run, name="bm25"), tmp_path / "run.jsonl")
    back = rb.load_run(tmp_path / "run.jsonl")
    assert back.name == "bm25"
    assert_trec_equal(qrels, back, reference)


def test_run_tables_pandas_pyarrow_parquet(data: Any, reference: Any, tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    qrels, run = data
    rows = [(int(q), d, s, "note") for q, docs in run.items() for d, s in docs.items()]
    random.Random(5).shuffle(rows)
    df = pd.DataFrame(rows, columns=["query_id", "doc_id", "score", "comment"])  # int query ids, an extra column
    assert_trec_equal(qrels, df, reference)  # the table passed as the run
    assert_trec_equal(qrels, run_from_table(df), reference)
    assert_trec_equal(qrels, pa.Table.from_pandas(df), reference)
    df.to_parquet(tmp_path / "bm25.parquet")
    from_parquet = read_run_parquet(tmp_path / "bm25.parquet")
    assert from_parquet.name == "bm25"
    assert_trec_equal(qrels, from_parquet, reference)
    # a dataset folder partitioned by query (the partition column comes back dictionary-encoded)
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_to_dataset(
        pa.Table.from_pandas(df.astype({"query_id": str})), tmp_path / "runs", partition_cols=["query_id"]
    )
    assert_trec_equal(qrels, read_run_parquet(tmp_path / "runs"), reference)
    # scores as float32 (what an embedding index returns) and query ids as str: the same ranking
    f32 = df.astype({"query_id": str, "score": "float32"})
    assert_trec_equal(qrels, f32, reference)
    # a ranked table (rank column only), in trec_eval's order
    ranked = [
        (q, d, i + 1)
        for q, docs in run.items()
        for i, (d, _) in enumerate(sorted(docs.items(), key=lambda kv: (kv[1], kv[0]), reverse=True))
    ]
    assert_trec_equal(qrels, pd.DataFrame(ranked, columns=["query_id", "doc_id", "rank"]), reference)


def test_table_from_arrays_over_the_judged_queries(data: Any, reference: Any) -> None:
    qrels, run = data
    docs = sorted({d for ds in qrels.values() for d in ds} | {d for ds in run.values() for d in ds})
    index = {d: i for i, d in enumerate(docs)}
    query_ids = list(qrels)  # a row per judged query; one the run lacks is all padding
    matrix = np.full((len(query_ids), 12), -1, dtype=np.int64)
    for i, q in enumerate(query_ids):
        ordered = sorted(run.get(q, {}).items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
        matrix[i, : len(ordered)] = [index[d] for d, _ in ordered]
    triples = [(query_ids.index(q), index[d], lab) for q, ds in qrels.items() for d, lab in ds.items()]
    qq, qd, ql = (np.array(col, dtype=np.int64) for col in zip(*triples, strict=True))
    assert_trec_equal(None, table_from_arrays(query_ids, matrix, qq, qd, ql), reference)


def test_table_from_arrays_row_without_judgments_is_not_averaged_in() -> None:
    ranked = np.array([[4, 2, 7], [2, 4, -1]])  # q1 was searched but has no qrels
    table = table_from_arrays(["q0", "q1"], ranked, np.array([0]), np.array([2]), np.array([1]))
    as_dicts = rb.evaluate({"q0": {"2": 1}}, {"q0": ["4", "2", "7"], "q1": ["2", "4"]}, ["mrr"])
    assert as_dicts.mean["mrr"] == 0.5
    assert rb.evaluate(None, table, ["mrr"]).mean["mrr"] == as_dicts.mean["mrr"]


# -- golden sets in every form: the qrels they give, scored as pytrec_eval scores the dicts ------------------------
def test_golden_csv_with_bom_crlf_spaces_and_json_cells(data: Any, reference: Any, tmp_path: Path) -> None:
    qrels, run = data
    path = tmp_path / "golden.csv"
    lines = ["id, question, labels, category"]  # a space after each comma, as people type CSV
    for q, labels in qrels.items():
        cell = json.dumps(labels).replace('"', '""')
        lines.append(f'{q}, "question {q}, with a comma?", "{cell}", cat {int(q) % 3}')
    path.write_bytes(("\ufeff" + "\r\n".join(lines) + "\r\n").encode())
    golden = read_golden_csv(path)
    assert golden.qrels.to_dict() == qrels
    assert golden.queries[0].text == "question 1, with a comma?"
    assert {q.category for q in golden.queries} == {"cat 0", "cat 1", "cat 2"}
    assert_trec_equal(golden, run, reference)


def test_golden_csv_quoted_list_after_a_space_is_a_list_not_one_id(tmp_path: Path) -> None:
    # before the fix: csv read `, "[""d3""]"` as the text ` "[""d3""]"`, one relevant id that matched nothing
    path = tmp_path / "golden.csv"
    path.write_text('id, question, relevant_ids\nq1, hi, d1;d2\nq2, ho, "[""d3"", ""d 4""]"\n', encoding="utf-8")
    assert read_golden_csv(path).qrels.to_dict() == {"q1": {"d1": 1, "d2": 1}, "q2": {"d3": 1, "d 4": 1}}


def test_golden_csv_ids_with_spaces_around_match_the_run(tmp_path: Path) -> None:
    # before: the id cell `q1 ` kept its space, and a run's 'q1' scored 0 as a query the golden set lacked
    path = _write(tmp_path / "golden.csv", "id , question , relevant_ids , category\nq1 , hi , d1 ; d 2 , cat \n")
    golden = read_golden_csv(path)
    assert golden.qrels.to_dict() == {"q1": {"d1": 1, "d 2": 1}}
    assert [(q.id, q.text, q.category) for q in golden.queries] == [("q1", "hi", "cat")]
    assert rb.evaluate(golden, {"q1": {"d 2": 1.0}}, ["mrr"]).mean == {"mrr": 1.0}


def test_golden_csv_written_by_pandas_with_list_and_dict_columns(data: Any, reference: Any, tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    qrels, run = data
    df = pd.DataFrame(
        {
            "query_id": [int(q) for q in qrels],
            "query": [f"question {q}?" for q in qrels],
            "relevant_ids": [[d for d, lab in ds.items() if lab == 1] for ds in qrels.values()],  # Python reprs
            "labels": [{d: lab for d, lab in ds.items() if lab != 1} for ds in qrels.values()],
            "score_bm25": [np.nan] * len(qrels),  # an extra column of NaN cells: no metadata, no error
        }
    )
    df.to_csv(tmp_path / "golden.csv")  # with the index column pandas writes unnamed
    golden = read_golden_csv(tmp_path / "golden.csv")
    assert golden.qrels.to_dict() == qrels
    assert_trec_equal(golden, run, reference)
    from_frame = golden_from_pandas(df)
    assert from_frame.qrels.to_dict() == qrels
    assert from_frame.queries[0].metadata == {}  # the NaN cell is skipped


def test_golden_jsonl_with_bom_crlf_int_ids_and_nan(data: Any, reference: Any, tmp_path: Path) -> None:
    qrels, run = data
    lines = [
        json.dumps({"query_id": int(q), "question": f"question {q}?", "labels": labels}) for q, labels in qrels.items()
    ]
    lines.append('{"query_id": 99, "question": "never judged", "relevant_ids": NaN}')  # JSON's NaN: a missing cell
    (tmp_path / "golden.jsonl").write_bytes(("\ufeff" + "\r\n".join(lines) + "\r\n").encode())
    with pytest.warns(GoldenSetWarning, match=r"1 of 27 questions have no relevant ids.*line 27 \(99\)"):
        golden = read_golden_jsonl(tmp_path / "golden.jsonl")
    assert golden.qrels.to_dict() == qrels
    assert_trec_equal(golden, run, reference)


def test_golden_hf_datasets_in_memory(data: Any, reference: Any) -> None:
    datasets = pytest.importorskip("datasets")
    qrels, run = data
    one_per_row = datasets.Dataset.from_list(
        [
            {"id": int(q), "question": f"q {q}", "relevant_ids": [d for d, lab in ds.items() if lab > 0]}
            for q, ds in qrels.items()
        ]
    )
    binary = {q: {d: 1 for d, lab in ds.items() if lab > 0} for q, ds in qrels.items()}
    with pytest.warns(GoldenSetWarning, match="1 of 26 questions have no relevant ids"):  # query 26
        golden = read_golden(one_per_row)
    assert golden.qrels.to_dict() == {q: ds for q, ds in binary.items() if ds}
    # BEIR / MTEB on the hub: three tables (int ids in the qrels, as the hub's parquet files have them)
    queries = datasets.Dataset.from_dict({"_id": list(qrels), "text": [f"q {q}" for q in qrels]})
    table = datasets.Dataset.from_dict(
        {
            "query-id": [int(q) for q, ds in qrels.items() for _ in ds],
            "corpus-id": [d for ds in qrels.values() for d in ds],
            "score": [lab for ds in qrels.values() for lab in ds.values()],
        }
    )
    golden = read_golden(datasets.DatasetDict({"queries": queries, "test": table}))
    assert golden.qrels.to_dict() == qrels
    assert_trec_equal(golden, run, reference)
    # a DatasetDict whose qrels split is not the one asked for says which split there is
    with pytest.raises(InputError, match=r"'qrels' or the split 'test'.*found 'queries', 'dev': pass split='dev'"):
        read_golden(datasets.DatasetDict({"queries": queries, "dev": table}))
    assert read_golden(datasets.DatasetDict({"queries": queries, "dev": table}), split="dev").qrels.to_dict() == qrels


def _write_beir(root: Path, qrels: dict[str, dict[str, int]], *, gz: bool) -> None:
    (root / "qrels").mkdir(parents=True)
    docs = sorted({d for ds in qrels.values() for d in ds})
    files = {
        "corpus.jsonl": "".join(json.dumps({"_id": d, "title": None, "text": f"text of {d}"}) + "\r\n" for d in docs),
        "queries.jsonl": "".join(json.dumps({"_id": int(q), "text": f"q {q}"}) + "\r\n" for q in qrels),
        "qrels/test.tsv": "query-id\tcorpus-id\tscore\r\n"
        + "".join(f"{q}\t{d}\t{lab}\r\n" for q, ds in qrels.items() for d, lab in ds.items()),
    }
    for name, text in files.items():
        raw = ("\ufeff" + text).encode()
        if gz:
            (root / f"{name}.gz").write_bytes(gzip.compress(raw))
        else:
            (root / name).write_bytes(raw)


def test_golden_beir_folders_plain_and_gz(data: Any, reference: Any, tmp_path: Path) -> None:
    qrels, run = data
    _write_beir(tmp_path / "plain", qrels, gz=False)
    _write_beir(tmp_path / "gz", qrels, gz=True)
    for golden in (
        rb.GoldenSet.from_beir(tmp_path / "plain", split="test"),
        read_golden(tmp_path / "plain", split="test"),
        read_golden_beir(tmp_path / "gz", split="test"),
        read_golden(tmp_path / "gz", split="test"),
    ):
        assert golden.qrels.to_dict() == qrels
        assert_trec_equal(golden, run, reference)


def test_golden_ir_datasets_like_object(data: Any, reference: Any) -> None:
    qrels, run = data
    Q = namedtuple("Q", "query_id text")
    R = namedtuple("R", "query_id doc_id relevance iteration")
    D = namedtuple("D", "doc_id text")

    class Local:
        def queries_iter(self) -> Any:
            return iter([Q(int(q), f"q {q}") for q in qrels] + [Q("1", "q 1"), Q("77", "unjudged")])

        def qrels_iter(self) -> Any:
            return iter([R(int(q), d, lab, "0") for q, ds in qrels.items() for d, lab in ds.items()])

        def docs_iter(self) -> Any:
            return iter([D(d, "x") for d in sorted({d for ds in qrels.values() for d in ds})])

    golden = golden_from_ir_datasets(Local())
    assert golden.qrels.to_dict() == qrels and "77" not in golden.texts()
    assert_trec_equal(golden, run, reference)

    class Conflicting(Local):
        def queries_iter(self) -> Any:
            return iter([Q(int(q), f"q {q}") for q in qrels] + [Q("1", "another text")])

    # before the fix the second text silently replaced the first
    with pytest.raises(InputError, match=r"item 26: query id '1' appears twice with different texts \('q 1', then"):
        golden_from_ir_datasets(Conflicting())


def test_golden_ragas_testset_forms(tmp_path: Path) -> None:
    pytest.importorskip("rapidfuzz")
    corpus = {"d1": "Scurvy is caused by a lack of vitamin C.", "d2": "Hamlet was written by Shakespeare."}
    rows = [
        {
            "user_input": "What causes scurvy?",
            "reference": "C",
            "reference_contexts": ["scurvy is caused by a lack of Vitamin C"],
        },
        {
            "user_input": "Who wrote Hamlet?",
            "reference": "S",
            "reference_contexts": ["Hamlet was written by Shakespeare."],
        },
    ]
    golden = golden_from_ragas(rows, corpus)
    assert sorted(golden.qrels.to_dict().values(), key=str) == [{"d1": 1}, {"d2": 1}]
    # the pandas to_csv form (contexts as a Python repr string) reads the same, through read_golden too
    pd = pytest.importorskip("pandas")
    pd.DataFrame(rows).to_csv(tmp_path / "testset.csv", index=False)
    assert read_golden(tmp_path / "testset.csv", corpus=corpus).qrels.to_dict() == golden.qrels.to_dict()
    with pytest.raises(InputError, match=r"RAGAS testset.*pass corpus="):
        read_golden(tmp_path / "testset.csv")
    # a row with no reference contexts at all is not judged, and says so (before: silently)
    with pytest.warns(GoldenSetWarning, match=r"1 of 2 questions have no reference contexts.*'q"):
        partial = golden_from_ragas([rows[0], {"user_input": "Unsourced?", "reference_contexts": []}], corpus)
    assert len(partial.queries) == 2 and len(partial.qrels) == 1


# -- refusals: each names where (file:line, or row) and the column, and says what was expected and found ------------
def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8", newline="")
    return path


REFUSED_FILES: list[tuple[str, str, Any, str]] = [
    # (id, file name, content, the message's pattern)
    ("trec-5-columns", "run.txt", "q1 Q0 d1 1 0.5 x\nq1 Q0 d2 2 0.4\n", r"run\.txt:2: expected 6 columns .* found 5"),
    (
        "trec-comma-decimal",
        "run.txt",
        "q1 Q0 d1 1 0,5 x\n",
        r"run\.txt:1: expected a numeric score in column 5, found '0,5'",
    ),
    ("trec-nan", "run.txt", "q1 Q0 d1 1 0.1 x\nq1 Q0 d2 1 NaN x\n", r"run\.txt:2: .*found NaN"),
    (
        "trec-repeat",
        "run.txt",
        "q1 Q0 d1 1 0.5 x\nq1 Q0 d1 2 0.4 x\n",
        r"run\.txt:2: doc 'd1' appears twice .*first on line 1",
    ),
    (
        "qrels-float-label",
        "qrels.txt",
        "q1 0 d1 1\nq1 0 d2 1.0\n",
        r"qrels\.txt:2: expected an integer relevance label, found '1\.0'",
    ),
    (
        "qrels-header",
        "qrels.txt",
        "query iter doc rel\nq1 0 d1 1\n",
        r"qrels\.txt:1: expected an integer relevance label, found 'rel'",
    ),
    ("qrels-conflict", "qrels.txt", "q1 0 d1 1\nq1 0 d1 2\n", r"qrels\.txt:2: .*judged 2 here but 1 on line 1"),
    (
        "run-jsonl-nan",
        "run.jsonl",
        '{"query_id": "q1", "hits": [{"doc_id": "d1", "score": NaN}]}\n',
        r"run\.jsonl:1: hits\[0\]\.score: expected a finite score, found nan",
    ),
    (
        "run-jsonl-flat",
        "run.jsonl",
        '{"query_id": "q1", "doc_id": "d1", "score": 1}\n',
        r"run\.jsonl:1: missing field 'hits' \(found fields: query_id, doc_id, score\)",
    ),
    (
        "run-jsonl-id-key",
        "run.jsonl",
        '{"query_id": "q1", "hits": [{"doc_id": "d0"}, {"id": "d1", "score": 1}]}\n',
        r"run\.jsonl:1: missing field 'doc_id' in hits\[1\] \(found fields: id, score\)",
    ),
    (
        "qrels-jsonl-label-key",
        "qrels.jsonl",
        '{"query_id": "q1", "doc_id": "d1", "label": 1}\n',
        r"qrels\.jsonl:1: missing field 'relevance' \(found fields: query_id, doc_id, label\)",
    ),
]


@pytest.mark.parametrize(
    ("name", "content", "pattern"), [c[1:] for c in REFUSED_FILES], ids=[c[0] for c in REFUSED_FILES]
)
def test_run_and_qrels_files_refused_with_file_and_line(name: str, content: str, pattern: str, tmp_path: Path) -> None:
    path = _write(tmp_path / name, content)
    with pytest.raises(ParseError, match=pattern):
        (rb.load_qrels if name.startswith("qrels") else rb.load_run)(path)


GOLDEN_REFUSED: list[tuple[str, str, str, str]] = [
    (
        "short-row",
        "golden.csv",
        "id,question,relevant_ids\nq1,hi,d1\nq3,x\n",
        r"golden\.csv:3: expected 3 fields \(as in the header\), found 2",
    ),
    (
        "repeated-id",
        "golden.csv",
        "id,question,relevant_ids\nq1,hi,d1\nq1,hi,d1\n",
        r"golden\.csv:3: column 'id': query id 'q1' appears twice \(first at line 2\)",
    ),
    (
        "text-float-label",
        "golden.csv",
        'id,question,labels\nq1,hi,"{""d1"": ""1.5""}"\n',
        r"golden\.csv:2: column 'labels': expected an integer relevance label, found '1\.5'",
    ),
    (
        "semicolon-delimiter",
        "golden.csv",
        "id;question;relevant_ids\nq1;hi;d1\n",
        r"golden\.csv: expected a question column .* found columns: id;question;relevant_ids",
    ),
    (
        "header-twice",
        "golden.csv",
        "id,question,relevant_ids,relevant_ids\nq1,hi,d1,d2\n",
        r"golden\.csv:1: expected each column name once, found 'relevant_ids' twice \(columns 3 and 4\)",
    ),
    (
        "float-label",
        "golden.jsonl",
        '{"id": 1, "question": "hi", "labels": {"d1": 1.5}}\n',
        r"golden\.jsonl:1: column 'labels': expected an integer relevance label, found float 1\.5",
    ),
    (
        "nested-list",
        "golden.jsonl",
        '{"id": 1, "question": "hi", "relevant_ids": [["d1"]]}\n',
        r"golden\.jsonl:1: column 'relevant_ids': expected an id \(str or integer\), found list",
    ),
    (
        "empty-question",
        "golden.jsonl",
        '{"id": 1, "question": " ", "relevant_ids": ["d1"]}\n',
        r"golden\.jsonl:1: column 'question': expected the question as non-empty text, found ' '",
    ),
]


@pytest.mark.parametrize(
    ("name", "content", "pattern"), [c[1:] for c in GOLDEN_REFUSED], ids=[c[0] for c in GOLDEN_REFUSED]
)
def test_golden_files_refused_with_file_line_and_column(name: str, content: str, pattern: str, tmp_path: Path) -> None:
    with pytest.raises(ParseError, match=pattern):
        read_golden(_write(tmp_path / name, content))


def test_beir_refusals_name_the_file_and_line(tmp_path: Path) -> None:
    qrels = {"1": {"D1": 1}}
    _write_beir(tmp_path / "b", qrels, gz=False)
    _write(tmp_path / "b" / "qrels" / "dev.tsv", "query-id corpus-id score\n1 D1 1\n")  # spaces, not tabs
    with pytest.raises(ParseError, match=r"dev\.tsv:1: expected 3 tab-separated columns .* found 1"):
        read_golden(tmp_path / "b", split="dev")
    _write(tmp_path / "b" / "qrels" / "dev.tsv", "query-id\tcorpus-id\tscore\n9\tD1\t1\n")
    with pytest.raises(ParseError, match=r"dev\.tsv: 1 judged queries have no text in queries\.jsonl \(e\.g\. '9'\)"):
        read_golden(tmp_path / "b", split="dev")
    with pytest.raises(ParseError, match=r"expected a BEIR folder with qrels/train\.tsv .*found splits: dev, test"):
        read_golden(tmp_path / "b", split="train")


def test_run_queries_files_refused_with_file_and_line(tmp_path: Path) -> None:
    from rankbridge.io.queries import load_queries

    bom_crlf = tmp_path / "queries.tsv"
    bom_crlf.write_bytes("\ufeffqid\ttext\r\nq1\t what causes scurvy? \r\n2\tbread\r\n".encode())
    assert [(q.id, q.text) for q in load_queries(bom_crlf)] == [("q1", "what causes scurvy?"), ("2", "bread")]
    # before: a blank question was sent to the retriever, and a repeated id named no line
    with pytest.raises(ParseError, match=r"queries\.tsv:2: query 'q2': expected the question text, found ''"):
        load_queries(_write(tmp_path / "queries.tsv", "q1\thi\nq2\t\n"))
    with pytest.raises(ParseError, match=r"queries\.jsonl:3: query id 'q1' appears twice \(first on line 1\)"):
        load_queries(
            _write(
                tmp_path / "queries.jsonl",
                '{"_id": "q1", "text": "a"}\n{"_id": 1, "text": "b"}\n{"id": "q1", "text": "c"}\n',
            )
        )
    with pytest.raises(ParseError, match=r"queries\.csv:1: expected 'id<TAB>text', found 'id,text'"):
        load_queries(_write(tmp_path / "queries.csv", "id,text\nq1,hello\n"))


def test_a_judged_question_with_a_blank_text_is_refused(tmp_path: Path) -> None:
    # before: BEIR folders (plain and .gz) and LlamaIndex QA files gave the retriever "" to answer
    for gz in (False, True):
        root = tmp_path / f"beir{gz}"
        _write_beir(root, {"1": {"D1": 1}}, gz=gz)
        raw = b'{"_id": "1", "text": "  "}\n{"_id": "2", "text": ""}\n'
        (root / ("queries.jsonl.gz" if gz else "queries.jsonl")).write_bytes(gzip.compress(raw) if gz else raw)
        name = "queries.jsonl.gz" if gz else "queries.jsonl"
        with pytest.raises(
            ParseError, match=rf"test\.tsv(\.gz)?: 1 judged queries have a blank text in {name} \(e\.g\. '1'\)"
        ):
            read_golden(root)
    qa = {"queries": {"q1": "What?", "q2": " "}, "corpus": {"n1": "t"}, "relevant_docs": {"q1": ["n1"], "q2": ["n1"]}}
    (tmp_path / "qa.json").write_text(json.dumps(qa))
    with pytest.raises(ParseError, match=r"qa\.json: queries\['q2'\]: expected the question text, found ' '"):
        read_golden(tmp_path / "qa.json")


def test_tables_refused_with_row_and_column() -> None:
    pd = pytest.importorskip("pandas")
    with pytest.raises(ParseError, match=r"<DataFrame>: row 1, column 'query_id': expected an id .*found float nan"):
        golden_from_pandas(
            pd.DataFrame({"query_id": [1.0, np.nan], "query": ["a", "b"], "relevant_ids": [["d1"], ["d2"]]})
        )
    # two columns of one name: pandas' to_dict kept the last and dropped d1 (only a pandas UserWarning said so)
    twice = pd.DataFrame([["q1", "a", "d1", "d2"]], columns=["id", "question", "relevant_ids", "relevant_ids"])
    with pytest.raises(ParseError, match=r"<DataFrame>: expected each column name once, found 'relevant_ids' twice"):
        golden_from_pandas(twice)


def test_unnamed_spreadsheet_columns_are_still_read(tmp_path: Path) -> None:
    path = _write(tmp_path / "golden.csv", "id,question,relevant_ids,,\nq1,hi,d1,,\n")
    assert read_golden_csv(path).qrels.to_dict() == {"q1": {"d1": 1}}


def test_comma_separated_ids_in_a_text_cell_are_warned_about(tmp_path: Path) -> None:
    path = _write(tmp_path / "golden.csv", 'id,question,relevant_ids\nq1,hi,"d1,d2"\nq2,ho,d3;d4\nq3,hu,"[""d,5""]"\n')
    with pytest.warns(GoldenSetWarning, match=r"column 'relevant_ids': 1 cells hold ',' and no ';'.*line 2 'd1,d2'"):
        golden = read_golden_csv(path)
    assert golden.qrels.to_dict() == {"q1": {"d1,d2": 1}, "q2": {"d3": 1, "d4": 1}, "q3": {"d,5": 1}}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a list, a JSON array or ;-separated text: no warning
        golden_from_rows([{"question": "a", "relevant_ids": ["d1,d2"]}, {"question": "b", "relevant_ids": '["x,y"]'}])


def test_golden_warnings_point_at_the_callers_line(tmp_path: Path) -> None:
    # before: a fixed stacklevel named a frame past the caller (`sys`) or inside rankbridge (io/golden.py)
    pytest.importorskip("rapidfuzz")
    path = _write(tmp_path / "golden.csv", 'question,relevant_ids\nhi,"d1,d2"\nho,\n')
    calls = [
        lambda: read_golden_csv(path),
        lambda: read_golden(path),
        lambda: golden_from_rows([{"question": "a", "relevant_ids": ""}, {"question": "b", "relevant_ids": "x"}]),
        lambda: golden_from_ragas([{"user_input": "x?", "reference_contexts": ["nothing alike"]}], {"d1": "a"}),
        lambda: read_golden([{"user_input": "x?", "reference_contexts": []}], corpus={"d1": "a"}),
    ]
    for call in calls:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        assert caught and {w.filename for w in caught} == {__file__}, [
            (w.filename, str(w.message)[:60]) for w in caught
        ]


RUN_TABLES_REFUSED: list[tuple[str, dict[str, Any], dict[str, Any], str]] = [
    (
        "nan-score",
        {"score": [0.9, float("nan"), 0.3]},
        {},
        r"row 1, column 'score': expected a numeric score, found NaN",
    ),
    (
        "text-score",
        {"score": ["0.9", "high", "0.3"]},
        {},
        r"row 1, column 'score': expected a numeric score, found 'high'",
    ),
    (
        "inf-score",
        {"score": [float("inf"), 0.5, 0.3]},
        {},
        r"row 0, column 'score': expected a finite numeric score, found inf",
    ),
    (
        "missing-doc",
        {"doc_id": ["a", None, "a"]},
        {},
        r"row 1, column 'doc_id': expected a doc id, found a missing value",
    ),
    (
        "float-qid",
        {"query_id": [1.0, 1.0, 2.0]},
        {},
        r"row 0, column 'query_id': expected a query id as str \(or int\), found float 1\.0 \(ids read as floats",
    ),
    (
        "repeat",
        {"doc_id": ["a", "a", "a"]},
        {},
        r"rows 0 and 1: doc 'a' appears twice for query 'q1'; pass duplicates='first'",
    ),
    (
        "inf-rank",
        {"rank": [1, float("inf"), 1]},
        {"rank_column": "rank"},
        r"row 1, column 'rank': expected a finite rank, found inf",
    ),
    (
        "rank-twice",
        {"rank": [2, 1, 2], "query_id": ["q1", "q2", "q1"], "doc_id": ["a", "b", "c"]},
        {"rank_column": "rank"},
        r"rows 0 and 2, column 'rank': query 'q1' has rank 2 twice; ranks must differ within a query",
    ),
    (
        "fractional-rank",
        {"rank": [1, 2.5, 1]},
        {"rank_column": "rank"},
        r"row 1, column 'rank': expected an integer rank, found 2\.5",
    ),
    (
        "text-score-beside-rank",
        {"rank": [1, 2, 1], "score": [0.9, 0.5, "x"]},
        {"rank_column": "rank"},
        r"row 2, column 'score': expected a numeric score, found 'x'",
    ),
    (
        "no-such-column",
        {"sim": [1.0, 1.0, 1.0]},
        {"score_column": "similarity"},
        r"score_column='similarity' is not a column of the table; its columns are: 'query_id', 'doc_id', 'score', "
        r"'sim'",
    ),
]


@pytest.mark.parametrize(
    ("columns", "options", "pattern"), [c[1:] for c in RUN_TABLES_REFUSED], ids=[c[0] for c in RUN_TABLES_REFUSED]
)
def test_run_tables_refused_with_row_and_column(columns: dict[str, Any], options: dict[str, Any], pattern: str) -> None:
    pd = pytest.importorskip("pandas")
    table = pd.DataFrame(
        {"query_id": ["q1", "q1", "q2"], "doc_id": ["a", "b", "a"], "score": [0.9, 0.5, 0.3], **columns}
    )
    with pytest.raises(InputError, match="run table: " + pattern):
        run_from_table(table, **options)
    if not options:  # the table passed to evaluate() as the run is refused alike
        with pytest.raises(InputError, match="run table: " + pattern):
            rb.evaluate({"q1": {"a": 1}}, table, ["mrr"])


def test_an_infinite_rank_no_longer_ranks_first() -> None:
    pd = pytest.importorskip("pandas")
    # before: np.inf cast to int64 became -2**63, so 'b' ranked first behind a numpy RuntimeWarning
    table = pd.DataFrame({"query_id": ["q1"] * 3, "doc_id": ["a", "b", "c"], "rank": [1, float("inf"), 2]})
    with pytest.raises(InputError, match="expected a finite rank"):
        run_from_table(table)
    with_scores = table.assign(rank=[1, 3, 2], score=[0.9, float("nan"), 0.1])
    kept = run_from_table(with_scores, rank_column="rank")  # beside a rank, a hit may lack a score
    assert kept.ranking("q1") == ["a", "c", "b"] and kept.hits("q1")[2].score is None


def test_a_ranked_runs_to_pandas_reads_back_by_its_rank_column() -> None:
    pd = pytest.importorskip("pandas")
    frame = rb.Run.from_ranked({"q1": ["b", "a", "c"]}).to_pandas()  # ranks, and scores left empty
    assert rb.evaluate({"q1": {"a": 1}}, frame, ["mrr"]).per_query["mrr"] == {"q1": 0.5}  # to_pandas' mark
    unmarked = pd.DataFrame(frame.to_dict("list"))  # the same columns without df.attrs: ranked by score
    with pytest.raises(
        InputError, match=r"found NaN .*the table has a 'rank' column: run_from_table\(table, rank_column"
    ):
        rb.evaluate({"q1": {"a": 1}}, unmarked, ["mrr"])
    assert run_from_table(frame, rank_column="rank").ranking("q1") == ["b", "a", "c"]


# -- traces --------------------------------------------------------------------------------------------------------
def _otlp_value(value: Any) -> dict[str, Any]:
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    return {"stringValue": value}


def test_otlp_json_written_by_hand_with_int_ids_and_text_scores(tmp_path: Path) -> None:
    from rankbridge.io.traces import read_openinference

    golden = rb.GoldenSet(
        [rb.Query("q1", "What causes scurvy?"), rb.Query("q2", "bread yeast"), rb.Query("q3", "never asked")],
        rb.Qrels({"q1": {"1": 1, "2": 2}, "q2": {"3": 1}, "q3": {"1": 1}}),
        corpus={d: {"text": d} for d in "1234"},
    )
    retrievals = [("What causes scurvy?", [(4, 0.95), (2, "0.5"), (1, 0.25)]), ("Bread, yeast!", [(3, 0.4), (1, 0.1)])]
    spans = []
    for i, (query, docs) in enumerate(retrievals):
        attrs = [("openinference.span.kind", "RETRIEVER"), ("input.value", query)]
        for rank, (doc, score) in enumerate(docs):
            attrs += [
                (f"retrieval.documents.{rank}.document.id", doc),
                (f"retrieval.documents.{rank}.document.score", score),
            ]
        spans.append(
            {
                "traceId": f"{i:032x}",
                "spanId": f"{i:016x}",
                "name": "retrieve",
                "startTimeUnixNano": str((i + 1) * 10**9),
                "endTimeUnixNano": str((i + 1) * 10**9 + 5_000_000),
                "attributes": [{"key": k, "value": _otlp_value(v)} for k, v in attrs],
                "status": {},
            }
        )
    export = {
        "resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {"name": "x"}, "spans": spans}]}]
    }
    (tmp_path / "traces.json").write_text(json.dumps(export) + "\n" + json.dumps(export) + "\n")  # exported twice
    run = read_openinference(tmp_path / "traces.json", golden=golden)
    assert {q: run.ranking(q) for q in run} == {"q1": ["4", "2", "1"], "q2": ["3", "1"]}
    assert run.config["summary"]["matched_by_text"] >= 2 and run.config["summary"]["missing"] == ["q3"]
    scores = {q: {h.doc_id: h.score for h in run.hits(q)} for q in run}
    reference = trec_means(golden.qrels.to_dict(), scores)  # pytrec_eval on the scores the spans carry
    ev = rb.evaluate(golden, run, list(MEASURES.values()))
    assert ev.mean == pytest.approx(reference, abs=1e-12)


# -- the documentation -------------------------------------------------------------------------------------------
def _parsers() -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    from rankbridge.cli import build_parser

    out = []
    todo: list[tuple[tuple[str, ...], argparse.ArgumentParser]] = [((), build_parser())]
    while todo:
        path, parser = todo.pop()
        out.append((path, parser))
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo += [((*path, name), sub) for name, sub in action.choices.items()]
    return out


def test_every_help_example_parses_with_the_options_the_parser_has() -> None:
    from rankbridge.cli import build_parser

    examples = {
        line.strip().split("  #")[0].strip()
        for _, parser in _parsers()
        for line in (parser.epilog or "").splitlines()
        if line.strip().startswith("rankbridge ")
    }
    commands = {path[0] for path, _ in _parsers() if len(path) == 1}
    assert {shlex.split(e)[1] for e in examples} == commands  # every command shows some
    for example in sorted(examples):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            try:
                build_parser().parse_args(shlex.split(example)[1:])
            except SystemExit:
                pytest.fail(f"{example!r} does not parse: {err.getvalue().strip()}")


def test_command_lines_in_the_docs_parse() -> None:
    from rankbridge.cli import build_parser

    pages = [ROOT / "README.md", ROOT / "examples" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    lines = []
    for page in pages:
        for block in re.findall(r"```[a-z]*\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S):
            lines += [
                (page.name, line.split("  #")[0].strip())
                for line in block.splitlines()
                if line.startswith("rankbridge ")
            ]
    assert len(lines) >= 8
    for page, line in lines:
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            try:
                build_parser().parse_args(shlex.split(line)[1:])
            except SystemExit:
                pytest.fail(f"{page}: {line!r} does not parse: {err.getvalue().strip()}")


def test_data_md_tables_and_arrays_block_gives_trec_evals_numbers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    monkeypatch.chdir(tmp_path)
    block = next(b for b in _blocks("data.md") if "table_from_arrays(" in b)
    space: dict[str, Any] = {}
    exec(compile(block, "data.md arrays block", "exec"), space)
    hits = {"q1": {"d1": 0.9, "d3": 0.4}, "q2": {"d2": 0.7}}
    assert {q: space["run"].ranking(q) for q in space["run"]} == {"q1": ["d1", "d3"], "q2": ["d2"]}
    assert (tmp_path / "bm25.parquet").is_file()
    ref = pytrec_eval.RelevanceEvaluator({"q1": {"d3": 1}, "q2": {"d2": 1}}, {"recip_rank", "ndcg_cut_10"}).evaluate(
        hits
    )
    # the first `ev` (the DataFrame as the run) was replaced by the arrays' one: run it again as the block did
    first = rb.evaluate({"q1": {"d3": 1}, "q2": {"d2": 1}}, space["hits"], ["mrr", "ndcg@10"])
    assert first.mean["mrr"] == pytest.approx(sum(v["recip_rank"] for v in ref.values()) / 2)
    assert first.mean["ndcg@10"] == pytest.approx(sum(v["ndcg_cut_10"] for v in ref.values()) / 2)
    # the arrays: q0 ranks docs 4, 2, 7 (doc 2 relevant), q1 ranks 1, 5 (doc 5 relevant)
    as_dicts = {"q0": {"4": 3.0, "2": 2.0, "7": 1.0}, "q1": {"1": 2.0, "5": 1.0}}
    ref = pytrec_eval.RelevanceEvaluator({"q0": {"2": 1}, "q1": {"5": 1}}, {"recip_rank", "recall_3"}).evaluate(
        as_dicts
    )
    assert space["ev"].mean["mrr"] == pytest.approx(sum(v["recip_rank"] for v in ref.values()) / 2)
    assert space["ev"].mean["recall@3"] == pytest.approx(sum(v["recall_3"] for v in ref.values()) / 2)


def test_every_call_in_the_bring_your_data_tables_exists() -> None:
    import importlib

    import rankbridge.io

    owners = {"rb": rb, "ev": rb.Evaluation, "result": rb.Comparison, "run": rb.Run}
    pages = {
        "README.md": ((ROOT / "README.md").read_text(encoding="utf-8"), "## Bring your data", "Metric names"),
        "data.md": ((ROOT / "docs" / "data.md").read_text(encoding="utf-8"), "| you have |", "Names follow one scheme"),
    }
    checked = 0
    for page, (text, start, end) in pages.items():
        table = text[text.index(start) : text.index(end)]
        for row in (line for line in table.splitlines() if line.startswith("| ") and "`" in line):
            for code in re.findall(r"`([^`]*)`", row.split("|")[2]):
                for call in re.findall(r"(\.?[A-Za-z_][\w.]*)\(", code):
                    head, _, rest = call.lstrip(".").partition(".")
                    if head == "ir_datasets":  # the dataset library's own call
                        continue
                    if call.startswith("."):  # `.to_ranx()`: the method on both kinds of object
                        assert all(hasattr(cls, head) for cls in (rb.Run, rb.Qrels)), (page, code)
                    elif head == "rankbridge":
                        module, _, attr = call.rpartition(".")
                        assert hasattr(importlib.import_module(module), attr), (page, code)
                    elif head in owners:
                        obj: Any = owners[head]
                        for part in rest.split("."):
                            obj = getattr(obj, part)  # AttributeError names what the page calls and is missing
                    else:
                        assert hasattr(rankbridge.io, head), (page, code)
                    checked += 1
    assert checked >= 30


def test_demo_help_counts_the_strategies_the_readme_lists() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    demo = next(p for path, p in _parsers() if path == ("demo",))
    top = dict(_parsers())[()]
    summary = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    help_of = {c.dest: c.help for c in summary._choices_actions}
    assert demo.prog.endswith("demo")
    words = re.search(r"the offline demo: (\w+) strategies", readme)
    assert words is not None and f"{words.group(1)} strategies" in (help_of["demo"] or "")


def test_readme_shell_commands_print_trec_evals_numbers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from rankbridge.cli import main

    monkeypatch.chdir(tmp_path)
    qrels = {"q1": {"d1": 2, "d2": 1, "d3": 0}, "q2": {"d4": 1}, "q3": {"d5": 1}}
    runs = {
        "bm25": {"q1": {"d2": 0.9, "d9": 0.8, "d1": 0.4}, "q2": {"d4": 0.3}},
        "dense": {"q1": {"d1": 0.9, "d2": 0.8}, "q2": {"d7": 0.3}, "q3": {"d5": 0.2}},
    }
    (tmp_path / "qrels.txt").write_text(
        "".join(f"{q} 0 {d} {lab}\n" for q, ds in qrels.items() for d, lab in ds.items())
    )
    for name, run in runs.items():
        write_run(rb.Run.from_scores(run, name=name), tmp_path / f"{name}.txt")
    (tmp_path / "run.txt").write_text((tmp_path / "bm25.txt").read_text())
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.findall(r"```bash\n(.*?)```", readme, flags=re.S)[-1]
    commands = [shlex.split(line) for line in block.splitlines() if line.startswith("rankbridge ")]
    assert [c[1] for c in commands] == ["evaluate", "compare", "report"]
    capsys.readouterr()
    assert main(commands[0][1:]) == 0
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10", "P_5"}).evaluate(runs["bm25"])
    out = capsys.readouterr().out
    printed = {(m.strip(), q): float(v) for m, q, v in (line.split("\t") for line in out.splitlines())}
    for q, values in ref.items():
        assert printed[("ndcg_cut_10", q)] == pytest.approx(values["ndcg_cut_10"], abs=5e-5)
        assert printed[("P_5", q)] == pytest.approx(values["P_5"], abs=5e-5)
    assert printed[("P_5", "q3")] == 0.0  # judged, not retrieved: 0, counted in `all` (trec_eval -c)
    assert printed[("ndcg_cut_10", "all")] == pytest.approx(sum(v["ndcg_cut_10"] for v in ref.values()) / 3, abs=5e-5)
    for command in commands[1:]:
        assert main(command[1:]) == 0, command
    assert (tmp_path / "report.html").stat().st_size > 10_000


def _blocks(page: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (ROOT / "docs" / page).read_text(encoding="utf-8"), flags=re.S)


def test_capture_md_blocks_run_on_a_langchain_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.vectorstores import InMemoryVectorStore

    monkeypatch.chdir(tmp_path)
    corpus = {"d1": "Scurvy is caused by a lack of vitamin C.", "d2": "Bread is made from flour and yeast."}
    golden = rb.GoldenSet(
        [rb.Query("q1", "What causes scurvy?"), rb.Query("q2", "How is bread made?")],
        rb.Qrels({"q1": {"d1": 1}, "q2": {"d2": 1}}),
        corpus={d: {"text": t} for d, t in corpus.items()},
    )
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_documents([Document(page_content=t, metadata={"doc_id": d}) for d, t in corpus.items()])
    retriever = store.as_retriever(search_kwargs={"k": 2})

    class App:  # the page's `app`: any code that retrieves through a framework
        def handle(self, question: str) -> Any:
            return retriever.invoke(question)

    class Grader(FakeListChatModel):  # a chat model that names its model, as a real one does
        model_name: str = "scripted-grader@temperature=0"

    space: dict[str, Any] = {
        "golden": golden,
        "app": App(),
        "question": "What causes scurvy?",
        "qrels": golden.qrels,
        "chat_model": Grader(responses=['{"reason": "on topic", "grade": 2}'] * 10),
    }
    for i, block in enumerate(_blocks("capture.md")):
        exec(compile(block, f"capture.md python block {i + 1}", "exec"), space)
    cap = space["cap"]
    assert cap.summary()["matched_by_text"] == 1 and cap.run.ranking("q1")[0] in corpus  # ids from metadata
    assert read_run(tmp_path / "captured.run").ranking("q1") == cap.run.ranking("q1")
    assert (tmp_path / "history.sqlite").is_file()
    assert space["grades"].qrels.to_dict() == {"q1": dict.fromkeys(cap.run.ranking("q1"), 2)}


def test_ray_md_merge_recipe_equals_one_evaluate(data: Any) -> None:
    qrels, run = data
    merge = next(b for b in _blocks("ray.md") if "Evaluation.merge(parts)" in b)
    metrics = list(MEASURES.values())
    ids = sorted(set(qrels) | set(run))
    blocks = [ids[i::4] for i in range(4)]
    space: dict[str, Any] = {"rb": rb, "qrels": qrels, "run": run, "metrics": metrics, "blocks": blocks[::-1]}
    exec(compile(merge, "ray.md merge block", "exec"), space)
    whole = rb.evaluate(qrels, run, metrics)
    assert space["ev"].mean == pytest.approx(whole.mean, abs=1e-12)
    assert space["ev"].mean == pytest.approx(trec_means(qrels, run), abs=1e-12)


def test_ray_md_spark_recipe_without_spark_equals_one_evaluate(data: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    pd = pytest.importorskip("pandas")
    qrels, run = data
    spark = next(b for b in _blocks("ray.md") if "mapInPandas" in b)
    # the block imports pyspark for evaluate_table only; its pandas half (what each Spark task runs) is run here
    for name in ("pyspark", "pyspark.sql", "pyspark.sql.functions"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    space: dict[str, Any] = {}
    exec(compile(spark, "ray.md spark block", "exec"), space)
    rows = pd.DataFrame(
        [(q, d, s) for q, ds in run.items() for d, s in ds.items()], columns=["query_id", "doc_id", "score"]
    )
    rows["_rb_block"] = [space["block_of"](q) for q in rows["query_id"]]
    batches = [rows.iloc[i : i + 50] for i in range(0, len(rows), 50)]  # Arrow batches cut through queries
    parts = {}
    for _, partition in pd.concat(batches).groupby(rows["_rb_block"] % 3):  # three partitions of whole blocks
        for out in space["evaluate_partition"](iter([partition]), qrels):
            parts[int(out["block"][0])] = __import__("pickle").loads(out["evaluation"][0])
    for block in range(space["N_BLOCKS"]):
        if block not in parts:
            ids = [q for q in qrels if space["block_of"](q) == block]
            parts[block] = rb.evaluate(qrels, {}, space["METRICS"], queries=ids)
    merged = rb.Evaluation.merge(parts.values())
    whole = rb.evaluate(qrels, run, space["METRICS"])
    assert merged.mean == pytest.approx(whole.mean, abs=1e-12)
    assert not math.isnan(merged.mean["ndcg@10"])
