"""Fuzzed inputs for every reader and every command that reads files: never a crash, never silent.

Each test starts from a small valid file and mutates it (byte flips, truncation, a BOM, huge numbers,
``inf``/``NaN``, Unicode whitespace, non-ASCII digits, deep nesting, empty ids, nulls). The outcome must be
one of:

* a parse equal to what a careful reader gives (for TREC and BEIR qrels an independent reference reader
  below, written from trec_eval's rules; for JSON formats the invariants every parsed value must hold), or
* a :class:`~rankbridge.errors.RankbridgeError` (``ParseError``/``InputError``) naming the file, with a
  bounded message; through the CLI, exit 2 naming the file.

Anything else (a traceback, exit 70) or a parse of input the reference reader refuses is a failure. The
budget is fixed (``derandomize=True``) so CI time is too; ``RANKBRIDGE_FUZZ_COUNTS=path`` writes the
outcome counts as JSON (docs/reliability.md quotes them).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import re
import textwrap
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankbridge import GoldenSet, Qrels, Run
from rankbridge.cli import main
from rankbridge.errors import ParseError, RankbridgeError
from rankbridge.io import (
    read_beir,
    read_beir_qrels,
    read_golden_csv,
    read_golden_jsonl,
    read_golden_llamaindex,
    read_openinference,
    read_qrels,
    read_qrels_jsonl,
    read_run,
    read_run_jsonl,
)
from rankbridge.io.queries import load_queries

# -- outcome counts ----------------------------------------------------------------------------------------
COUNTS: dict[str, Counter[str]] = {}


def _count(target: str, outcome: str) -> None:
    COUNTS.setdefault(target, Counter())[outcome] += 1


@pytest.fixture(scope="module", autouse=True)
def _write_counts() -> Iterator[None]:
    yield
    out = os.environ.get("RANKBRIDGE_FUZZ_COUNTS")
    if out:
        totals: Counter[str] = Counter()
        for c in COUNTS.values():
            totals.update(c)
        payload = {"targets": {k: dict(v) for k, v in sorted(COUNTS.items())}, "total": dict(totals)}
        Path(out).write_text(json.dumps(payload, indent=2) + "\n")


READER_SETTINGS = settings(
    max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
CLI_SETTINGS = settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])

# -- mutations ---------------------------------------------------------------------------------------------
BOM = "\ufeff".encode()
TOKENS = [
    "9" * 400,  # hundreds of digits
    "9" * 5000,  # more digits than Python reads as an int
    "1e400",
    "-1e400",
    "inf",
    "-Infinity",
    "NaN",
    "nan",
    str(2**63),
    str(-(2**63) - 1),
    "\u0663",  # ARABIC-INDIC DIGIT THREE
    "\uff11",  # FULLWIDTH DIGIT ONE
    "1_0",
    "\u00a0",
    "\u2003",
    "\u3000",
    "\u0085",
    "\u2028",
    "\x1c",
    "\x00",
    "\r",
    "\t",
    "\n",
    " ",
    "",
    '""',
    "null",
    "[" * 3000 + "]" * 3000,
    '{"a":' * 3000 + "1" + "}" * 3000,
    '"',
    "{",
    "]",
    "-1",
    "0.5",
    "true",
    "\ufeff",
]


@st.composite
def mutated(draw: st.DrawFn, seed: bytes) -> bytes:
    """``seed`` with one to three mutations."""
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["flip", "truncate", "bom", "insert", "replace_field", "delete"]))
        pos = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "flip" and data:
            data[pos] = draw(st.sampled_from([0xFF, 0x80, 0xC3, 0xED, 0x00, 0x0D, 0x09, 0x20, 0x22, 0x7B]))
        elif kind == "truncate":
            del data[pos:]
        elif kind == "bom":
            data[0:0] = BOM
        elif kind == "insert":
            data[pos:pos] = draw(st.sampled_from(TOKENS)).encode()
        elif kind == "delete" and data:
            del data[pos : pos + draw(st.integers(1, 8))]
        elif kind == "replace_field":
            # replace the run of "word" bytes around pos (a field, a number, an id) by a token
            start, end = pos, pos
            while start > 0 and data[start - 1] not in b" \t\n,:[]{}":
                start -= 1
            while end < len(data) and data[end] not in b" \t\n,:[]{}":
                end += 1
            data[start:end] = draw(st.sampled_from(TOKENS)).encode()
    return bytes(data)


_FILES = Counter[str]()


def _file(folder: Path, name: str, data: bytes) -> Path:
    """A fresh file ``name`` (a counter keeps examples apart) holding ``data``."""
    _FILES[name] += 1
    sub = folder / f"case{_FILES[name]}"
    sub.mkdir(parents=True, exist_ok=True)
    path = sub / name
    path.write_bytes(data)
    return path


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


# -- reference readers (trec_eval's rules, written independently of rankbridge's) ---------------------------
_TE_SPACE = re.compile(r"[ \t\r\v\f]+")  # C isspace() in the C locale, without the LF that ends the line
_PY_ONLY_SPACE = re.compile(r"[\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\x00]")
_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def _text(raw: bytes) -> str | None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text[1:] if text.startswith("\ufeff") else text


def _label(text: str) -> int | None:
    if not _INT.fullmatch(text) or len(text) > 4000:  # far more digits than 64 bits hold
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def reference_trec(raw: bytes, columns: int) -> dict[str, dict[str, Any]] | None:
    """What a careful trec_eval-compatible reader gives; None when it must refuse the file."""
    text = _text(raw)
    if text is None:
        return None
    data: dict[str, dict[str, Any]] = {}
    for line in text.split("\n"):
        fields = [f for f in _TE_SPACE.split(line) if f]
        if fields and _PY_ONLY_SPACE.search(line):
            return None  # Python and trec_eval would split it differently: refuse
        if not fields or fields[0].startswith("#"):
            continue
        if (columns == 4 and len(fields) != 4) or len(fields) < columns:
            return None
        qid, doc = fields[0], fields[2]
        value: Any
        if columns == 4:
            value = _label(fields[3])
            if value is None:
                return None
        else:
            if not _FLOAT.fullmatch(fields[4]) or not math.isfinite(float(fields[4])):
                return None
            value = float(fields[4])
        old = data.setdefault(qid, {}).get(doc)
        if old is not None and (columns == 6 or old != value):
            return None  # a repeated run line, or a qrels pair judged twice differently
        data[qid][doc] = value
    return data or None


def reference_beir_qrels(raw: bytes) -> dict[str, dict[str, int]] | None:
    text = _text(raw)
    if text is None:
        return None
    data: dict[str, dict[str, int]] = {}
    for lineno, line in enumerate(re.split(r"\r\n|\r|\n", text), 1):
        if not line.strip():
            continue
        cells = line.split("\t")
        if lineno == 1 and cells[0].strip().lower() in ("query-id", "query_id", "qid"):
            continue
        if len(cells) != 3:
            return None
        qid, doc, label_text = (c.strip() for c in cells)
        label = _label(label_text)
        if not qid or not doc or label is None:
            return None
        if data.setdefault(qid, {}).get(doc, label) != label:
            return None
        data[qid][doc] = label
    return data or None


# -- invariants of any parsed value --------------------------------------------------------------------------
def _good_id(value: object) -> bool:
    """A non-blank str. (A BOM is skipped once, at the start of a file; a second one is text.)"""
    return type(value) is str and bool(value.strip())


def check_qrels(qrels: Qrels) -> None:
    for qid, docs in qrels.items():
        assert _good_id(qid), qid
        for doc, label in docs.items():
            assert _good_id(doc), doc
            assert type(label) is int and -(2**63) <= label < 2**63, label


def check_run(run: Run) -> None:
    for qid in run.query_ids():
        assert _good_id(qid), qid
        assert math.isfinite(run.latency.get(qid, 0.0)) and run.latency.get(qid, 0.0) >= 0
        if qid not in run:
            continue
        for hit in run.hits(qid):
            assert _good_id(hit.doc_id), hit
            assert hit.score is None or (type(hit.score) is float and math.isfinite(hit.score)), hit
            assert hit.text is None or type(hit.text) is str, hit
            assert hit.metadata is None or isinstance(hit.metadata, dict), hit


def check_golden(golden: GoldenSet) -> None:
    check_qrels(golden.qrels)
    for q in golden.queries:
        assert _good_id(q.id) and type(q.text) is str, q
    for doc, entry in (golden.corpus or {}).items():
        assert _good_id(doc), doc
        assert type(entry["text"]) is str, entry


def _bounded(message: str, path: Path) -> bool:
    """The message quotes a bounded slice: the path, a few hundred characters of explanation."""
    return len(message) <= len(str(path)) + 500


def outcome(target: str, path: Path, read: Callable[[Path], Any], reference: Any = "no reference") -> Any:
    """Read ``path``; assert the outcome is a correct parse or a clean refusal naming the file."""
    try:
        value = read(path)
    except RankbridgeError as exc:
        if reference not in ("no reference", None):
            _count(target, "refused (reference parses)")
        assert str(path) in str(exc) or path.name in str(exc), f"the error does not name the file: {exc}"
        assert _bounded(str(exc), path), f"unbounded message ({len(str(exc))} characters)"
        _count(target, "refused")
        return None
    except Exception as exc:  # pragma: no cover - the failure this suite exists to catch
        _count(target, "crashed")
        raise AssertionError(f"{target}: {type(exc).__name__} escaped the reader: {exc!r:.300}") from exc
    if reference is None:
        _count(target, "silently accepted")
        raise AssertionError(f"{target}: parsed a file a careful reader refuses: {path.read_bytes()[:300]!r}")
    _count(target, "parsed")
    return value


# -- seeds --------------------------------------------------------------------------------------------------
QRELS = b"# judged\nq1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\r\nq2 0 d1 -1\n"
RUN = b"q1 Q0 d1 1 0.9 bm25\nq1 Q0 d2 2 0.5 bm25 extra\nq2 Q0 d3 1 1e-3 bm25\r\nq2 Q0 d1 2 -2 bm25\n"
RUN_JSONL = (
    b'{"query_id": "q1", "hits": [{"doc_id": "d1", "score": 0.9, "text": "vitamin C"}, {"doc_id": "d2"}], '
    b'"latency": 0.01, "run": "dense"}\n'
    b'{"query_id": "q2", "hits": ["d3", {"doc_id": "d1", "score": 2, "metadata": {"page": 1}}], "latency": 1}\n'
    b'{"query_id": "q3", "hits": [], "error": "timeout", "latency": 5.0}\n'
)
QRELS_JSONL = (
    b'{"query_id": "q1", "doc_id": "d1", "relevance": 1}\n{"query_id": "q1", "doc_id": "d2", "relevance": 0}\n'
    b'{"query_id": "q2", "doc_id": "d3", "relevance": 2}\n'
)
BEIR_QRELS = b"query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t0\nq2\td3\t2\n"
BEIR_QUERIES = (
    b'{"_id": "q1", "text": "what causes scurvy?", "metadata": {"category": "medical"}}\n'
    b'{"_id": "q2", "text": "who wrote hamlet", "reference": "Shakespeare"}\n'
)
BEIR_CORPUS = (
    b'{"_id": "d1", "title": "Scurvy", "text": "A lack of vitamin C."}\n'
    b'{"_id": "d2", "title": null, "text": "Citrus fruit."}\n{"_id": "d3", "text": "Hamlet is a play."}\n'
)
QUERIES_TSV = b"qid\ttext\nq1\twhat causes scurvy?\nq2\twho wrote hamlet\n"
QUERIES_JSONL = b'{"_id": "q1", "text": "what causes scurvy?"}\n{"id": 2, "query": "who wrote hamlet"}\n'
GOLDEN_JSONL = (
    b'{"query_id": "q1", "question": "what causes scurvy?", "relevant_ids": ["d1", "d2"]}\n'
    b'{"query_id": "q2", "question": "who wrote hamlet", "labels": {"d3": 2}}\n'
)
GOLDEN_CSV = b'id,question,relevant_ids,category\nq1,what causes scurvy?,d1;d2,medical\nq2,"who wrote ""hamlet""",d3,\n'
LLAMAINDEX = json.dumps(
    {
        "queries": {"q1": "what causes scurvy?", "q2": "who wrote hamlet"},
        "corpus": {"n1": "A lack of vitamin C.", "n2": "Hamlet is a play."},
        "relevant_docs": {"q1": ["n1"], "q2": ["n2"]},
        "mode": "text",
    },
    indent=1,
).encode()


def _otlp() -> bytes:
    def attr(key: str, value: Any) -> dict[str, Any]:
        if isinstance(value, int):
            return {"key": key, "value": {"intValue": str(value)}}
        return {"key": key, "value": {"stringValue": value}}

    span = {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": "eee19b7ec3c1b174",
        "name": "retrieve",
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000000500000000",
        "attributes": [
            attr("openinference.span.kind", "RETRIEVER"),
            attr("input.value", "what causes scurvy?"),
            attr("retrieval.documents.0.document.id", "d1"),
            attr("retrieval.documents.0.document.score", 1),
            attr("retrieval.documents.0.document.content", "A lack of vitamin C."),
            attr("retrieval.documents.1.document.id", "d2"),
        ],
        "status": {},
    }
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()


OTLP = _otlp()


def test_seeds_are_valid(tmp_path: Path) -> None:
    """Every seed parses, so that mutations start from valid input (and the references agree)."""
    assert read_qrels(_file(tmp_path, "q.txt", QRELS)).to_dict() == reference_trec(QRELS, 4)
    assert read_run(_file(tmp_path, "r.txt", RUN)).to_scores() == reference_trec(RUN, 6)
    assert read_beir_qrels(_file(tmp_path, "t.tsv", BEIR_QRELS)).to_dict() == reference_beir_qrels(BEIR_QRELS)
    check_run(read_run_jsonl(_file(tmp_path, "r.jsonl", RUN_JSONL)))
    check_qrels(read_qrels_jsonl(_file(tmp_path, "q.jsonl", QRELS_JSONL)))
    assert len(load_queries(_file(tmp_path, "q.tsv", QUERIES_TSV))) == 2
    assert len(load_queries(_file(tmp_path, "queries.jsonl", QUERIES_JSONL))) == 2
    check_golden(read_golden_jsonl(_file(tmp_path, "g.jsonl", GOLDEN_JSONL)))
    check_golden(read_golden_csv(_file(tmp_path, "g.csv", GOLDEN_CSV)))
    check_golden(read_golden_llamaindex(_file(tmp_path, "qa.json", LLAMAINDEX)))
    assert read_openinference(_file(tmp_path, "t.json", OTLP), check_ids=False).ranking  # a run with one query
    check_golden(read_beir(_beir(tmp_path, {})))


# -- readers ------------------------------------------------------------------------------------------------
@READER_SETTINGS
@given(raw=mutated(QRELS))
def test_trec_qrels(work: Path, raw: bytes) -> None:
    ref = reference_trec(raw, 4)
    qrels = outcome("TREC qrels", _file(work, "qrels.txt", raw), read_qrels, ref)
    if qrels is not None:
        assert qrels.to_dict() == ref
    else:  # a refusal is right only when the reference refuses too
        assert ref is None, f"refused a file trec_eval reads: {raw[:200]!r}"


@READER_SETTINGS
@given(raw=mutated(RUN))
def test_trec_run(work: Path, raw: bytes) -> None:
    ref = reference_trec(raw, 6)
    run = outcome("TREC run", _file(work, "run.txt", raw), read_run, ref)
    if run is not None:
        assert run.to_scores() == ref
    else:
        assert ref is None, f"refused a file trec_eval reads: {raw[:200]!r}"


@READER_SETTINGS
@given(raw=mutated(BEIR_QRELS))
def test_beir_qrels_tsv(work: Path, raw: bytes) -> None:
    ref = reference_beir_qrels(raw)
    qrels = outcome("BEIR qrels .tsv", _file(work, "test.tsv", raw), read_beir_qrels, ref)
    if qrels is not None:
        assert qrels.to_dict() == ref
    else:
        assert ref is None, f"refused a file a BEIR reader reads: {raw[:200]!r}"


@READER_SETTINGS
@given(raw=mutated(RUN_JSONL))
def test_jsonl_run(work: Path, raw: bytes) -> None:
    run = outcome("JSONL run", _file(work, "run.jsonl", raw), read_run_jsonl)
    if run is not None:
        check_run(run)


@READER_SETTINGS
@given(raw=mutated(QRELS_JSONL))
def test_jsonl_qrels(work: Path, raw: bytes) -> None:
    qrels = outcome("JSONL qrels", _file(work, "qrels.jsonl", raw), read_qrels_jsonl)
    if qrels is not None:
        check_qrels(qrels)


def _beir(folder: Path, files: dict[str, bytes]) -> Path:
    _FILES["beir"] += 1
    root = folder / f"beir{_FILES['beir']}"
    (root / "qrels").mkdir(parents=True)
    parts = {"queries.jsonl": BEIR_QUERIES, "corpus.jsonl": BEIR_CORPUS, "qrels/test.tsv": BEIR_QRELS, **files}
    for name, data in parts.items():
        (root / name).write_bytes(data)
    return root


@READER_SETTINGS
@given(part=st.sampled_from(["queries.jsonl", "corpus.jsonl"]), data=st.data())
def test_beir_folder_parts(work: Path, part: str, data: st.DataObject) -> None:
    raw = data.draw(mutated(BEIR_QUERIES if part == "queries.jsonl" else BEIR_CORPUS))
    root = _beir(work, {part: raw})
    golden = outcome(f"BEIR {part}", root / part, lambda _: read_beir(root))
    if golden is not None:
        check_golden(golden)


@READER_SETTINGS
@given(raw=mutated(QUERIES_TSV))
def test_query_tsv(work: Path, raw: bytes) -> None:
    queries = outcome("query TSV", _file(work, "queries.tsv", raw), load_queries)
    for q in queries or ():
        assert _good_id(q.id) and type(q.text) is str


@READER_SETTINGS
@given(raw=mutated(QUERIES_JSONL))
def test_query_jsonl(work: Path, raw: bytes) -> None:
    queries = outcome("query JSONL", _file(work, "queries.jsonl", raw), load_queries)
    for q in queries or ():
        assert _good_id(q.id) and type(q.text) is str


@READER_SETTINGS
@given(raw=mutated(GOLDEN_JSONL))
def test_golden_jsonl(work: Path, raw: bytes) -> None:
    golden = outcome("golden JSONL", _file(work, "golden.jsonl", raw), read_golden_jsonl)
    if golden is not None:
        check_golden(golden)


@READER_SETTINGS
@given(raw=mutated(GOLDEN_CSV))
def test_golden_csv(work: Path, raw: bytes) -> None:
    golden = outcome("golden CSV", _file(work, "golden.csv", raw), read_golden_csv)
    if golden is not None:
        check_golden(golden)


@READER_SETTINGS
@given(raw=mutated(LLAMAINDEX))
def test_llamaindex_json(work: Path, raw: bytes) -> None:
    golden = outcome("LlamaIndex JSON", _file(work, "qa_dataset.json", raw), read_golden_llamaindex)
    if golden is not None:
        check_golden(golden)


@READER_SETTINGS
@given(raw=mutated(OTLP))
def test_otlp_json(work: Path, raw: bytes) -> None:
    run = outcome("OTLP JSON traces", _file(work, "traces.json", raw), lambda p: read_openinference(p, check_ids=False))
    if run is not None:
        check_run(run)


# -- the classes of the issue, one by one -------------------------------------------------------------------
CLASSES = [
    # (name, reader, file name, bytes, expected: "refused" or the parse a careful reader gives)
    ("invalid UTF-8 in JSONL run", read_run_jsonl, "r.jsonl", RUN_JSONL.replace(b"vitamin", b"vit\xffmin"), 1),
    ("invalid UTF-8 in JSONL qrels", read_qrels_jsonl, "q.jsonl", QRELS_JSONL + b'{"x": "\xc3"}\n', 4),
    ("invalid UTF-8 in BEIR tsv", read_beir_qrels, "t.tsv", BEIR_QRELS + b"q3\td\xed\xa0\x80\t1\n", 5),
    ("invalid UTF-8 in query TSV", load_queries, "q.tsv", QUERIES_TSV + b"q3\tcaf\xe9\n", 4),
    ("label 2**63", read_qrels, "q.txt", b"q1 0 d1 9223372036854775808\n", 1),
    (
        "label -2**63-1 in JSONL",
        read_qrels_jsonl,
        "q.jsonl",
        b'{"query_id": "q", "doc_id": "d", "relevance": -9223372036854775809}\n',
        1,
    ),
    ("label 2**63 in BEIR tsv", read_beir_qrels, "t.tsv", b"q1\td1\t9223372036854775808\n", 1),
    (
        "label of 5000 digits in JSONL",
        read_qrels_jsonl,
        "q.jsonl",
        b'{"query_id": "q", "doc_id": "d", "relevance": ' + b"9" * 5000 + b"}\n",
        1,
    ),
    ("non-numeric latency", read_run_jsonl, "r.jsonl", b'{"query_id": "q", "hits": [], "latency": "fast"}\n', 1),
    ("nested latency", read_run_jsonl, "r.jsonl", b'{"query_id": "q", "hits": [], "latency": {"s": [1]}}\n', 1),
    (
        "latency of 400 digits",
        read_run_jsonl,
        "r.jsonl",
        b'{"query_id": "q", "hits": [], "latency": ' + b"9" * 400 + b"}\n",
        1,
    ),
    ("negative latency", read_run_jsonl, "r.jsonl", b'{"query_id": "q", "hits": [], "latency": -1}\n', 1),
    ("score of 400 digits in TREC", read_run, "r.txt", b"q1 Q0 d1 1 " + b"9" * 400 + b" t\n", 1),
    (
        "score of 400 digits in JSONL",
        read_run_jsonl,
        "r.jsonl",
        b'{"query_id": "q", "hits": [{"doc_id": "d", "score": ' + b"9" * 400 + b"}]}\n",
        1,
    ),
    (
        "score 1e400 in JSONL",
        read_run_jsonl,
        "r.jsonl",
        b'{"query_id": "q", "hits": [{"doc_id": "d", "score": 1e400}]}\n',
        1,
    ),
    ("score inf in TREC", read_run, "r.txt", b"q1 Q0 d1 1 inf t\n", 1),
    ("score -Infinity in TREC", read_run, "r.txt", b"q1 Q0 d1 1 -Infinity t\n", 1),
    ("score NaN in TREC", read_run, "r.txt", b"q1 Q0 d1 1 NaN t\n", 1),
    (
        "score Infinity in JSONL",
        read_run_jsonl,
        "r.jsonl",
        b'{"query_id": "q", "hits": [{"doc_id": "d", "score": Infinity}]}\n',
        1,
    ),
    (
        "score NaN in JSONL",
        read_run_jsonl,
        "r.jsonl",
        b'{"query_id": "q", "hits": [{"doc_id": "d", "score": NaN}]}\n',
        1,
    ),
    ("score 1_0 in TREC", read_run, "r.txt", b"q1 Q0 d1 1 1_0 t\n", 1),
    (
        "deeply nested JSONL run",
        read_run_jsonl,
        "r.jsonl",
        b'{"query_id": "q", "hits": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
        1,
    ),
    ("deeply nested JSONL qrels", read_qrels_jsonl, "q.jsonl", b"[" * 100_000 + b"]" * 100_000 + b"\n", 1),
    ("deeply nested LlamaIndex JSON", read_golden_llamaindex, "qa.json", b"[" * 100_000 + b"]" * 100_000, None),
    (
        "deeply nested OTLP JSON",
        lambda p: read_openinference(p, check_ids=False),
        "t.json",
        b"[" * 100_000 + b"]" * 100_000,
        1,
    ),
    (
        "deeply nested golden JSONL",
        read_golden_jsonl,
        "g.jsonl",
        b'{"question": "q", "relevant_ids": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
        1,
    ),
    ("empty query id in JSONL run", read_run_jsonl, "r.jsonl", b'{"query_id": "", "hits": ["d1"]}\n', 1),
    ("blank doc id in JSONL run", read_run_jsonl, "r.jsonl", b'{"query_id": "q", "hits": [{"doc_id": " "}]}\n', 1),
    (
        "empty doc id in JSONL qrels",
        read_qrels_jsonl,
        "q.jsonl",
        b'{"query_id": "q", "doc_id": "", "relevance": 1}\n',
        1,
    ),
    ("empty query id in BEIR tsv", read_beir_qrels, "t.tsv", b"query-id\tcorpus-id\tscore\n\td1\t1\n", 2),
    ("empty query id in query JSONL", load_queries, "q.jsonl", b'{"_id": "", "text": "scurvy"}\n', 1),
    ("non-ASCII digit label in TREC", read_qrels, "q.txt", "q1 0 d1 \u0663\n".encode(), 1),
    ("fullwidth digit label in BEIR tsv", read_beir_qrels, "t.tsv", "q1\td1\t\uff11\n".encode(), 1),
    ("label 1_0 in TREC", read_qrels, "q.txt", b"q1 0 d1 1_0\n", 1),
    (
        "non-ASCII digit label in golden CSV",
        read_golden_csv,
        "g.csv",
        'question,labels\nq?,"{""d1"": ""\u0663""}"\n'.encode(),
        2,
    ),
    ("U+00A0 separator in TREC qrels", read_qrels, "q.txt", "q1 0 d1\u00a01\n".encode(), 1),
    ("U+2003 separator in TREC run", read_run, "r.txt", "q1\u2003Q0 d1 1 0.5 t\n".encode(), 1),
    ("U+3000 separator in TREC run", read_run, "r.txt", b"q1 Q0 d1 1 0.5 t\n" + "q2 Q0 d1\u30002 0.5 t\n".encode(), 2),
    ("ASCII separator \\x1c in TREC qrels", read_qrels, "q.txt", b"q1 0 d1\x1c1\n", 1),
    ("lone CR joins fields in TREC qrels", read_qrels, "q.txt", b"q1 0 d1 1\rq1 0 d2 0\n", 1),
]


@pytest.mark.parametrize(("name", "reader", "filename", "raw", "line"), CLASSES, ids=[c[0] for c in CLASSES])
def test_each_class_is_refused_with_file_and_line(
    tmp_path: Path, name: str, reader: Callable[[Path], Any], filename: str, raw: bytes, line: int | None
) -> None:
    """``line`` is the line the error must name; None for a whole-file JSON document (no line to blame)."""
    path = _file(tmp_path, filename, raw)
    with pytest.raises(RankbridgeError) as info:
        reader(path)
    message = str(info.value)
    assert path.name in message, message
    assert _bounded(message, path), message
    if line is None:
        return
    if isinstance(info.value, ParseError) and info.value.line is not None:
        assert info.value.line == line, message
    else:
        assert f":{line}" in message or f"line {line}" in message, message


@pytest.mark.parametrize(
    ("part", "raw"),
    [
        ("queries.jsonl", b'{"_id": "q1", "text": null}\n{"_id": "q2", "text": "who wrote hamlet"}\n'),
        ("queries.jsonl", b'{"_id": null, "text": "scurvy"}\n{"_id": "q2", "text": "who wrote hamlet"}\n'),
        ("corpus.jsonl", b'{"_id": "d1", "text": null}\n'),
        ("corpus.jsonl", b'{"_id": "", "text": "x"}\n'),
    ],
)
def test_beir_null_text_and_empty_ids_are_refused(tmp_path: Path, part: str, raw: bytes) -> None:
    root = _beir(tmp_path, {part: raw})
    with pytest.raises(ParseError) as info:
        read_beir(root)
    assert info.value.source == str(root / part) and info.value.line == 1


@pytest.mark.parametrize(
    ("reader", "filename", "raw"),
    [
        (lambda p: read_qrels(p).to_dict(), "q.txt", QRELS),
        (lambda p: read_run(p).to_scores(), "r.txt", RUN),
        (lambda p: read_beir_qrels(p).to_dict(), "t.tsv", BEIR_QRELS),
        (lambda p: read_qrels_jsonl(p).to_dict(), "q.jsonl", QRELS_JSONL),
        (lambda p: {q: read_run_jsonl(p).hits(q) for q in read_run_jsonl(p)}, "r.jsonl", RUN_JSONL),
        (lambda p: [(q.id, q.text) for q in load_queries(p)], "q.tsv", QUERIES_TSV),
        (lambda p: [(q.id, q.text) for q in load_queries(p)], "q.jsonl", QUERIES_JSONL),
        (lambda p: read_golden_csv(p, name="g").qrels.to_dict(), "g.csv", GOLDEN_CSV),
        (lambda p: read_golden_jsonl(p, name="g").qrels.to_dict(), "g.jsonl", GOLDEN_JSONL),
        (lambda p: read_golden_llamaindex(p, name="g").qrels.to_dict(), "qa.json", LLAMAINDEX),
    ],
)
def test_a_bom_is_skipped(tmp_path: Path, reader: Callable[[Path], Any], filename: str, raw: bytes) -> None:
    """A file saved with a BOM reads exactly as without it (it used to rename the first query id)."""
    assert reader(_file(tmp_path, filename, BOM + raw)) == reader(_file(tmp_path, filename, raw))


def test_trec_eval_test_files_still_read(tmp_path: Path) -> None:
    """trec_eval's own inputs (ids with '#', junk columns, comments) pass every new check."""
    data = Path(__file__).parents[2] / "shared" / "data" / "trec_eval"
    if not data.is_dir():
        pytest.skip("../shared/data/trec_eval is not here")
    for name in ("qrels.test", "qrels.rel_level", "qrels.comment.test", "qrels.test.with-comments"):
        raw = (data / name).read_bytes()
        assert read_qrels(data / name).to_dict() == reference_trec(raw, 4)
    for name in ("results.test", "results.trunc", "results.comment.test"):
        raw = (data / name).read_bytes()
        assert read_run(data / name).to_scores() == reference_trec(raw, 6)


# -- the CLI ------------------------------------------------------------------------------------------------
def cli(argv: list[str]) -> tuple[int, str]:
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            rc = main(argv)
        except SystemExit as exc:  # argparse
            rc = int(exc.code or 0)
    return rc, err.getvalue()


def cli_outcome(target: str, argv: list[str], bad: Path, reference_ok: bool | None = None) -> int:
    """Run the command; exit 70 (a bug) fails; exit 2 must name the mutated file (or another input)."""
    rc, err = cli(argv)
    if rc == 70:
        _count(target, "exit 70")
    assert rc != 70, f"{target}: exit 70: {err[:500]}"
    if rc == 2:
        assert bad.name in err or "error:" in err, f"{target}: exit 2 without a message naming the file: {err[:300]}"
        if bad.name in err:
            _count(target, "refused")
        else:  # refused for another reason (e.g. no query left in common): still a clean usage error
            _count(target, "refused (other reason)")
    else:
        assert rc in (0, 1, 3), f"{target}: exit {rc}: {err[:300]}"
        if reference_ok is False:
            _count(target, "silently accepted")
            raise AssertionError(f"{target}: accepted a file a careful reader refuses: {bad.read_bytes()[:200]!r}")
        _count(target, "parsed")
    return rc


@pytest.fixture(scope="module")
def base(work: Path) -> Path:
    root = work / "base"
    root.mkdir()
    (root / "qrels.txt").write_bytes(QRELS)
    (root / "run.txt").write_bytes(RUN)
    (root / "run2.txt").write_bytes(RUN.replace(b"0.9", b"0.1"))
    (root / "queries.jsonl").write_bytes(BEIR_QUERIES)
    (root / "corpus.jsonl").write_bytes(BEIR_CORPUS)
    (root / "retriever.py").write_text("def search(query, k):\n    return ['d1', 'd2'][:k]\n")
    (root / "llm.py").write_text(
        textwrap.dedent(
            """
            def llm(prompt):
                if "query" in prompt.lower() and "relevan" not in prompt.lower():
                    return "what causes scurvy?"
                return '{"label": 1, "reason": "ok"}'
            """
        )
    )
    return root


@CLI_SETTINGS
@given(which=st.sampled_from(["qrels", "run"]), data=st.data())
def test_cli_evaluate(work: Path, base: Path, which: str, data: st.DataObject) -> None:
    raw = data.draw(mutated(QRELS if which == "qrels" else RUN))
    bad = _file(work, f"{which}.txt", raw)
    ok = reference_trec(raw, 4 if which == "qrels" else 6) is not None
    qrels, run = (bad, base / "run.txt") if which == "qrels" else (base / "qrels.txt", bad)
    cli_outcome("CLI evaluate (TREC)", ["evaluate", str(qrels), str(run), "--format", "json"], bad, ok)


FORM_SEEDS = {
    "qrels.jsonl": QRELS_JSONL,
    "run.jsonl": RUN_JSONL,
    "test.tsv": BEIR_QRELS,
    "golden.jsonl": GOLDEN_JSONL,
    "golden.csv": GOLDEN_CSV,
    "qa.json": LLAMAINDEX,
}


def _evaluate_form(work: Path, base: Path, which: str, data: st.DataObject) -> None:
    bad = _file(work, which, data.draw(mutated(FORM_SEEDS[which])))
    qrels, run = (base / "qrels.txt", bad) if which == "run.jsonl" else (bad, base / "run.txt")
    ok = reference_beir_qrels(bad.read_bytes()) is not None if which == "test.tsv" else None
    cli_outcome(f"CLI evaluate ({which})", ["evaluate", str(qrels), str(run), "--format", "json"], bad, ok)


@CLI_SETTINGS
@given(which=st.sampled_from(["run.jsonl", "test.tsv", "golden.csv", "qa.json"]), data=st.data())
def test_cli_evaluate_other_forms(work: Path, base: Path, which: str, data: st.DataObject) -> None:
    _evaluate_form(work, base, which, data)


@CLI_SETTINGS
@given(which=st.sampled_from(["qrels.jsonl", "golden.jsonl"]), data=st.data())
def test_cli_evaluate_jsonl_judgments(work: Path, base: Path, which: str, data: st.DataObject) -> None:
    _evaluate_form(work, base, which, data)


@CLI_SETTINGS
@given(raw=mutated(RUN))
def test_cli_compare(work: Path, base: Path, raw: bytes) -> None:
    bad = _file(work, "cand.txt", raw)
    argv = [
        "compare",
        str(base / "qrels.txt"),
        str(base / "run.txt"),
        str(bad),
        "--n-resamples",
        "50",
        "--format",
        "json",
    ]
    cli_outcome("CLI compare", argv, bad, reference_trec(raw, 6) is not None)


@CLI_SETTINGS
@given(raw=mutated(RUN))
def test_cli_report(work: Path, base: Path, raw: bytes) -> None:
    bad = _file(work, "cand.txt", raw)
    argv = [
        "report",
        str(base / "qrels.txt"),
        str(base / "run.txt"),
        str(bad),
        "--format",
        "json",
        "--n-resamples",
        "50",
    ]
    cli_outcome("CLI report", argv, bad, reference_trec(raw, 6) is not None)


@CLI_SETTINGS
@given(which=st.sampled_from(["baseline", "candidate"]), raw=mutated(RUN))
def test_cli_gate(work: Path, base: Path, which: str, raw: bytes) -> None:
    bad = _file(work, f"{which}.txt", raw)
    baseline, cand = (bad, base / "run2.txt") if which == "baseline" else (base / "run2.txt", bad)
    argv = ["gate", str(cand), "--baseline", str(baseline), "--qrels", str(base / "qrels.txt"), "--n-resamples", "50"]
    argv += ["--store", str(bad.parent / "history.sqlite"), "--max-drop", "1", "-m", "ndcg@10"]
    cli_outcome("CLI gate", argv, bad, reference_trec(raw, 6) is not None)


@CLI_SETTINGS
@given(which=st.sampled_from(["queries.tsv", "queries.jsonl"]), data=st.data())
def test_cli_run_queries(work: Path, base: Path, which: str, data: st.DataObject) -> None:
    bad = _file(work, which, data.draw(mutated(QUERIES_TSV if which == "queries.tsv" else QUERIES_JSONL)))
    argv = ["run", f"{base / 'retriever.py'}:search", "--queries", str(bad), "-k", "2"]
    argv += ["-o", str(bad.parent / "out.jsonl"), "-q", "--timeout", "5", "--retries", "0"]
    cli_outcome("CLI run --queries", argv, bad)


@CLI_SETTINGS
@given(raw=mutated(b"SQLite format 3\x00" + b"\x00" * 200))
def test_cli_history(work: Path, raw: bytes) -> None:
    bad = _file(work, "history.sqlite", raw)
    cli_outcome("CLI history", ["history", "list", "--store", str(bad)], bad)


@settings(max_examples=15, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(which=st.sampled_from(["corpus", "run"]), data=st.data())
def test_cli_judge_and_generate_inputs(work: Path, base: Path, which: str, data: st.DataObject) -> None:
    if which == "corpus":
        bad = _file(work, "corpus.jsonl", data.draw(mutated(BEIR_CORPUS)))
        argv = ["generate", "--llm", f"{base / 'llm.py'}:llm", "--model-id", "fake", "--corpus", str(bad), "-n", "1"]
        argv += ["--out", str(bad.parent / "generated")]
    else:
        bad = _file(work, "run.txt", data.draw(mutated(RUN)))
        argv = [
            "judge",
            "--llm",
            f"{base / 'llm.py'}:llm",
            "--model-id",
            "fake",
            "--queries",
            str(base / "queries.jsonl"),
        ]
        argv += ["--corpus", str(base / "corpus.jsonl"), "--run", str(bad), "-k", "2", "--no-cache"]
        argv += ["-o", str(bad.parent / "judged.txt")]
    cli_outcome(f"CLI {'generate --corpus' if which == 'corpus' else 'judge --run'}", argv, bad)


def test_cli_timeout_must_be_seconds(base: Path, tmp_path: Path) -> None:
    for value in ("-1", "nan", "soon"):
        rc, err = cli(
            [
                "run",
                f"{base / 'retriever.py'}:search",
                "--queries",
                str(base / "queries.jsonl"),
                "-o",
                str(tmp_path / "o.jsonl"),
                "--timeout",
                value,
            ]
        )
        assert rc == 2 and "--timeout" in err and "seconds >= 0" in err, err
    assert not (tmp_path / "o.jsonl").exists()
