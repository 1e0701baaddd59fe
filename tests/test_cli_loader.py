"""One meaning for every ``module:attr`` option: ``run RETRIEVER``, ``--llm`` and ``--embeddings``."""

from __future__ import annotations

import ast
import itertools
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rankbridge.cli._loader import load_object, split_spec
from rankbridge.errors import InputError

_counter = itertools.count()

SOURCE = """
calls = []

def needs_a_query(query, k=10):
    return [query]

def llm(prompt):
    return prompt

def factory():
    calls.append("factory")
    return "built by factory"

def factory_with_defaults(model="m", **settings):
    return f"built with {model}"

class Model:
    def __init__(self, temperature=0):
        self.temperature = temperature

class NeedsArgs:
    def __init__(self, key):
        self.key = key

def raises():
    raise RuntimeError("no key in the environment")

INSTANCE = object()
NUMBER = 7
"""


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    name = f"loader_app_{next(_counter)}"
    (tmp_path / f"{name}.py").write_text(SOURCE)
    yield name
    for m in [m for m in sys.modules if "loader_app_" in m]:
        del sys.modules[m]


@pytest.mark.parametrize("option", ["retriever", "--llm", "--embeddings"])
def test_every_option_means_the_same(module: str, option: str) -> None:
    found = load_object(f"{module}:needs_a_query", option)
    mod = sys.modules[module]
    assert found is mod.needs_a_query  # takes an argument: the object itself
    assert load_object(f"{module}:llm", option) is mod.llm
    assert load_object(f"{module}:INSTANCE", option) is mod.INSTANCE  # not callable: as it is
    assert load_object(f"{module}:factory", option) == "built by factory"  # zero-argument function: called
    assert load_object(f"{module}:factory()", option) == "built by factory"  # () says so explicitly
    assert load_object(f"{module}:factory_with_defaults", option) == "built with m"
    assert isinstance(load_object(f"{module}:Model", option), mod.Model)  # a class: an instance
    assert load_object(f"{module}:NeedsArgs", option) is mod.NeedsArgs  # cannot be built without arguments


def test_a_file_path_loads_the_same_object(module: str, tmp_path: Path) -> None:
    assert load_object(f"{tmp_path / (module + '.py')}:factory", "--llm") == "built by factory"


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("nocolon", "--llm: expected 'module:attr' (or 'path/file.py:attr', or 'module:factory()' to call a factory)"),
        ("{mod}:", "got '{mod}:'"),
        ("{mod}:NUMBER()", "asks to call 'NUMBER', which is a int"),
        ("{mod}:raises", "--llm: {mod}:raises() raised RuntimeError: no key in the environment"),
        ("{mod}:missing", "--llm: '{mod}' has no attribute 'missing' (it has: INSTANCE, Model, NUMBER, NeedsArgs,"),
        ("not_a_module_{n}:x", "--llm: cannot import 'not_a_module_{n}' (importing 'not_a_module_{n}' failed"),
        ("absent/app.py:x", "--llm: no such file 'absent/app.py' (file not found from"),
    ],
)
def test_a_bad_spec_says_what_was_expected_and_what_was_found(module: str, spec: str, expected: str) -> None:
    n = next(_counter)
    with pytest.raises(InputError) as info:
        load_object(spec.format(mod=module, n=n), "--llm")
    assert expected.format(mod=module, n=n) in str(info.value)


def test_the_help_metavar_is_repeated_in_the_error() -> None:
    with pytest.raises(InputError, match=r"^--llm: expected MODULE:ATTR \(or"):
        split_spec("x", "--llm", metavar="MODULE:ATTR")


def test_the_library_never_imports_the_cli() -> None:
    """The CLI is the top layer: no module outside rankbridge/cli/ imports rankbridge.cli (module top or not)."""
    root = Path(__file__).parent.parent / "src" / "rankbridge"
    offenders = []
    for path in root.rglob("*.py"):
        if path.parent.name == "cli" or path.name == "__main__.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            if any(n == "rankbridge.cli" or n.startswith("rankbridge.cli.") for n in names):
                offenders.append(f"{path.relative_to(root)}:{node.lineno}")
    assert offenders == []
