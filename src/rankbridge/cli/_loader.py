"""The one loader behind every ``module:attr`` option (``run RETRIEVER``, ``--llm``, ``--embeddings``).

What a spec means, for every option alike:

``module:attr``
    ``attr`` (a dotted path works: ``pkg.app:Search.default``) of an importable module; the current
    directory is importable.
``path/to/file.py:attr``
    the same, from a file (its folder becomes importable, so its own sibling imports work).
``module:attr()``
    call ``attr`` with no arguments and use what it returns.

Without ``()`` the object is used as it is, except a *factory*: a class, or a function whose every
parameter has a default, is called with no arguments (``make_retriever``, ``ChatOpenAI``-building
helpers). A function that needs an argument -- a retriever ``f(query, k)``, an LLM ``f(prompt)`` -- is
the object itself. Every failure is an :class:`~rankbridge.errors.InputError` (exit 2) that names the
option, what was expected and what was found.

Examples
--------
>>> load_object("os.path:join", "retriever") is __import__("os").path.join
True
>>> load_object("json:JSONDecoder", "--llm").__class__.__name__   # a class is called: an instance
'JSONDecoder'
>>> load_object("os.path:nope", "retriever")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
rankbridge.errors.InputError: retriever: 'os.path' has no attribute 'nope' (it has: ...)
>>> split_spec("pkg.app:make_retriever()", "retriever")
('pkg.app', 'make_retriever', True)
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from rankbridge.errors import InputError

__all__ = ["SPEC_HELP", "load_object", "split_spec"]

#: One line for an option's ``--help``: the forms a spec takes and what is called.
SPEC_HELP = (
    "module:attr, path/file.py:attr or module:factory(); a class or a zero-argument function is called "
    "to build the object"
)


def _expected(metavar: str) -> str:
    return f"{metavar} (or 'path/file.py:attr', or 'module:factory()' to call a factory)"


def split_spec(spec: str, option: str = "spec", *, metavar: str = "'module:attr'") -> tuple[str, str, bool]:
    """Split ``"module:attr"`` / ``"file.py:attr"`` / ``"module:factory()"`` into (where, attr, call).

    ``option`` names the option in the error; ``metavar`` is the form its ``--help`` shows.

    Examples
    --------
    >>> split_spec("src/app.py:Search.build()", "retriever")
    ('src/app.py', 'Search.build', True)
    >>> split_spec("app", "--llm", metavar="MODULE:ATTR")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rankbridge.errors.InputError: --llm: expected MODULE:ATTR (or 'path/file.py:attr', ...), got 'app'
    """
    where, sep, attr = spec.strip().rpartition(":")
    call = attr.endswith("()")
    if call:
        attr = attr[:-2]
    if not sep or not where or not attr or not all(part.isidentifier() for part in attr.split(".")):
        raise InputError(f"{option}: expected {_expected(metavar)}, got {spec!r}")
    return where, attr, call


def _import(where: str, option: str) -> ModuleType:
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    is_file = where.endswith(".py") or os.sep in where or "/" in where
    try:
        if not is_file:
            return importlib.import_module(where)
        path = Path(where).resolve()
        if not path.is_file():
            raise InputError(f"{option}: no such file {where!r} (file not found from {cwd})")
        folder = str(path.parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)  # so the file's own sibling imports work
        name = f"rankbridge_user_{path.stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise InputError(f"{option}: expected a Python file, found {where!r}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    except InputError:
        raise
    except ImportError as exc:
        raise InputError(
            f"{option}: cannot import {where!r} (importing {where!r} failed: {type(exc).__name__}: {exc})"
        ) from exc
    except Exception as exc:  # the user's module raised while importing
        raise InputError(f"{option}: importing {where!r} raised {type(exc).__name__}: {exc}") from exc


def _is_factory(obj: Any) -> bool:
    """A class, or a function whose every parameter has a default (a retriever or an LLM takes an argument)."""
    if not (inspect.isclass(obj) or inspect.isfunction(obj)):
        return False
    try:
        params = inspect.signature(obj).parameters.values()
    except (TypeError, ValueError):
        return False
    return all(p.default is not p.empty or p.kind == p.VAR_KEYWORD for p in params)


def _names(obj: Any) -> str:
    public = sorted(n for n in dir(obj) if not n.startswith("_"))
    return ", ".join(public[:12]) + (", ..." if len(public) > 12 else "") if public else "no public names"


def load_object(spec: str, option: str = "spec", *, metavar: str = "'module:attr'") -> Any:
    """The object ``spec`` names (see the module docstring); a factory is called to build it.

    Parameters
    ----------
    spec:
        ``module:attr``, ``path/file.py:attr`` or ``module:attr()``.
    option:
        The option or argument the spec came from (``"--llm"``, ``"retriever"``), named in every error.
    metavar:
        The form the option's ``--help`` shows, repeated in the error for a malformed spec.

    Raises
    ------
    InputError
        The spec is malformed, the module or file cannot be imported (or raised), the attribute is
        missing, ``()`` names something that is not callable, or the factory raised.
    """
    where, attr, call = split_spec(spec, option, metavar=metavar)
    obj: Any = _import(where, option)
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise InputError(f"{option}: {where!r} has no attribute {attr!r} (it has: {_names(obj)})")
        obj = getattr(obj, part)
    if call or _is_factory(obj):
        if not callable(obj):
            raise InputError(f"{option}: {spec!r} asks to call {attr!r}, which is a {type(obj).__name__}")
        try:
            obj = obj()
        except Exception as exc:
            raise InputError(f"{option}: {where}:{attr}() raised {type(exc).__name__}: {exc}") from exc
    return obj
