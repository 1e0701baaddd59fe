"""Golden-set loaders: every form a RAG team holds, read in one call, on objects made by the real libraries.

Fixture files are in ``tests/data_forms`` (three documents, three questions, written by hand). Every
```python block of ``docs/data.md`` is run here too, in a copy of that folder.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from rankbridge.errors import InputError, MissingExtraError, ParseError
from rankbridge.io.beir_gz import read_golden_beir
from rankbridge.io.golden import read_golden
from rankbridge.io.ir_datasets import golden_from_ir_datasets
from rankbridge.io.llamaindex_json import golden_from_llamaindex, qrels_run_from_llamaindex, read_golden_llamaindex
from rankbridge.io.ragas_testset import (
    ContextMatchError,
    UnmatchedContextsWarning,
    golden_from_ragas,
    match_ragas_contexts,
    read_golden_ragas,
)
from rankbridge.io.ranx import qrels_from_ranx, run_from_ranx, to_ranx
from rankbridge.io.tables import (
    GoldenSetWarning,
    golden_from_hf,
    golden_from_pandas,
    golden_from_rows,
    read_golden_csv,
    read_golden_jsonl,
    read_golden_parquet,
    stable_query_id,
)
from rankbridge.types import GoldenSet, Qrels, Run

FORMS = Path(__file__).parent / "data_forms"
DOCS = Path(__file__).parents[1] / "docs" / "data.md"
CORPUS = {
    "d1": "Scurvy is caused by a lack of vitamin C in the diet.",
    "d2": "Hamlet is a tragedy written by William Shakespeare around 1600.",
    "d3": "Oranges, lemons and limes are rich in vitamin C.",
}
EXPECTED_QRELS = {"q1": {"d1": 2, "d3": 1}, "q2": {"d2": 1}}


@pytest.fixture
def forms(tmp_path: Path) -> Path:
    """A writable copy of tests/data_forms, plus a gzipped BEIR folder (``beir_gz``)."""
    root = tmp_path / "forms"
    shutil.copytree(FORMS, root)
    gz = root / "beir_gz"
    (gz / "qrels").mkdir(parents=True)
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        with open(root / "beir" / name, "rb") as src, gzip.open(gz / f"{name}.gz", "wb") as dst:
            dst.write(src.read())
    return root


def _ragas() -> Any:
    os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
    return pytest.importorskip("ragas")


# -- JSONL / CSV / rows --------------------------------------------------------------------------------
def test_jsonl_columns_guessed_labels_merged_rest_in_metadata() -> None:
    golden = read_golden_jsonl(FORMS / "golden.jsonl")
    assert golden.name == "golden"
    assert golden.qrels.to_dict() == EXPECTED_QRELS  # labels {d1: 2} over relevant_ids [d1, d3]
    q1, q2 = golden.queries
    assert (q1.id, q1.text, q1.category, q1.reference) == (
        "q1",
        "What causes scurvy?",
        "medical",
        "A lack of vitamin C.",
    )
    assert q1.reference_context_ids == ("d1", "d3")
    assert q2.metadata == {"source": "faq"}


def test_csv_semicolon_ids_and_json_cells() -> None:
    golden = read_golden_csv(FORMS / "golden.csv")
    assert golden.qrels.to_dict() == {"q1": {"d1": 1, "d3": 1}, "q2": {"d2": 1}}
    assert golden.queries[1].reference == "William Shakespeare"


def test_csv_json_cells_and_quoted_newlines_keep_line_numbers(tmp_path: Path) -> None:
    p = tmp_path / "g.csv"
    p.write_text(
        'id,question,relevant_ids,labels\n"q1","first\nline two","[""d1"", ""d2""]","{""d1"": 3}"\nq2,second,[d9,\n'
    )
    with pytest.raises(ParseError, match=r"g\.csv:4: column 'relevant_ids': expected a JSON value, found '\[d9'"):
        read_golden_csv(p)
    p.write_text(p.read_text().replace("[d9,", '"[9, ""x""]",'))
    golden = read_golden_csv(p)
    assert golden.qrels.to_dict() == {"q1": {"d1": 3, "d2": 1}, "q2": {"9": 1, "x": 1}}
    assert golden.queries[0].text == "first\nline two"


def test_tsv_and_gzipped_jsonl(tmp_path: Path) -> None:
    tsv = tmp_path / "g.tsv"
    tsv.write_text("qid\ttext\trelevant_ids\n7\tscurvy?\td1;d2\n")
    assert read_golden(tsv).qrels.to_dict() == {"7": {"d1": 1, "d2": 1}}
    gz = tmp_path / "golden.jsonl.gz"
    with gzip.open(gz, "wt") as fh:
        fh.write((FORMS / "golden.jsonl").read_text())
    golden = read_golden(gz)
    assert golden.name == "golden" and golden.qrels.to_dict() == EXPECTED_QRELS


def test_ambiguous_columns_name_both_and_explicit_mapping_wins() -> None:
    rows = [{"question": "a?", "query": "b?", "relevant_ids": ["d1"]}]
    with pytest.raises(
        ParseError, match="columns 'question' and 'query' could both be the question; pass question_column="
    ):
        golden_from_rows(rows)
    golden = golden_from_rows(rows, question_column="query")
    assert golden.queries[0].text == "b?" and golden.queries[0].metadata == {"question": "a?"}
    rows2 = [{"question": "a?", "relevant_ids": ["d1"], "relevant_chunk_ids": ["c1"]}]
    with pytest.raises(ParseError, match="'relevant_ids' and 'relevant_chunk_ids' could both be the relevant ids"):
        golden_from_rows(rows2)
    assert golden_from_rows(rows2, relevant_column="relevant_chunk_ids").qrels.to_dict() == {
        stable_query_id("a?"): {"c1": 1}
    }


def test_missing_and_unknown_columns_are_errors_listing_the_columns() -> None:
    with pytest.raises(ParseError, match=r"expected a question column .* found columns: prompt, relevant_ids"):
        golden_from_rows([{"prompt": "a?", "relevant_ids": ["d1"]}])
    with pytest.raises(ParseError, match=r"expected a column of relevant ids .* found columns: question"):
        golden_from_rows([{"question": "a?"}])
    with pytest.raises(ParseError, match=r"question_column='prompt ': no such column; found columns: prompt"):
        golden_from_rows([{"prompt": "a?", "relevant_ids": ["d1"]}], question_column="prompt ")


def test_bad_cells_name_file_line_or_row_and_column(tmp_path: Path) -> None:
    p = tmp_path / "g.jsonl"
    p.write_text(
        '{"id": "q1", "question": "a?", "labels": {"d1": 1}}\n\n{"id": 2, "question": "b", "labels": {"d1": "high"}}\n'
    )
    with pytest.raises(
        ParseError, match=r"g\.jsonl:3: column 'labels': expected an integer relevance label, found str 'high'"
    ):
        read_golden_jsonl(p)
    p.write_text(
        '{"id": "q1", "question": "a?", "relevant_ids": ["d1"]}\n{"id": "q1", "question": "b", "relevant_ids": "d"}\n'
    )
    with pytest.raises(ParseError, match=r"g\.jsonl:2: column 'id': query id 'q1' appears twice \(first at line 1\)"):
        read_golden_jsonl(p)
    with pytest.raises(
        ParseError, match=r"<rows>: row 1, column 'id': expected an id \(str or integer\), found bool True"
    ):
        golden_from_rows(
            [{"id": 1, "question": "a?", "relevant_ids": "d1"}, {"id": True, "question": "b?", "relevant_ids": "d"}]
        )


def test_generated_ids_are_stable_under_reordering_and_number_repeats() -> None:
    rows = [
        {"question": "a?", "relevant_ids": ["d1"]},
        {"question": "b?", "relevant_ids": ["d2"]},
        {"question": "a?", "relevant_ids": ["d3"]},
    ]
    ids = [q.id for q in golden_from_rows(rows).queries]
    assert ids == [stable_query_id("a?"), stable_query_id("b?"), stable_query_id("a?") + "-2"]
    reordered = golden_from_rows([rows[1], rows[0]])
    assert reordered.qrels[stable_query_id("a?")] == {"d1": 1}
    assert reordered.qrels[stable_query_id("b?")] == {"d2": 1}
    assert re.fullmatch(r"q[0-9a-f]{12}", ids[0])


def test_question_without_relevant_ids_is_kept_unjudged_and_warned() -> None:
    rows = [{"id": "q1", "question": "a?", "relevant_ids": ["d1"]}, {"id": "q2", "question": "b?", "relevant_ids": []}]
    with pytest.warns(GoldenSetWarning, match=r"1 of 2 questions have no relevant ids .*: row 1 \(q2\)"):
        golden = golden_from_rows(rows)
    assert [q.id for q in golden.queries] == ["q1", "q2"]
    assert list(golden.qrels) == ["q1"]


def test_qrels_and_corpus_given_apart() -> None:
    rows = [{"_id": "q1", "text": "a?"}, {"_id": "q2", "text": "b?"}, {"_id": "q3", "text": "other split"}]
    golden = golden_from_rows(rows, qrels={"q1": ["d1"], "q2": {"d2": 2}}, corpus=CORPUS)
    assert [q.id for q in golden.queries] == ["q1", "q2"]  # judged queries only, as BEIR
    assert golden.qrels.to_dict() == {"q1": {"d1": 1}, "q2": {"d2": 2}}
    assert golden.queries[1].reference_context_ids == ("d2",)
    assert golden.corpus is not None and golden.corpus["d1"]["text"] == CORPUS["d1"]
    with pytest.raises(ParseError, match=r"1 judged queries have no question in the table \(e\.g\. 'q9'\)"):
        golden_from_rows(rows, qrels={"q9": ["d1"]})
    with pytest.raises(InputError, match="either qrels= or relevant_column="):
        golden_from_rows(rows, qrels={"q1": ["d1"]}, relevant_column="text")


# -- pandas, Parquet, HF datasets ------------------------------------------------------------------
def test_pandas_dataframe_with_numpy_values() -> None:
    pd = pytest.importorskip("pandas")
    np = pytest.importorskip("numpy")
    df = pd.DataFrame(
        {
            "query_id": np.array([101, 102], dtype=np.int64),
            "user_input": ["What causes scurvy?", "Who wrote Hamlet?"],
            "relevant_ids": [np.array(["d1", "d3"]), ["d2"]],
            "labels": [{"d1": np.int64(2)}, None],
            "category": ["medical", None],
            "score_hint": [0.5, np.nan],
        }
    )
    golden = golden_from_pandas(df, name="df")
    assert golden.qrels.to_dict() == {"101": {"d1": 2, "d3": 1}, "102": {"d2": 1}}
    assert golden.queries[0].metadata == {"score_hint": 0.5} and golden.queries[1].metadata == {}
    assert golden.queries[1].category is None
    bad = df.assign(relevant_ids=[["d1"], [1.5]])
    with pytest.raises(
        ParseError, match=r"<DataFrame>: row 1, column 'relevant_ids': expected an id .* found float 1\.5"
    ):
        golden_from_pandas(bad)


def test_parquet_and_csv_written_by_pandas(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    df = pd.read_json(FORMS / "golden.jsonl", lines=True)
    df.to_parquet(tmp_path / "golden.parquet")
    assert read_golden_parquet(tmp_path / "golden.parquet").qrels.to_dict() == EXPECTED_QRELS
    df.to_csv(tmp_path / "golden.csv", index=False)  # list and dict cells written as Python reprs
    from_csv = read_golden_csv(tmp_path / "golden.csv")
    assert from_csv.qrels.to_dict() == EXPECTED_QRELS
    assert from_csv.queries[0].reference == "A lack of vitamin C."
    (tmp_path / "bad.parquet").write_text("not parquet")
    with pytest.raises(ParseError, match=r"bad\.parquet: cannot read Parquet file"):
        read_golden_parquet(tmp_path / "bad.parquet")


def test_hf_dataset_one_question_per_row() -> None:
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_list(
        [
            {"id": "q1", "question": "What causes scurvy?", "relevant_ids": ["d1", "d3"], "labels": {"d1": 2}},
            {"id": "q2", "question": "Who wrote Hamlet?", "relevant_ids": ["d2"], "labels": {"d1": None}},
        ]
    )
    assert golden_from_hf(ds).qrels.to_dict() == EXPECTED_QRELS  # the struct column's absent keys are None
    with pytest.raises(ParseError, match=r"<Dataset>: row 0, column 'question': expected the question"):
        golden_from_hf(ds.map(lambda r: {"question": " "}))


def test_hf_beir_layout_three_tables_and_datasetdict() -> None:
    datasets = pytest.importorskip("datasets")
    queries = datasets.Dataset.from_json(str(FORMS / "beir" / "queries.jsonl"))
    corpus = datasets.Dataset.from_json(str(FORMS / "beir" / "corpus.jsonl"))
    qrels = datasets.Dataset.from_list(
        [
            {"query-id": "q1", "corpus-id": "d1", "score": 2},
            {"query-id": "q1", "corpus-id": "d3", "score": 1},
            {"query-id": "q2", "corpus-id": "d2", "score": 1},
        ]
    )
    golden = golden_from_hf(queries, qrels=qrels, corpus=corpus, name="scurvy")
    assert golden.qrels.to_dict() == EXPECTED_QRELS
    assert [q.id for q in golden.queries] == ["q1", "q2"]  # q3 is judged in no split here
    assert golden.corpus is not None and golden.corpus["d2"]["title"] == "Hamlet"
    whole = golden_from_hf(datasets.DatasetDict({"queries": queries, "corpus": corpus, "test": qrels}))
    assert whole.qrels.to_dict() == EXPECTED_QRELS and whole.corpus == golden.corpus
    with pytest.raises(InputError, match=r"expected a DatasetDict with 'queries'.*found 'train'.*data\['train'\]"):
        golden_from_hf(datasets.DatasetDict({"train": queries}))
    conflicting = datasets.Dataset.from_list(
        [{"query-id": "q1", "corpus-id": "d1", "score": 2}, {"query-id": "q1", "corpus-id": "d1", "score": 0}]
    )
    with pytest.raises(ParseError, match=r"row 1, doc 'd1' of query 'q1' judged both 2 and 0"):
        golden_from_hf(queries, qrels=conflicting)


# -- BEIR with .gz ---------------------------------------------------------------------------------
def test_beir_gz_folder_reads_equal_to_plain(forms: Path) -> None:
    from rankbridge.io.beir import read_beir

    plain = read_beir(forms / "beir")
    gz = read_golden_beir(forms / "beir_gz")
    assert gz.queries == plain.queries
    assert gz.qrels.to_dict() == plain.qrels.to_dict() == EXPECTED_QRELS
    assert gz.corpus == plain.corpus
    assert gz.queries[1].metadata == {"source": "faq"} and gz.corpus is not None
    assert gz.corpus["d2"]["url"] == "https://example.org/hamlet"  # extra fields kept, as read_beir keeps them
    assert read_golden_beir(forms / "beir").qrels.to_dict() == EXPECTED_QRELS  # plain folder: read_beir
    assert read_golden_beir(forms / "beir_gz", load_corpus=False).corpus is None


def test_beir_gz_errors_name_the_gz_file_and_line(forms: Path) -> None:
    path = forms / "beir_gz" / "queries.jsonl.gz"
    with gzip.open(path, "wt") as fh:
        fh.write('{"_id": "q1", "text": "a"}\n{"_id": "q2"}\n')
    with pytest.raises(ParseError, match=r"queries\.jsonl\.gz:2: expected fields '_id' and 'text'"):
        read_golden_beir(forms / "beir_gz")
    path.write_bytes(gzip.compress(b'{"_id": "q1", "text": "a"}\n')[:-6])  # truncated
    with pytest.raises(ParseError, match=r"queries\.jsonl\.gz: cannot read file"):
        read_golden_beir(forms / "beir_gz")
    with pytest.raises(ParseError, match=r"qrels/dev\.tsv \(or \.tsv\.gz\); found splits: test"):
        read_golden_beir(forms / "beir_gz", split="dev")


# -- ir_datasets -----------------------------------------------------------------------------------
def _local_ir_dataset(forms: Path) -> Any:
    pytest.importorskip("ir_datasets")
    from ir_datasets.datasets.base import Dataset
    from ir_datasets.formats import TrecQrels, TsvDocs, TsvQueries
    from ir_datasets.util import LocalDownload

    return Dataset(
        TsvQueries(LocalDownload(forms / "queries.tsv")),
        TrecQrels(LocalDownload(forms / "qrels.txt"), {0: "no", 1: "yes", 2: "very"}),
        TsvDocs(LocalDownload(forms / "docs.tsv")),
    )


def test_ir_datasets_local_dataset(forms: Path) -> None:
    golden = golden_from_ir_datasets(_local_ir_dataset(forms), name="local")
    assert golden.name == "local"
    assert golden.qrels.to_dict() == EXPECTED_QRELS
    assert golden.texts() == {"q1": "What causes scurvy?", "q2": "Who wrote Hamlet?"}
    assert golden.corpus is not None and golden.corpus["d3"]["text"] == CORPUS["d3"]
    with pytest.raises(
        InputError, match=r"query_field='description' is not a field of GenericQuery; fields: query_id, text"
    ):
        golden_from_ir_datasets(_local_ir_dataset(forms), query_field="description")


def test_ir_datasets_registered_name_and_dataset_id(forms: Path) -> None:
    ir_datasets = pytest.importorskip("ir_datasets")
    name = "rankbridge-test/local-forms"
    if name not in ir_datasets.registry:
        ir_datasets.registry.register(name, _local_ir_dataset(forms))
    by_name = golden_from_ir_datasets(name, load_corpus=False)
    assert by_name.name == name and by_name.corpus is None
    assert golden_from_ir_datasets(ir_datasets.load(name)).name == name
    assert read_golden(ir_datasets.load(name)).qrels.to_dict() == EXPECTED_QRELS


def test_ir_datasets_bad_objects() -> None:
    with pytest.raises(InputError, match="expected an ir_datasets dataset with queries_iter"):
        golden_from_ir_datasets(object())

    class Bad:
        def queries_iter(self) -> Any:
            return iter([])

        def qrels_iter(self) -> Any:
            return iter([("q1", "d1", 1)])  # a plain tuple, no fields

    with pytest.raises(InputError, match=r"qrels_iter\(\) item 0: expected a qrel with query_id"):
        golden_from_ir_datasets(Bad())


# -- LlamaIndex ------------------------------------------------------------------------------------
def test_llamaindex_qa_json() -> None:
    golden = read_golden_llamaindex(FORMS / "qa_dataset.json")
    assert golden.name == "qa_dataset"
    assert golden.qrels.to_dict() == {"q1": {"d1": 1}, "q2": {"d2": 1}}
    assert golden.corpus is not None and sorted(golden.corpus) == ["d1", "d2", "d3"]


def test_llamaindex_qa_json_errors(tmp_path: Path) -> None:
    data = json.loads((FORMS / "qa_dataset.json").read_text())
    data["relevant_docs"]["q2"] = ["d9"]
    with pytest.raises(ParseError, match=r"<dict>: relevant_docs\['q2'\]: doc 'd9' is not in 'corpus'"):
        golden_from_llamaindex(data)
    p = tmp_path / "qa.json"
    p.write_text(json.dumps({"queries": {}, "corpus": {}}))
    with pytest.raises(
        ParseError, match=r"qa\.json: expected an EmbeddingQAFinetuneDataset .* missing 'relevant_docs'"
    ):
        read_golden_llamaindex(p)
    p.write_text('{"queries": {\n')
    with pytest.raises(ParseError, match=r"qa\.json:2: expected JSON"):
        read_golden_llamaindex(p)


def test_llamaindex_dataset_object_duck_typed() -> None:
    class EmbeddingQAFinetuneDataset:  # the removed class's fields
        def __init__(self) -> None:
            self.queries = {"q1": "What causes scurvy?"}
            self.corpus = CORPUS
            self.relevant_docs = {"q1": ["d1"]}
            self.mode = "text"

    golden = golden_from_llamaindex(EmbeddingQAFinetuneDataset())
    assert golden.qrels.to_dict() == {"q1": {"d1": 1}}
    assert read_golden(EmbeddingQAFinetuneDataset()).texts() == {"q1": "What causes scurvy?"}


def test_llamaindex_retriever_evaluator_results() -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core.evaluation.retrieval.base import RetrievalEvalResult

    golden = read_golden_llamaindex(FORMS / "qa_dataset.json")
    results = [
        RetrievalEvalResult(
            query="What causes scurvy?",
            expected_ids=["d1"],
            retrieved_ids=["d3", "d1"],
            retrieved_texts=["", ""],
            metric_dict={},
        ),
        RetrievalEvalResult(
            query="Who wrote Hamlet?",
            expected_ids=["d2"],
            retrieved_ids=["d2", "d1"],
            retrieved_texts=["", ""],
            metric_dict={},
        ),
    ]
    qrels, run = qrels_run_from_llamaindex(results, queries=golden)
    assert qrels.to_dict() == {"q1": {"d1": 1}, "q2": {"d2": 1}}
    assert run.ranking("q1") == ["d3", "d1"] and run.ranking("q2") == ["d2", "d1"]
    from rankbridge import evaluate

    assert evaluate(qrels, run, ["mrr"]).mean["mrr"] == pytest.approx(0.75)
    dicts = [r.model_dump() for r in results]
    q2, r2 = qrels_run_from_llamaindex(dicts)  # no golden set: ids from the text
    assert list(q2) == [stable_query_id("What causes scurvy?"), stable_query_id("Who wrote Hamlet?")]
    assert r2.ranking(stable_query_id("Who wrote Hamlet?")) == ["d2", "d1"]
    with pytest.raises(InputError, match=r"results\[0\]: 'query' 'What is vitamin C\?' matches no query"):
        qrels_run_from_llamaindex([{**dicts[0], "query": "What is vitamin C?"}], queries=golden)
    with pytest.raises(InputError, match=r"results\[0\]: missing field 'retrieved_ids'"):
        qrels_run_from_llamaindex([{"query": "What causes scurvy?", "expected_ids": []}], queries=golden)


# -- RAGAS -----------------------------------------------------------------------------------------
def test_ragas_matching_exact_normalized_fuzzy_and_unmatched_listed() -> None:
    match = match_ragas_contexts(FORMS / "ragas_testset.jsonl", FORMS / "corpus.jsonl", fuzzy_threshold=90)
    assert [(c.method, c.doc_ids) for c in match.contexts] == [
        ("fuzzy", ("d1",)),
        ("normalized", ("d2",)),
        ("exact", ("d3",)),
        (None, ()),
    ]
    assert match.counts == {"exact": 1, "normalized": 1, "fuzzy": 1, "unmatched": 1}
    assert match.contexts[0].score == pytest.approx(98.0)
    (lost,) = match.unmatched
    assert lost.text == "Kiwis too." and lost.where.endswith("ragas_testset.jsonl:3") and lost.score is not None
    assert "fuzzy threshold 90" in match.summary()
    golden = match.golden
    assert golden.queries[0].category == "single_hop_specific_query_synthesizer"
    assert golden.queries[0].reference == "A lack of vitamin C."
    assert list(golden.qrels.values()) == [{"d1": 1}, {"d2": 1}, {"d3": 1}]
    stricter = match_ragas_contexts(FORMS / "ragas_testset.jsonl", CORPUS, fuzzy_threshold=99)
    assert stricter.counts["fuzzy"] == 0 and stricter.counts["unmatched"] == 2
    off = match_ragas_contexts(FORMS / "ragas_testset.jsonl", CORPUS, fuzzy_threshold=None)
    assert off.contexts[0].method is None and off.contexts[0].score is None


def test_ragas_unmatched_warns_or_raises_never_silent() -> None:
    with pytest.warns(UnmatchedContextsWarning, match=r"1 of 4 reference contexts matched no corpus document") as rec:
        golden = read_golden_ragas(FORMS / "ragas_testset.jsonl", CORPUS)
    assert golden.name == "ragas_testset"
    warning = rec[0].message
    assert isinstance(warning, UnmatchedContextsWarning) and warning.match.unmatched[0].text == "Kiwis too."
    with pytest.raises(ContextMatchError, match=r"ragas_testset\.jsonl:3: query 'q[0-9a-f]{12}' context 1") as exc:
        read_golden_ragas(FORMS / "ragas_testset.jsonl", CORPUS, unmatched="error")
    assert exc.value.match.counts["unmatched"] == 1
    rows = [{"user_input": "x?", "reference_contexts": ["nothing like any document"]}]
    with pytest.warns(UnmatchedContextsWarning, match="1 questions have no matched context and are not judged"):
        unjudged = golden_from_ragas(rows, CORPUS)
    assert len(unjudged.queries) == 1 and len(unjudged.qrels) == 0


def test_ragas_without_rapidfuzz_asks_for_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "rapidfuzz", None)
    with pytest.raises(MissingExtraError, match=r"needs the 'rapidfuzz' package.*rankbridge\[ragas\]"):
        match_ragas_contexts(FORMS / "ragas_testset.jsonl", CORPUS)
    assert match_ragas_contexts(FORMS / "ragas_testset.jsonl", CORPUS, fuzzy_threshold=None).counts["exact"] == 1


def test_ragas_real_testset_evaluation_dataset_and_pandas(tmp_path: Path) -> None:
    _ragas()
    from ragas.dataset_schema import EvaluationDataset, SingleTurnSample
    from ragas.testset import Testset
    from ragas.testset.synthesizers.testset_schema import TestsetSample

    rows = [json.loads(line) for line in (FORMS / "ragas_testset.jsonl").read_text().splitlines()]
    testset = Testset(
        samples=[
            TestsetSample(
                eval_sample=SingleTurnSample(
                    user_input=r["user_input"], reference=r["reference"], reference_contexts=r["reference_contexts"]
                ),
                synthesizer_name=r["synthesizer_name"],
            )
            for r in rows
        ]
    )
    golden_dir = read_golden(FORMS / "beir")  # a GoldenSet's corpus is a corpus too
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnmatchedContextsWarning)
        from_testset = golden_from_ragas(testset, golden_dir)
        from_eval = golden_from_ragas(testset.to_evaluation_dataset(), CORPUS)
        from_pandas = golden_from_ragas(testset.to_pandas(), CORPUS)
        testset.to_jsonl(str(tmp_path / "testset.jsonl"))
        from_jsonl = read_golden(tmp_path / "testset.jsonl", corpus=CORPUS)
        testset.to_csv(str(tmp_path / "testset.csv"))  # lists as Python reprs
        from_csv = read_golden(tmp_path / "testset.csv", corpus=CORPUS)
        from_dispatch = read_golden(testset, corpus=CORPUS)
    expected = {stable_query_id(r["user_input"]): {d: 1} for r, d in zip(rows, ("d1", "d2", "d3"), strict=True)}
    for golden in (from_testset, from_eval, from_pandas, from_jsonl, from_csv, from_dispatch):
        assert golden.qrels.to_dict() == expected
    assert from_testset.queries[2].category == "multi_hop_abstract_query_synthesizer"
    assert from_eval.queries[2].category is None  # an EvaluationDataset has no synthesizer names
    assert isinstance(EvaluationDataset, type)


def test_ragas_rows_with_ids_and_errors() -> None:
    rows = [{"user_input": "a?", "reference_context_ids": ["d1", "d2"], "reference_contexts": ["ignored"]}]
    match = match_ragas_contexts(rows, CORPUS)
    assert [c.method for c in match.contexts] == ["given", "given"]
    assert match.golden.qrels.to_dict() == {stable_query_id("a?"): {"d1": 1, "d2": 1}}
    with pytest.raises(ParseError, match=r"row 0, column 'reference_contexts': expected a list of context texts"):
        match_ragas_contexts([{"user_input": "a?", "reference_contexts": [1, 2]}], CORPUS)
    with pytest.raises(InputError, match=r"fuzzy_threshold must be between 0 and 100 .* Got 150"):
        match_ragas_contexts(rows, CORPUS, fuzzy_threshold=150)
    with pytest.raises(InputError, match=r"a RAGAS testset .* pass corpus="):
        read_golden(FORMS / "ragas_testset.jsonl")


def test_ragas_duplicate_texts_all_relevant() -> None:
    corpus = {"a": "Same text.", "b": "same text", "c": "Other."}
    match = match_ragas_contexts([{"user_input": "q?", "reference_contexts": ["SAME TEXT"]}], corpus)
    assert match.contexts[0].doc_ids == ("a", "b") and match.contexts[0].method == "normalized"


# -- ranx ------------------------------------------------------------------------------------------
def test_ranx_round_trip_and_same_scores() -> None:
    ranx = pytest.importorskip("ranx")
    rq = ranx.Qrels({"q1": {"d1": 2, "d3": 1}, "q2": {"d2": 1}}, name="gold")
    rr = ranx.Run({"q1": {"d3": 0.9, "d1": 0.4, "d2": 0.1}, "q2": {"d1": 0.8, "d2": 0.7}}, name="bm25")
    qrels, run = qrels_from_ranx(rq), run_from_ranx(rr)
    assert isinstance(qrels, Qrels) and isinstance(run, Run)
    assert qrels.name == "gold" and run.name == "bm25" and qrels.to_dict() == EXPECTED_QRELS
    assert run.ranking("q1") == ["d3", "d1", "d2"]
    from rankbridge import evaluate

    ours = evaluate(qrels, run, ["ndcg@10", "mrr"]).mean
    theirs = ranx.evaluate(rq, rr, ["ndcg@10", "mrr"])
    assert ours["ndcg@10"] == pytest.approx(theirs["ndcg@10"]) and ours["mrr"] == pytest.approx(theirs["mrr"])
    back_q = to_ranx(qrels)
    back_r = to_ranx(Run.from_ranked({"q1": ["d2", "d1"], "q2": ["d2"]}, name="dense"))
    assert isinstance(back_q, ranx.Qrels) and back_q.to_dict() == EXPECTED_QRELS
    assert isinstance(back_r, ranx.Run) and back_r.name == "dense"
    assert list(back_r.to_dict()["q1"]) == ["d2", "d1"] and back_r.to_dict()["q1"]["d2"] > back_r.to_dict()["q1"]["d1"]
    with pytest.raises(InputError, match=r"qrels\['q1'\]: expected an integer relevance label, found float 0\.5"):
        qrels_from_ranx({"q1": {"d1": 0.5}})
    with pytest.raises(InputError, match="expected a rankbridge Qrels or Run, found dict"):
        to_ranx({})  # type: ignore[arg-type]


# -- read_golden -----------------------------------------------------------------------------------
def test_read_golden_chooses_by_type_suffix_and_content(forms: Path) -> None:
    pd = pytest.importorskip("pandas")
    assert read_golden(forms / "golden.jsonl").qrels.to_dict() == EXPECTED_QRELS
    assert read_golden(forms / "beir").qrels.to_dict() == EXPECTED_QRELS
    assert read_golden(forms / "beir_gz").qrels.to_dict() == EXPECTED_QRELS
    assert read_golden(forms / "qa_dataset.json").name == "qa_dataset"
    assert read_golden(pd.read_json(forms / "golden.jsonl", lines=True)).qrels.to_dict() == EXPECTED_QRELS
    rows = [json.loads(line) for line in (forms / "golden.jsonl").read_text().splitlines()]
    assert read_golden(rows).qrels.to_dict() == EXPECTED_QRELS
    golden = read_golden(forms / "golden.jsonl")
    assert read_golden(golden) is golden
    (forms / "other.json").write_text('{"questions": []}')
    with pytest.raises(
        ParseError, match=r"other\.json: expected a LlamaIndex EmbeddingQAFinetuneDataset .* found 'questions'"
    ):
        read_golden(forms / "other.json")
    with pytest.raises(InputError, match=r"expected a BEIR folder or a \.json.*found \.xlsx"):
        (forms / "g.xlsx").write_text("")
        read_golden(forms / "g.xlsx")
    with pytest.raises(InputError, match="no such file or folder"):
        read_golden(forms / "missing.jsonl")
    with pytest.raises(
        InputError, match=r"option 'delimiter' does not apply to a BEIR folder \(read by read_golden_beir\)"
    ):
        read_golden(forms / "beir", delimiter=";")
    with pytest.raises(InputError, match="expected a path, a DataFrame"):
        read_golden(42)


def test_loaders_import_no_framework() -> None:
    code = (
        "import sys\n"
        "from rankbridge.io import golden, tables, beir_gz, ir_datasets, llamaindex_json, ragas_testset, ranx\n"
        "g = golden.read_golden(sys.argv[1])\n"
        "heavy = [m for m in ('pandas', 'pyarrow', 'datasets', 'ir_datasets', 'ranx', 'ragas', 'rapidfuzz',"
        " 'llama_index', 'numba') if m in sys.modules]\n"
        "print(','.join(heavy))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(FORMS / "qa_dataset.json")], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == ""


# -- docs/data.md ----------------------------------------------------------------------------------
def _doc_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOCS.read_text(encoding="utf-8"), flags=re.S)


def test_docs_have_snippets_for_every_loader() -> None:
    text = "\n".join(_doc_blocks())
    for name in (
        "read_golden_jsonl",
        "read_golden_csv",
        "read_golden_parquet",
        "golden_from_pandas",
        "golden_from_hf",
        "read_golden_beir",
        "golden_from_ir_datasets",
        "read_golden_llamaindex",
        "qrels_run_from_llamaindex",
        "golden_from_ragas",
        "match_ragas_contexts",
        "qrels_from_ranx",
        "run_from_ranx",
        "to_ranx",
        "read_golden",
    ):
        assert f"{name}(" in text, f"docs/data.md has no snippet calling {name}"


@pytest.mark.parametrize("index", range(len(_doc_blocks())))
def test_docs_snippet_runs(index: int, forms: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
    monkeypatch.chdir(forms)
    block = _doc_blocks()[index]
    namespace: dict[str, Any] = {}
    exec(compile(block, f"docs/data.md[python block {index}]", "exec"), namespace)
    produced = [namespace[k] for k in ("golden", "qrels", "run", "match") if k in namespace]
    assert produced, "the snippet reads nothing into golden / qrels / run / match"
    for value in produced:
        if isinstance(value, GoldenSet):
            assert len(value) >= 1 and len(value.qrels) >= 1
        elif isinstance(value, (Qrels, Run)):
            assert len(value) >= 1


def test_classmethods_delegate_to_the_loaders(tmp_path: Path) -> None:
    """GoldenSet / Qrels / Run read every form through one-line classmethods, equal to the io functions."""
    import json

    from rankbridge import GoldenSet, Qrels, Run
    from rankbridge.io import golden_from_rows, read_golden

    rows = [
        {"question": "What causes scurvy?", "relevant_ids": ["d1"], "category": "health"},
        {"question": "Why do dogs bark?", "relevant_ids": ["d2", "d3"]},
    ]
    path = tmp_path / "golden.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    via_function = read_golden(path)
    for golden in (GoldenSet.read(path), GoldenSet.from_jsonl(path), GoldenSet.from_rows(rows)):
        assert golden.texts() == via_function.texts() and golden.qrels.to_dict() == via_function.qrels.to_dict()
    assert golden_from_rows(rows).queries[0].category == "health"
    qa = tmp_path / "qa.json"
    qa.write_text(
        json.dumps({"queries": {"a": "q?"}, "corpus": {"d": "t"}, "relevant_docs": {"a": ["d"]}, "mode": "text"})
    )
    assert GoldenSet.from_llamaindex(qa).qrels.to_dict() == {"a": {"d": 1}}
    ranx = pytest.importorskip("ranx")
    qrels = Qrels({"q1": {"d1": 2}})
    run = Run.from_scores({"q1": {"d1": 0.5, "d2": 0.1}}, name="bm25")
    assert Qrels.from_ranx(qrels.to_ranx()).to_dict() == qrels.to_dict()
    back = Run.from_ranx(run.to_ranx())
    assert back.ranking("q1") == run.ranking("q1") and isinstance(run.to_ranx(), ranx.Run)


# the public signatures of the golden-table readers, as they were spelled out before the keywords were declared once
_GOLDEN_COLUMNS = ("id_column", "question_column", "relevant_column", "labels_column", "category_column")
_GOLDEN_KEYWORDS: dict[Any, dict[str, Any]] = {
    golden_from_rows: {"name": "golden"},
    read_golden_jsonl: {"name": None},
    read_golden_csv: {"delimiter": None, "name": None},
    read_golden_parquet: {"name": None},
    golden_from_pandas: {"name": "golden"},
    golden_from_hf: {"split": "test", "name": "golden"},
}


@pytest.mark.parametrize("reader", list(_GOLDEN_KEYWORDS), ids=lambda r: r.__name__)
def test_golden_readers_spell_out_their_keywords_and_refuse_any_other(reader: Any) -> None:
    """help() and read_golden see every keyword with its default; a misspelt one is Python's TypeError."""
    import inspect

    params = inspect.signature(reader).parameters
    keyword_only = {n: p.default for n, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    expected = {**_GOLDEN_KEYWORDS[reader], "qrels": None, "corpus": None}
    expected.update(dict.fromkeys((*_GOLDEN_COLUMNS, "reference_column")))
    assert keyword_only == expected
    assert [n for n, p in params.items() if p.kind is not inspect.Parameter.KEYWORD_ONLY] == [next(iter(params))]
    with pytest.raises(TypeError, match=rf"^{reader.__name__}\(\) got an unexpected keyword argument 'query_colum'$"):
        reader([], query_colum="query")
    with pytest.raises(InputError, match=r"option 'query_colum' does not apply .* it takes: .*question_column"):
        read_golden([{"query": "q?", "relevant_ids": ["d1"]}], query_colum="query")


def test_golden_reader_keywords_reach_the_reader(tmp_path: Path) -> None:
    """Each keyword given is used, each left out is its default (a column named, qrels and corpus given apart)."""
    path = tmp_path / "golden.csv"
    path.write_text('key;prompt;gold;label_map;kind;answer\nk1;scurvy?;d1;{"d2": 2};med;vitamin C\n')
    golden = read_golden_csv(
        path,
        delimiter=";",
        id_column="key",
        question_column="prompt",
        relevant_column="gold",
        labels_column="label_map",
        category_column="kind",
        reference_column="answer",
        corpus={"d1": "Scurvy is...", "d2": "Vitamin C..."},
    )
    query = golden.queries[0]
    assert (golden.name, query.id, query.text, query.category, query.reference) == (
        "golden",
        "k1",
        "scurvy?",
        "med",
        "vitamin C",
    )
    assert golden.qrels.to_dict() == {"k1": {"d1": 1, "d2": 2}} and set(golden.corpus or {}) == {"d1", "d2"}
    apart = golden_from_rows([{"id": "k1", "query": "scurvy?"}], qrels={"k1": {"d9": 1}}, name="given")
    assert (apart.name, apart.qrels.to_dict()) == ("given", {"k1": {"d9": 1}})


def test_qrels_and_corpus_tables_without_their_columns_say_what_they_need() -> None:
    rows = [{"query": "scurvy?"}]
    with pytest.raises(ParseError, match=r"expected a qrels table with a query id column .*; found columns: qid_x"):
        golden_from_rows(rows, qrels=[{"qid_x": "q1"}])
    with pytest.raises(ParseError, match=r"expected a corpus table with an id column .* text column .*: _id, body"):
        golden_from_rows([{"id": "q1", "query": "scurvy?"}], qrels={"q1": ["d1"]}, corpus=[{"_id": "d1", "body": "x"}])
