"""pytest plugin: keep retrieval quality from regressing, inside your test suite.

Installed with rankbridge (entry point ``pytest11``: ``rankbridge``), it adds:

* :func:`assert_retrieval_quality` -- a plain assertion helper (also in :mod:`rankbridge.analysis`);
* the ``rankbridge_gate`` fixture -- a :class:`RankbridgeGate` bound to a run history file, which
  gates a run against a named baseline, and with ``--rankbridge-update-baseline`` saves it as the new
  baseline instead (like a snapshot update);
* options ``--rankbridge-store PATH`` (ini: ``rankbridge_store``; default
  ``rankbridge-history.sqlite`` in the rootdir) and ``--rankbridge-update-baseline``;
* a short summary of every gate at the end of the session.

::

    def test_retrieval_does_not_regress(rankbridge_gate):
        run = rankbridge.run_retriever(my_retriever, golden, k=10, progress=False)
        rankbridge_gate(run, golden.qrels, metric="ndcg@10", baseline="main", max_drop=0.01)

This module imports only pytest and the standard library at import time (rankbridge's numpy code and
no framework are loaded when a gate first runs), so having rankbridge installed costs other test
suites nothing. Disable it with ``-p no:rankbridge``.

Examples
--------
>>> gate_ = RankbridgeGate(":memory:")
>>> qrels = {f"q{i}": {"a": 1} for i in range(6)}
>>> run = {f"q{i}": ["a"] for i in range(6)}
>>> gate_.update_baseline = True
>>> print(gate_(run, qrels, metric="mrr", baseline="main"))
baseline 'main' updated: mrr = 1.0000 over 6 queries
>>> gate_.update_baseline = False
>>> gate_(run, qrels, metric="mrr", baseline="main").passed
True
>>> gate_.close()
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from rankbridge.analysis import GateResult
    from rankbridge.evaluate import Evaluation
    from rankbridge.store import RunStore

__all__ = ["BaselineUpdate", "RankbridgeGate", "assert_retrieval_quality", "rankbridge_gate"]

_STORE_OPTION = "--rankbridge-store"
_UPDATE_OPTION = "--rankbridge-update-baseline"
_DEFAULT_STORE = "rankbridge-history.sqlite"  # rankbridge.store.DEFAULT_STORE_PATH, without importing it
_RESULTS = pytest.StashKey[list[tuple[str, str]]]()


def assert_retrieval_quality(*args: Any, **kwargs: Any) -> Evaluation:
    """:func:`rankbridge.analysis.assert_retrieval_quality` (imported on first call); same parameters.

    Examples
    --------
    >>> qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    >>> assert_retrieval_quality({"q1": ["a"], "q2": ["b"]}, qrels, metric="mrr", min_value=0.5).mean
    {'mrr': 1.0}
    """
    # lazy: pytest loads this plugin in every session of a project that installs rankbridge
    from rankbridge.analysis import assert_retrieval_quality as check

    return check(*args, **kwargs)


@dataclass(frozen=True)
class BaselineUpdate:
    """What :class:`RankbridgeGate` returns when it saved a new baseline instead of gating."""

    baseline: str
    metric: str
    mean: float
    num_queries: int
    record_id: int
    passed: bool = True

    def __bool__(self) -> bool:
        return True

    def __str__(self) -> str:
        return f"baseline {self.baseline!r} updated: {self.metric} = {self.mean:.4f} over {self.num_queries} queries"


class RankbridgeGate:
    """Gate runs against baselines kept in a run history file (what the ``rankbridge_gate`` fixture gives).

    Parameters
    ----------
    store:
        Path of the history file (``":memory:"`` for a throw-away one).
    update_baseline:
        Save each gated run as its baseline instead of gating it.

    Attributes
    ----------
    results:
        One line per gate run so far (for the session summary).
    """

    def __init__(self, store: str | os.PathLike[str] = _DEFAULT_STORE, *, update_baseline: bool = False) -> None:
        self.store_path = os.fspath(store)
        self.update_baseline = update_baseline
        self.results: list[str] = []
        self._store: RunStore | None = None

    def _open(self, create: bool) -> RunStore | None:
        if self._store is None:
            from rankbridge.store import RunStore  # lazy: sqlite3 only when a baseline is used

            if not create and self.store_path != ":memory:" and not os.path.exists(self.store_path):
                return None
            self._store = RunStore(self.store_path, create=True)
        return self._store

    def close(self) -> None:
        """Close the history file."""
        if self._store is not None:
            self._store.close()
            self._store = None

    def __call__(
        self,
        run: Any,
        qrels: Any = None,
        *,
        metric: str,
        baseline: Any,
        max_drop: float = 0.0,
        min_value: float | None = None,
        alpha: float = 0.05,
        test: str = "permutation",
        level: float = 0.95,
        seed: int = 0,
    ) -> GateResult | BaselineUpdate:
        """Gate ``run`` against ``baseline`` (a record name in the store, a Run or an Evaluation).

        Raises ``AssertionError`` (with the explanation and the interval) when the metric dropped by more
        than ``max_drop`` and the drop is significant, when the mean is below ``min_value``, or when the
        named baseline does not exist yet (run pytest with ``--rankbridge-update-baseline`` to create it).
        """
        # lazy: the plugin's import stays pytest and the standard library (see the module docstring)
        from rankbridge.analysis.quality_gate import _qrels_of, assert_retrieval_quality, gate
        from rankbridge.evaluate import evaluate
        from rankbridge.metrics.measures import parse_measure
        from rankbridge.types import Run

        canonical = str(parse_measure(metric))
        if self.update_baseline and isinstance(baseline, str):
            store = self._open(create=True)
            assert store is not None
            if isinstance(run, (Run, dict)):
                ev = evaluate(_qrels_of(qrels), run, [canonical], missing="zero")  # type: ignore[arg-type]
            else:
                ev = run
            judged = _qrels_of(qrels) if qrels is not None else None
            record = store.save(ev, run=run if isinstance(run, Run) else None, name=baseline, qrels=judged)
            update = BaselineUpdate(baseline, canonical, ev.mean[canonical], ev.num_queries, record)
            self.results.append(str(update))
            return update
        if min_value is not None:
            assert_retrieval_quality(run, qrels, metric=canonical, min_value=min_value, level=level, seed=seed)
        store = None
        if isinstance(baseline, str):
            store = self._open(create=False)
            if store is None or store.latest(baseline) is None:
                raise AssertionError(
                    f"no baseline named {baseline!r} in {self.store_path}: run pytest with {_UPDATE_OPTION} "
                    "to save this run as the baseline"
                )
        result = gate(
            run,
            baseline,
            qrels,
            metric=canonical,
            max_drop=max_drop,
            alpha=alpha,
            test=test,  # type: ignore[arg-type]
            store=store,
            level=level,
            seed=seed,
        )
        self.results.append(result.headline())
        if not result.passed:
            raise AssertionError(str(result))
        return result


# -- pytest hooks and fixture ------------------------------------------------------------------------------
def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rankbridge", "retrieval quality gates (rankbridge)")
    group.addoption(
        _STORE_OPTION,
        dest="rankbridge_store",
        default=None,
        help=f"run history file holding the baselines (default: ini rankbridge_store, else {_DEFAULT_STORE})",
    )
    group.addoption(
        _UPDATE_OPTION,
        dest="rankbridge_update_baseline",
        action="store_true",
        default=False,
        help="save each gated run as its baseline instead of gating it",
    )
    parser.addini("rankbridge_store", help="run history file holding the baselines (relative to the rootdir)")


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_RESULTS] = []


def _store_path(config: pytest.Config) -> str:
    path = config.getoption("rankbridge_store") or config.getini("rankbridge_store") or _DEFAULT_STORE
    path = str(path)
    if path == ":memory:" or os.path.isabs(path):
        return path
    return str(config.rootpath / path)


@pytest.fixture
def rankbridge_gate(request: pytest.FixtureRequest) -> Iterator[RankbridgeGate]:
    """A :class:`RankbridgeGate` on the session's history file (``--rankbridge-store``)."""
    config = request.config
    gate = RankbridgeGate(_store_path(config), update_baseline=bool(config.getoption("rankbridge_update_baseline")))
    try:
        yield gate
    finally:
        gate.close()
        config.stash[_RESULTS].extend((request.node.nodeid, line) for line in gate.results)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    results = config.stash.get(_RESULTS, [])
    if not results:
        return
    terminalreporter.section("rankbridge gates")
    for nodeid, line in results:
        terminalreporter.write_line(f"{nodeid}: {line}")
