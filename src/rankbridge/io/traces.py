"""Production traces in: OpenInference / Phoenix spans, OpenTelemetry GenAI retrieval spans, LangSmith runs.

Teams that already trace their app can score its retrievals without running it again. Each reader turns
the retrievals of a trace export into :class:`~rankbridge.capture.CaptureRecord` objects and reads them
back exactly as live capture does (:class:`~rankbridge.capture.Capture`): the same query matching to a
golden set (by the ``rankbridge_query_id`` the app passed, else by normalised text), the same ``id_from``
/ ``doc_map`` rules and doc-id check (UUID chunk ids resolved to a matching ``metadata:KEY`` when
``id_from`` is not given), the same summary of what matched and what did not.

* :func:`read_openinference` / :func:`openinference_capture`: OpenInference ``RETRIEVER`` and ``RERANKER``
  spans, and OpenTelemetry GenAI ``gen_ai.operation.name = "retrieval"`` spans, from an OTLP JSON export
  (``.json``; one request per line too, as the collector's file exporter writes), JSON Lines (``.jsonl``),
  a Phoenix span DataFrame or its Parquet file (``.parquet``), or the SDK's ``ReadableSpan`` objects
  (``InMemorySpanExporter().get_finished_spans()``, or the exporter itself).
* :func:`read_langsmith` / :func:`langsmith_capture`: ``run_type == "retriever"`` runs of a LangSmith
  export (JSON list, JSON Lines, ``langsmith`` ``Run`` objects or LangChain tracer runs), child runs
  nested under their traces included.

The mapping is tabled in ``docs/traces.md`` ("From traces"). Nothing here imports a framework; pandas is
imported only to read a Parquet file.

Examples
--------
>>> span = {"name": "retrieve", "context": {"trace_id": "0x01", "span_id": "0x0a"}, "attributes": {
...     "openinference.span.kind": "RETRIEVER", "input.value": "What causes scurvy?",
...     "retrieval.documents.0.document.id": "d1", "retrieval.documents.0.document.score": 0.9,
...     "retrieval.documents.1.document.id": "d2", "retrieval.documents.1.document.score": 0.4}}
>>> run = read_openinference([span], golden={"q1": "what causes scurvy"})
>>> run.ranking("q1"), run.config["summary"]["matched_by_text"]
(['d1', 'd2'], 1)
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict, TypeVar

from rankbridge.capture import QUERY_ID_KEY, Capture, CaptureRecord, QueryMatcher, Recorder
from rankbridge.errors import InputError, MissingExtraError, ParseError
from rankbridge.io._keywords import keywords
from rankbridge.io._open import json_line, names, plain_suffix, read_text
from rankbridge.retriever import IdSpec
from rankbridge.types import GoldenSet, Query, Run

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack is 3.11+

__all__ = [
    "TraceCapture",
    "TraceOptions",
    "TraceRunOptions",
    "langsmith_capture",
    "openinference_capture",
    "read_langsmith",
    "read_openinference",
]

Golden = GoldenSet | Iterable[Query] | Mapping[str, str] | None
DocMap = Mapping[str, str] | Callable[[str], str | None] | None


class TraceOptions(TypedDict, total=False):
    """The keywords every trace reader takes (:func:`read_openinference` documents them).

    ``name`` defaults to the format (``"openinference"``, ``"langsmith"``), ``keep_text`` and ``check_ids``
    to True, the others to None.
    """

    golden: Golden
    id_from: IdSpec | None
    doc_map: DocMap
    keep_text: bool
    name: str
    check_ids: bool


class TraceRunOptions(TraceOptions, total=False):
    """:class:`TraceOptions` and the two of a run: ``stage`` (default ``"final"``), ``repeats`` (``"first"``)."""

    stage: Literal["final", "retrieved"]
    repeats: Literal["first", "last"]


_CAPTURE_DEFAULTS: dict[str, object] = {"keep_text": True, "check_ids": True}
_RUN_DEFAULTS: dict[str, object] = {**_CAPTURE_DEFAULTS, "stage": "final", "repeats": "first"}

#: OpenInference attribute names (openinference-semantic-conventions 0.1.42; spelled out so that reading
#: needs no package).
SPAN_KIND = "openinference.span.kind"
INPUT_VALUE = "input.value"
INPUT_MIME = "input.mime_type"
OUTPUT_VALUE = "output.value"
METADATA = "metadata"
TAGS = "tag.tags"
RETRIEVAL_DOCUMENTS = "retrieval.documents"
RERANKER_INPUT = "reranker.input_documents"
RERANKER_OUTPUT = "reranker.output_documents"
RERANKER_QUERY = "reranker.query"
#: OpenTelemetry GenAI retrieval attributes (semantic-conventions-genai, development status).
GENAI_OPERATION = "gen_ai.operation.name"
GENAI_QUERY = "gen_ai.retrieval.query.text"
GENAI_DOCUMENTS = "gen_ai.retrieval.documents"

_DOC_FIELDS = ("id", "score", "content", "metadata")
#: Phoenix keeps these attributes as parsed JSON (dicts) in its DataFrame; OTLP has them as JSON strings.
_JSON_STRING_SUFFIXES = ("document.metadata", "metadata", "llm.prompt_template.variables", "tool.parameters")


class TraceCapture(Capture):
    """Retrievals read from a trace export, readable as a live :class:`~rankbridge.capture.Capture` is.

    :meth:`to_run`, :meth:`summary`, :attr:`unmatched`, :attr:`records`, :meth:`judge` and the writers
    behave as they do on a live capture. :meth:`summary` adds the export's own counts (``spans`` or
    ``runs`` read, retrieval and reranker spans, rerankers tied to no retrieval...). There is nothing to
    attach: :meth:`start` does nothing.
    """

    def __init__(
        self,
        recorder: Recorder,
        matcher: QueryMatcher,
        *,
        source: str,
        counts: Mapping[str, Any],
        name: str,
        golden: GoldenSet | None,
        check_ids: bool,
    ) -> None:
        super().__init__(recorder, matcher, frameworks=(source,), name=name, golden=golden, check_ids=check_ids)
        self.source = source
        self.counts = dict(counts)

    def start(self) -> TraceCapture:
        """Nothing to attach: the records come from an export."""
        return self

    def summary(self) -> dict[str, Any]:
        """:meth:`Capture.summary` plus ``source`` and the export's counts."""
        out = super().summary()
        out["source"] = self.source
        out.update(self.counts)
        return out


# -- the normal forms every source is read into -------------------------------------------------------------
@dataclass(kw_only=True)
class _Node:
    """What a span and a LangSmith run share: enough to nest their records in one another and time them."""

    parent_id: str | None
    trace_id: str | None
    name: str
    start: float | None  # seconds since the epoch
    end: float | None
    error: str | None
    where: str
    order: int = 0  # position in the export

    @property
    def node_id(self) -> str:
        raise NotImplementedError


_N = TypeVar("_N", bound=_Node)


@dataclass(kw_only=True)
class _Span(_Node):
    span_id: str
    attrs: dict[str, Any]
    children: list[_Span] = field(default_factory=list)

    @property
    def node_id(self) -> str:
        return self.span_id

    @property
    def kind(self) -> str:
        kind = self.attrs.get(SPAN_KIND)
        return kind.upper() if isinstance(kind, str) else ""

    @property
    def is_retrieval(self) -> bool:
        op = self.attrs.get(GENAI_OPERATION)
        return self.kind == "RETRIEVER" or (isinstance(op, str) and op.lower() == "retrieval")

    @property
    def is_reranker(self) -> bool:
        return self.kind == "RERANKER"


def _keys(obj: Any) -> str:
    """``['a', 'b', ...]``: a mapping's keys for a message, bounded."""
    return f"[{names(sorted(map(str, obj)), quote=True, limit=8)}]"


def _hex_id(value: Any, nbytes: int) -> str | None:
    """A trace or span id as lower-case hex: ints, ``0x`` strings, hex, base64 (protobuf JSON), bytes."""
    if value is None or value == "" or value == 0:
        return None
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return f"{value:0{nbytes * 2}x}"
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex() or None
    text = str(value).strip()
    if text.lower().startswith("0x"):
        text = text[2:]
    if re.fullmatch(r"[0-9a-fA-F]+", text) and len(text) in (nbytes * 2, 16, 32):
        return text.lower()
    if len(text) in (12, 24) or text.endswith("="):
        try:
            raw = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) in (8, 16):
            return raw.hex()
    return text


def _seconds(value: Any) -> float | None:
    """A time as seconds since the epoch: int/str nanoseconds (OTLP), datetimes, ISO strings."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, datetime):
        stamp = value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)
        return stamp.timestamp()
    to_py = getattr(value, "to_pydatetime", None)  # a pandas Timestamp (NaT has one too)
    if callable(to_py):
        try:
            return _seconds(to_py())
        except (TypeError, ValueError):
            return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value) / 1e9 if value > 1e14 else float(value)
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        if text.isdigit():
            return int(text) / 1e9
        try:
            return _seconds(datetime.fromisoformat(text.replace("Z", "+00:00")))
        except ValueError:
            return None
    return None


def _plain(value: Any) -> Any:
    """numpy / pandas / Arrow values as plain Python (lists, dicts, str, int, float, None)."""
    if value is None or isinstance(value, (str, bool, int, float)):
        if isinstance(value, float) and math.isnan(value):
            return None
        return value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if type(value).__name__ in ("NAType", "NaTType"):
        return None
    tolist = getattr(value, "tolist", None)  # numpy arrays and scalars
    if callable(tolist):
        return _plain(tolist())
    return value


def _any_value(value: Any) -> Any:
    """Decode an OTLP/JSON ``AnyValue`` (camelCase or snake_case keys)."""
    if not isinstance(value, Mapping):
        return value
    for key in ("stringValue", "string_value"):
        if key in value:
            return value[key]
    for key in ("boolValue", "bool_value"):
        if key in value:
            return bool(value[key])
    for key in ("intValue", "int_value"):
        if key in value:
            return int(value[key])
    for key in ("doubleValue", "double_value"):
        if key in value:
            return float(value[key])
    for key in ("arrayValue", "array_value"):
        if key in value:
            return [_any_value(v) for v in (value[key] or {}).get("values", [])]
    for key in ("kvlistValue", "kvlist_value"):
        if key in value:
            return {kv.get("key"): _any_value(kv.get("value")) for kv in (value[key] or {}).get("values", [])}
    for key in ("bytesValue", "bytes_value"):
        if key in value:
            return value[key]
    return None


def _otlp_attributes(items: Any, where: str) -> dict[str, Any]:
    if items is None:
        return {}
    if isinstance(items, Mapping):  # already a flat mapping
        return dict(items)
    if not isinstance(items, list):
        raise ParseError(
            f"expected span attributes as a list of {{key, value}}, found {type(items).__name__}", source=where
        )
    out: dict[str, Any] = {}
    for kv in items:
        if not isinstance(kv, Mapping) or "key" not in kv:
            raise ParseError(f"expected an attribute {{key, value}}, found {kv!r:.80}", source=where)
        out[str(kv["key"])] = _any_value(kv.get("value"))
    return out


def _error_from_events(events: Any) -> str | None:
    for event in events or ():
        name = event.get("name") if isinstance(event, Mapping) else getattr(event, "name", None)
        if name != "exception":
            continue
        attrs = event.get("attributes") if isinstance(event, Mapping) else getattr(event, "attributes", None)
        if isinstance(attrs, list):
            attrs = _otlp_attributes(attrs, "event")
        attrs = attrs or {}
        etype, message = attrs.get("exception.type"), attrs.get("exception.message")
        if etype or message:
            return f"{etype}: {message}" if etype and message else str(etype or message)
    return None


def _is_error(code: Any) -> bool:
    if code is None:
        return False
    if isinstance(code, int) and not isinstance(code, bool):
        return code == 2
    text = str(getattr(code, "name", code)).upper()
    return text in ("ERROR", "STATUS_CODE_ERROR", "2", "STATUSCODE.ERROR")


def _otlp_spans(obj: Mapping[str, Any], where: str, out: list[_Span]) -> None:
    resource_spans = obj.get("resourceSpans", obj.get("resource_spans"))
    if not isinstance(resource_spans, list):
        raise ParseError(f"expected 'resourceSpans' to be a list, found {type(resource_spans).__name__}", source=where)
    for rs in resource_spans:
        scopes = rs.get("scopeSpans", rs.get("scope_spans", rs.get("instrumentationLibrarySpans"))) or []
        for scope in scopes:
            for span in scope.get("spans") or []:
                out.append(_otlp_span(span, where))


def _otlp_span(span: Mapping[str, Any], where: str) -> _Span:
    span_id = _hex_id(span.get("spanId", span.get("span_id")), 8)
    here = f"{where} span {span_id}"
    if span_id is None:
        raise ParseError(f"expected a span with a spanId, found keys {_keys(span)}", source=where)
    status = span.get("status") or {}
    error = None
    if _is_error(status.get("code")):
        error = _error_from_events(span.get("events")) or status.get("message") or "span status ERROR"
    return _Span(
        span_id=span_id,
        parent_id=_hex_id(span.get("parentSpanId", span.get("parent_span_id")), 8),
        trace_id=_hex_id(span.get("traceId", span.get("trace_id")), 16),
        name=str(span.get("name", "")),
        start=_seconds(span.get("startTimeUnixNano", span.get("start_time_unix_nano"))),
        end=_seconds(span.get("endTimeUnixNano", span.get("end_time_unix_nano"))),
        error=error,
        attrs=_otlp_attributes(span.get("attributes"), here),
        where=here,
    )


def _sdk_json_span(obj: Mapping[str, Any], where: str) -> _Span:
    """A span as ``ReadableSpan.to_json()`` (and ``ConsoleSpanExporter``) writes it."""
    ctx = obj.get("context") or {}
    span_id = _hex_id(ctx.get("span_id"), 8)
    if span_id is None:
        raise ParseError("expected context.span_id in a span", source=where)
    status = obj.get("status") or {}
    error = None
    if _is_error(status.get("status_code")):
        error = _error_from_events(obj.get("events")) or status.get("description") or "span status ERROR"
    attrs = obj.get("attributes") or {}
    if not isinstance(attrs, Mapping):
        raise ParseError(f"expected 'attributes' to be an object, found {type(attrs).__name__}", source=where)
    return _Span(
        span_id=span_id,
        parent_id=_hex_id(obj.get("parent_id"), 8),
        trace_id=_hex_id(ctx.get("trace_id"), 16),
        name=str(obj.get("name", "")),
        start=_seconds(obj.get("start_time")),
        end=_seconds(obj.get("end_time")),
        error=error,
        attrs=dict(attrs),
        where=f"{where} span {span_id}",
    )


def _flatten_into(prefix: str, value: Any, out: dict[str, Any]) -> None:
    """Phoenix's nested attribute values back to flat OpenTelemetry keys (``a.b.0.c``)."""
    value = _plain(value)
    if value is None:
        return
    if isinstance(value, Mapping) and not prefix.endswith(_JSON_STRING_SUFFIXES):
        for key, sub in value.items():
            _flatten_into(f"{prefix}.{key}", sub, out)
        return
    if isinstance(value, list) and any(isinstance(v, Mapping) for v in value):
        for i, sub in enumerate(value):
            if isinstance(sub, Mapping):
                _flatten_into(f"{prefix}.{i}", sub, out)
        return
    out[prefix] = value


def _phoenix_row(row: Mapping[str, Any], where: str) -> _Span:
    """One row of ``px.Client().get_spans_dataframe()`` (attributes unflattened under ``attributes.``)."""
    span_id = _hex_id(_plain(row.get("context.span_id", row.get("span_id"))), 8)
    if span_id is None:
        raise ParseError("expected a 'context.span_id' column in a Phoenix span row", source=where)
    attrs: dict[str, Any] = {}
    nested = row.get("attributes")
    if isinstance(nested, Mapping):
        for key, value in nested.items():
            _flatten_into(str(key), value, attrs)
    for key, value in row.items():
        if isinstance(key, str) and key.startswith("attributes."):
            _flatten_into(key[len("attributes.") :], value, attrs)
    if SPAN_KIND not in attrs and isinstance(row.get("span_kind"), str):
        attrs[SPAN_KIND] = row["span_kind"]
    error = None
    if _is_error(_plain(row.get("status_code"))):
        error = (
            _error_from_events(_plain(row.get("events"))) or _plain(row.get("status_message")) or "span status ERROR"
        )
    return _Span(
        span_id=span_id,
        parent_id=_hex_id(_plain(row.get("parent_id")), 8),
        trace_id=_hex_id(_plain(row.get("context.trace_id", row.get("trace_id"))), 16),
        name=str(_plain(row.get("name")) or ""),
        start=_seconds(row.get("start_time")),
        end=_seconds(row.get("end_time")),
        error=error,
        attrs=attrs,
        where=f"{where} span {span_id}",
    )


def _sdk_span(span: Any) -> _Span:
    """An OpenTelemetry SDK ``ReadableSpan``."""
    ctx = span.context
    span_id = _hex_id(getattr(ctx, "span_id", None), 8) or "?"
    parent = getattr(span, "parent", None)
    status = getattr(span, "status", None)
    error = None
    if status is not None and _is_error(getattr(status, "status_code", None)):
        error = _error_from_events(getattr(span, "events", ())) or getattr(status, "description", None)
        error = error or "span status ERROR"
    start, end = getattr(span, "start_time", None), getattr(span, "end_time", None)
    return _Span(
        span_id=span_id,
        parent_id=_hex_id(getattr(parent, "span_id", None), 8) if parent is not None else None,
        trace_id=_hex_id(getattr(ctx, "trace_id", None), 16),
        name=str(getattr(span, "name", "")),
        start=None if start is None else start / 1e9,
        end=None if end is None else end / 1e9,
        error=error,
        attrs=dict(getattr(span, "attributes", None) or {}),
        where=f"span {span_id}",
    )


def _spans_from_obj(obj: Any, where: str, out: list[_Span]) -> None:
    if isinstance(obj, list):
        for item in obj:
            _spans_from_obj(item, where, out)
        return
    if not isinstance(obj, Mapping):
        if hasattr(obj, "context") and hasattr(obj, "attributes") and hasattr(obj, "name"):
            out.append(_sdk_span(obj))
            return
        raise ParseError(
            f"expected an OTLP export ({{'resourceSpans': [...]}}), a span object or a list of them; found "
            f"{type(obj).__name__}",
            source=where,
        )
    if "resourceSpans" in obj or "resource_spans" in obj:
        _otlp_spans(obj, where, out)
    elif "context.span_id" in obj or any(isinstance(k, str) and k.startswith("attributes.") for k in obj):
        out.append(_phoenix_row(obj, where))
    elif isinstance(obj.get("context"), Mapping):
        out.append(_sdk_json_span(obj, where))
    elif "spanId" in obj or "span_id" in obj:
        out.append(_otlp_span(obj, where))
    elif isinstance(obj.get("spans"), list):
        _spans_from_obj(obj["spans"], where, out)
    elif isinstance(obj.get("data"), list):
        _spans_from_obj(obj["data"], where, out)
    else:
        raise ParseError(
            "expected an OTLP export ({'resourceSpans': [...]}), a span ('context' with span_id, or OTLP "
            f"'spanId') or a Phoenix span row ('context.span_id'); found keys {_keys(obj)}",
            source=where,
        )


def _json_documents(path: str) -> Iterator[tuple[str, Any]]:
    """``(where, JSON value)`` of a file: one JSON document, or JSON Lines (``file:line``)."""
    text = read_text(path)
    if plain_suffix(path) not in (".jsonl", ".ndjson"):
        try:
            yield path, json.loads(text)
            return
        except json.JSONDecodeError as exc:
            if text.strip() and "\n" not in text.strip():
                raise ParseError(
                    f"expected JSON, found invalid JSON ({exc.msg})", source=path, line=exc.lineno
                ) from None
        except (RecursionError, ValueError):  # too deep, or an integer too long: say so with the line below
            pass
    # split on LF only: str.splitlines() would also split inside a JSON string holding U+2028 or U+0085
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        yield (
            f"{path}:{lineno}",
            json_line(line, path, lineno, "one JSON object per line (an OTLP export, a span or a run)"),
        )


def _read_parquet(path: str) -> Any:
    try:
        import pandas as pd
    except ImportError:
        raise MissingExtraError("pandas", "pandas", "Reading a Phoenix span Parquet file") from None
    try:
        return pd.read_parquet(path)
    except ImportError:
        raise MissingExtraError("pyarrow", "pandas", "Reading a Phoenix span Parquet file") from None
    except (OSError, ValueError) as exc:
        raise ParseError(f"cannot read Parquet file: {exc}", source=path) from None


def _dataframe_rows(df: Any, where: str) -> list[_Span]:
    index_name = getattr(getattr(df, "index", None), "name", None)
    if index_name is not None and index_name not in df.columns:
        df = df.reset_index()
    out = []
    for i, row in enumerate(df.to_dict(orient="records")):
        out.append(_phoenix_row(row, f"{where} row {i}"))
    return out


def _existing(path: str | os.PathLike[str]) -> str:
    if not Path(path).exists():
        raise ParseError("no such file", source=str(path))
    return str(path)


def _export_objects(
    source: Any, *, one: str, many: str, is_one: Callable[[Any], bool], expected: str
) -> tuple[Iterable[tuple[str, Any]], str]:
    """``(where, object)`` for each object of an export (spans or runs), and a description of the source.

    A path gives its JSON documents (where: the file, or ``file:line``), an object ``is_one`` accepts gives
    itself (where: ``one``), any other iterable its items (``many[i]``); anything else is an InputError
    saying what was ``expected``.
    """
    if isinstance(source, (str, os.PathLike)):
        path = _existing(source)
        return _json_documents(path), path
    if is_one(source):
        return [(one, source)], one
    if isinstance(source, Iterable) and not isinstance(source, (str, bytes)):
        return ((f"{many}[{i}]", item) for i, item in enumerate(source)), many
    raise InputError(f"source must be {expected}. Got {type(source).__name__} instead.")


def _collect_spans(source: Any) -> tuple[list[_Span], str]:
    """Every span of ``source`` in the normal form, and a description of the source."""
    spans: list[_Span] = []
    if isinstance(source, (str, os.PathLike)) and plain_suffix(str(source)) == ".parquet":
        described = _existing(source)
        spans = _dataframe_rows(_read_parquet(described), described)
    elif hasattr(source, "get_finished_spans"):  # an InMemorySpanExporter
        spans = [_sdk_span(s) for s in source.get_finished_spans()]
        described = f"<{type(source).__name__}>"
    elif hasattr(source, "columns") and hasattr(source, "to_dict"):
        spans = _dataframe_rows(source, "<DataFrame>")
        described = "<DataFrame>"
    else:
        objects, described = _export_objects(
            source,
            one="<dict>",
            many="<spans>",
            is_one=lambda obj: isinstance(obj, Mapping),
            expected="a path (.json OTLP export, .jsonl, .parquet), a Phoenix span DataFrame, a list of "
            "OpenTelemetry SDK spans or span dicts, or an InMemorySpanExporter",
        )
        for where, obj in objects:
            _spans_from_obj(list(obj) if isinstance(obj, tuple) else obj, where, spans)
    for i, span in enumerate(spans):
        span.order = i
    return spans, described


# -- reading documents off a span ---------------------------------------------------------------------------
def _json_value(value: Any) -> Any:
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in ("{", "["):
            try:
                return json.loads(text)
            except json.JSONDecodeError:
                return value
    return value


def _metadata_dict(value: Any, counts: dict[str, int]) -> dict[str, Any]:
    value = _plain(_json_value(value))
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return dict(value)
    counts["unreadable_metadata"] = counts.get("unreadable_metadata", 0) + 1
    return {}


def _document(values: Mapping[str, Any], counts: dict[str, int]) -> dict[str, Any]:
    """A document as doc-id resolution reads it: ``{"id", "text", "metadata", "score"}``."""
    doc_id = _plain(values.get("id"))
    score = _plain(values.get("score"))
    text = values.get("content", values.get("text", values.get("page_content")))
    return {
        "id": None if doc_id in (None, "") else doc_id if isinstance(doc_id, (str, int)) else str(doc_id),
        "text": text if isinstance(text, str) else None,
        "metadata": _metadata_dict(values.get("metadata"), counts),
        "score": score,
    }


_INDEXED = re.compile(r"^(\d+)\.document\.(id|score|content|metadata)$")


def _documents(attrs: Mapping[str, Any], prefix: str, counts: dict[str, int]) -> list[dict[str, Any]] | None:
    """The documents listed under ``prefix`` (``retrieval.documents``...), in index order; ``None`` if none."""
    found: dict[int, dict[str, Any]] = {}
    dotted = prefix + "."
    for key, value in attrs.items():
        if not key.startswith(dotted):
            continue
        m = _INDEXED.match(key[len(dotted) :])
        if m is not None:
            found.setdefault(int(m.group(1)), {})[m.group(2)] = value
    whole = _plain(attrs.get(prefix))
    if not found and isinstance(whole, list):  # an unflattened list of documents (Phoenix style)
        for i, item in enumerate(whole):
            if isinstance(item, Mapping):
                inner = item.get("document") if isinstance(item.get("document"), Mapping) else None
                values = inner or {k.removeprefix("document."): v for k, v in item.items()}
                found[i] = {k: values.get(k) for k in _DOC_FIELDS if k in values}
    if not found:
        return None
    return [_document(found[i], counts) for i in sorted(found)]


def _genai_documents(attrs: Mapping[str, Any], where: str, counts: dict[str, int]) -> list[dict[str, Any]] | None:
    raw = attrs.get(GENAI_DOCUMENTS)
    if raw is None:
        return None
    value = _plain(_json_value(raw))
    if not isinstance(value, list):
        raise ParseError(
            f"expected {GENAI_DOCUMENTS} to be a JSON list of documents ({{'id', 'score', ...}}), found "
            f"{type(value).__name__}",
            source=where,
        )
    docs = []
    for item in value:
        if isinstance(item, str):
            item = _json_value(item)
        if not isinstance(item, Mapping):
            raise ParseError(f"expected each {GENAI_DOCUMENTS} entry to be an object, found {item!r:.60}", source=where)
        docs.append(_document(item, counts))
    return docs


def _ids_from_output(span: _Span, docs: list[dict[str, Any]]) -> None:
    """LangChain's instrumentor leaves ``document.id`` out; its ``output.value`` has ``Document.id``."""
    if not docs or all(d["id"] is not None for d in docs):
        return
    output = _json_value(span.attrs.get(OUTPUT_VALUE))
    listed = output.get("documents") if isinstance(output, Mapping) else None
    if not isinstance(listed, list) or len(listed) != len(docs):
        return
    for doc, item in zip(docs, listed, strict=True):
        if not isinstance(item, Mapping):
            return
        content = item.get("page_content")
        if doc["text"] is not None and content is not None and content != doc["text"]:
            return
    for doc, item in zip(docs, listed, strict=True):
        if doc["id"] is None and isinstance(item.get("id"), (str, int)) and item.get("id") != "":
            doc["id"] = item["id"]


def _query_text(span: _Span) -> str:
    attrs = span.attrs
    for key in (GENAI_QUERY, INPUT_VALUE, RERANKER_QUERY):
        value = attrs.get(key)
        if value is None:
            continue
        if key == INPUT_VALUE and (
            str(attrs.get(INPUT_MIME, "")).endswith("json") or (isinstance(value, str) and value.lstrip()[:1] == "{")
        ):
            found = _dig_query(_json_value(value))
            if found is not None:
                return found
        if isinstance(value, str):
            return value
        found = _dig_query(value)
        if found is not None:
            return found
    return ""


def _dig_query(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        for key in ("query_str", "str_or_query_bundle", "query_bundle", "query", "input", "question"):
            if key in value:
                found = _dig_query(value[key])
                if found is not None:
                    return found
    return None


def _own_query_id(metadata: Any, tags: Any) -> str | None:
    meta = _plain(_json_value(metadata))
    if isinstance(meta, Mapping):
        qid = meta.get(QUERY_ID_KEY)
        if isinstance(qid, (str, int)) and not isinstance(qid, bool) and str(qid):
            return str(qid)
    tag_list = _plain(_json_value(tags))
    if isinstance(tag_list, list):
        for tag in tag_list:
            if isinstance(tag, str) and tag.startswith(QUERY_ID_KEY + "="):
                return tag[len(QUERY_ID_KEY) + 1 :] or None
    return None


def _span_query_id(span: _Span, by_id: Mapping[str, _Span]) -> str | None:
    seen = 0
    current: _Span | None = span
    while current is not None and seen < 1000:
        qid = _own_query_id(current.attrs.get(METADATA), current.attrs.get(TAGS))
        if qid is not None:
            return qid
        current = by_id.get(current.parent_id) if current.parent_id else None
        seen += 1
    return None


# -- building the capture -------------------------------------------------------------------------------------
def _golden_for(golden: Golden) -> GoldenSet | None:
    return golden if isinstance(golden, GoldenSet) else None


def _check_id_from(id_from: IdSpec | None, source: str) -> None:
    if id_from == "ref_doc_id":
        raise InputError(
            f"id_from='ref_doc_id': {source} records a document's id, content, score and metadata, not LlamaIndex's "
            "ref_doc_id. Put the corpus id in the documents' metadata (LlamaIndex copies a Document's metadata "
            "into its chunks) and pass id_from='metadata:KEY', or pass doc_map= (chunk id -> document id)."
        )


def _new_capture(
    records: Sequence[CaptureRecord], options: TraceOptions, *, source: str, counts: Mapping[str, Any]
) -> TraceCapture:
    """The capture of ``records``; ``options`` holds every key (the readers' ``keywords`` filled them in)."""
    recorder = Recorder(
        max_records=max(1, len(records)),
        id_from=options["id_from"],
        doc_map=options["doc_map"],
        keep_text=options["keep_text"],
        retain="objects",
    )
    golden = options["golden"]
    cap = TraceCapture(
        recorder,
        QueryMatcher(golden),
        source=source,
        counts=counts,
        name=options["name"],
        golden=_golden_for(golden),
        check_ids=options["check_ids"],
    )
    for record in records:
        recorder.add(record)
    return cap


def _set_docs(record: CaptureRecord, docs: list[dict[str, Any]] | None, final: bool = False) -> None:
    items = docs or []
    if final:
        record.set_final(items)
    else:
        record.set_items(items)


def _retrieval_docs(span: _Span, counts: dict[str, int]) -> list[dict[str, Any]] | None:
    docs = _documents(span.attrs, RETRIEVAL_DOCUMENTS, counts)
    if docs is None:
        docs = _genai_documents(span.attrs, span.where, counts)
    if docs is not None:
        _ids_from_output(span, docs)
    return docs


def _is_impl_span(span: _Span, by_id: Mapping[str, _Span]) -> bool:
    """LlamaIndex's ``X._retrieve`` span inside ``X.retrieve``: the same retrieval, without documents."""
    parent = by_id.get(span.parent_id) if span.parent_id else None
    if parent is None or not parent.is_retrieval:
        return False
    owner, _, method = span.name.rpartition(".")
    p_owner, _, p_method = parent.name.rpartition(".")
    return owner == p_owner and method in ("_retrieve", "_aretrieve") and p_method in ("retrieve", "aretrieve")


def _record(node: _Node, query: str, query_id: str | None, framework: str) -> CaptureRecord:
    record = CaptureRecord(
        framework,
        query,
        node.node_id,
        node.name,
        query_id,
        node.parent_id,
        node.trace_id,
        node.start or 0.0,
    )
    if node.start is not None and node.end is not None:
        record.latency = max(0.0, node.end - node.start)
    record.error = node.error
    return record


def _ancestors(node: _N, by_id: Mapping[str, _N]) -> Iterator[_N]:
    current = by_id.get(node.parent_id) if node.parent_id else None
    steps = 0
    while current is not None and steps < 10_000:  # a parent cycle in a broken export ends here
        yield current
        current = by_id.get(current.parent_id) if current.parent_id else None
        steps += 1


def _end_key(node: _Node) -> tuple[float, int]:
    return (node.end if node.end is not None else math.inf, node.order)


def _nest(nodes: Iterable[_N], records: Mapping[str, CaptureRecord], by_id: Mapping[str, _N]) -> list[_N]:
    """Put each record inside the record of its nearest recorded ancestor; the outermost nodes, by end time.

    A record left with exactly one retrieval nested in it (LangChain's ContextualCompressionRetriever
    around a retriever) is promoted: first stage, then its own output, as live capture records it.
    """
    top: list[_N] = []
    for node in sorted(nodes, key=_end_key):
        if node.node_id not in records:
            continue
        outer = next((a for a in _ancestors(node, by_id) if a.node_id in records), None)
        if outer is not None:
            records[outer.node_id].add_nested(records[node.node_id])
        else:
            top.append(node)
    for node in top:
        records[node.node_id].promote_nested()
    return top


@keywords(TraceOptions, **_CAPTURE_DEFAULTS, name="openinference")
def openinference_capture(source: Any, **options: Unpack[TraceOptions]) -> TraceCapture:
    """The retrieval spans of an OpenInference / OpenTelemetry export as a :class:`TraceCapture`.

    See :func:`read_openinference` for the parameters; this returns the capture itself (records,
    :meth:`~TraceCapture.summary`, :attr:`~TraceCapture.unmatched`, ``to_run(stage=...)``).

    Raises
    ------
    ParseError
        The source is not an export this reads (the message names the file and line, or the span id).
    InputError
        The source holds no retrieval span, or ``id_from='ref_doc_id'`` (not recorded in spans).
    """
    return _openinference(source, options)


def _openinference(source: Any, options: TraceOptions) -> TraceCapture:
    _check_id_from(options["id_from"], "an OpenInference span")
    spans, described = _collect_spans(source)
    by_id: dict[str, _Span] = {}
    for span in spans:
        by_id.setdefault(span.span_id, span)
    counts: dict[str, Any] = {"spans": len(spans), "retrieval_spans": 0, "reranker_spans": 0}
    doc_counts: dict[str, int] = {}
    retrievals = [s for s in spans if s.is_retrieval and not _is_impl_span(s, by_id)]
    rerankers = [s for s in spans if s.is_reranker]
    counts["retrieval_spans"] = len(retrievals)
    counts["reranker_spans"] = len(rerankers)
    if not retrievals and not rerankers:
        kinds = sorted({s.kind or "(none)" for s in spans})
        raise InputError(
            f"{described}: expected spans with {SPAN_KIND} = RETRIEVER or RERANKER, or {GENAI_OPERATION} = "
            f"'retrieval'; found {len(spans)} spans of kinds {kinds}. Was the app instrumented "
            "(openinference-instrumentation-llama-index / -langchain) while it retrieved?"
        )
    kept = {s.span_id for s in retrievals}
    records: dict[str, CaptureRecord] = {}
    for span in sorted(retrievals, key=_end_key):
        record = _record(span, _query_text(span), _span_query_id(span, by_id), "openinference")
        _set_docs(record, _retrieval_docs(span, doc_counts))
        records[span.span_id] = record
    top = _nest(retrievals, records, by_id)
    # rerankers: the final list of the latest retrieval of the same trace, called from one of their ancestors
    unattached = 0
    standalone: list[_Span] = []
    inside = 0
    for rr in sorted(rerankers, key=lambda s: (s.start if s.start is not None else math.inf, s.order)):
        owners = {a.span_id for a in _ancestors(rr, by_id)}
        if owners & kept:
            # called inside a retriever (a compression retriever's reranking compressor): that retriever's own
            # documents already are the list it returned
            inside += 1
            continue
        candidates = [
            s
            for s in top
            if s.trace_id == rr.trace_id
            and (s.parent_id is None or s.parent_id in owners)
            and (s.end is None or rr.start is None or s.end <= rr.start + 1e-6)
        ]
        output = _documents(rr.attrs, RERANKER_OUTPUT, doc_counts)
        if candidates:
            owner = max(candidates, key=_end_key)
            record = records[owner.span_id]
            if rr.error is not None:
                record.error = record.error or f"reranker {rr.name} failed: {rr.error}"
            else:
                _set_docs(record, output, final=True)
            continue
        if _documents(rr.attrs, RERANKER_INPUT, doc_counts) is None:
            unattached += 1
            continue
        standalone.append(rr)
    for rr in standalone:
        record = _record(rr, _query_text(rr), _span_query_id(rr, by_id), "openinference")
        _set_docs(record, _documents(rr.attrs, RERANKER_INPUT, doc_counts))
        if rr.error is None:
            _set_docs(record, _documents(rr.attrs, RERANKER_OUTPUT, doc_counts), final=True)
        records[rr.span_id] = record
        top.append(rr)
    counts["rerankers_unattached"] = unattached
    counts["rerankers_inside_retrievers"] = inside
    counts["rerankers_standalone"] = len(standalone)
    counts.update(doc_counts)
    ordered = [records[s.span_id] for s in sorted(top, key=_end_key)]
    return _new_capture(ordered, options, source="openinference", counts=counts)


def _to_run(cap: TraceCapture, options: TraceRunOptions) -> Run:
    stage, repeats, check_ids = options["stage"], options["repeats"], options["check_ids"]
    if stage not in ("final", "retrieved"):
        raise InputError(f"stage must be 'final' or 'retrieved'. Got {stage!r} instead.")
    if repeats not in ("first", "last"):
        raise InputError(f"repeats must be 'first' or 'last'. Got {repeats!r} instead.")
    run = cap.to_run(stage=stage, repeats=repeats, check_ids=check_ids)  # type: ignore[arg-type]
    if stage == "final" and any(r.final is not None for r in cap.records):
        run.stages["retrieved"] = cap.to_run(
            stage="retrieved",
            name=f"{cap.name}:retrieved",
            repeats=repeats,  # type: ignore[arg-type]
            check_ids=check_ids,
        )
    summary = cap.summary()
    for r in (run, *run.stages.values()):
        r.config["source"] = cap.source
        r.config["summary"] = summary
        r.config["unmatched_queries"] = cap.unmatched
    return run


@keywords(TraceRunOptions, **_RUN_DEFAULTS, name="openinference")
def read_openinference(source: Any, **options: Unpack[TraceRunOptions]) -> Run:
    """Read the retrievals of OpenInference / Phoenix / OpenTelemetry GenAI spans as a ranked :class:`~rankbridge.Run`.

    Parameters
    ----------
    source:
        A path -- ``.json`` (an OTLP/JSON export ``{"resourceSpans": [...]}``, one per line as the collector's
        file exporter writes, a list of spans as ``ReadableSpan.to_json()`` writes them, or Phoenix rows),
        ``.jsonl`` (one of those per line), ``.parquet`` (a saved Phoenix span DataFrame); ``.gz`` works too --,
        a Phoenix span DataFrame (``px.Client().get_spans_dataframe()``), a list of OpenTelemetry SDK
        ``ReadableSpan`` objects or span dicts, or an ``InMemorySpanExporter``.
    golden:
        Queries to match the spans' queries to (a :class:`~rankbridge.GoldenSet`, a list of
        :class:`~rankbridge.Query`, ``{query_id: text}``), as :func:`rankbridge.capture.capture` takes: by
        the ``rankbridge_query_id`` in a span's (or an ancestor's) ``metadata`` or ``tag.tags``
        (``"rankbridge_query_id=q1"``), else by normalised text. A GoldenSet with a corpus or qrels also
        checks the doc ids (and resolves UUID chunk ids to a matching ``metadata:KEY`` when ``id_from`` is
        not given).
    id_from:
        Where a document's id comes from (:mod:`rankbridge.retriever`): ``"id"`` (``document.id``, the
        default), ``"metadata:KEY"``, ``"content_hash"``, a callable on ``{"id", "text", "metadata",
        "score"}``, or a list of them. ``"ref_doc_id"`` is not in spans: it raises.
    doc_map:
        Chunk id -> document id, for qrels that judge whole documents.
    keep_text:
        Keep the documents' content in the hits (RAGAS needs it).
    name:
        The run's name.
    stage:
        ``"final"`` (default): a reranker's output where a ``RERANKER`` span followed the retrieval, else
        the retrieved list; the retrieved lists are then also in ``run.stages["retrieved"]``.
        ``"retrieved"``: the retrievers' own lists.
    repeats:
        Which retrieval of a query asked more than once makes its entry: ``"first"`` or ``"last"`` (by end
        time).
    check_ids:
        Check the doc ids against the golden set (see :meth:`rankbridge.capture.Capture.to_run`).

    Returns
    -------
    Run
        ``run.config["summary"]`` is :meth:`TraceCapture.summary` (matched by id / text, unmatched,
        missing, the doc-id check, spans read); ``run.config["unmatched_queries"]`` lists the query texts
        that matched no golden query.

    Raises
    ------
    ParseError
        A malformed export (file and line, or span id).
    InputError
        No retrieval span in the source, or ``id_from='ref_doc_id'``.
    IdMismatchError
        The documents' ids name nothing the golden set knows (see :func:`rankbridge.capture.capture`).

    Examples
    --------
    >>> span = {"context": {"span_id": "0x0b"}, "attributes": {
    ...     "gen_ai.operation.name": "retrieval", "gen_ai.retrieval.query.text": "tea",
    ...     "gen_ai.retrieval.documents": '[{"id": "t1", "score": 0.8}, {"id": "t2", "score": 0.5}]'}}
    >>> run = read_openinference([span])
    >>> [(h.doc_id, h.score) for h in run.hits(run.query_ids()[0])]
    [('t1', 0.8), ('t2', 0.5)]
    """
    return _to_run(_openinference(source, options), options)


# -- LangSmith ---------------------------------------------------------------------------------------------------
@dataclass(kw_only=True)
class _LSRun(_Node):
    run_id: str
    run_type: str
    inputs: Any
    outputs: Any
    metadata: Any
    tags: Any

    @property
    def node_id(self) -> str:
        return self.run_id


_RUN_FIELDS = (
    "id",
    "name",
    "run_type",
    "inputs",
    "outputs",
    "error",
    "parent_run_id",
    "trace_id",
    "start_time",
    "end_time",
    "extra",
    "tags",
    "child_runs",
    "metadata",
)


def _as_run_dict(obj: Any, where: str) -> Mapping[str, Any]:
    if isinstance(obj, Mapping):
        return obj
    if hasattr(obj, "run_type") and hasattr(obj, "id"):  # langsmith Run / RunTree, LangChain tracer runs
        return {key: getattr(obj, key, None) for key in _RUN_FIELDS}
    raise ParseError(
        f"expected a LangSmith run (an object with 'id', 'run_type', 'inputs', 'outputs'), found {type(obj).__name__}",
        source=where,
    )


def _flatten_runs(obj: Any, where: str, out: list[_LSRun], seen: set[str]) -> None:
    if isinstance(obj, list):
        for item in obj:
            _flatten_runs(item, where, out, seen)
        return
    if isinstance(obj, Mapping) and "run_type" not in obj and isinstance(obj.get("runs"), list):
        _flatten_runs(obj["runs"], where, out, seen)
        return
    run = _as_run_dict(obj, where)
    if "run_type" not in run or "id" not in run:
        raise ParseError(
            f"expected a LangSmith run with 'id' and 'run_type', found keys {_keys(run)}",
            source=where,
        )
    run_id = str(run["id"])
    if run_id not in seen:
        seen.add(run_id)
        extra = run.get("extra") if isinstance(run.get("extra"), Mapping) else {}
        metadata = (extra or {}).get("metadata", run.get("metadata"))
        error = run.get("error")
        out.append(
            _LSRun(
                run_id=run_id,
                parent_id=None if run.get("parent_run_id") in (None, "") else str(run["parent_run_id"]),
                trace_id=None if run.get("trace_id") in (None, "") else str(run["trace_id"]),
                name=str(run.get("name") or ""),
                run_type=str(run.get("run_type") or ""),
                inputs=run.get("inputs"),
                outputs=run.get("outputs"),
                error=None if error in (None, "") else str(error),
                start=_seconds(run.get("start_time")),
                end=_seconds(run.get("end_time")),
                metadata=metadata,
                tags=run.get("tags"),
                where=f"{where} run {run_id}",
            )
        )
    for child in run.get("child_runs") or ():
        _flatten_runs(child, where, out, seen)


def _collect_runs(source: Any) -> tuple[list[_LSRun], str]:
    runs: list[_LSRun] = []
    seen: set[str] = set()
    objects, described = _export_objects(
        source,
        one="<run>",
        many="<runs>",
        is_one=lambda obj: isinstance(obj, Mapping) or hasattr(obj, "run_type"),
        expected="a path (.json list of runs, .jsonl one run per line), a list of run dicts or langsmith Run objects",
    )
    for where, obj in objects:
        _flatten_runs(obj, where, runs, seen)
    for i, run in enumerate(runs):
        run.order = i
    return runs, described


def _lc_document(item: Any, where: str, rank: int) -> dict[str, Any]:
    """A LangChain ``Document`` as a run export holds it: a dict, LangChain's serialised form, or the object."""
    if isinstance(item, Mapping):
        if item.get("lc") is not None and isinstance(item.get("kwargs"), Mapping):  # {"lc": 1, "type": "constructor"}
            item = item["kwargs"]
        content = item.get("page_content")
        meta = item.get("metadata")
        doc_id = item.get("id")
    elif hasattr(item, "page_content"):
        content, meta, doc_id = item.page_content, getattr(item, "metadata", None), getattr(item, "id", None)
    else:
        raise ParseError(
            f"outputs.documents[{rank}]: expected a document ({{'page_content', 'metadata'}}), found {item!r:.60}",
            source=where,
        )
    meta = _plain(meta)
    return {
        "id": None if doc_id in (None, "") else doc_id if isinstance(doc_id, (str, int)) else str(doc_id),
        "text": content if isinstance(content, str) else None,
        "metadata": dict(meta) if isinstance(meta, Mapping) else {},
        "score": None,
    }


def _ls_query(inputs: Any) -> str:
    if isinstance(inputs, str):
        return inputs
    if isinstance(inputs, Mapping):
        for key in ("query", "input", "question"):
            if isinstance(inputs.get(key), str):
                return str(inputs[key])
        strings = [v for v in inputs.values() if isinstance(v, str)]
        if len(strings) == 1:
            return strings[0]
    return ""


@keywords(TraceOptions, **_CAPTURE_DEFAULTS, name="langsmith")
def langsmith_capture(source: Any, **options: Unpack[TraceOptions]) -> TraceCapture:
    """The retriever runs of a LangSmith export as a :class:`TraceCapture` (see :func:`read_langsmith`)."""
    return _langsmith(source, options)


def _langsmith(source: Any, options: TraceOptions) -> TraceCapture:
    _check_id_from(options["id_from"], "a LangSmith run")
    runs, described = _collect_runs(source)
    by_id = {r.run_id: r for r in runs}
    retrievers = [r for r in runs if r.run_type == "retriever"]
    counts: dict[str, Any] = {"runs": len(runs), "retriever_runs": len(retrievers), "unfinished": 0}
    if not retrievers:
        kinds = sorted({r.run_type or "(none)" for r in runs})
        raise InputError(
            f"{described}: expected runs with run_type 'retriever'; found {len(runs)} runs of types {kinds}. "
            "Export the project's runs with their child runs (client.list_runs(..., run_type='retriever') or "
            "whole traces)."
        )

    def query_id(run: _LSRun) -> str | None:
        for r in (run, *_ancestors(run, by_id)):
            qid = _own_query_id(r.metadata, r.tags)
            if qid is not None:
                return qid
        return None

    records: dict[str, CaptureRecord] = {}
    for run in sorted(retrievers, key=_end_key):
        if run.outputs is None and run.error is None:
            counts["unfinished"] += 1
            continue
        record = _record(run, _ls_query(run.inputs), query_id(run), "langsmith")
        if run.error is None:
            docs = run.outputs.get("documents") if isinstance(run.outputs, Mapping) else None
            if docs is None:
                raise ParseError(
                    "expected outputs.documents (a list) on a retriever run, found "
                    + (
                        f"keys {sorted(run.outputs)[:6]}"
                        if isinstance(run.outputs, Mapping)
                        else type(run.outputs).__name__
                    ),
                    source=run.where,
                )
            if not isinstance(docs, list):
                raise ParseError(
                    f"expected outputs.documents to be a list, found {type(docs).__name__}", source=run.where
                )
            record.set_items([_lc_document(d, run.where, i) for i, d in enumerate(docs)])
        records[run.run_id] = record
    top = _nest(retrievers, records, by_id)
    return _new_capture([records[r.run_id] for r in top], options, source="langsmith", counts=counts)


@keywords(TraceRunOptions, **_RUN_DEFAULTS, name="langsmith")
def read_langsmith(source: Any, **options: Unpack[TraceRunOptions]) -> Run:
    """Read the retriever runs of a LangSmith export as a ranked :class:`~rankbridge.Run`.

    Parameters
    ----------
    source:
        A path -- ``.json`` (a list of runs, ``{"runs": [...]}`` or one run), ``.jsonl`` (one run per line);
        ``.gz`` works too --, a list of run dicts, or ``langsmith`` ``Run`` / ``RunTree`` objects (LangChain's
        tracer runs). Runs nested under ``child_runs`` are read too. A retriever run gives the query
        (``inputs.query``) and the documents (``outputs.documents``: ``page_content``, ``metadata``, ``id``).
    golden, id_from, doc_map, keep_text, name, stage, repeats, check_ids:
        As :func:`read_openinference`. The query id comes from ``extra.metadata.rankbridge_query_id`` or a
        ``rankbridge_query_id=...`` tag of the run or an ancestor. A callable ``id_from`` gets ``{"id",
        "text", "metadata", "score"}``. LangChain documents carry no score: the hits have none. A retriever
        run inside another (``ContextualCompressionRetriever``) makes the ``"retrieved"`` stage, the outer
        one the final list, as live capture records them.

    Returns
    -------
    Run
        With ``run.config["summary"]`` and ``run.config["unmatched_queries"]`` as :func:`read_openinference`.

    Examples
    --------
    >>> runs = [{"id": "r1", "run_type": "retriever", "inputs": {"query": "What causes scurvy?"},
    ...          "outputs": {"documents": [{"page_content": "Scurvy is...", "metadata": {"doc_id": "d1"}}]}}]
    >>> run = read_langsmith(runs, golden={"q1": "what causes scurvy"}, id_from="metadata:doc_id")
    >>> run.ranking("q1")
    ['d1']
    """
    return _to_run(_langsmith(source, options), options)
