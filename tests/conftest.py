"""Shared fixtures for the rankbridge test suite.

The conformance data (trec_eval's own regression files, BEIR sets) lives outside the repository, in
``../shared/data`` next to the checkout. Tests that need it take the :func:`shared_data` (or
:func:`trec_eval_data`) fixture, which skips them with a clear reason when the folder is absent, so the
suite still runs on a bare checkout.
"""

from __future__ import annotations

from pathlib import Path

import pytest

#: ``<repo>/../shared/data`` (``tests/conftest.py`` -> ``tests`` -> ``<repo>`` -> ``<repo>/..``).
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def shared_data_dir(*parts: str) -> Path:
    """``SHARED_DATA / parts``, or ``pytest.skip`` naming the missing path.

    Usable from fixtures and from test bodies alike.
    """
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(
            f"shared test data not found at {path} (expected ../shared/data next to the repository; "
            "see shared/data/SOURCES.md for where it comes from)"
        )
    return path


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The ``../shared/data`` folder; skips the test when it is absent."""
    return shared_data_dir()


@pytest.fixture(scope="session")
def trec_eval_data() -> Path:
    """trec_eval's own test inputs and expected outputs (``../shared/data/trec_eval``); skips when absent."""
    return shared_data_dir("trec_eval")
