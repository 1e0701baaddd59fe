"""rankbridge.integrations.mlflow against a real local MLflow tracking store (SQLite), read back through MlflowClient.

One SQLite store for the module (MLflow's import and its schema migrations are slow). MLflow's telemetry is
turned off by the environment (MLFLOW_DISABLE_TELEMETRY, DO_NOT_TRACK), and every test fails if anything
opens a network connection.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rankbridge as rb
from rankbridge.errors import InputError, MetricError, MissingExtraError, RankbridgeError
from rankbridge.fingerprint import qrels_fingerprint, query_set_fingerprint
from rankbridge.integrations import mlflow as rbml
from rankbridge.metrics.measures import MEASURES, Measure

pytest.importorskip("mlflow", reason="needs mlflow-skinny (dev extra)")
pytest.importorskip("alembic", reason="MLflow's SQLite store needs alembic (dev extra)")

pytestmark = [
    # SQLAlchemy 2.1 deprecates a loader strategy MLflow's store still uses: MLflow's warning, not ours
    pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy is deprecated:DeprecationWarning"),
]

DOCS = Path(__file__).resolve().parents[1] / "docs" / "mlflow.md"

QRELS = {f"q{i}": {f"d{i}": 1, f"e{i}": 2} for i in range(8)}
#: bm25 finds d_i at rank 2 on odd queries, rank 1 on even ones; dense always at rank 1, and e_i (rel 2) at 2
BM25 = {f"q{i}": ({f"d{i}": 0.5, "x": 0.9} if i % 2 else {f"d{i}": 0.9, "x": 0.5}) for i in range(8)}
DENSE = {f"q{i}": {f"d{i}": 0.9, f"e{i}": 0.8} for i in range(8)}
METRICS = ["ndcg@10", "mrr@10", "P(rel=2)@5"]


# --------------------------------------------------------------------------------------------------
# fixtures: one store, no network
# --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A SQLite tracking store in a temporary folder, configured through MLFLOW_TRACKING_URI."""
    folder = tmp_path_factory.mktemp("mlflow")
    uri = f"sqlite:///{(folder / 'mlflow.db').as_posix()}"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
        mp.setenv("DO_NOT_TRACK", "true")
        mp.setenv("MLFLOW_TRACKING_URI", uri)
        mp.chdir(folder)  # experiment 0's default artifact root is ./mlruns: keep it out of the repository
        from mlflow.tracking import MlflowClient

        MlflowClient(tracking_uri=uri).search_experiments()  # creates the schema (slow: ~50 migrations)
        shutil.copyfile(folder / "mlflow.db", folder / "template.db")
        yield uri


@pytest.fixture
def fresh_db(store: str, tmp_path: Path) -> Path:
    """An empty store at ``tmp_path/mlflow.db``, its schema copied from the module's (migrating is slow)."""
    target = tmp_path / "mlflow.db"
    shutil.copyfile(Path(store.removeprefix("sqlite:///")).parent / "template.db", target)
    return target


_ATTEMPTS: list[Any] = []


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch, store: str) -> Iterator[None]:
    """Fail the test if anything connects to a network address (Unix sockets are local)."""
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def guard(real: Any) -> Any:
        def connect(self: socket.socket, address: Any) -> Any:
            if self.family != getattr(socket, "AF_UNIX", None):
                _ATTEMPTS.append(address)
                raise OSError(f"test_mlflow: network connection to {address!r} attempted")
            return real(self, address)

        return connect

    monkeypatch.setattr(socket.socket, "connect", guard(real_connect))
    monkeypatch.setattr(socket.socket, "connect_ex", guard(real_connect_ex))
    _ATTEMPTS.clear()
    yield
    assert not _ATTEMPTS, f"network connections attempted: {_ATTEMPTS}"


def _client(uri: str) -> Any:
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=uri)


def _artifact_json(client: Any, run_id: str, path: str) -> Any:
    return json.loads(Path(client.download_artifacts(run_id, path)).read_text(encoding="utf-8"))


def _bm25_run() -> rb.Run:
    run = rb.Run.from_scores(BM25, name="bm25")
    run.config.update(k=10, retriever="BM25Retriever", id_from="metadata:doc_id", prompt="p" * 7000)
    return run


# --------------------------------------------------------------------------------------------------
# metric keys
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("ndcg@10", "ndcg_at_10"),
        ("precision@5(rel=2)", "precision_at_5_rel_2"),
        ("recall@1000(rel=3)", "recall_at_1000_rel_3"),
        ("map", "map"),
        ("ragas.faithfulness", "ragas.faithfulness"),
        ("hit rate@5 (é)", "hit rate_at_5 ___"),
        ("a:b+c", "a_b_c"),
        ("../up", "_/up"),
        ("/a//b/", "a/b"),
        ("a/./b", "a/_/b"),
    ],
)
def test_metric_key_maps_names_by_the_documented_rules(name: str, key: str) -> None:
    assert rbml.metric_key(name) == key


def test_every_measure_spelling_gives_a_key_mlflow_accepts_and_no_two_collide() -> None:
    from mlflow.utils.validation import _validate_metric_name

    names = set()
    for n in MEASURES:
        for k in (None, 1, 10, 100):
            for rel in (1, 2):
                with contextlib.suppress(MetricError):  # e.g. hit_rate needs a k, bpref takes none
                    names.add(str(Measure(n, k, rel)))
    assert len(names) > 2 * len(MEASURES)
    keys = {rbml.metric_key(n) for n in names}
    assert len(keys) == len(names)
    for key in keys:
        _validate_metric_name(key)  # raises MlflowException on a key MLflow would refuse
    with pytest.raises(InputError, match="metric name"):
        rbml.metric_key("")


def test_two_names_mapping_to_one_key_are_an_error(store: str) -> None:
    qrels = {"q1": {"d1": 1}}
    ev = rb.evaluate(qrels, {"q1": ["d1"]}, ["mrr"])
    ev.values["a:b"] = ev.values["mrr"].copy()
    ev.values["a+b"] = ev.values["mrr"].copy()
    with pytest.raises(InputError, match=r"'a:b' and 'a\+b' both map to the MLflow key 'a_b'"):
        rbml.log_evaluation(ev)


# --------------------------------------------------------------------------------------------------
# an Evaluation
# --------------------------------------------------------------------------------------------------


def test_evaluation_is_read_back_metrics_params_tags_artifacts_and_table(store: str) -> None:
    from mlflow.utils.validation import MAX_PARAM_VAL_LENGTH

    run = _bm25_run()
    ev = rb.evaluate(QRELS, run, METRICS)
    logged = rbml.log_evaluation(ev, qrels=QRELS, runs=run, experiment="eval-test", seed=3)
    assert logged.tracking_uri == store and logged.local_store is None and logged.created_run
    client = _client(store)
    got = client.get_run(logged.run_id)
    assert got.info.status == "FINISHED"
    assert client.get_experiment(got.info.experiment_id).name == "eval-test"
    assert got.info.run_name == "bm25"

    m = got.data.metrics
    assert m["mrr_at_10"] == pytest.approx(0.75)  # 1, 1/2 alternating
    assert m["ndcg_at_10"] == pytest.approx(ev.mean["ndcg@10"])
    assert m["precision_at_5_rel_2"] == 0.0  # bm25 never retrieves an e_i
    expected = rb.compare({"bm25": ev}, None, ["mrr@10"], seed=3).means["mrr@10"]["bm25"]
    assert (m["mrr_at_10_ci_low"], m["mrr_at_10_ci_high"]) == pytest.approx((expected.low, expected.high))
    assert m["mrr_at_10_ci_low"] < 0.75 < m["mrr_at_10_ci_high"]
    assert set(m) == {
        f"{k}{s}" for k in ("ndcg_at_10", "mrr_at_10", "precision_at_5_rel_2") for s in ("", "_ci_low", "_ci_high")
    }
    assert logged.metric_keys == {
        "ndcg@10": "ndcg_at_10",
        "mrr@10": "mrr_at_10",
        "precision@5(rel=2)": "precision_at_5_rel_2",
    }

    p = got.data.params
    assert (p["k"], p["retriever"], p["id_from"]) == ("10", "BM25Retriever", "metadata:doc_id")
    assert p["rankbridge.metrics"] == json.dumps(["ndcg@10", "mrr@10", "precision@5(rel=2)"])
    assert p["rankbridge.num_queries"] == "8" and p["rankbridge.seed"] == "3"
    assert len(p["prompt"]) == MAX_PARAM_VAL_LENGTH and p["prompt"].endswith(rbml.TRUNCATION_MARK)
    assert logged.truncated_params == ("prompt",)

    t = got.data.tags
    assert t["rankbridge.qrels_fingerprint"] == qrels_fingerprint(QRELS) == logged.qrels_fingerprint
    assert t["rankbridge.query_set_fingerprint"] == query_set_fingerprint(QRELS)
    assert t["rankbridge.kind"] == "evaluation" and t["rankbridge.truncated_params"] == "prompt"
    assert json.loads(t["mlflow.loggedArtifacts"]) == [{"path": rbml.PER_QUERY_ARTIFACT, "type": "table"}]

    listed = {f.path for f in client.list_artifacts(logged.run_id, "rankbridge")}
    assert listed == {rbml.PER_QUERY_ARTIFACT, rbml.RESULT_ARTIFACT, rbml.REPORT_ARTIFACT} == set(logged.artifacts)

    table = _artifact_json(client, logged.run_id, rbml.PER_QUERY_ARTIFACT)
    assert table["columns"] == ["run", "query_id", "ndcg@10", "mrr@10", "precision@5(rel=2)"]
    rows = {r[1]: r for r in table["data"]}
    assert sorted(rows) == sorted(QRELS)
    assert rows["q1"][3] == 0.5 and rows["q2"][3] == 1.0 and rows["q1"][0] == "bm25"
    assert [rows[q][2] for q in ev.query_ids] == pytest.approx(ev.values["ndcg@10"].tolist())

    result = _artifact_json(client, logged.run_id, rbml.RESULT_ARTIFACT)
    assert result["mean"]["mrr@10"] == pytest.approx(0.75) and result["num_queries"] == 8


def test_table_reads_back_with_mlflow_load_table(store: str) -> None:
    pytest.importorskip("pandas")

    ev = rb.evaluate(QRELS, BM25, ["mrr@10"])
    logged = rbml.log_evaluation(ev, report=False, experiment="load-table")
    df = _client(store).load_table(logged.experiment_id, rbml.PER_QUERY_ARTIFACT, run_ids=[logged.run_id])
    assert list(df.columns) == ["run", "query_id", "mrr@10"]
    assert dict(zip(df["query_id"], df["mrr@10"], strict=True)) == ev.per_query["mrr@10"]


def test_report_artifact_is_the_self_contained_html(store: str) -> None:
    ev = rb.evaluate(QRELS, BM25, ["mrr@10"])
    logged = rbml.log_evaluation(ev, qrels=QRELS)
    html = Path(_client(store).download_artifacts(logged.run_id, rbml.REPORT_ARTIFACT)).read_text(encoding="utf-8")
    assert html.lstrip().lower().startswith("<!doctype html") and "mrr@10" in html
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html, flags=re.I)  # nothing fetched


def test_report_false_logs_no_report_and_a_given_report_is_logged(store: str) -> None:
    ev = rb.evaluate(QRELS, BM25, ["mrr@10"])
    none = rbml.log_evaluation(ev, report=False)
    assert rbml.REPORT_ARTIFACT not in {f.path for f in _client(store).list_artifacts(none.run_id, "rankbridge")}
    mine = rb.compare({"bm25": ev}, None, ["mrr@10"]).report(title="My own title")
    logged = rbml.log_evaluation(ev, report=mine)
    html = Path(_client(store).download_artifacts(logged.run_id, rbml.REPORT_ARTIFACT)).read_text(encoding="utf-8")
    assert "My own title" in html


def test_nan_values_and_joined_columns(store: str) -> None:
    import numpy as np

    ev = rb.evaluate(QRELS, BM25, ["mrr@10"])
    ev.values["ragas.faithfulness"] = np.array([0.5, np.nan, 1.0, 1.0, np.nan, 0.5, 1.0, 1.0])
    logged = rbml.log_evaluation(ev, report=False)
    client = _client(store)
    m = client.get_run(logged.run_id).data.metrics
    assert m["ragas.faithfulness"] == pytest.approx(5 / 6)  # over the 6 scored rows
    assert 0 <= m["ragas.faithfulness_ci_low"] < 5 / 6 < m["ragas.faithfulness_ci_high"] <= 1
    table = _artifact_json(client, logged.run_id, rbml.PER_QUERY_ARTIFACT)
    assert [r[3] for r in table["data"]] == [0.5, None, 1.0, 1.0, None, 0.5, 1.0, 1.0]


def test_a_single_query_logs_nan_bounds(store: str) -> None:
    ev = rb.evaluate({"q1": {"d1": 1}}, {"q1": ["x", "d1"]}, ["mrr"])
    m = _client(store).get_run(rbml.log_evaluation(ev, report=False).run_id).data.metrics
    assert m["mrr"] == 0.5 and math.isnan(m["mrr_ci_low"]) and math.isnan(m["mrr_ci_high"])


# --------------------------------------------------------------------------------------------------
# a Comparison
# --------------------------------------------------------------------------------------------------


def test_comparison_logs_every_run_and_the_paired_results(store: str) -> None:
    bm25 = _bm25_run()
    cmp = rb.compare({"bm25": bm25, "team/dense": DENSE}, QRELS, METRICS, n_resamples=2000)
    logged = rbml.log_evaluation(cmp, runs={"bm25": bm25}, qrels=QRELS)
    client = _client(store)
    got = client.get_run(logged.run_id)
    assert got.info.run_name == "team/dense vs bm25"
    m = got.data.metrics
    for metric, key in logged.metric_keys.items():
        for run, prefix in (("bm25", "bm25"), ("team/dense", "team_dense")):
            iv = cmp.means[metric][run]
            assert (m[f"{prefix}/{key}"], m[f"{prefix}/{key}_ci_low"], m[f"{prefix}/{key}_ci_high"]) == pytest.approx(
                (iv.estimate, iv.low, iv.high), nan_ok=True
            )
        pc = cmp.paired[metric]["team/dense"]
        assert m[f"team_dense/{key}_delta"] == pytest.approx(pc.difference.estimate)
        assert m[f"team_dense/{key}_p"] == pytest.approx(pc.pvalue)
        assert m[f"team_dense/{key}_p_adjusted"] == pytest.approx(pc.pvalue_adjusted)
        assert m[f"team_dense/{key}_significant"] == (1.0 if pc.significant else 0.0)
        assert f"bm25/{key}_delta" not in m  # the baseline has no paired result
    assert m["team_dense/mrr_at_10_delta"] == pytest.approx(0.25)
    assert m["team_dense/precision_at_5_rel_2_delta"] == pytest.approx(0.2)  # e_i at rank 2: 1 of 5
    assert m["team_dense/precision_at_5_rel_2_significant"] == 1.0

    p = got.data.params
    assert p["rankbridge.baseline"] == "bm25" and p["rankbridge.test"] == "permutation"
    assert p["bm25/retriever"] == "BM25Retriever" and p["bm25/k"] == "10"
    assert got.data.tags["rankbridge.kind"] == "comparison"

    table = _artifact_json(client, logged.run_id, rbml.COMPARISON_ARTIFACT)
    rows = {(r[0], r[1]): dict(zip(table["columns"], r, strict=True)) for r in table["data"]}
    assert len(rows) == 2 * len(METRICS)
    dense_mrr = rows[("team/dense", "mrr@10")]
    assert dense_mrr["delta"] == pytest.approx(0.25) and dense_mrr["wins"] == 4 and dense_mrr["ties"] == 4
    assert rows[("bm25", "mrr@10")]["delta"] is None and rows[("bm25", "mrr@10")]["baseline"] is True
    per_query = _artifact_json(client, logged.run_id, rbml.PER_QUERY_ARTIFACT)
    assert len(per_query["data"]) == 2 * 8
    assert {r[0] for r in per_query["data"]} == {"bm25", "team/dense"}
    assert _artifact_json(client, logged.run_id, rbml.RESULT_ARTIFACT)["baseline"] == "bm25"
    assert json.loads(got.data.tags["mlflow.loggedArtifacts"]) == [
        {"path": rbml.COMPARISON_ARTIFACT, "type": "table"},
        {"path": rbml.PER_QUERY_ARTIFACT, "type": "table"},
    ]


def test_run_names_mapping_to_one_prefix_are_an_error(store: str) -> None:
    cmp = rb.compare({"a/b": BM25, "a_b": DENSE}, QRELS, ["mrr"], n_resamples=200)
    with pytest.raises(InputError, match="'a/b' and 'a_b' both map to the MLflow key prefix 'a_b'"):
        rbml.log_evaluation(cmp)


# --------------------------------------------------------------------------------------------------
# where it goes
# --------------------------------------------------------------------------------------------------


def test_logs_into_the_active_run_and_leaves_it_open(store: str) -> None:
    import mlflow

    ev = rb.evaluate(QRELS, BM25, ["mrr@10"])
    with mlflow.start_run() as active:
        logged = rbml.log_evaluation(ev, report=False)
        assert mlflow.active_run() is not None
        status = _client(store).get_run(active.info.run_id).info.status
    assert logged.run_id == active.info.run_id and not logged.created_run and status == "RUNNING"
    assert _client(store).get_run(active.info.run_id).data.metrics["mrr_at_10"] == pytest.approx(0.75)


def test_logs_into_a_given_run_id_and_refuses_a_changed_param(store: str) -> None:
    client = _client(store)
    exp = client.create_experiment("given-run")
    target = client.create_run(exp).info.run_id
    run = rb.Run.from_scores(BM25, name="bm25")
    run.config["k"] = 10
    ev = rb.evaluate(QRELS, run, ["mrr@10"])
    logged = rbml.log_evaluation(ev, run=target, runs=run, report=False)
    assert logged.run_id == target and not logged.created_run
    assert client.get_run(target).data.params["k"] == "10"
    run.config["k"] = 20
    with pytest.raises(RankbridgeError, match=f"refused to log into run {target}"):
        rbml.log_evaluation(ev, run=target, runs=run, report=False)
    with pytest.raises(InputError, match="expected an MLflow run id"):
        rbml.log_evaluation(ev, run=3.5, report=False)


def test_default_is_a_local_sqlite_store_in_the_working_directory(
    tmp_path: Path, fresh_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    monkeypatch.chdir(tmp_path)
    ev = rb.evaluate(QRELS, BM25, ["mrr@10"])
    logged = rbml.log_evaluation(ev, report=False)
    assert logged.local_store == str(tmp_path.resolve() / "mlflow.db") and Path(logged.local_store).is_file()
    assert logged.tracking_uri == f"sqlite:///{(tmp_path.resolve() / 'mlflow.db').as_posix()}"
    assert logged.artifact_uri.startswith((tmp_path.resolve() / "mlruns").as_uri())
    assert (tmp_path / "mlruns" / logged.run_id / "artifacts" / "rankbridge" / "per_query.json").is_file()
    assert _client(logged.tracking_uri).get_run(logged.run_id).data.metrics["mrr_at_10"] == pytest.approx(0.75)


def test_an_explicit_tracking_uri_wins(tmp_path: Path, fresh_db: Path) -> None:
    fresh_db.rename(tmp_path / "other.db")
    uri = f"sqlite:///{(tmp_path / 'other.db').as_posix()}"
    logged = rbml.log_evaluation(rb.evaluate(QRELS, BM25, ["mrr@10"]), tracking_uri=uri, report=False)
    assert logged.tracking_uri == uri and logged.local_store is None
    assert (tmp_path / "other.db").is_file() and (tmp_path / "mlruns" / logged.run_id).is_dir()


# --------------------------------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------------------------------


def test_wrong_input_and_wrong_qrels_are_errors(store: str) -> None:
    with pytest.raises(InputError, match="expected an Evaluation or a Comparison, found dict"):
        rbml.log_evaluation({"mrr": 1.0})  # type: ignore[arg-type]
    ev = rb.evaluate(QRELS, BM25, ["mrr@10"])
    with pytest.raises(InputError, match="8 of the 8 evaluated queries are not in them"):
        rbml.log_evaluation(ev, qrels={"other": {"d1": 1}})
    with pytest.raises(InputError, match="an Evaluation has one run, found 2"):
        rbml.log_evaluation(ev, runs=[rb.Run(name="a"), rb.Run(name="b")])


def test_missing_mlflow_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mlflow", None)
    ev = rb.evaluate(QRELS, BM25, ["mrr@10"])
    with pytest.raises(MissingExtraError, match=r"pip install 'rankbridge\[mlflow\]'"):
        rbml.log_evaluation(ev)


def test_import_rankbridge_and_the_cli_parser_do_not_import_mlflow() -> None:
    code = (
        "import sys, rankbridge, rankbridge.cli, rankbridge.integrations.mlflow\n"
        "rankbridge.cli.build_parser()\n"
        "print(sorted(m for m in sys.modules if m == 'mlflow' or m.startswith('mlflow.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --------------------------------------------------------------------------------------------------
# CLI and docs
# --------------------------------------------------------------------------------------------------


def _write_trec(path: Path, run: dict[str, dict[str, float]], tag: str) -> None:
    lines = []
    for qid, docs in run.items():
        for rank, (doc, score) in enumerate(sorted(docs.items(), key=lambda kv: -kv[1]), start=1):
            lines.append(f"{qid} Q0 {doc} {rank} {score} {tag}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_cli_mlflow_log_one_run_and_a_comparison(
    store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rankbridge.cli import main

    qrels = tmp_path / "qrels.txt"
    qrels.write_text(
        "".join(f"{q} 0 {d} {r}\n" for q, docs in QRELS.items() for d, r in docs.items()), encoding="utf-8"
    )
    _write_trec(tmp_path / "bm25.txt", BM25, "bm25")
    _write_trec(tmp_path / "dense.txt", DENSE, "dense")
    args = ["mlflow", "log", str(qrels), str(tmp_path / "bm25.txt")]
    opts = ["-m", "mrr@10", "--n-resamples", "500"]
    assert main([*args, *opts, "--json", "--experiment", "cli"]) == 0
    one = json.loads(capsys.readouterr().out)
    got = _client(store).get_run(one["run_id"])
    assert got.data.metrics["mrr_at_10"] == pytest.approx(0.75)
    assert got.data.tags["rankbridge.qrels_fingerprint"] == qrels_fingerprint(QRELS)
    assert rbml.REPORT_ARTIFACT in one["artifacts"] and one["tracking_uri"] == store

    assert main([*args, str(tmp_path / "dense.txt"), *opts, "--no-report", "--run-name", "nightly"]) == 0
    out = capsys.readouterr().out
    run_id = re.search(r"MLflow run (\w+) at ", out).group(1)  # type: ignore[union-attr]
    got = _client(store).get_run(run_id)
    assert got.info.run_name == "nightly"
    assert got.data.metrics["dense/mrr_at_10_delta"] == pytest.approx(0.25)
    assert rbml.REPORT_ARTIFACT not in {f.path for f in _client(store).list_artifacts(run_id, "rankbridge")}

    assert main(["mlflow", "log", str(qrels), str(tmp_path / "missing.txt")]) == 2


def test_docs_page_snippets_run_and_print_what_their_comments_say(
    tmp_path: Path, fresh_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MLFLOW_TRACKING_URI")  # the page shows the default local store
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```python\n(.*?)```", DOCS.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) >= 4
    namespace: dict[str, object] = {"__name__": "mlflow_docs"}
    checked = 0
    try:
        for i, block in enumerate(blocks):
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(block, f"mlflow.md python block {i + 1}", "exec"), namespace)
            lines = out.getvalue().splitlines()
            expected = [m.group(1).strip() for m in re.finditer(r"^print\(.*\)\s+#\s*(.+)$", block, flags=re.M)]
            assert len(lines) == len(expected), (i + 1, lines)
            for line, want in zip(lines, expected, strict=True):
                assert line == want or want.startswith(line + ":"), (i + 1, line, want)  # "True: why"
                checked += 1
    finally:
        import mlflow

        mlflow.set_tracking_uri(None)
    assert checked >= 10
    assert namespace["logged"].local_store == str(fresh_db.resolve())  # type: ignore[attr-defined]
