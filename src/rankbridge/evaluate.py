"""``evaluate(qrels, run, metrics)`` -> :class:`Evaluation`, the one entry to the metrics core."""

from __future__ import annotations

import math
import operator
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain, compress
from typing import Any, Literal, Protocol

import numpy as np

from rankbridge.errors import IdMismatchError, IdMismatchWarning, InputError, MissingExtraError, RunCoverageWarning
from rankbridge.fingerprint import qrels_fingerprint
from rankbridge.idmatch import check_run
from rankbridge.metrics.measures import Measure, parse_measure, parse_measures
from rankbridge.metrics.ranking import HitTable, compute, convert_checked
from rankbridge.types import GoldenSet, Qrels, Run, _plain_judgments, _plain_ranked

__all__ = [
    "Evaluation",
    "Executor",
    "IdMismatchWarning",
    "Partition",
    "RunCoverageWarning",
    "evaluate",
    "merge_evaluations",
]


MissingPolicy = Literal["zero", "skip"]


@dataclass(repr=False)
class Evaluation:
    """Per-query metric values and their means, with an account of which queries were counted.

    Attributes
    ----------
    measures:
        The measures, in the order asked for.
    query_ids:
        The queries every mean is over, sorted; ``values[name][i]`` belongs to ``query_ids[i]``.
    values:
        Canonical metric name -> ``(len(query_ids),)`` float64 array.
    missing:
        Queries in the qrels that the run has no result for (neither hits nor an error). Scored 0 and
        counted under ``missing="zero"``; left out under ``missing="skip"``.
    failed:
        Queries whose retrieval failed (``run.errors``); treated like missing ones.
    unjudged:
        Queries in the run that the qrels do not know; never evaluated.
    no_relevant:
        Evaluated queries whose qrels have no relevant doc (recall, AP, nDCG are 0 for them).
    run_name:
        The run's name, for reports.
    notes:
        Warnings about the input the means rest on (doc ids that match nothing, a partial capture, most
        queries missing from the run, cut-offs deeper than every list of the run), in the words
        :meth:`summary` and the reports use.

    Examples
    --------
    >>> ev = evaluate({"q1": {"d1": 1}, "q2": {"d9": 1}}, {"q1": {"d1": 0.9, "d2": 0.1}}, ["mrr", "P@1"])
    >>> ev.mean
    {'mrr': 0.5, 'precision@1': 0.5}
    >>> ev.per_query["mrr"]
    {'q1': 1.0, 'q2': 0.0}
    >>> ev.missing, ev.num_queries
    (('q2',), 2)
    """

    measures: tuple[Measure, ...]
    query_ids: tuple[str, ...]
    values: dict[str, np.ndarray]
    missing: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()
    unjudged: tuple[str, ...] = ()
    no_relevant: tuple[str, ...] = ()
    missing_policy: MissingPolicy = "zero"
    run_name: str = "run"
    duplicates: int = 0
    table: HitTable | None = field(default=None, repr=False, compare=False)
    notes: tuple[str, ...] = ()
    partition: Partition | None = field(default=None, repr=False, compare=False)

    def __repr__(self) -> str:
        """Counts, names and the first means: never the per-query arrays (a run may have millions of queries)."""
        means = self.mean
        shown = ", ".join(f"{name!r}: {value:.4f}" for name, value in list(means.items())[:5])
        more = ", ..." if len(means) > 5 else ""
        return (
            f"Evaluation(run={self.run_name!r}, queries={self.num_queries}, mean={{{shown}{more}}}, "
            f"missing={len(self.missing)}, failed={len(self.failed)}, unjudged={len(self.unjudged)}, "
            f"no_relevant={len(self.no_relevant)}{', notes=' + str(len(self.notes)) if self.notes else ''})"
        )

    @classmethod
    def merge(cls, parts: Iterable[Evaluation], *, complete: bool = True) -> Evaluation:
        """One evaluation from evaluations of disjoint partitions of the queries (``evaluate(..., queries=)``).

        The result equals the single-process ``evaluate`` bit for bit -- per-query values, query order,
        missing/failed/unjudged/no-relevant lists, duplicates, the hit table (its judgments listed by
        query) -- so means, intervals, paired tests and slices computed from it are the single-process
        ones. Notes (the id check's warnings) are those of the parts, each once.

        Parameters
        ----------
        parts:
            Evaluations made by ``evaluate(qrels, run, metrics, queries=block)`` with the same qrels,
            metrics and settings, over disjoint blocks of query ids.
        complete:
            ``True`` (default): refuse parts that leave queries of the qrels out (a lost partition would
            shift every mean). ``False`` merges what is there.

        Raises
        ------
        InputError
            A part was not made on a partition, two parts share a query, or the parts differ in qrels
            (fingerprint), metrics, run name, ``missing`` or ``single_precision``; or (``complete``) the
            parts do not cover the qrels.

        Examples
        --------
        >>> qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}, "q3": {"d3": 1}}
        >>> run = {"q1": {"d1": 1.0}, "q3": {"d9": 1.0, "d3": 0.5}}
        >>> parts = [evaluate(qrels, run, ["mrr"], queries=block) for block in (["q3"], ["q1", "q2"])]
        >>> merged = Evaluation.merge(parts)
        >>> merged.query_ids, merged.mean == evaluate(qrels, run, ["mrr"]).mean
        (('q1', 'q2', 'q3'), True)
        """
        return merge_evaluations(parts, complete=complete)

    @property
    def metric_names(self) -> list[str]:
        """Every column in :attr:`values`: the ranking measures, then any joined ones (e.g. RAGAS)."""
        return list(self.values)

    @property
    def num_queries(self) -> int:
        """How many queries every mean is over."""
        return len(self.query_ids)

    @property
    def counts(self) -> dict[str, int]:
        """Metric name -> number of queries its mean is over.

        Ranking metrics are defined for every query; a joined column (e.g. a RAGAS score) holds NaN
        where it could not be computed, and such queries are not counted.
        """
        return {name: int(np.count_nonzero(~np.isnan(v))) for name, v in self.values.items()}

    @property
    def mean(self) -> dict[str, float]:
        """Metric name -> mean over the queries in :attr:`counts` (NaN when there are none)."""
        out: dict[str, float] = {}
        for name, v in self.values.items():
            ok = v[~np.isnan(v)]
            out[name] = float(ok.mean()) if len(ok) else math.nan
        return out

    @property
    def per_query(self) -> dict[str, dict[str, float]]:
        """Metric name -> {query id -> value}."""
        return {name: dict(zip(self.query_ids, v.tolist(), strict=True)) for name, v in self.values.items()}

    def __getitem__(self, metric: str | Measure) -> np.ndarray:
        """Per-query values of one metric, by any accepted spelling (``ev["P@5"]``) or column name."""
        if isinstance(metric, str) and metric in self.values:
            return self.values[metric]
        return self.values[str(parse_measure(metric))]

    def to_pandas(self, form: Literal["long", "wide"] = "long") -> Any:
        """Per-query values as a pandas DataFrame (pandas is imported only here).

        Parameters
        ----------
        form:
            ``"long"``: one row per (query, metric), columns ``query_id``, ``metric``, ``value``.
            ``"wide"``: one row per query, a ``query_id`` column and one column per metric.

        Raises
        ------
        MissingExtraError
            pandas is not installed (``pip install pandas``).

        Examples
        --------
        >>> ev = evaluate({"q1": {"d1": 1}, "q2": {"d9": 1}}, {"q1": {"d1": 0.9}}, ["mrr", "P@1"])
        >>> ev.to_pandas()
          query_id       metric  value
        0       q1          mrr    1.0
        1       q2          mrr    0.0
        2       q1  precision@1    1.0
        3       q2  precision@1    0.0
        >>> ev.to_pandas("wide")
          query_id  mrr  precision@1
        0       q1  1.0          1.0
        1       q2  0.0          0.0
        """
        pd = _import_pandas("Evaluation.to_pandas()")
        if form == "wide":
            columns: dict[str, Any] = {"query_id": list(self.query_ids)}
            columns.update({name: np.asarray(v, dtype=np.float64) for name, v in self.values.items()})
            return pd.DataFrame(columns)
        if form != "long":
            raise InputError(f"form must be 'long' or 'wide'. Got {form!r} instead.")
        n = len(self.query_ids)
        return pd.DataFrame(
            {
                "query_id": list(self.query_ids) * len(self.values),
                "metric": [name for name in self.values for _ in range(n)],
                "value": np.concatenate([np.asarray(v, dtype=np.float64) for v in self.values.values()])
                if self.values
                else np.zeros(0),
            }
        )

    def _repr_html_(self) -> str | None:
        """Notebook display: a one-run report (means with intervals, readings) as an HTML fragment."""
        # lazy: a display hook (analysis and reports sit above evaluate; the import contract allows these two)
        from rankbridge.analysis import compare
        from rankbridge.reports import build_report

        cmp = compare({self.run_name: self}, None, self.metric_names[: len(self.measures)], n_resamples=2000)
        return build_report(cmp)._repr_html_()

    def summary(self) -> str:
        """One paragraph on which queries the means are over."""
        zero = self.missing_policy == "zero"
        missing = "scored 0" if zero else "skipped; missing='zero' scores them 0"
        clauses = count_clauses(
            (len(self.missing), f"missing from the run ({missing})"),
            (len(self.failed), f"failed ({'scored 0' if zero else 'skipped'})"),
            (len(self.no_relevant), "with no relevant document"),
            (len(self.unjudged), "in the run but not in the qrels (not evaluated)"),
            (self.duplicates, "duplicate hits dropped"),
        )
        parts = [f"{self.num_queries} queries evaluated", *clauses]
        return "; ".join(parts) + "".join(f"\nwarning: {note}" for note in self.notes)


def count_clauses(*counts: tuple[int, str]) -> list[str]:
    """``"N what"`` for every ``(N, what)`` whose count is not 0, in order: the clauses of a one-line summary.

    Examples
    --------
    >>> count_clauses((2, "failed"), (0, "resumed from the checkpoint"), (1, "duplicate hits dropped"))
    ['2 failed', '1 duplicate hits dropped']
    """
    return [f"{n} {what}" for n, what in counts if n]


def _import_pandas(feature: str) -> Any:
    """pandas, for ``feature`` (a ``to_pandas()``); else a MissingExtraError that names the plain install."""
    try:
        import pandas as pd  # type: ignore[import-untyped]  # lazy: an extra, for to_pandas() only
    except ImportError as exc:
        err = MissingExtraError("pandas", "pandas", feature)
        err.msg = (  # ImportError prints .msg: pandas alone is enough here (the pandas extra adds pyarrow)
            f"{feature} needs the 'pandas' package, which is not installed. Install it with: pip install pandas"
        )
        err.args = (err.msg,)
        raise err from exc
    return pd


def _golden_qrels(golden: GoldenSet) -> Qrels:
    """The golden set's qrels, limited to its questions (a golden set cut to a subset keeps its full qrels)."""
    qrels = golden.qrels
    ids = tuple(q.id for q in golden.queries)
    wanted = set(ids)
    if all(qid in wanted for qid in qrels):
        return qrels
    key = ("golden-subset", ids)
    cached = qrels._cache.get(key)
    if cached is None:  # kept on the qrels, so that the hit tables cached per qrels object are reused
        cached = Qrels._trusted({q: d for q, d in qrels._data.items() if q in wanted}, name=qrels.name)
        qrels._cache[key] = cached
    return cached  # type: ignore[no-any-return]


def _as_qrels(qrels: Any) -> Qrels:
    if isinstance(qrels, GoldenSet):
        return _golden_qrels(qrels)
    if isinstance(qrels, Qrels):
        return qrels
    if type(qrels) is dict and _plain_judgments(qrels):
        # {str: {str: int}} throughout: read in place for this call (the copy costs more than the metrics)
        return Qrels._trusted(qrels)
    if isinstance(qrels, Mapping):
        return Qrels(qrels)
    raise InputError(
        f"qrels: expected a GoldenSet, a Qrels or a dict {{qid: {{doc: label}}}}, found {type(qrels).__name__}"
    )


def _check_ids(golden: GoldenSet | Qrels, data: Mapping[str, Any], run_obj: Run | None) -> str | None:
    """None when the run's ids match the golden set's; else raise (golden set) or return a warning (qrels)."""
    report = check_run(run_obj if run_obj is not None else data, golden)
    if report.ok:
        return None
    fix = ""
    if report.chosen is not None and report.chosen.startswith("metadata:"):
        fix = (
            f" The hits' metadata has the right ids: rankbridge.idmatch.remap_ids(run, {report.chosen!r}) rewrites "
            f"the run, or retrieve again with id_from={report.chosen!r}."
        )
    message = f"run {run_obj.name if run_obj is not None else 'run'!r}: {report.message()}{fix}"
    if isinstance(golden, GoldenSet):
        raise IdMismatchError(
            f"evaluate: {message} Scores would be meaningless (check_ids=False evaluates anyway).",
            suggestion=report.chosen,
            report=report,
        )
    warnings.warn(IdMismatchWarning(f"evaluate: {message}"), stacklevel=3)
    return "doc ids do not match the qrels: " + message


def _as_run_mapping(run: Any) -> tuple[Mapping[str, Any], Run | None, Mapping[str, int]]:
    """The mapping the kernel reads, the Run object when there is one (errors, cache), and dropped repeats.

    ``{qid: {doc: score}}`` is read in place. ``{qid: [doc ids]}``, ``{qid: [(doc, score), ...]}`` and
    ``{qid: [Hit, ...]}`` become ``{qid: [doc ids]}`` (repeats dropped, first kept) without building a
    :class:`Run` or a Python object per hit, when every item is of one plain kind; anything else is
    validated through a Run, which names the bad item.
    """
    if isinstance(run, Run):  # a Run stored as columns is read as columns (build_table knows it)
        return (run if run.columns is not None else run._metric_view()), run, run.duplicates
    if isinstance(run, Mapping):
        if not run:
            return {}, None, {}
        # Plain dicts are read in place (no copy): check only what is cheap to check.
        if not set(map(type, run)) <= {str}:
            run = {str(q): v for q, v in run.items()}
        values = list(run.values())
        kinds = set(map(type, values))
        if kinds == {dict} or all(isinstance(v, Mapping) for v in values):
            return run, None, {}
        if kinds <= {list, tuple}:
            plain = _plain_ranked(run, values)
            if plain is not None:
                return (*plain[:1], None, plain[1])
        # Hit lists (rank order), possibly mixed with {doc: score} queries: validate through a Run.
        mixed = Run()
        for qid, value in run.items():
            if isinstance(value, Mapping):
                mixed._data[qid] = Run.from_scores({qid: value})._data[qid]
            elif isinstance(value, (list, tuple)):
                mixed.add(qid, value)
            else:
                raise InputError(
                    f"run[{qid!r}]: expected {{doc: score}} or a list of doc ids in rank order, "
                    f"found {type(value).__name__}"
                )
        return mixed._metric_view(), mixed, mixed.duplicates
    raise InputError(f"run: expected a Run or a dict, found {type(run).__name__}")


#: Modules whose tables evaluate reads as a run of one row per hit (see rankbridge.io.run_from_table).
_TABLE_MODULES = frozenset({"pandas", "pyarrow", "polars"})


def _run_from_table(table: Any) -> Run:
    # lazy: io.run_tables (and through it pandas / pyarrow) loads only when a table is passed
    from rankbridge.io.run_tables import run_from_table

    return run_from_table(table)


def evaluate(
    qrels: GoldenSet | Qrels | Mapping[str, Mapping[str, int]] | None,
    run: Run | Mapping[str, Any] | HitTable,
    metrics: str | Measure | Sequence[str | Measure],
    *,
    missing: MissingPolicy | None = None,
    single_precision: bool = False,
    check_ids: bool = True,
    queries: Iterable[str] | None = None,
    executor: Executor | None = None,
) -> Evaluation:
    """Evaluate a run against qrels, exactly as trec_eval defines each measure.

    Parameters
    ----------
    qrels:
        A :class:`~rankbridge.GoldenSet` (the qrels of its questions; its corpus ids also serve the id
        check), a :class:`~rankbridge.Qrels` or ``{qid: {doc: label}}``; ``None`` when ``run`` is a
        :class:`~rankbridge.metrics.ranking.HitTable` (e.g. from ``table_from_arrays``), which holds the qrels.
    run:
        A :class:`~rankbridge.Run`, ``{qid: {doc: score}}`` (ranked by score, ties broken by doc id
        descending as trec_eval does), ``{qid: [doc ids in rank order]}`` (or ``(doc_id, score)``
        pairs, or :class:`~rankbridge.Hit` objects, in rank order; a repeated doc keeps its first rank),
        or a precomputed :class:`~rankbridge.metrics.ranking.HitTable`, or a table with one row per hit
        (a pandas DataFrame, a pyarrow Table or a polars DataFrame with ``query_id``, ``doc_id`` and
        ``score`` or ``rank`` columns: :func:`rankbridge.io.run_from_table`).
    metrics:
        Metric names such as ``"ndcg@10"``, ``"P@5"``, ``"mrr@10"``, ``"recall@100"``.
    missing:
        ``"zero"``: every query in the qrels counts, and one the run lacks (or whose retrieval failed)
        scores 0 -- trec_eval ``-c``. ``"skip"``: average over queries in both, trec_eval's default.
        ``None`` (default): ``"zero"``, except for a live capture (``run.config["source"] == "capture"``),
        which saw only the questions the app was asked: ``"skip"``, with the count of unseen questions in
        :attr:`Evaluation.missing` and :meth:`Evaluation.summary`.
    single_precision:
        Compare scores as float32 before the doc-id tie-break, as trec_eval (and pytrec_eval) do. Off by
        default: two scores that differ only beyond float32 precision then rank by score, not by doc id.
    check_ids:
        Check that the run's doc ids are ones the golden set knows (:mod:`rankbridge.idmatch`). With a
        :class:`~rankbridge.GoldenSet`, ids that match nothing raise
        :class:`~rankbridge.IdMismatchError`; with qrels alone, ids almost never judged anywhere give an
        :class:`IdMismatchWarning` and a note in :attr:`Evaluation.notes`. ``False`` skips the check.
    queries:
        Evaluate only these query ids, one block of a partition of the queries (of the qrels and of the
        run): the result records the qrels' fingerprint and the settings, so that :meth:`Evaluation.merge`
        of the blocks' results equals the evaluation of the whole bit for bit.
    executor:
        Split the queries into blocks and evaluate them elsewhere, e.g.
        :class:`rankbridge.integrations.ray.RayExecutor` (the result is the merge, equal to a local run).
        ``run`` may also be a Ray Dataset of rows ``query_id, doc_id, score`` (see ``docs/ray.md``).

    Raises
    ------
    IdMismatchError
        ``qrels`` is a golden set and the run's ids match nothing it knows (see ``check_ids``).

    Returns
    -------
    Evaluation
        Per-query values, means, and which queries were missing, failed or unjudged.

    Examples
    --------
    >>> ev = evaluate({"q1": {"a": 2, "b": 1}}, {"q1": {"a": 0.5, "b": 0.7, "c": 0.1}}, ["ndcg@10", "P@2"])
    >>> round(ev.mean["ndcg@10"], 4), ev.mean["precision@2"]
    (0.8597, 1.0)
    """
    if missing not in (None, "zero", "skip"):
        raise InputError(f"missing must be 'zero' or 'skip'. Got {missing!r} instead.")
    if type(run).__module__.split(".")[0] in _TABLE_MODULES:  # one row per hit, e.g. read from Parquet
        run = _run_from_table(run)
    if executor is not None or _is_ray_dataset(run):
        return _evaluate_elsewhere(qrels, run, metrics, executor, missing, single_precision, check_ids, queries)
    if queries is not None:
        return _evaluate_block(qrels, run, metrics, queries, missing, single_precision, check_ids)
    ev = _evaluate(qrels, run, metrics, missing, single_precision, check_ids)
    return _suspicious(ev, missing_given=missing is not None, stacklevel=3)


def _evaluate(
    qrels: Any,
    run: Any,
    metrics: Any,
    missing: MissingPolicy | None,
    single_precision: bool,
    check_ids: bool,
) -> Evaluation:
    """:func:`evaluate` of one process, without the checks of :func:`_suspicious` (a block has only its part of
    the counts those make: the whole's are checked once, on the whole or on the merge of its blocks)."""
    measures = tuple(parse_measures(metrics))
    if isinstance(run, HitTable):  # already converted: the qrels are in the table
        table = run
        values = {str(m): compute(table, m) for m in measures}
        no_relevant = tuple(table.query_ids[i] for i in np.flatnonzero(table.num_relevant(1) == 0).tolist())
        unjudged = getattr(table, "unjudged", ())  # table_from_arrays: the rows whose query has no judgment
        return Evaluation(
            measures,
            table.query_ids,
            values,
            unjudged=unjudged,
            no_relevant=no_relevant,
            missing_policy=missing or "zero",
            table=table,
        )
    q = _as_qrels(qrels)
    data, run_obj, dropped = _as_run_mapping(run)
    errors: Mapping[str, str] = run_obj.errors if run_obj is not None else {}
    captured = run_obj is not None and run_obj.config.get("source") == "capture"
    if missing is None:
        missing = "skip" if captured else "zero"

    # Which queries are evaluated, missing, failed, unjudged: C-level passes over the sorted qrels ids.
    qkeys = list(q._data)
    order = sorted(range(len(qkeys)), key=qkeys.__getitem__)
    all_ids = tuple(map(qkeys.__getitem__, order))
    in_run = _has(data)
    if type(data) is dict and len(data) == len(qkeys) and list(data) == qkeys:  # the run's queries are the qrels'
        present = [True] * len(qkeys)
    else:
        present = list(map(in_run, all_ids))
    absent = list(map(operator.not_, present))
    if errors:
        failed = tuple(qid for qid in compress(all_ids, absent) if qid in errors)
        missing_q = tuple(qid for qid in compress(all_ids, absent) if qid not in errors)
    else:
        failed, missing_q = (), tuple(compress(all_ids, absent))
    judged = q._data.__contains__
    unjudged = (
        ()
        if all(present) and len(data) == len(qkeys)
        else tuple(sorted(compress(data, map(operator.not_, map(judged, data)))))
    )
    if errors:
        unjudged = tuple(sorted({*unjudged, *(qid for qid in errors if not in_run(qid) and not judged(qid))}))
    query_ids = all_ids if missing == "zero" else tuple(compress(all_ids, present))

    ordered = np.array(order, dtype=np.int64) if missing == "zero" else None
    table = _cached_table(q, data, run_obj, query_ids, single_precision, ordered)  # validates the run's scores
    notes: list[str] = []
    if check_ids and data:
        note = _check_ids(qrels if isinstance(qrels, GoldenSet) else q, data, run_obj)
        if note is not None:
            notes.append(note)
    values = {str(m): compute(table, m) for m in measures}
    no_relevant = tuple(compress(query_ids, (table.num_relevant(1) == 0).tolist()))
    duplicates = sum(dropped.get(qid, 0) for qid in query_ids) if dropped else 0
    if captured and missing == "skip" and missing_q:
        notes.append(
            f"the capture saw {len(q) - len(missing_q)} of the {len(q)} golden questions: the means are over "
            "those alone"
        )
    concurrent = run_obj.config.get("concurrent_repeats") if captured and run_obj is not None else None
    if concurrent and run_obj is not None:
        notes.append(
            f"{concurrent} captured questions had retrievals that ran at the same time (one request searching "
            f"several retrievers, or one query_id around several questions): each is scored on the "
            f"{run_obj.config.get('repeats', 'first')} to start alone; rankbridge.run_app scores them together "
            "(retrieval='final')"
        )
    if failed and missing == "skip":  # the means are over the retrievals that worked (no count: blocks merge)
        notes.append(
            "queries whose retrieval failed (run.errors) are left out of the means, which are over the "
            "retrievals that worked; missing='zero' scores them 0"
        )
    return Evaluation(
        measures=measures,
        query_ids=query_ids,
        values=values,
        missing=missing_q,
        failed=failed,
        unjudged=unjudged,
        no_relevant=no_relevant,
        missing_policy=missing,
        run_name=run_obj.name if run_obj is not None else "run",
        duplicates=duplicates,
        table=table,
        notes=tuple(notes),
    )


#: Measures that a cut-off past the end of every list lowers: precision@k, f1@k and judged@k divide by k; nDCG@k's
#: ideal ranking (_IDEAL_AT_K) fills k ranks when a query has more relevant docs than the list. (Recall, MRR,
#: MAP, hit rate and the counts are the same at k as at the list's depth: a run shorter than k is not held
#: against them.)
_DIVIDED_BY_K = frozenset({"precision", "f1", "judged"})
_IDEAL_AT_K = frozenset({"ndcg", "ndcg_exp"})


def _suspicious(ev: Evaluation, *, missing_given: bool, stacklevel: int) -> Evaluation:
    """``ev`` with notes on what is suspicious in the whole evaluation, and a :class:`RunCoverageWarning` when
    most of the queries scored are not in the run.

    * ``missing="zero"`` by default (``missing_given`` false: ``missing="zero"`` passed asks for those zeros, as
      trec_eval ``-c`` does) and more than half the queries evaluated missing from the run: the means are
      mostly zeros for queries never asked (a subset of a golden set's questions scored against its full qrels);
    * ``missing="skip"`` and more than half of the run's judged queries failed: the means are over the few
      retrievals that worked;
    * every list of the run shorter than a cut-off that counts the missing ranks (``precision@10`` of a
      4-hit retriever): a note only, since trec_eval and ranx score those ranks as non-relevant and so does
      rankbridge.
    """
    notes: list[str] = []
    run = repr(ev.run_name)
    missing, failed, evaluated = len(ev.missing), len(ev.failed), len(ev.query_ids)
    if ev.missing_policy == "zero" and not missing_given and missing > evaluated / 2:
        message = (
            f"{missing} of the {evaluated} queries evaluated are missing from the run {run} and score 0 "
            "(missing='zero'), so the means are mostly those zeros. A subset of a golden set's questions scored "
            "against its full qrels does this (evaluate(golden.qrels, run) after GoldenSet(full.queries[:16], "
            "full.qrels)): pass the GoldenSet itself, which scores its own questions, or missing='skip' to "
            "average over the run's queries"
        )
        if ev.unjudged:  # the run has queries of its own: their ids may be spelled otherwise than the qrels'
            message += (
                f". {len(ev.unjudged)} of the run's queries are not in the qrels (e.g. {ev.unjudged[0]!r}): are "
                "the query ids spelled as the qrels spell them?"
            )
        warnings.warn(RunCoverageWarning(f"evaluate: {message}"), stacklevel=stacklevel)
        notes.append(message)
    tried = evaluated + failed
    if ev.missing_policy == "skip" and failed > tried / 2:
        message = (
            f"{failed} of the {tried} judged queries of the run {run} failed (run.errors) and are left out of the "
            f"means, which are over the {evaluated} that worked: a run that mostly failed (see run.errors for why; "
            "missing='zero' scores the failures 0)"
        )
        warnings.warn(RunCoverageWarning(f"evaluate: {message}"), stacklevel=stacklevel)
        notes.append(message)
    table = ev.table
    if table is not None and evaluated and table.n_ret.size:
        deepest = int(table.n_ret.max())
        ideal_past = bool((table.num_relevant(1) > deepest).any())  # some ideal ranking is deeper than the lists
        lowered = _DIVIDED_BY_K | _IDEAL_AT_K if ideal_past else _DIVIDED_BY_K
        deeper = [m for m in ev.measures if m.name in lowered and m.k is not None and m.k > deepest]
        if deepest and deeper:
            k = max(m.k or 0 for m in deeper)
            notes.append(
                f"every list of the run {run} is shorter than the cut-off of {', '.join(map(str, deeper))}: the "
                f"deepest has {deepest} hits, and the ranks past it count as non-relevant, as in trec_eval and ranx "
                f"(precision@{k} of {deepest} relevant hits is {deepest / k:g}); retrieve at least {k} hits, or "
                f"compare at @{deepest}"
            )
    if notes:
        ev.notes = (*ev.notes, *notes)
    return ev


def _has(data: Mapping[str, Any]) -> Any:
    """``qid in data`` as a C-level function where there is one (a dict's, a columnar Run's index)."""
    if type(data) is dict:
        return data.__contains__
    if isinstance(data, Run) and data.columns is not None:
        return data.columns.index.__contains__
    return data.__contains__


def _cached_table(
    qrels: Qrels,
    data: Mapping[str, Any],
    run_obj: Run | None,
    query_ids: tuple[str, ...],
    single_precision: bool,
    order: np.ndarray | None = None,
) -> HitTable:
    """Build the HitTable once per (run, qrels, queries, precision); Run objects keep it.

    ``order``: ``query_ids[i] == list(qrels)[order[i]]`` when the query ids are all the qrels' queries.
    """
    # The qrels' plain dict: cheaper lookups than through the Mapping wrapper. The run's lists hold
    # distinct str ids or Hits (a Run's, or _as_run_mapping's output): no need to check them again.
    if run_obj is None:
        return convert_checked(qrels._data, data, query_ids, single_precision, order)
    key = ("table", id(qrels), query_ids, single_precision)
    hit = run_obj._cache.get(key)
    if hit is not None and hit[0] is qrels:
        run_obj._cache[key] = run_obj._cache.pop(key)  # the newest again: kept the longest
        return hit[1]  # type: ignore[no-any-return]
    table = convert_checked(qrels._data, data, query_ids, single_precision, order)
    # Plain-dict qrels get a new wrapper each call, so a Run evaluated in a loop would keep one table per
    # call: keep the newest few only (memory bounded; the same Qrels object evaluated again still hits).
    tables = [k for k in run_obj._cache if type(k) is tuple and k[:1] == ("table",)]
    for old in tables[: max(0, len(tables) - _TABLES_KEPT + 1)]:
        del run_obj._cache[old]
    run_obj._cache[key] = (qrels, table)
    return table


#: Hit tables one Run keeps (for the last qrels objects it was evaluated against).
_TABLES_KEPT = 4


# --------------------------------------------------------------------------------------------------
# partitions: evaluate a block of the queries, merge the blocks' evaluations exactly
# --------------------------------------------------------------------------------------------------


class Executor(Protocol):
    """What ``evaluate(..., executor=)`` needs: e.g. :class:`rankbridge.integrations.ray.RayExecutor`."""

    def evaluate(
        self,
        qrels: Any,
        run: Any,
        metrics: Any,
        *,
        missing: MissingPolicy | None,
        single_precision: bool,
        check_ids: bool,
    ) -> Evaluation: ...


@dataclass(frozen=True)
class Partition:
    """What an evaluation of one block of queries was made on, for :meth:`Evaluation.merge` to check.

    Attributes
    ----------
    qrels_fingerprint:
        :func:`~rankbridge.fingerprint.qrels_fingerprint` of the whole qrels the block was cut from.
    qrels_queries:
        How many queries the whole qrels has (a merge that covers fewer lost a block).
    single_precision:
        The ``evaluate`` setting.
    missing_given:
        Whether ``missing=`` was passed (else the policy is the default), for the checks the merge makes.
    """

    qrels_fingerprint: str
    qrels_queries: int
    single_precision: bool
    missing_given: bool = False


def _is_ray_dataset(run: Any) -> bool:
    """A Ray Dataset, told by its class (Ray itself is never imported here)."""
    cls = type(run)
    return cls.__name__ in ("Dataset", "MaterializedDataset") and cls.__module__.startswith("ray.data")


def _evaluate_elsewhere(
    qrels: Any,
    run: Any,
    metrics: Any,
    executor: Executor | None,
    missing: MissingPolicy | None,
    single_precision: bool,
    check_ids: bool,
    queries: Iterable[str] | None,
) -> Evaluation:
    if queries is not None:
        raise InputError("evaluate: queries= (one block) and executor= / a Ray Dataset (all blocks) exclude each other")
    if executor is None:
        # lazy: Ray is an extra, imported only when a Ray Dataset is evaluated
        from rankbridge.integrations.ray import RayExecutor

        executor = RayExecutor()
    return executor.evaluate(
        qrels, run, metrics, missing=missing, single_precision=single_precision, check_ids=check_ids
    )


def _qrels_fingerprint(q: Qrels) -> str:
    """The qrels' fingerprint, kept on the object: every block of one evaluation hashes the qrels once."""
    key = ("fingerprint",)
    found = q._cache.get(key)
    if found is None:
        found = q._cache[key] = qrels_fingerprint(q)
    return found  # type: ignore[no-any-return]


def _subset_run(run: Any, wanted: set[str]) -> Any:
    """The run limited to the queries in ``wanted`` (its errors, name and config kept)."""
    if isinstance(run, Run):
        part = Run(name=run.name, config=run.config)
        part._data = {q: v for q, v in run._entries.items() if q in wanted}  # type: ignore[misc]
        part.errors = {q: m for q, m in run.errors.items() if q in wanted}
        part.duplicates = {q: n for q, n in run.duplicates.items() if q in wanted}
        part.latency = {q: t for q, t in run.latency.items() if q in wanted}
        return part
    if isinstance(run, Mapping):
        return {q: v for q, v in run.items() if str(q) in wanted}
    raise InputError(f"run: expected a Run or a dict, found {type(run).__name__}")


def _evaluate_block(
    qrels: Any,
    run: Any,
    metrics: Any,
    queries: Iterable[str],
    missing: MissingPolicy | None,
    single_precision: bool,
    check_ids: bool,
    *,
    fingerprint: tuple[str, int] | None = None,
) -> Evaluation:
    """``evaluate`` over one block of query ids, with the :class:`Partition` record the merge checks.

    ``fingerprint`` (the whole qrels' fingerprint and query count) is given when ``qrels`` is already the
    block's own part of the qrels (an executor cuts it once at the driver).
    """
    if isinstance(queries, str):
        raise InputError("queries: expected an iterable of query ids, found a single str")
    wanted = {str(q) for q in queries}
    if isinstance(run, HitTable):
        raise InputError("queries=: a HitTable is already cut to its queries; evaluate it whole")
    whole = qrels.qrels if isinstance(qrels, GoldenSet) else _as_qrels(qrels)
    if fingerprint is None:
        fingerprint = (_qrels_fingerprint(whole), len(_as_qrels(qrels)))
    if isinstance(qrels, GoldenSet):
        block_qrels: Any = replace(qrels, queries=[q for q in qrels.queries if q.id in wanted])
    else:
        block_qrels = Qrels._trusted({q: d for q, d in whole._data.items() if q in wanted}, name=whole.name)
    block_run = _subset_run(run, wanted)
    ev = _evaluate(block_qrels, block_run, metrics, missing, single_precision, False)
    if check_ids and block_run:
        # against the whole qrels (or golden set), as one process checks: a doc the block retrieved may be
        # judged only for a query of another block
        data, run_obj, _ = _as_run_mapping(block_run)
        note = _check_ids(qrels if isinstance(qrels, GoldenSet) else whole, data, run_obj)
        if note is not None:
            ev.notes = (note, *ev.notes)
    ev.partition = Partition(fingerprint[0], fingerprint[1], single_precision, missing is not None)
    return ev


def _ordered_union(groups: Iterable[Iterable[str]]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(item for group in groups for item in group))


def merge_evaluations(parts: Iterable[Evaluation], *, complete: bool = True) -> Evaluation:
    """See :meth:`Evaluation.merge`."""
    parts = list(parts)
    if not parts:
        raise InputError("Evaluation.merge: no evaluations to merge")
    first = parts[0]
    for i, ev in enumerate(parts):
        if not isinstance(ev, Evaluation):
            raise InputError(f"Evaluation.merge: parts[{i}] is a {type(ev).__name__}, not an Evaluation")
        if ev.partition is None:
            raise InputError(
                f"Evaluation.merge: parts[{i}] was not made on a block of queries; evaluate each block with "
                "evaluate(qrels, run, metrics, queries=block) so that its qrels and settings can be checked"
            )
        checks = [
            ("qrels (fingerprint)", ev.partition.qrels_fingerprint, first.partition.qrels_fingerprint),  # type: ignore[union-attr]
            ("metrics", [str(m) for m in ev.measures], [str(m) for m in first.measures]),
            ("columns", list(ev.values), list(first.values)),
            ("missing", ev.missing_policy, first.missing_policy),
            ("single_precision", ev.partition.single_precision, first.partition.single_precision),  # type: ignore[union-attr]
            ("run name", ev.run_name, first.run_name),
        ]
        for what, mine, theirs in checks:
            if mine != theirs:
                raise InputError(
                    f"Evaluation.merge: parts[{i}] differs from parts[0] in its {what}: {mine!r} != {theirs!r}; "
                    "only blocks of one evaluation merge"
                )
    owner: dict[str, int] = {}
    for i, ev in enumerate(parts):
        for qid in chain(ev.query_ids, ev.missing, ev.failed, ev.unjudged):
            j = owner.setdefault(qid, i)
            if j != i:
                raise InputError(
                    f"Evaluation.merge: query {qid!r} is in parts[{j}] and parts[{i}]; the blocks must be disjoint"
                )
    all_ids = [qid for ev in parts for qid in ev.query_ids]
    order = sorted(range(len(all_ids)), key=all_ids.__getitem__)
    query_ids = tuple(all_ids[i] for i in order)
    missing = tuple(sorted(q for ev in parts for q in ev.missing))
    failed = tuple(sorted(q for ev in parts for q in ev.failed))
    covered = len(set(query_ids).union(missing, failed))
    total = first.partition.qrels_queries  # type: ignore[union-attr]
    if complete and covered != total:
        raise InputError(
            f"Evaluation.merge: the parts cover {covered} of the qrels' {total} queries; a block is missing "
            "(complete=False merges them anyway)"
        )
    index = np.asarray(order, dtype=np.int64)
    values = {
        name: np.concatenate([np.asarray(ev.values[name], dtype=np.float64) for ev in parts])[index]
        for name in first.values
    }
    merged = Evaluation(
        measures=first.measures,
        query_ids=query_ids,
        values=values,
        missing=missing,
        failed=failed,
        unjudged=tuple(sorted(q for ev in parts for q in ev.unjudged)),
        no_relevant=tuple(sorted(q for ev in parts for q in ev.no_relevant)),
        missing_policy=first.missing_policy,
        run_name=first.run_name,
        duplicates=sum(ev.duplicates for ev in parts),
        table=_merge_tables(parts, query_ids),
        notes=_ordered_union(ev.notes for ev in parts),
    )
    # the checks evaluate makes on the whole, made on the whole again (a block's part of the counts says little)
    if not complete:
        return merged
    return _suspicious(merged, missing_given=first.partition.missing_given, stacklevel=4)  # type: ignore[union-attr]


def _merge_tables(parts: Sequence[Evaluation], query_ids: tuple[str, ...]) -> HitTable | None:
    """The hit table of the whole from the parts' tables (None when a part has none)."""
    tables = [ev.table for ev in parts]
    if any(t is None for t in tables):
        return None
    position = {qid: i for i, qid in enumerate(query_ids)}
    n_ret = np.zeros(len(query_ids), dtype=np.int64)
    hit_query, hit_rank, hit_label, judged_query, judged_label = [], [], [], [], []
    for t in tables:
        assert t is not None
        remap = np.fromiter((position[q] for q in t.query_ids), dtype=np.int64, count=len(t.query_ids))
        n_ret[remap] = t.n_ret
        hit_query.append(remap[t.hit_query])
        hit_rank.append(t.hit_rank)
        hit_label.append(t.hit_label)
        judged_query.append(remap[t.judged_query])
        judged_label.append(t.judged_label)
    first = tables[0]
    assert first is not None
    jq = np.concatenate(judged_query).astype(first.judged_query.dtype, copy=False)
    keep = np.argsort(jq, kind="stable")  # each query's judgments in its part's (the qrels') order
    return HitTable(
        query_ids=query_ids,
        n_ret=n_ret.astype(first.n_ret.dtype, copy=False),
        hit_query=np.concatenate(hit_query).astype(first.hit_query.dtype, copy=False),
        hit_rank=np.concatenate(hit_rank).astype(first.hit_rank.dtype, copy=False),
        hit_label=np.concatenate(hit_label).astype(first.hit_label.dtype, copy=False),
        judged_query=jq[keep],
        judged_label=np.concatenate(judged_label).astype(first.judged_label.dtype, copy=False)[keep],
    )
