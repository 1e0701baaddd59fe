"""The pytest plugin, exercised the way users meet it: an inner test suite run by ``pytester``."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from importlib.metadata import entry_points
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

SUITE = """
import pytest
import rankbridge as rb
from rankbridge.pytest_plugin import assert_retrieval_quality

QRELS = {{f"q{{i:02d}}": {{f"d{{i}}": 1}} for i in range(20)}}
HURT = {hurt}   # how many queries get their relevant doc at rank 2 instead of 1

def make_run():
    return rb.Run.from_ranked(
        {{q: (["x", f"d{{i}}"] if i < HURT else [f"d{{i}}", "x"]) for i, q in enumerate(QRELS)}}, name="candidate"
    )

def test_gate(rankbridge_gate):
    rankbridge_gate(make_run(), QRELS, metric="mrr@10", baseline="main", max_drop=0.01)
"""


#: Other installed plugins are not what is tested here, and hypothesis' re-imports slow every inner run.
QUIET = ("-p", "no:hypothesispytest", "-p", "no:langsmith_plugin", "-p", "no:cacheprovider")


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(*QUIET, *args)


def _suite(pytester: pytest.Pytester, hurt: int) -> None:
    pytester.makepyfile(test_quality=SUITE.format(hurt=hurt))


def test_entry_point_is_registered() -> None:
    found = [ep for ep in entry_points(group="pytest11") if ep.name == "rankbridge"]
    assert [ep.value for ep in found] == ["rankbridge.pytest_plugin"]


def test_baseline_lifecycle(pytester: pytest.Pytester) -> None:
    _suite(pytester, hurt=0)
    # 1. No baseline yet: the test fails and says how to create one.
    result = _run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*no baseline named 'main'*--rankbridge-update-baseline*"])
    assert not (pytester.path / "rankbridge-history.sqlite").exists()
    # 2. Save it.
    result = _run(pytester, "--rankbridge-update-baseline")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*rankbridge gates*", "*test_gate: baseline 'main' updated: mrr@10 = 1.0000*"])
    assert (pytester.path / "rankbridge-history.sqlite").exists()
    # 3. The same quality passes; a drop that may be noise passes too.
    _suite(pytester, hurt=1)
    result = _run(pytester)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_gate: PASS mrr@10: 0.9750 vs baseline 1.0000*"])
    # 4. A significant drop fails with the interval and the explanation.
    _suite(pytester, hurt=15)
    result = _run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*AssertionError: FAIL mrr@10: 0.6250 vs baseline 1.0000, change -0.3750 [[]95% CI*",
            "*exceeds the allowed drop of 0.0100 and is significant*",
        ]
    )


def test_store_option_and_ini(pytester: pytest.Pytester) -> None:
    _suite(pytester, hurt=0)
    _run(pytester, "--rankbridge-update-baseline", "--rankbridge-store", "ci/h.sqlite").assert_outcomes(passed=1)
    assert (pytester.path / "ci" / "h.sqlite").exists()
    pytester.makeini("[pytest]\nrankbridge_store = ci/h.sqlite\n")
    _suite(pytester, hurt=15)
    result = _run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*FAIL mrr@10*"])


def test_assert_helper_messages(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_helper="""
        from rankbridge.pytest_plugin import assert_retrieval_quality

        QRELS = {f"q{i}": {"a": 1} for i in range(20)}
        GOOD = {q: ["a"] for q in QRELS}
        HALF = {q: (["a"] if i % 2 else ["x", "a"]) for i, q in enumerate(QRELS)}

        def test_good_enough():
            ev = assert_retrieval_quality(GOOD, QRELS, metric="ndcg@10", min_value=0.9)
            assert ev.mean["ndcg@10"] == 1.0

        def test_too_low():
            assert_retrieval_quality(HALF, QRELS, metric="mrr@10", min_value=0.9)

        def test_against_a_run():
            assert_retrieval_quality(HALF, QRELS, metric="mrr@10", baseline=GOOD, max_drop=0.05)
        """
    )
    result = _run(pytester)
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*AssertionError: mrr@10 = 0.7500 [[]95% CI 0.*, 0.*[]] over 20 queries, below the required 0.9000*",
            "*AssertionError: FAIL mrr@10: 0.7500 vs baseline 1.0000, change -0.2500*",
        ]
    )


def test_plugin_can_be_disabled(pytester: pytest.Pytester) -> None:
    _suite(pytester, hurt=0)
    result = _run(pytester, "-p", "no:rankbridge")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*fixture 'rankbridge_gate' not found*"])


def test_plugin_works_without_any_framework(tmp_path: Path) -> None:
    """Block every framework import; the plugin, its fixture and the helper still work."""
    (tmp_path / "test_inner.py").write_text(
        textwrap.dedent(
            """
            import sys
            from rankbridge.pytest_plugin import assert_retrieval_quality

            def test_inner(rankbridge_gate):
                qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
                assert_retrieval_quality({"q1": ["a"], "q2": ["b"]}, qrels, metric="mrr", min_value=1.0)
                rankbridge_gate({"q1": ["a"], "q2": ["b"]}, qrels, metric="mrr", baseline="main")
                heavy = ("llama_index", "langchain", "langchain_core", "ragas", "pandas", "datasets")
                assert not [m for m in sys.modules if m.split(".")[0] in heavy]
            """
        )
    )
    script = textwrap.dedent(
        """
        import sys

        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("llama_index", "langchain", "langchain_core", "ragas", "datasets"):
                    raise ImportError(f"blocked: {name}")
                return None

        sys.meta_path.insert(0, Block())
        import pytest
        args = ["-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:langsmith_plugin"]
        sys.exit(pytest.main([*args, "--rankbridge-update-baseline", "test_inner.py"]))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout


def test_importing_the_plugin_loads_no_framework() -> None:
    code = (
        "import sys, rankbridge.pytest_plugin\n"
        "heavy = ('llama_index', 'langchain_core', 'ragas', 'pandas', 'rich', 'sqlite3', 'scipy')\n"
        "print([m for m in sys.modules if m.split('.')[0] in heavy])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
