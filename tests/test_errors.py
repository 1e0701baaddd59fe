"""errors.py holds every exception and warning class of the package, and draws them all in its docstring."""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

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
