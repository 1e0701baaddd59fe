"""The module paths that moved keep working for a while: they warn once and hand out the new objects."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    ("old", "names"),
    [
        ("rankbridge.compare", ["Comparison", "compare", "slices", "failures", "PairedComparison", "SliceTable"]),
        ("rankbridge.gate", ["GateResult", "gate", "assert_retrieval_quality", "EXIT_FAILED", "EXIT_PASSED"]),
    ],
)
def test_an_old_module_path_warns_once_and_re_exports_the_new_objects(old: str, names: list[str]) -> None:
    # a fresh interpreter: the warning is raised when the module is first imported
    code = (
        "import importlib, warnings\n"
        "warnings.simplefilter('error')\n"
        "import rankbridge as rb, rankbridge.analysis as new\n"
        "warnings.simplefilter('always')\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        f"    old = importlib.import_module({old!r})\n"
        f"    importlib.import_module({old!r})\n"
        "print(len(caught), caught[0].category.__name__, 'rankbridge.analysis' in str(caught[0].message))\n"
        f"print(all(getattr(old, n) is getattr(new, n) for n in {names!r}))\n"
        "print(callable(rb.compare) and callable(rb.gate), rb.compare is new.compare, rb.gate is new.gate)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "1 DeprecationWarning True"
    assert out[1] == "True"
    assert out[2] == "True True True"  # importing the old module did not rebind rb.compare / rb.gate


def test_the_old_gate_path_still_gates() -> None:
    code = (
        "import warnings\n"
        "warnings.simplefilter('ignore', DeprecationWarning)\n"
        "from rankbridge.gate import gate\n"
        "q = {f'q{i}': {'a': 1} for i in range(12)}\n"
        "print(gate({k: ['x', 'a'] for k in q}, {k: ['a'] for k in q}, q, metric='mrr', max_drop=0.1).passed)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_the_package_module_pickles_by_name() -> None:
    """The package's own module type (it keeps rb.compare/rb.gate/rb.capture the functions) still pickles as a
    plain module does, by name: a user's function referring to `rankbridge` travels to Ray or Spark workers."""
    import pickle

    import rankbridge

    assert pickle.loads(pickle.dumps(rankbridge)) is rankbridge
    cloudpickle = pytest.importorskip("ray.cloudpickle", reason="ray's cloudpickle is in the dev extra")

    def uses_the_package(doc: str) -> object:
        return rankbridge.Hit(doc, 1.0)

    restored = cloudpickle.loads(cloudpickle.dumps(uses_the_package))
    assert restored("d1") == rankbridge.Hit("d1", 1.0)
