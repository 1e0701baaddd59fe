"""Issue 19: ids, labels and scores as numpy/pandas/Arrow hand them out; writers that round-trip by
suffix; a BEIR folder writer; DataFrames in and out of Run and Qrels; short reprs."""

from __future__ import annotations

import os
import stat
import sys
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import rankbridge as rb
import rankbridge.io as rio
from rankbridge.errors import InputError, MissingExtraError, ParseError
from rankbridge.io import load_qrels, load_run, read_beir, write_beir, write_qrels, write_run
from rankbridge.io.trec import write_run as write_trec_run
from rankbridge.types import GoldenSet, Hit, Qrels, Query, Run

FRAME = pd.DataFrame(
    {
        "query_id": [101, 101, 101, 102, 102],
        "doc_id": ["d1", "d2", "d3", "d1", "d9"],
        "relevance": [2, 0, 1, 1, 3],
        "score": [0.9, 0.8, 0.7, 0.4, 0.6],
    }
)


# -- 1. numbers and ids from numpy / pandas / Arrow -----------------------------------------------
@pytest.mark.parametrize(
    "label", [np.int64(2), np.int32(2), np.uint8(2), np.int16(2), np.float64(2.0), np.float32(2.0), 2.0, 2]
)
def test_integral_labels_of_any_kind_are_accepted_as_int(label: object) -> None:
    qrels = Qrels({"q1": {"d1": label}})
    assert qrels["q1"]["d1"] == 2
    assert type(qrels["q1"]["d1"]) is int


@pytest.mark.parametrize(
    ("label", "found"),
    [
        (True, "True"),
        (np.bool_(True), r"np.True_"),
        (2.5, "2.5"),
        (np.float64(2.5), r"np.float64\(2.5\)"),
        (float("nan"), r"nan \(a missing value\?\)"),
        ("2", "'2'"),
        (None, "None"),
    ],
)
def test_non_integral_labels_are_refused_naming_the_key(label: object, found: str) -> None:
    with pytest.raises(InputError, match=rf"qrels\['q1'\]\['d1'\]: expected an integer relevance label, found {found}"):
        Qrels({"q1": {"d1": label}})


def test_numpy_ids_become_plain_str() -> None:
    qrels = Qrels({np.int64(7): {np.str_("d1"): 1, np.int32(5): 0}})
    assert qrels.to_dict() == {"7": {"d1": 1, "5": 0}}
    assert all(type(q) is str for q in qrels) and all(type(d) is str for d in qrels["7"])
    run = Run.from_scores({np.int64(7): {np.str_("d1"): np.float32(0.5), np.uint16(5): np.float64(0.25)}})
    assert run["7"] == {"d1": 0.5, "5": 0.25}
    assert all(type(d) is str for d in run["7"]) and all(type(s) is float for s in run["7"].values())
    ranked = Run.from_ranked({np.int64(1): np.array(["a", "b", "a"]), "2": np.array([10, 11], dtype=np.int64)})
    assert ranked.ranking("1") == ["a", "b"] and ranked.duplicates == {"1": 1}
    assert ranked.ranking("2") == ["10", "11"]
    assert all(type(h.doc_id) is str for h in ranked.hits("1"))


def test_hit_fields_from_numpy_are_normalised() -> None:
    run = Run.from_ranked({"q": [Hit(np.str_("d1"), np.float32(0.5)), Hit(np.int64(3), np.float64(0.25))]})
    hits = run.hits("q")
    assert [(type(h.doc_id), type(h.score)) for h in hits] == [(str, float), (str, float)]
    assert [h.doc_id for h in hits] == ["d1", "3"]


def test_bad_ids_name_the_key_and_hint_at_float_columns() -> None:
    with pytest.raises(
        InputError,
        match=r"qrels\['q1'\]\[1.0\]: expected a doc id as str \(or int\), found float 1.0 "
        r"\(ids read as floats because a column has missing values\?",
    ):
        Qrels({"q1": {1.0: 1}})
    with pytest.raises(InputError, match=r"qrels\[True\]: expected a query id as str \(or int\), found bool True"):
        Qrels({True: {"d": 1}})
    with pytest.raises(
        InputError, match=r"run\['q'\]\[1\]: expected a Hit, a doc id or a \(doc_id, score\) pair, found bool np.True_"
    ):
        Run.from_ranked({"q": ["a", np.bool_(True)]})
    with pytest.raises(InputError, match=r"Query\(id=1.5\): expected a query id"):
        Query(1.5, "text")  # type: ignore[arg-type]


def test_keys_equal_after_conversion_are_refused() -> None:
    with pytest.raises(InputError, match=r"qrels\['1'\]: query id '1' appears twice"):
        Qrels({1: {"a": 1}, "1": {"b": 1}})
    with pytest.raises(InputError, match="appears twice"):
        Run.from_scores({1: {"a": 1.0}, "1": {"b": 1.0}})
    with pytest.raises(InputError, match=r"run\['q'\]: two doc ids are the same"):
        Run.from_scores({"q": {1: 1.0, "1": 2.0}})


def test_what_pandas_hands_out_builds_qrels_and_runs() -> None:
    # groupby keys, .to_numpy() values and .loc cells are numpy scalars; itertuples gives Python ones
    groups = FRAME.groupby("query_id")
    by_query = {qid: dict(zip(g["doc_id"], g["relevance"].to_numpy(), strict=True)) for qid, g in groups}
    assert type(next(iter(by_query[101].values()))) is np.int64
    from_groupby = Qrels(by_query)
    from_tuples: dict[object, dict[object, object]] = {}
    for row in FRAME.itertuples(index=False):
        from_tuples.setdefault(row.query_id, {})[row.doc_id] = row.relevance
    from_loc = Qrels({FRAME.loc[i, "query_id"]: {FRAME.loc[i, "doc_id"]: FRAME.loc[i, "relevance"]} for i in [0]})
    assert type(FRAME.loc[0, "query_id"]) is np.int64
    expected = {"101": {"d1": 2, "d2": 0, "d3": 1}, "102": {"d1": 1, "d9": 3}}
    assert from_groupby.to_dict() == Qrels(from_tuples).to_dict() == expected
    assert from_loc.to_dict() == {"101": {"d1": 2}}
    # binary qrels straight from a groupby of doc ids (lists, numpy arrays, sets)
    relevant = FRAME[FRAME.relevance > 0]
    as_lists = relevant.groupby("query_id")["doc_id"].apply(list).to_dict()
    as_arrays = {q: g.to_numpy() for q, g in relevant.groupby("query_id")["doc_id"]}
    binary = {"101": {"d1": 1, "d3": 1}, "102": {"d1": 1, "d9": 1}}
    assert Qrels(as_lists).to_dict() == Qrels(as_arrays).to_dict() == binary
    # a run from numpy scores
    run = Run.from_scores({q: dict(zip(g["doc_id"], g["score"].to_numpy(), strict=True)) for q, g in groups})
    assert run.ranking("102") == ["d9", "d1"]
    ev = rb.evaluate(as_lists, run, ["recall@2"])
    assert ev.per_query["recall@2"] == {"101": 0.5, "102": 1.0}


def test_what_arrow_hands_out_builds_qrels() -> None:
    table = pa.table({"q": ["q1", "q1", "q2"], "d": [1, 2, 1], "rel": [2, 0, 1]})
    rows = table.to_pylist()
    from_rows: dict[str, dict[int, int]] = {}
    for r in rows:
        from_rows.setdefault(r["q"], {})[r["d"]] = r["rel"]
    qs, ds, rels = (table.column(c).to_numpy(zero_copy_only=False) for c in ("q", "d", "rel"))
    from_numpy: dict[object, dict[object, object]] = {}
    for q, d, r in zip(qs, ds, rels, strict=True):
        from_numpy.setdefault(q, {})[d] = r
    assert type(rels[0]) is np.int64
    expected = {"q1": {"1": 2, "2": 0}, "q2": {"1": 1}}
    assert Qrels(from_rows).to_dict() == Qrels(from_numpy).to_dict() == expected
    assert Qrels({"q1": {"d": table.column("rel")[0]}})["q1"]["d"] == 2  # an Arrow scalar


def test_binary_qrels_from_lists_sets_tuples() -> None:
    qrels = Qrels({"q1": ["a", "b", "a"], "q2": ("c",), "q3": {"d"}, "q4": frozenset(), "q5": {"e": 2}})
    assert qrels.to_dict() == {"q1": {"a": 1, "b": 1}, "q2": {"c": 1}, "q3": {"d": 1}, "q4": {}, "q5": {"e": 2}}
    with pytest.raises(InputError, match=r"qrels\['q1'\]\[1\]: expected a doc id as str \(or int\), found tuple"):
        Qrels({"q1": ["a", ("b", 2)]})
    with pytest.raises(InputError, match=r"qrels\['q1'\]: expected a mapping of doc id -> label or a list of relevant"):
        Qrels({"q1": "abc"})
    with pytest.raises(InputError, match=r"found int"):
        Qrels({"q1": 3})
    with pytest.raises(InputError, match=r"a pandas Series: pass .tolist\(\)"):
        Qrels({"q1": pd.Series([1, 0], index=["a", "b"])})


def test_readers_accept_numbers_written_by_other_tools(tmp_path: Path) -> None:
    (tmp_path / "q.jsonl").write_text('{"query_id": 1, "doc_id": 7, "relevance": 2.0}\n')
    assert load_qrels(tmp_path / "q.jsonl").to_dict() == {"1": {"7": 2}}
    (tmp_path / "bad.jsonl").write_text('{"query_id": 1, "doc_id": 7, "relevance": true}\n')
    with pytest.raises(ParseError, match=r"bad.jsonl:1: relevance: expected an integer relevance label, found True"):
        load_qrels(tmp_path / "bad.jsonl")


# -- 3. writers that round-trip ---------------------------------------------------------------------
def _rich_run() -> Run:
    run = Run(name="dense v2")
    # scores that do not decrease (a reranker's order): rank order must survive anyway
    run.add(
        "q1", [Hit("d3", 0.1, "third <b>doc</b>", {"page": 3, "tags": ["a"]}), Hit("d1", 0.9), Hit("d3")], latency=0.25
    )
    run.add("q2", [Hit("d2", None, "ünïcode\ttext\nwith lines")])
    run.add_error("q3", "TimeoutError: took longer than 5 s", latency=5.0)
    run.answers["q1"] = "Vitamin C."
    return run


def test_write_run_jsonl_suffix_round_trips_everything(tmp_path: Path) -> None:
    run = _rich_run()
    path = tmp_path / "x.jsonl"
    write_run(run, path)
    assert path.read_text().startswith('{"query_id": "q1"')  # JSON Lines, not TREC text
    back = load_run(path)
    assert back.name == "dense v2"
    assert back.ranking("q1") == ["d3", "d1"]
    assert back.hits("q1") == run.hits("q1") and back.hits("q2") == run.hits("q2")
    assert back.errors == run.errors and back.latency == run.latency
    assert back.duplicates == {"q1": 1} and back.answers == {"q1": "Vitamin C."}
    assert back.query_ids() == run.query_ids()
    write_run(run, tmp_path / "y.jsonl", tag="renamed")
    assert load_run(tmp_path / "y.jsonl").name == "renamed"


def test_write_run_other_suffixes_write_trec(tmp_path: Path) -> None:
    run = _rich_run()
    for name in ("x.run", "x.txt", "x.trec", "x.TREC"):
        write_run(run, tmp_path / name)
        back = load_run(tmp_path / name)
        assert back.name == "dense_v2"
        assert back.ranking("q1") == ["d3", "d1"] and back.ranking("q2") == ["d2"]
    with pytest.raises(InputError, match=r"expected a run file named \.jsonl .* found '\.json'"):
        write_run(run, tmp_path / "x.JSON")  # a TREC file under another format's name: refused
    # the module-level TREC writer stays TREC whatever the suffix
    write_trec_run(run, tmp_path / "forced.jsonl")
    assert (tmp_path / "forced.jsonl").read_text().splitlines()[0] == "q1 Q0 d3 1 2.0 dense_v2"
    with pytest.raises(ParseError, match="expected a JSON object"):
        load_run(tmp_path / "forced.jsonl")
    assert rio.trec.write_run is write_trec_run and rio.write_run is not write_trec_run


def test_scored_run_round_trips_by_every_suffix(tmp_path: Path) -> None:
    run = Run.from_scores({"q1": {"a": 1.0, "b": 2.5, "c": 2.5}, "q2": {"z": 0.1 + 0.2}}, name="bm25")
    for name in ("r.jsonl", "r.run"):
        write_run(run, tmp_path / name)
        back = load_run(tmp_path / name)
        assert back.name == "bm25"
        assert {q: back.ranking(q) for q in back} == {"q1": ["c", "b", "a"], "q2": ["z"]}
        assert {q: {h.doc_id: h.score for h in back.hits(q)} for q in back} == run.to_scores()


@pytest.mark.parametrize("name", ["q.jsonl", "q.tsv", "q.txt", "qrels"])
def test_qrels_round_trip_by_suffix(tmp_path: Path, name: str) -> None:
    qrels = Qrels({"q1": {"d1": 3, "d2": 0}, "q2": {"d9": -1}, "7": {"x": 1}})
    write_qrels(qrels, tmp_path / name)
    assert load_qrels(tmp_path / name).to_dict() == qrels.to_dict()
    first = (tmp_path / name).read_text().splitlines()[0]
    expected = {
        "q.jsonl": '{"query_id": "q1", "doc_id": "d1", "relevance": 3}',
        "q.tsv": "query-id\tcorpus-id\tscore",
    }.get(name, "q1 0 d1 3")
    assert first == expected


def test_qrels_writers_refuse_ids_their_format_cannot_hold(tmp_path: Path) -> None:
    with pytest.raises(ParseError, match="whitespace in a TREC file: 'q 1' 'd1'"):
        write_qrels({"q 1": {"d1": 1}}, tmp_path / "q.txt")
    with pytest.raises(InputError, match=r"qrels\['q1'\]\['d\\t1'\]: a doc id in a BEIR qrels file cannot"):
        write_qrels({"q1": {"d\t1": 1}}, tmp_path / "q.tsv")
    assert os.listdir(tmp_path) == []


# -- BEIR folders ---------------------------------------------------------------------------------
def _golden(name: str = "toy") -> GoldenSet:
    queries = [
        Query(
            "q2",
            "what causes scurvy?",
            category="medical",
            reference="Lack of vitamin C.",
            reference_context_ids=("d1",),
        ),
        Query("q1", "who wrote ünïcode", metadata={"source": "forum", "category": "ignored", "n": 3}),
        Query("q3", "a query with no category"),
    ]
    qrels = Qrels({"q2": {"d1": 2, "d2": 0}, "q1": {"d2": 1}, "q3": {"d1": 1, "d3": 1}})
    corpus = {
        "d1": {"title": "Scurvy", "text": "Scurvy is caused by a lack of vitamin C.", "metadata": {"year": 1753}},
        "d2": {"title": "", "text": "Unicode, by many people.", "metadata": {}, "url": "https://example.org"},
        "d3": {"title": "Sailors", "text": "Long voyages.", "metadata": {}},
    }
    return GoldenSet(queries, qrels, corpus=corpus, name=name)


def test_write_beir_reads_back_equal(tmp_path: Path) -> None:
    golden = _golden()
    folder = tmp_path / "toy"
    write_beir(golden, folder)
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) == [
        "corpus.jsonl",
        "qrels",
        "qrels/test.tsv",
        "queries.jsonl",
    ]
    back = read_beir(folder)
    assert back == golden
    assert [q.id for q in back.queries] == ["q2", "q1", "q3"]
    assert back.queries[1].category is None  # metadata's 'category' does not leak into the field
    assert back.queries[0].reference_context_ids == ("d1",)
    assert rb.GoldenSet.from_beir(str(folder)) == golden
    assert [p.name for p in tmp_path.iterdir()] == ["toy"]  # no temporary folder left


def test_write_beir_other_split_and_no_corpus(tmp_path: Path) -> None:
    golden = _golden()
    golden.corpus = None
    write_beir(golden, tmp_path / "toy", split="dev")
    assert not (tmp_path / "toy" / "corpus.jsonl").exists()
    assert read_beir(tmp_path / "toy", split="dev", load_corpus=False) == golden


def test_write_beir_refuses_non_empty_folders_unless_overwrite(tmp_path: Path) -> None:
    folder = tmp_path / "toy"
    write_beir(_golden(), folder)
    smaller = GoldenSet(
        [Query("q9", "new")],
        Qrels({"q9": {"d1": 1}}),
        corpus={"d1": {"title": "", "text": "t", "metadata": {}}},
        name="toy",
    )
    with pytest.raises(
        InputError, match=r"toy' ?: it is not empty \(holds corpus.jsonl, qrels, queries.jsonl\); pass overwrite=True"
    ):
        write_beir(smaller, folder)
    assert read_beir(folder) == _golden()
    (folder / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    write_beir(smaller, folder, overwrite=True)
    assert read_beir(folder) == smaller
    assert not (folder / "qrels" / "train.tsv").exists()  # the whole folder was replaced
    assert sorted(p.name for p in tmp_path.iterdir()) == ["toy"]
    # an empty folder is simply filled; a folder with foreign files is never deleted
    (tmp_path / "empty").mkdir()
    write_beir(smaller, tmp_path / "empty")
    assert read_beir(tmp_path / "empty").queries == smaller.queries
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "thesis.tex").write_text("precious")
    with pytest.raises(InputError, match=r"holds files this writer did not make \(thesis.tex\)"):
        write_beir(smaller, notes, overwrite=True)
    assert (notes / "thesis.tex").read_text() == "precious"
    (tmp_path / "afile").write_text("x")
    with pytest.raises(InputError, match="expected a folder or a new name, found a file"):
        write_beir(smaller, tmp_path / "afile", overwrite=True)


def test_write_beir_bad_input_leaves_nothing(tmp_path: Path) -> None:
    golden = _golden()
    golden.corpus = {"d1": {"title": "no text"}}
    with pytest.raises(InputError, match=r"corpus\['d1'\]: expected a mapping with a 'text' field, found fields title"):
        write_beir(golden, tmp_path / "toy")
    orphan = GoldenSet([Query("q1", "x")], Qrels({"q1": {"d": 1}, "q2": {"d": 1}}))
    with pytest.raises(InputError, match=r"judges 1 queries it has no text for \(e.g. 'q2'\)"):
        write_beir(orphan, tmp_path / "toy")
    with pytest.raises(InputError, match="split must be a plain file name"):
        write_beir(_golden(), tmp_path / "toy", split="../escape")
    assert os.listdir(tmp_path) == []


def test_write_beir_failure_midway_keeps_the_old_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "toy"
    write_beir(_golden(), folder)
    import rankbridge.io.beir as beir_mod

    def boom(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(beir_mod, "_write_qrels_rows", boom)
    with pytest.raises(OSError, match="disk full"):
        write_beir(_golden(), folder, overwrite=True)
    assert read_beir(folder) == _golden()
    assert [p.name for p in tmp_path.iterdir()] == ["toy"]


# -- atomic writes ----------------------------------------------------------------------------------
def test_atomic_write_follows_symlinks_and_writes_pipes_in_place(tmp_path: Path) -> None:
    real = tmp_path / "real.run"
    real.write_text("old\n")
    link = tmp_path / "link.run"
    link.symlink_to(real)
    write_run(Run.from_ranked({"q": ["a"]}, name="t"), link)
    assert link.is_symlink() and real.read_text() == "q Q0 a 1 1.0 t\n"
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    write_qrels({"q": {"a": 1}}, fifo)
    reader.join(timeout=10)
    assert got == ["q 0 a 1\n"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)  # not replaced by a regular file
    (tmp_path / "adir").mkdir()
    with pytest.raises(InputError, match="expected a file name, found a directory"):
        write_run(Run.from_ranked({"q": ["a"]}), tmp_path / "adir")


# -- 6. short reprs ---------------------------------------------------------------------------------
def test_reprs_of_big_objects_are_short() -> None:
    long_text = "word " * 5_000
    n = 2_000
    queries = [
        Query(f"q{i}", long_text, category=f"c{i % 7}", reference=long_text, metadata={f"k{j}": j for j in range(50)})
        for i in range(n)
    ]
    qrels = Qrels({f"q{i}": {f"d{j}": 1 for j in range(10)} for i in range(n - 1)})
    corpus = {f"d{j}": {"title": "t", "text": long_text, "metadata": {}} for j in range(3_000)}
    golden = GoldenSet(queries, qrels, corpus=corpus, name="lumen")
    assert repr(golden) == (
        "GoldenSet(name='lumen', queries=2000, judged=1999, judgments=19990, corpus=3000 docs, categories=7)"
    )
    assert str(golden) == repr(golden)
    run = Run.from_ranked(
        {f"q{i}": [Hit(f"d{j}", 1.0, long_text, {"big": long_text}) for j in range(10)] for i in range(n)}
    )
    run.stages["retrieved"] = Run()
    assert repr(run) == "Run(name='run', queries=2000, hits=20000, errors=0, stages=['retrieved'])"
    for obj in (golden, run, qrels, queries[0], run.hits("q1")[0], Query("q" * 10_000, "x"), Run(name="n" * 10_000)):
        assert len(repr(obj)) < 300, type(obj).__name__
    assert len(repr(queries[:100])) < 100 * 300
    assert repr(queries[0]).startswith("Query(id='q0', text='word word ")
    assert "metadata=<50 keys: k0, k1, k2, k3, k4...>" in repr(queries[0])


def test_short_reprs_keep_small_values_readable() -> None:
    assert repr(Hit("doc-1", score=0.83)) == "Hit(doc_id='doc-1', score=0.83, text=None, metadata=None)"
    assert repr(Hit("d", 1.0, "short", {"p": 1})) == "Hit(doc_id='d', score=1.0, text='short', metadata={'p': 1})"
    assert repr(Query("q1", "scurvy?", category="med")) == "Query(id='q1', text='scurvy?', category='med')"
    assert repr(Qrels({"q": {"a": 1, "b": 0}}, name="h")) == "Qrels(name='h', queries=1, judgments=2)"


# -- 4. DataFrames in and out -----------------------------------------------------------------------
def test_run_to_pandas_and_back_keeps_rank_order_scores_and_texts() -> None:
    run = _rich_run()
    df = run.to_pandas()
    assert list(df.columns) == ["query_id", "rank", "doc_id", "score", "text"]
    assert df["rank"].tolist() == [1, 2, 1] and df["doc_id"].tolist() == ["d3", "d1", "d2"]
    assert df["score"].isna().tolist() == [False, False, True]
    back = Run.from_pandas(df, rank_col="rank", text_col="text", name="dense v2")
    assert {q: back.hits(q) for q in back} == {q: [Hit(h.doc_id, h.score, h.text) for h in run.hits(q)] for q in run}
    assert list(Run.from_ranked({"q": ["a"]}).to_pandas().columns) == ["query_id", "rank", "doc_id", "score"]
    assert len(Run().to_pandas()) == 0


def test_run_from_pandas_scored_numpy_ids_and_shuffled_rows() -> None:
    df = FRAME.sample(frac=1.0, random_state=3)
    run = Run.from_pandas(df, name="bm25")
    assert run.name == "bm25" and run.is_scored("101")
    assert {q: run.ranking(q) for q in run} == {"101": ["d1", "d2", "d3"], "102": ["d9", "d1"]}
    with_text = Run.from_pandas(df.assign(text=[f"t{i}" for i in range(5)]), text_col="text")
    assert with_text.ranking("101") == ["d1", "d2", "d3"] and not with_text.is_scored("101")
    int_docs = pd.DataFrame(
        {"q": np.array([1, 1], dtype=np.int32), "d": np.array([5, 6], dtype=np.uint64), "r": [2, 1]}
    )
    assert Run.from_pandas(int_docs, query_col="q", doc_col="d", rank_col="r").ranking("1") == ["6", "5"]


def test_run_from_pandas_errors_name_column_row_and_alternatives() -> None:
    with pytest.raises(
        InputError,
        match=r"Run.from_pandas: doc_col='doc' is not a column of the frame; its columns are: "
        r"'query_id', 'doc_id', 'relevance', 'score'",
    ):
        Run.from_pandas(FRAME, doc_col="doc")
    ranked_only = FRAME.drop(columns="score").assign(rank=[1, 2, 3, 1, 2])
    with pytest.raises(InputError, match=r"score_col='score' is not a column.*pass rank_col='rank'"):
        Run.from_pandas(ranked_only)
    assert Run.from_pandas(ranked_only, rank_col="rank").ranking("101") == ["d1", "d2", "d3"]
    with pytest.raises(InputError, match=r"row 2, column 'score': expected a numeric score, found 'high'"):
        Run.from_pandas(FRAME.assign(score=[0.1, 0.2, "high", 0.3, 0.4]))
    with pytest.raises(InputError, match=r"row 1, column 'score': expected a numeric score, found NaN"):
        Run.from_pandas(FRAME.assign(score=[0.1, None, 0.2, 0.3, 0.4]))
    dup = pd.concat([FRAME, FRAME.iloc[[1]]], ignore_index=True)
    with pytest.raises(InputError, match=r"row 5: doc 'd2' appears twice for query '101' \(first on row 1\)"):
        Run.from_pandas(dup)
    kept = Run.from_pandas(dup, duplicates="first")
    assert kept.duplicates == {"101": 1} and kept.ranking("101") == ["d1", "d2", "d3"]
    with pytest.raises(InputError, match=r"query '101' has rank 1 on rows 0 and 1"):
        Run.from_pandas(FRAME.assign(rank=[1, 1, 2, 1, 2]), rank_col="rank")
    with pytest.raises(
        InputError,
        match=r"row 0, column 'query_id': expected a query id as str \(or int\), "
        r"found (float nan|NoneType None) \(a missing",
    ):
        Run.from_pandas(FRAME.assign(query_id=[None, "a", "a", "b", "b"]))
    with pytest.raises(InputError, match="expected a pandas DataFrame, found dict"):
        Run.from_pandas({"query_id": ["q"]})


def test_qrels_to_pandas_and_back() -> None:
    qrels = Qrels({"q1": {"d1": 2, "d2": 0}, "q2": {"d3": -1}}, name="human")
    df = qrels.to_pandas()
    assert list(df.columns) == ["query_id", "doc_id", "relevance"] and df["relevance"].dtype == np.int64
    assert Qrels.from_pandas(df).to_dict() == qrels.to_dict()
    assert Qrels.from_pandas(FRAME, name="f").to_dict() == {
        "101": {"d1": 2, "d2": 0, "d3": 1},
        "102": {"d1": 1, "d9": 3},
    }
    beir_like = FRAME.rename(columns={"query_id": "query-id", "doc_id": "corpus-id"})
    assert Qrels.from_pandas(beir_like, query_col="query-id", doc_col="corpus-id", label_col=None).to_dict() == {
        "101": {"d1": 1, "d2": 1, "d3": 1},
        "102": {"d1": 1, "d9": 1},
    }
    assert len(Qrels().to_pandas()) == 0


def test_qrels_from_pandas_errors() -> None:
    with pytest.raises(
        InputError, match=r"label_col='relevance' is not a column.*'query_id', 'doc_id', 'score'.*label_col=None reads"
    ):
        Qrels.from_pandas(FRAME.drop(columns="relevance"))
    with pytest.raises(InputError, match=r"row 3, column 'relevance': expected an integer relevance label, found 1.5"):
        Qrels.from_pandas(FRAME.assign(relevance=[2.0, 0.0, 1.0, 1.5, 3.0]))
    with pytest.raises(InputError, match=r"row 1, column 'relevance': expected an integer relevance label, found nan"):
        Qrels.from_pandas(FRAME.assign(relevance=[2, None, 1, 1, 3]))
    clash = pd.concat([FRAME, FRAME.iloc[[0]].assign(relevance=0)], ignore_index=True)
    with pytest.raises(InputError, match=r"row 5: doc 'd1' of query '101' is judged 0 here but 2 on row 0"):
        Qrels.from_pandas(clash)
    same = pd.concat([FRAME, FRAME.iloc[[0]]], ignore_index=True)
    assert Qrels.from_pandas(same)["101"] == {"d1": 2, "d2": 0, "d3": 1}


def test_dataframe_methods_without_pandas_name_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now raises ImportError
    for call in (Run().to_pandas, Qrels().to_pandas, lambda: Run.from_pandas(FRAME), lambda: Qrels.from_pandas(FRAME)):
        with pytest.raises(MissingExtraError, match=r"needs the 'pandas' package.*pip install 'rankbridge\[pandas\]'"):
            call()


def test_judgment_reprs_are_short() -> None:
    from rankbridge.judge.grading import JudgedQrels, JudgeReport, Judgments

    labels = {(f"q{i}", f"d{j}"): None for i in range(300) for j in range(10)}
    judged = JudgedQrels(
        Qrels({f"q{i}": {f"d{j}": 1 for j in range(10)} for i in range(300)}),
        {pair: "llm" for pair in labels},
        {"llm": {"model": "m"}},
    )
    assert len(repr(judged)) < 300 and "judgments=3000" in repr(judged) and "llm=3000" in repr(judged)
    grades = Judgments(labels, JudgeReport.__new__(JudgeReport), "m", "relevance/v1", "k")  # type: ignore[arg-type]
    assert len(repr(grades)) < 300 and "labels=3000" in repr(grades)
