"""``rankbridge run``: loading the user's retriever, reading queries, writing and resuming runs."""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rankbridge.cli import main
from rankbridge.cli._loader import load_object as load_retriever
from rankbridge.cli._loader import split_spec
from rankbridge.errors import InputError
from rankbridge.io import read_run, read_run_jsonl
from rankbridge.io.queries import load_queries

_counter = itertools.count()

RETRIEVER_MODULE = '''
CALLS = []
DOCS = {"d1": "scurvy is caused by a lack of vitamin c", "d2": "rickets comes from a lack of vitamin d",
        "d3": "citrus fruit holds vitamin c", "d4": "sunlight makes vitamin d in the skin"}

def search(query, k):
    CALLS.append(query)
    if query == "boom":
        raise RuntimeError("index offline")
    words = set(query.lower().split())
    scored = sorted(DOCS, key=lambda d: (-len(words & set(DOCS[d].split())), d))
    return [(d, float(len(words & set(DOCS[d].split())))) for d in scored][:k]

def make():
    """A zero-argument factory: called to build the retriever."""
    return search

class Retriever:
    def __init__(self, prefix="d"):
        self.prefix = prefix
    def retrieve(self, query, k):
        from rankbridge import Hit
        return [Hit(f"{self.prefix}{i}") for i in range(1, k + 1)]
    async def aretrieve(self, query, k):
        return self.retrieve(query, k)

def broken():
    raise ValueError("no index built")

NOT_CALLABLE = 42
'''

QUERIES = [
    {"_id": "q1", "text": "what causes scurvy vitamin c"},
    {"_id": "q2", "text": "rickets vitamin d"},
    {"_id": "q3", "text": "sunlight skin"},
]


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A cwd with queries; sys.path restored and the test's own user modules forgotten afterwards."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    (tmp_path / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUERIES))
    yield tmp_path
    for name in [m for m in sys.modules if m.startswith(("user_app_", "rankbridge_user_user_app_"))]:
        del sys.modules[name]


def _module(workdir: Path, source: str = RETRIEVER_MODULE) -> str:
    name = f"user_app_{next(_counter)}"
    (workdir / f"{name}.py").write_text(source)
    return name


def _calls(module: str) -> list[str]:
    calls: list[str] = sys.modules[module].CALLS
    return calls


def test_module_attr_to_jsonl(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mod = _module(workdir)
    assert main(["run", f"{mod}:search", "--queries", "queries.jsonl", "-k", "2", "-o", "out/run.jsonl", "-q"]) == 0
    out = capsys.readouterr().out
    assert "3 queries: 3 succeeded, 0 failed." in out
    assert "wrote out/run.jsonl (3 queries, k=2)" in out
    run = read_run_jsonl(workdir / "out" / "run.jsonl")
    assert run.ranking("q1") == ["d1", "d3"]
    assert run.ranking("q2") == ["d2", "d4"]
    assert set(run.latency) == {"q1", "q2", "q3"}
    assert sorted(p.name for p in (workdir / "out").iterdir()) == ["run.jsonl"]  # no checkpoint left behind


def test_file_path_spec_tsv_queries_and_trec_output(workdir: Path) -> None:
    mod = _module(workdir)
    (workdir / "q.tsv").write_text("qid\ttext\nq1\tscurvy vitamin c\nq2\trickets\n")
    assert main(["run", f"./{mod}.py:search", "--queries", "q.tsv", "-k", "3", "-o", "run.txt", "-q"]) == 0
    run = read_run(workdir / "run.txt")
    assert run.name == "run" and run.ranking("q1") == ["d1", "d3", "d2"]


@pytest.mark.parametrize("attr", ["make", "make()", "Retriever", "Retriever()"])
def test_factories_are_called(workdir: Path, attr: str) -> None:
    mod = _module(workdir)
    assert main(["run", f"{mod}:{attr}", "--queries", "queries.jsonl", "-k", "2", "-o", "r.jsonl", "-q"]) == 0
    assert len(read_run_jsonl(workdir / "r.jsonl").ranking("q1")) == 2


def test_failures_are_kept_and_exit_3(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mod = _module(workdir)
    (workdir / "queries.jsonl").write_text('{"_id": "q1", "text": "scurvy"}\n{"_id": "q2", "text": "boom"}\n')
    args = ["run", f"{mod}:search", "--queries", "queries.jsonl", "-q", "--retries", "0"]
    assert main([*args, "-o", "r.jsonl"]) == 3
    out = capsys.readouterr().out
    assert "1 failed (error: 1)" in out and "index offline" in out
    run = read_run_jsonl(workdir / "r.jsonl")
    assert "index offline" in run.errors["q2"]
    # A TREC file cannot hold errors: said on stderr.
    assert main([*args, "-o", "r.txt"]) == 3
    assert "failed queries are not in the TREC file" in capsys.readouterr().err


def test_resume_runs_only_what_is_missing(workdir: Path) -> None:
    mod = _module(workdir)
    partial = workdir / "r.jsonl.partial.jsonl"
    partial.write_text(json.dumps({"query_id": "q1", "hits": [{"doc_id": "d9"}], "k": 10}) + "\n")
    assert main(["run", f"{mod}:search", "--queries", "queries.jsonl", "-o", "r.jsonl", "-q", "--resume"]) == 0
    assert sorted(_calls(mod)) == ["rickets vitamin d", "sunlight skin"]
    run = read_run_jsonl(workdir / "r.jsonl")
    assert run.ranking("q1") == ["d9"]  # kept from the checkpoint
    assert not partial.exists()


def test_resume_extends_a_finished_jsonl_run(workdir: Path) -> None:
    mod = _module(workdir)
    (workdir / "two.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUERIES[:2]))
    assert main(["run", f"{mod}:search", "--queries", "two.jsonl", "-o", "r.jsonl", "-q"]) == 0
    assert main(["run", f"{mod}:search", "--queries", "queries.jsonl", "-o", "r.jsonl", "-q", "--resume"]) == 0
    assert _calls(mod)[2:] == ["sunlight skin"]
    assert sorted(read_run_jsonl(workdir / "r.jsonl").query_ids()) == ["q1", "q2", "q3"]


def test_without_resume_a_stale_checkpoint_is_discarded(workdir: Path) -> None:
    mod = _module(workdir)
    (workdir / "r.jsonl.partial.jsonl").write_text(json.dumps({"query_id": "q1", "hits": ["d9"]}) + "\n")
    assert main(["run", f"{mod}:search", "--queries", "queries.jsonl", "-o", "r.jsonl", "-q"]) == 0
    assert len(_calls(mod)) == 3
    assert read_run_jsonl(workdir / "r.jsonl").ranking("q1")[0] == "d1"


def test_interrupted_run_writes_no_output(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import rankbridge.runner as runner

    real = runner.run_retriever

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        run = real(*args, **kwargs)
        run.config.update(interrupted=True, unfinished=1)
        return run

    monkeypatch.setattr(runner, "run_retriever", interrupted)
    mod = _module(workdir)
    assert main(["run", f"{mod}:search", "--queries", "queries.jsonl", "-o", "r.jsonl", "-q"]) == 130
    assert "with --resume to finish" in capsys.readouterr().err
    assert not (workdir / "r.jsonl").exists()


def test_beir_folder_runs_the_judged_queries(workdir: Path) -> None:
    mod = _module(workdir)
    beir = workdir / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUERIES))
    (beir / "corpus.jsonl").write_text('{"_id": "d1", "text": "x"}\n')
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq2\td2\t1\n")
    assert main(["run", f"{mod}:search", "--queries", "beir", "-o", "r.jsonl", "-q"]) == 0
    assert read_run_jsonl(workdir / "r.jsonl").query_ids() == ["q2"]
    (beir / "qrels" / "test.tsv").unlink()
    (beir / "qrels").rmdir()
    assert [q.id for q in load_queries(beir)] == ["q1", "q2", "q3"]  # no qrels: every query


def test_query_readers_accept_common_field_names(tmp_path: Path) -> None:
    p = tmp_path / "q.jsonl"
    p.write_text('{"id": 1, "query": "a"}\n{"query_id": "2", "question": "b", "metadata": {"category": "x"}}\n')
    queries = load_queries(p)
    assert [(q.id, q.text, q.category) for q in queries] == [("1", "a", None), ("2", "b", "x")]


@pytest.mark.parametrize(
    ("content", "name", "fragment"),
    [
        ('{"text": "no id"}\n', "q.jsonl", "expected an id"),
        ("q1\n", "q.tsv", "expected 'id<TAB>text'"),
        ("q1\ta\nq1\tb\n", "q.tsv", "query id 'q1' appears twice"),
        ("", "q.tsv", "no queries found"),
    ],
)
def test_bad_queries(tmp_path: Path, content: str, name: str, fragment: str) -> None:
    (tmp_path / name).write_text(content)
    with pytest.raises(InputError, match=fragment):
        load_queries(tmp_path / name)


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("no_colon", "expected 'module:attr'"),
        ("mod:1bad", "expected 'module:attr'"),
        ("definitely_not_a_module_xyz:f", "cannot import 'definitely_not_a_module_xyz'"),
        ("missing.py:f", "no such file 'missing.py'"),
        ("{mod}:nope", "has no attribute 'nope'"),
        ("{mod}:broken", "broken() raised ValueError: no index built"),
        ("{mod}:NOT_CALLABLE()", "which is a int"),
        ("{raises}:f", "raised ZeroDivisionError"),
    ],
)
def test_bad_retriever_specs_exit_2(
    workdir: Path, capsys: pytest.CaptureFixture[str], spec: str, fragment: str
) -> None:
    mod = _module(workdir)
    raises = _module(workdir, "1 / 0\n")
    spec = spec.format(mod=mod, raises=raises)
    assert main(["run", spec, "--queries", "queries.jsonl", "-o", "r.jsonl", "-q"]) == 2
    err = capsys.readouterr().err
    assert fragment in err and "Traceback" not in err


def test_not_a_retriever_exits_2(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mod = _module(workdir)
    assert main(["run", f"{mod}:NOT_CALLABLE", "--queries", "queries.jsonl", "-o", "r.jsonl", "-q"]) == 2
    assert "cannot use a int as a retriever" in capsys.readouterr().err


def test_missing_queries_and_bad_k_exit_2(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mod = _module(workdir)
    assert main(["run", f"{mod}:search", "--queries", "absent.jsonl", "-o", "r.jsonl"]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    assert main(["run", f"{mod}:search", "--queries", "queries.jsonl", "-o", "r.jsonl", "-k", "0"]) == 2
    assert "k must be an int >= 1" in capsys.readouterr().err


def test_split_spec_windows_like_paths() -> None:
    assert split_spec(r"C:\apps\x.py:search") == (r"C:\apps\x.py", "search", False)


def test_load_retriever_keeps_functions_that_take_a_query(workdir: Path) -> None:
    mod = _module(workdir)
    assert load_retriever(f"{mod}:search").__name__ == "search"


def test_langchain_vector_store_from_a_module(workdir: Path) -> None:
    pytest.importorskip("langchain_core")
    source = (
        "from langchain_core.documents import Document\n"
        "from langchain_core.embeddings import DeterministicFakeEmbedding\n"
        "from langchain_core.vectorstores import InMemoryVectorStore\n"
        "store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))\n"
        "store.add_documents([Document(id=f'd{i}', page_content=f'text {i}') for i in range(5)])\n"
    )
    mod = _module(workdir, source)
    assert main(["run", f"{mod}:store", "--queries", "queries.jsonl", "-k", "3", "-o", "r.jsonl", "-q"]) == 0
    run = read_run_jsonl(workdir / "r.jsonl")
    assert all(len(run.ranking(q)) == 3 for q in ("q1", "q2", "q3"))
    assert all(h.score is not None and h.text for h in run.hits("q1"))
