"""MLflow tracking out: an :class:`~rankbridge.Evaluation` or :class:`~rankbridge.Comparison` logged into an MLflow run.

:func:`log_evaluation` writes, into one MLflow run (``pip install 'rankbridge[mlflow]'``):

* **metrics** -- every mean with its interval bounds (``ndcg_at_10``, ``ndcg_at_10_ci_low``,
  ``ndcg_at_10_ci_high``); for a comparison, each run's under its name (``dense/ndcg_at_10``) and, for
  every run but the baseline, the paired result (``dense/ndcg_at_10_delta``, ``..._delta_ci_low``,
  ``..._delta_ci_high``, ``..._p``, ``..._p_adjusted``, ``..._significant`` as 1.0/0.0);
* **params** -- how the numbers were made (``rankbridge.metrics``, ``rankbridge.level`` ...) and each
  rankbridge run's ``config`` (``k``, ``retriever``, ``id_from`` ...), values cut at MLflow's length limit;
* **tags** -- ``rankbridge.qrels_fingerprint`` (when the judgments are known), ``rankbridge.query_set_fingerprint``,
  ``rankbridge.kind``, ``rankbridge.version``, ``rankbridge.truncated_params`` (when a value was cut);
* **artifacts** -- ``rankbridge/per_query.json`` (a table: ``run``, ``query_id``, one column per metric),
  ``rankbridge/comparison.json`` (a table: one row per run x metric), ``rankbridge/result.json``
  (``to_dict()`` of the comparison, warnings included) and ``rankbridge/report.html`` (the self-contained report).

Metric keys
-----------
MLflow accepts only ASCII letters, digits and ``_ - . / space`` in keys (and no path tricks such as
``..``). :func:`metric_key` maps a rankbridge metric name deterministically: ``@`` becomes ``_at_``,
``(rel=N)`` becomes ``_rel_N``, any other character ``_``. Two names that would map to one key are an error.

Where it goes
-------------
``tracking_uri=`` when given; else the active MLflow run, or the tracking URI configured for MLflow
(``MLFLOW_TRACKING_URI`` or ``mlflow.set_tracking_uri``); else a local SQLite store, ``./mlflow.db`` with
artifacts in ``./mlruns`` -- offline, and what :attr:`MlflowLog.local_store` reports. Nothing here changes
MLflow's global state or the environment. MLflow's own usage telemetry is MLflow's setting: turn it off
with ``MLFLOW_DISABLE_TELEMETRY=true`` (or ``DO_NOT_TRACK=true``).

Examples
--------
>>> metric_key("ndcg@10"), metric_key("precision@5(rel=2)"), metric_key("ragas.faithfulness")
('ndcg_at_10', 'precision_at_5_rel_2', 'ragas.faithfulness')
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np

from rankbridge._numbers import JsonFields, json_float
from rankbridge._version import __version__
from rankbridge.analysis import Comparison, compare
from rankbridge.errors import InputError, MetricError, MissingExtraError, RankbridgeError
from rankbridge.evaluate import Evaluation
from rankbridge.fingerprint import qrels_fingerprint, query_set_fingerprint
from rankbridge.metrics.measures import column_facts
from rankbridge.metrics.stats import CIMethod, Interval, confidence_intervals
from rankbridge.reports import Report, build_report
from rankbridge.types import GoldenSet, Qrels, Run

__all__ = ["MlflowLog", "log_evaluation", "metric_key"]

#: Artifact paths inside the MLflow run.
PER_QUERY_ARTIFACT = "rankbridge/per_query.json"
COMPARISON_ARTIFACT = "rankbridge/comparison.json"
RESULT_ARTIFACT = "rankbridge/result.json"
REPORT_ARTIFACT = "rankbridge/report.html"
#: Appended to a param value cut at MLflow's length limit.
TRUNCATION_MARK = "...[truncated]"
#: The local store used when nothing is configured (relative to the working directory).
DEFAULT_DB = "mlflow.db"
DEFAULT_ARTIFACTS = "mlruns"
DEFAULT_EXPERIMENT = "rankbridge"

_BAD_KEY_CHARS = re.compile(r"[^A-Za-z0-9_\-. /]")
_REL = re.compile(r"\(rel=(-?\d+)\)")


def metric_key(name: str) -> str:
    """The MLflow metric key for a rankbridge metric (or run) name.

    ``@`` -> ``_at_``, ``(rel=N)`` -> ``_rel_N``, every character MLflow does not accept (anything but
    ASCII letters, digits, ``_ - . / space``) -> ``_``; ``..``, repeated and leading/trailing ``/`` are
    folded so that the key is not read as another path.

    Parameters
    ----------
    name:
        A canonical metric name (``"ndcg@10"``), a joined column (``"ragas.faithfulness"``) or any string.

    Returns
    -------
    str
        A key MLflow accepts; the same name always gives the same key.

    Raises
    ------
    InputError
        When nothing usable is left (an empty name).

    Examples
    --------
    >>> metric_key("ndcg@10"), metric_key("mrr"), metric_key("recall@100(rel=2)")
    ('ndcg_at_10', 'mrr', 'recall_at_100_rel_2')
    >>> metric_key("hit rate@5 (é)")
    'hit rate_at_5 ___'
    """
    if not name.strip():
        raise InputError(f"metric name: expected a non-empty name for an MLflow key, found {name!r}")
    s = _REL.sub(r"_rel_\1", name).replace("@", "_at_")
    s = _BAD_KEY_CHARS.sub("_", s)
    s = re.sub(r"\.{2,}", "_", s)
    s = re.sub(r"/{2,}", "/", s).strip("/")
    return "/".join(part if part not in (".", "") else "_" for part in s.split("/"))


def _run_prefix(name: str) -> str:
    """A rankbridge run's name as one MLflow key segment (no ``/`` inside)."""
    return metric_key(name.replace("/", "_"))


@dataclass(frozen=True)
class MlflowLog(JsonFields):
    """What :func:`log_evaluation` logged, and where.

    Attributes
    ----------
    run_id, experiment_id:
        The MLflow run and its experiment.
    tracking_uri:
        The tracking store written to.
    artifact_uri:
        The run's artifact root.
    local_store:
        Path of the SQLite file when the default local store was used (nothing configured), else None.
    created_run:
        True when :func:`log_evaluation` started (and ended) the run; False when it logged into a given or
        active run, which it leaves open.
    metric_keys:
        rankbridge metric name -> its MLflow key (before any ``run/`` prefix and ``_ci_low`` suffix).
    metrics, params, tags:
        Everything logged, as MLflow holds it.
    artifacts:
        Artifact paths written, relative to the run's artifact root.
    truncated_params:
        Param keys whose value was cut at MLflow's length limit (ending in :data:`TRUNCATION_MARK`).
    qrels_fingerprint:
        The judgments' fingerprint (None when neither the qrels nor a golden set were known).
    """

    run_id: str
    experiment_id: str
    tracking_uri: str
    artifact_uri: str
    local_store: str | None
    created_run: bool
    metric_keys: dict[str, str]
    metrics: dict[str, float] = field(repr=False)
    params: dict[str, str] = field(repr=False)
    tags: dict[str, str] = field(repr=False)
    artifacts: tuple[str, ...] = ()
    truncated_params: tuple[str, ...] = ()
    qrels_fingerprint: str | None = None


# --------------------------------------------------------------------------------------------------
# What to log (pure data; no MLflow here)
# --------------------------------------------------------------------------------------------------


def _json_value(x: Any) -> Any:
    return json_float(x) if isinstance(x, float) else x


def _clean(obj: Any) -> Any:
    """``obj`` with every non-finite float (at any depth) as None: strict JSON."""
    if isinstance(obj, Mapping):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return _json_value(obj)


def _dumps(obj: Any) -> str:
    return json.dumps(_clean(obj), indent=2, ensure_ascii=False, allow_nan=False)


def _param_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, (bool, int, float)):
        return str(value)
    try:
        return json.dumps(value, sort_keys=True, default=repr, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def _key_map(names: Sequence[str]) -> dict[str, str]:
    keys: dict[str, str] = {}
    seen: dict[str, str] = {}
    for name in names:
        key = metric_key(name)
        if key in seen and seen[key] != name:
            raise InputError(
                f"metrics: {seen[key]!r} and {name!r} both map to the MLflow key {key!r}; rename one of them"
            )
        seen[key] = name
        keys[name] = key
    return keys


def _unique_prefixes(runs: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    taken: dict[str, str] = {}
    for run in runs:
        prefix = _run_prefix(run)
        if prefix in taken:
            raise InputError(
                f"runs: {taken[prefix]!r} and {run!r} both map to the MLflow key prefix {prefix!r}; rename one of them"
            )
        taken[prefix] = run
        out[run] = prefix
    return out


def _interval_metrics(prefix: str, key: str, iv: Any) -> dict[str, float]:
    return {
        f"{prefix}{key}": float(iv.estimate),
        f"{prefix}{key}_ci_low": float(iv.low),
        f"{prefix}{key}_ci_high": float(iv.high),
    }


def _evaluation_intervals(
    ev: Evaluation, *, level: float, ci: CIMethod, n_resamples: int, seed: int
) -> tuple[Comparison | None, dict[str, Any]]:
    """A one-run comparison (for the report and the ranking measures' intervals) and every column's interval."""
    measure_names = [str(m) for m in ev.measures]
    comparison = None
    intervals: dict[str, Any] = {}
    if measure_names:
        comparison = compare(
            {ev.run_name: ev}, None, measure_names, level=level, ci=ci, n_resamples=n_resamples, seed=seed
        )
        intervals = {m: comparison.means[m][ev.run_name] for m in measure_names}
    for name in ev.metric_names:  # joined columns (RAGAS...): over the queries that have a value
        if name in intervals:
            continue
        values = ev.values[name]
        ok = values[~np.isnan(values)]
        try:  # the bounds every other number of rankbridge uses for this column
            bounds = column_facts(name).bounds
        except MetricError:  # a joined column nobody registered: no bounds to clip to
            bounds = None
        if len(ok):
            intervals[name] = confidence_intervals(
                ok, level=level, method=ci, n_resamples=n_resamples, seed=seed, bounds=bounds
            )[0]
        else:
            intervals[name] = Interval(math.nan, math.nan, math.nan, level, "t", 0)
    return comparison, intervals


def _table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """JSON in the form ``mlflow.log_table`` writes (pandas' ``split`` orient, no index); NaN as null."""
    data = [[_json_value(v) for v in row] for row in rows]
    return json.dumps({"columns": list(columns), "data": data}, ensure_ascii=False, allow_nan=False)


def _per_query_table(evaluations: Mapping[str, Evaluation], metrics: Mapping[str, Sequence[str]]) -> str:
    names: list[str] = []
    for cols in metrics.values():
        names.extend(c for c in cols if c not in names)
    rows: list[list[Any]] = []
    for run, ev in evaluations.items():
        columns = [ev.values[m].tolist() if m in ev.values else [math.nan] * ev.num_queries for m in names]
        for i, qid in enumerate(ev.query_ids):
            rows.append([run, qid, *(float(col[i]) for col in columns)])
    return _table(["run", "query_id", *names], rows)


def _comparison_table(comparison: Comparison) -> str:
    columns = ["run", "metric", "baseline", "mean", "ci_low", "ci_high", "delta", "delta_ci_low", "delta_ci_high"]
    columns += ["pvalue", "pvalue_adjusted", "significant", "effect_size", "wins", "ties", "losses"]
    rows: list[list[Any]] = []
    for metric in comparison.metrics:
        for run in comparison.runs:
            iv = comparison.means[metric][run]
            pc = comparison.paired[metric].get(run)
            row: list[Any] = [run, metric, run == comparison.baseline, iv.estimate, iv.low, iv.high]
            if pc is None:
                row += [None] * 10
            else:
                row += [pc.difference.estimate, pc.difference.low, pc.difference.high, pc.pvalue, pc.pvalue_adjusted]
                row += [pc.significant, pc.effect_size, pc.wins, pc.ties, pc.losses]
            rows.append([float(v) if isinstance(v, float) else v for v in row])
    return _table(columns, rows)


def _as_runs(runs: Run | Mapping[str, Run] | Sequence[Run] | None) -> dict[str, Run]:
    if runs is None:
        return {}
    if isinstance(runs, Run):
        return {runs.name: runs}
    if isinstance(runs, Mapping):
        return dict(cast("Mapping[str, Run]", runs))
    if isinstance(runs, (str, bytes)) or not isinstance(runs, Sequence):
        raise InputError(f"runs: expected a Run, {{name: Run}} or a list of Runs, found {type(runs).__name__}")
    return {r.name: r for r in runs}


@dataclass
class _Payload:
    metrics: dict[str, float]
    params: dict[str, str]
    tags: dict[str, str]
    texts: dict[str, str]  # artifact path -> content
    tables: list[str]
    metric_keys: dict[str, str]
    truncated: list[str]
    report: Report | None
    fingerprint: str | None


def _payload(
    result: Evaluation | Comparison,
    *,
    golden: GoldenSet | None,
    qrels: Qrels | Mapping[str, Mapping[str, int]] | None,
    runs: Mapping[str, Run],
    report: bool | Report,
    params: Mapping[str, Any] | None,
    tags: Mapping[str, str] | None,
    level: float,
    ci: CIMethod,
    n_resamples: int,
    seed: int,
    max_param_length: int,
) -> _Payload:
    metrics: dict[str, float] = {}
    raw_params: dict[str, Any] = {}
    tag_values: dict[str, str] = {}
    texts: dict[str, str] = {}
    tables: list[str] = []

    if isinstance(result, Comparison):
        comparison: Comparison | None = result
        evaluations = dict(result.evaluations)
        names = list(result.metrics)
        keys = _key_map(names)
        prefixes = _unique_prefixes(result.runs)
        for m in names:
            for run in result.runs:
                p = prefixes[run] + "/"
                metrics.update(_interval_metrics(p, keys[m], result.means[m][run]))
                pc = result.paired[m].get(run)
                if pc is not None:
                    metrics[f"{p}{keys[m]}_delta"] = float(pc.difference.estimate)
                    metrics[f"{p}{keys[m]}_delta_ci_low"] = float(pc.difference.low)
                    metrics[f"{p}{keys[m]}_delta_ci_high"] = float(pc.difference.high)
                    metrics[f"{p}{keys[m]}_p"] = float(pc.pvalue)
                    metrics[f"{p}{keys[m]}_p_adjusted"] = float(pc.pvalue_adjusted)
                    metrics[f"{p}{keys[m]}_significant"] = 1.0 if pc.significant else 0.0
        raw_params.update(
            {
                "rankbridge.runs": list(result.runs),
                "rankbridge.baseline": result.baseline,
                "rankbridge.metrics": names,
                "rankbridge.num_queries": result.num_queries,
                "rankbridge.test": result.test,
                "rankbridge.correction": result.correction,
                "rankbridge.alpha": result.alpha,
                "rankbridge.level": result.level,
                "rankbridge.ci_method": result.ci_method,
                "rankbridge.n_resamples": result.n_resamples,
                "rankbridge.seed": result.seed,
            }
        )
        for run, run_obj in runs.items():
            if run not in prefixes:
                raise InputError(f"runs: {run!r} is not a run of this comparison; it has {', '.join(result.runs)}")
            for k, v in run_obj.config.items():
                raw_params[f"{prefixes[run]}/{metric_key(str(k))}"] = v
        per_query_metrics = {run: names for run in result.runs}
        texts[COMPARISON_ARTIFACT] = _comparison_table(result)
        tables.append(COMPARISON_ARTIFACT)
        texts[RESULT_ARTIFACT] = _dumps(result.to_dict())
        golden = golden if golden is not None else result.golden
        query_ids = result.query_ids
        kind = "comparison"
    elif isinstance(result, Evaluation):
        names = list(result.metric_names)
        keys = _key_map(names)
        comparison, intervals = _evaluation_intervals(result, level=level, ci=ci, n_resamples=n_resamples, seed=seed)
        for m in names:
            metrics.update(_interval_metrics("", keys[m], intervals[m]))
        raw_params.update(
            {
                "rankbridge.run": result.run_name,
                "rankbridge.metrics": names,
                "rankbridge.num_queries": result.num_queries,
                "rankbridge.missing_policy": result.missing_policy,
                "rankbridge.level": level,
                "rankbridge.ci_method": ci,
                "rankbridge.n_resamples": n_resamples,
                "rankbridge.seed": seed,
            }
        )
        if len(runs) > 1:
            raise InputError(f"runs: an Evaluation has one run, found {len(runs)} ({', '.join(runs)})")
        for run_obj in runs.values():
            for k, v in run_obj.config.items():
                raw_params[metric_key(str(k))] = v
        evaluations = {result.run_name: result}
        per_query_metrics = {result.run_name: names}
        texts[RESULT_ARTIFACT] = _dumps(
            {
                "run": result.run_name,
                "num_queries": result.num_queries,
                "mean": {m: _json_value(v) for m, v in result.mean.items()},
                "intervals": {m: iv.to_dict() for m, iv in intervals.items()},
                "counts": result.counts,
                "missing": list(result.missing),
                "failed": list(result.failed),
                "unjudged": list(result.unjudged),
                "no_relevant": list(result.no_relevant),
                "notes": list(result.notes),
            }
        )
        query_ids = result.query_ids
        kind = "evaluation"
    else:
        raise InputError(f"log_evaluation: expected an Evaluation or a Comparison, found {type(result).__name__}")

    texts[PER_QUERY_ARTIFACT] = _per_query_table(evaluations, per_query_metrics)
    tables.append(PER_QUERY_ARTIFACT)

    # judgments: the fingerprint, after checking they judge the evaluated queries
    judged: Any = qrels if qrels is not None else golden
    fingerprint = None
    if judged is not None:
        fingerprint = qrels_fingerprint(judged)
        judged_ids = set((judged.qrels if isinstance(judged, GoldenSet) else judged).keys())
        unknown = [q for q in query_ids if q not in judged_ids]
        if unknown:
            raise InputError(
                f"qrels: expected the judgments the results were scored on; {len(unknown)} of the "
                f"{len(query_ids)} evaluated queries are not in them (first: {unknown[0]!r})"
            )
        tag_values["rankbridge.qrels_fingerprint"] = fingerprint
    tag_values["rankbridge.query_set_fingerprint"] = query_set_fingerprint(query_ids)
    tag_values["rankbridge.kind"] = kind
    tag_values["rankbridge.version"] = __version__

    for k, v in (params or {}).items():
        raw_params[metric_key(str(k))] = v
    out_params: dict[str, str] = {}
    truncated: list[str] = []
    for k, v in raw_params.items():
        text = _param_text(v)
        if len(text) > max_param_length:
            text = text[: max_param_length - len(TRUNCATION_MARK)] + TRUNCATION_MARK
            truncated.append(k)
        out_params[k] = text
    if truncated:
        tag_values["rankbridge.truncated_params"] = ",".join(truncated)
    for k, v in (tags or {}).items():
        tag_values[metric_key(str(k))] = str(v)

    built: Report | None = None
    if report is True:
        if comparison is not None:
            built = build_report(comparison, runs=runs or None, golden=golden)
    elif report is not False:
        built = report
    if built is not None:
        texts[REPORT_ARTIFACT] = _report_html(built)
    return _Payload(metrics, out_params, tag_values, texts, tables, keys, truncated, built, fingerprint)


def _report_html(report: Report) -> str:
    try:
        import matplotlib  # noqa: F401

        plots = True
    except ImportError:
        plots = False
    try:
        return report.to_html(plots=plots)
    except MissingExtraError as exc:
        err = MissingExtraError(exc.package, exc.extra, "log_evaluation(report=True)")
        err.args = (f"{err.args[0]} (or pass report=False)",)
        raise err from exc


# --------------------------------------------------------------------------------------------------
# MLflow
# --------------------------------------------------------------------------------------------------


def _import_mlflow() -> Any:
    try:
        import mlflow
    except ImportError as exc:
        raise MissingExtraError("mlflow-skinny", "mlflow", "rankbridge.integrations.mlflow") from exc
    return mlflow


def _default_store() -> tuple[str, Path]:
    db = (Path.cwd() / DEFAULT_DB).resolve()
    return f"sqlite:///{db.as_posix()}", db


def _sqlite_dir(uri: str) -> Path | None:
    if not uri.startswith("sqlite:///"):
        return None
    path = uri[len("sqlite:///") :].split("?", 1)[0]
    if not path or path == ":memory:":
        return None
    return Path(path).resolve().parent


def _chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _run_id_of(run: Any) -> str:
    if isinstance(run, str):
        return run
    info = getattr(run, "info", None)
    run_id = getattr(info, "run_id", None)
    if not isinstance(run_id, str):
        raise InputError(f"run: expected an MLflow run id, an mlflow Run or ActiveRun, found {type(run).__name__}")
    return run_id


def log_evaluation(
    result: Evaluation | Comparison,
    *,
    run: Any = None,
    golden: GoldenSet | None = None,
    qrels: Qrels | Mapping[str, Mapping[str, int]] | None = None,
    runs: Run | Mapping[str, Run] | Sequence[Run] | None = None,
    report: bool | Report = True,
    experiment: str = DEFAULT_EXPERIMENT,
    run_name: str | None = None,
    tracking_uri: str | None = None,
    params: Mapping[str, Any] | None = None,
    tags: Mapping[str, str] | None = None,
    level: float = 0.95,
    ci: CIMethod = "auto",
    n_resamples: int = 10_000,
    seed: int = 0,
) -> MlflowLog:
    """Log an evaluation or a comparison into an MLflow run.

    Parameters
    ----------
    result:
        An :class:`~rankbridge.Evaluation` (one run: keys ``ndcg_at_10``...) or a
        :class:`~rankbridge.Comparison` (keys ``<run>/ndcg_at_10``..., paired results for every run
        but the baseline).
    run:
        The MLflow run to log into: a run id, an ``mlflow.entities.Run`` or the ``ActiveRun`` of
        ``mlflow.start_run()``; it is left open. Default: the active run (when ``tracking_uri`` is None or
        the configured one), else a new run in ``experiment``, ended when everything is logged (FAILED if
        logging failed).
    golden, qrels:
        The judgments the result was scored on: their fingerprint becomes the tag
        ``rankbridge.qrels_fingerprint`` (after checking that they judge every evaluated query). The
        golden set also gives the report its question texts and categories (default: the comparison's).
    runs:
        The rankbridge :class:`~rankbridge.Run` objects behind the result (``{name: Run}``, a list, or one
        Run): their ``config`` is logged as params and the report lists their failed questions.
    report:
        True (default) logs the HTML report built here (needs ``rankbridge[report]``), False none, or a
        :class:`~rankbridge.reports.Report` you built.
    experiment:
        Experiment name for a new run (created if missing; in a local SQLite store its artifacts go
        beside the database, in ``mlruns/``).
    run_name:
        Name of a new run (default: the evaluation's run name, or ``"<run> vs <baseline>"``).
    tracking_uri:
        Where to log. Default: the active run's / MLflow's configured URI, else ``sqlite:///./mlflow.db``.
    params, tags:
        More params and tags to log (keys mapped as :func:`metric_key` does).
    level, ci, n_resamples, seed:
        The intervals of an Evaluation's means (a Comparison has its own).

    Returns
    -------
    MlflowLog
        The run id, the tracking URI, the local store's path when it was the default, the key mapping
        and everything logged.

    Raises
    ------
    MissingExtraError
        mlflow-skinny (or, for a SQLite store, SQLAlchemy/Alembic) is not installed:
        ``pip install 'rankbridge[mlflow]'``; or Jinja2 for ``report=True``.
    InputError
        A result of another type, judgments that do not judge the evaluated queries, metric or run names
        that map to one key, or an unusable ``run``.
    RankbridgeError
        MLflow refused to log (the message carries MLflow's).
    """
    if not isinstance(result, (Evaluation, Comparison)):
        raise InputError(f"log_evaluation: expected an Evaluation or a Comparison, found {type(result).__name__}")
    mlflow = _import_mlflow()
    from mlflow.entities import Metric, Param, RunTag
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    try:
        from mlflow.utils.validation import MAX_PARAM_VAL_LENGTH as max_param_length
    except ImportError:  # pragma: no cover - an MLflow without the constant
        max_param_length = 6000

    payload = _payload(
        result,
        golden=golden,
        qrels=qrels,
        runs=_as_runs(runs),
        report=report,
        params=params,
        tags=tags,
        level=level,
        ci=ci,
        n_resamples=n_resamples,
        seed=seed,
        max_param_length=int(max_param_length),
    )

    local_store: str | None = None
    active = mlflow.active_run() if run is None else None
    if tracking_uri is None and (run is not None or active is not None or mlflow.is_tracking_uri_set()):
        uri = str(mlflow.get_tracking_uri())
    elif tracking_uri is None:
        uri, db = _default_store()
        local_store = str(db)
    else:
        uri = tracking_uri
    if active is not None and uri != str(mlflow.get_tracking_uri()):
        active = None
    target = run if run is not None else active

    try:
        client = MlflowClient(tracking_uri=uri)
        created = target is None
        if target is None:
            experiment_id = _experiment_id(client, experiment, uri)
            name = run_name or (
                result.run_name
                if isinstance(result, Evaluation)
                else " vs ".join([*(r for r in result.runs if r != result.baseline), result.baseline])
            )
            mlrun = client.create_run(experiment_id, run_name=name, tags={"mlflow.source.name": "rankbridge"})
        else:
            mlrun = client.get_run(_run_id_of(target))
        run_id = mlrun.info.run_id
    except ImportError as exc:
        raise MissingExtraError(exc.name or "sqlalchemy", "mlflow", f"the MLflow store {uri!r}") from exc
    except MlflowException as exc:
        raise RankbridgeError(f"MLflow at {uri!r} refused the run: {exc.message}") from exc

    try:
        now = int(time.time() * 1000)
        metric_items = [Metric(k, v, now, 0) for k, v in payload.metrics.items()]
        for chunk in _chunks(metric_items, 1000):
            client.log_batch(run_id, metrics=chunk)
        param_items = [Param(k, v) for k, v in payload.params.items()]
        for chunk in _chunks(param_items, 100):
            client.log_batch(run_id, params=chunk)
        tag_items = [RunTag(k, v) for k, v in payload.tags.items()]
        for chunk in _chunks(tag_items, 100):
            client.log_batch(run_id, tags=chunk)
        for path, text in payload.texts.items():
            client.log_text(run_id, text, path)
        _mark_tables(client, run_id, payload.tables)
        if created:
            client.set_terminated(run_id, "FINISHED")
    except MlflowException as exc:
        if created:
            client.set_terminated(run_id, "FAILED")
        raise RankbridgeError(f"MLflow at {uri!r} refused to log into run {run_id}: {exc.message}") from exc
    except BaseException:
        if created:
            client.set_terminated(run_id, "FAILED")
        raise

    return MlflowLog(
        run_id=run_id,
        experiment_id=mlrun.info.experiment_id,
        tracking_uri=uri,
        artifact_uri=str(mlrun.info.artifact_uri),
        local_store=local_store,
        created_run=created,
        metric_keys=payload.metric_keys,
        metrics=payload.metrics,
        params=payload.params,
        tags=payload.tags,
        artifacts=tuple(payload.texts),
        truncated_params=tuple(payload.truncated),
        qrels_fingerprint=payload.fingerprint,
    )


def _experiment_id(client: Any, name: str, uri: str) -> str:
    from mlflow.exceptions import MlflowException

    exp = client.get_experiment_by_name(name)
    if exp is not None:
        return str(exp.experiment_id)
    folder = _sqlite_dir(uri)
    location = (folder / DEFAULT_ARTIFACTS).as_uri() if folder is not None else None
    try:
        return str(client.create_experiment(name, artifact_location=location))
    except MlflowException:  # created meanwhile by another process
        exp = client.get_experiment_by_name(name)
        if exp is None:
            raise
        return str(exp.experiment_id)


def _mark_tables(client: Any, run_id: str, tables: Sequence[str]) -> None:
    """Record the table artifacts in the run's ``mlflow.loggedArtifacts`` tag, as ``mlflow.log_table`` does."""
    from mlflow.utils.mlflow_tags import MLFLOW_LOGGED_ARTIFACTS

    current = client.get_run(run_id).data.tags.get(MLFLOW_LOGGED_ARTIFACTS, "[]")
    try:
        entries = json.loads(current)
    except ValueError:
        entries = []
    if not isinstance(entries, list):
        entries = []
    for path in tables:
        entry = {"path": path, "type": "table"}
        if entry not in entries:
            entries.append(entry)
    client.set_tag(run_id, MLFLOW_LOGGED_ARTIFACTS, json.dumps(entries))
