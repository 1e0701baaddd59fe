"""errors.py holds every exception and warning class, draws them all in its docstring, and they all pickle."""

from __future__ import annotations

import ast
import builtins
import pickle
from pathlib import Path

import pytest

import rankbridge.errors as errors

SRC = Path(errors.__file__).parent
# the base classes an exception or warning class can derive from: Python's own and rankbridge's
EXCEPTION_BASES = {
    name for name, obj in vars(builtins).items() if isinstance(obj, type) and issubclass(obj, BaseException)
}
EXCEPTION_BASES |= set(errors.__all__)


def _exception_classes(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ClassDef):
            bases = {
                b.id if isinstance(b, ast.Name) else b.attr
                for b in node.bases
                if isinstance(b, (ast.Name, ast.Attribute))
            }
            if bases & EXCEPTION_BASES:
                found.append(node.name)
    return found


def test_every_exception_and_warning_class_is_defined_in_errors_py() -> None:
    elsewhere = {
        f"{path.relative_to(SRC)}: {name}"
        for path in sorted(SRC.rglob("*.py"))
        if path.name != "errors.py"
        for name in _exception_classes(path)
    }
    assert elsewhere == set()


def test_the_docstring_draws_every_public_class() -> None:
    doc = errors.__doc__ or ""
    public = [n for n in errors.__all__ if isinstance(getattr(errors, n), type)]
    assert public and [n for n in public if f" {n} " not in doc and f" {n}\n" not in doc] == []


# the constructor arguments of the classes whose constructor is not (message,); any other class is built
# from a message alone, so a new class with its own constructor fails here until it is listed
CONSTRUCTED = {
    "ParseError": (("bad field",), {"source": "runs.txt", "line": 3}),
    "IdMismatchError": (("ids differ",), {"suggestion": "ref_doc_id", "report": {"ok": 0.1}, "run": ["r"]}),
    "MissingExtraError": (("pandas", "pandas", "to_pandas()"), {}),
    "CheckpointError": (("disk full",), {"run": {"q1": ["d1"]}}),
    "StoreError": (("read-only",), {"path": "h.sqlite"}),
    "StoreLockedError": (("h.sqlite",), {"timeout": 5.0, "doing": "save"}),
    "ContextMatchError": (("no context matched",), {"match": {"matched": 0}}),
    "GenerationError": (("incomplete",), {"result": {"queries": 2}}),
    "UnmatchedContextsWarning": (("2 contexts unmatched",), {"match": {"matched": 3}}),
}


@pytest.mark.parametrize("name", errors.__all__)
def test_every_error_and_warning_pickles_with_its_message_and_attributes(name: str) -> None:
    """Errors cross process boundaries (Ray, multiprocessing) as they were: type, message, attributes."""
    args, kwargs = CONSTRUCTED.get(name, (("what went wrong",), {}))
    exc = getattr(errors, name)(*args, **kwargs)
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is type(exc)
    assert (str(back), back.args, vars(back)) == (str(exc), exc.args, vars(exc))
    for key, value in kwargs.items():
        if key != "doing":  # StoreLockedError keeps `doing` in its message only
            assert getattr(back, key) == value


def test_the_carried_objects_are_the_attributes_the_constructors_name() -> None:
    err = errors.MissingExtraError("pandas", "pandas", "to_pandas()")
    assert (err.package, err.extra, err.msg) == ("pandas", "pandas", str(err))
    parse = errors.ParseError("bad field", source="runs.txt", line=3)
    assert (str(parse), parse.message, parse.source, parse.line) == (
        "runs.txt:3: bad field",
        "bad field",
        "runs.txt",
        3,
    )
    locked = errors.StoreLockedError("h.sqlite", timeout=5.0, doing="save")
    assert (locked.path, locked.timeout) == ("h.sqlite", 5.0) and "while trying to save" in str(locked)
    assert isinstance(errors.CheckpointError("x"), OSError) and isinstance(
        errors.ContextMatchError("x", {}), ValueError
    )
