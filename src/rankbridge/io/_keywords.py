"""Keyword options that a family of readers shares, declared once as a ``TypedDict``.

The golden-table readers (:mod:`rankbridge.io.tables`) and the trace readers (:mod:`rankbridge.io.traces`)
each take one set of keywords. A reader declares ``**options: Unpack[SomeOptions]``, so that a type checker
checks every keyword a caller passes against the one declaration, and :func:`keywords` gives it at run
time what a spelled-out signature gives:

* ``inspect.signature`` and ``help()`` list each option as a keyword-only parameter with its default
  (:func:`rankbridge.io.read_golden` reads them there to tell which options a reader takes);
* a keyword the reader does not take raises the ``TypeError`` Python raises, naming it: nothing a caller
  passes is silently dropped;
* the reader's body finds every option in ``options``, one the caller left out holding its default.

Examples
--------
>>> from typing import TypedDict
>>> class Greeting(TypedDict, total=False):
...     name: str | None
...     punctuation: str
>>> @keywords(Greeting, punctuation="!")
... def greet(greeting: str, **options: Any) -> str:
...     return f"{greeting}, {options['name'] or 'world'}{options['punctuation']}"
>>> greet("hello"), greet("hi", name="Ada")
('hello, world!', 'hi, Ada!')
>>> print(inspect.signature(greet))
(greeting: 'str', *, name: 'str | None' = None, punctuation: 'str' = '!') -> 'str'
>>> greet("hello", nmae="Ada")
Traceback (most recent call last):
...
TypeError: greet() got an unexpected keyword argument 'nmae'
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, ForwardRef, TypeVar, cast

__all__ = ["keywords"]

F = TypeVar("F", bound=Callable[..., Any])


def keywords(options: type, /, **defaults: object) -> Callable[[F], F]:
    """Spell out a function's ``**options`` as the keys of the TypedDict ``options``.

    Each key defaults to ``defaults[key]``, else None. The function's own parameters stay as they are,
    before the options; its ``**options`` parameter is replaced by them.
    """
    declared: dict[str, Any] = dict(options.__annotations__)  # every key, the base TypedDicts' too, in order
    stray = [key for key in defaults if key not in declared]
    if stray:
        raise TypeError(f"keywords(): {options.__name__} has no key {stray[0]!r}")
    filled = {key: defaults.get(key) for key in declared}
    spelled = [
        inspect.Parameter(
            key,
            inspect.Parameter.KEYWORD_ONLY,
            default=filled[key],
            # under ``from __future__ import annotations`` a TypedDict keeps each type as a ForwardRef: its text
            annotation=hint.__forward_arg__ if isinstance(hint, ForwardRef) else hint,
        )
        for key, hint in declared.items()
    ]

    def decorate(function: F) -> F:
        signature = inspect.signature(function)
        own = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
        by_keyword = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        takes = {p.name for p in own if p.kind in by_keyword} | set(filled)

        @functools.wraps(function)
        def call(*args: Any, **kwargs: Any) -> Any:
            for key in kwargs:
                if key not in takes:
                    raise TypeError(f"{function.__qualname__}() got an unexpected keyword argument {key!r}")
            return function(*args, **{**filled, **kwargs})

        call.__signature__ = signature.replace(parameters=[*own, *spelled])  # type: ignore[attr-defined]
        return cast("F", call)

    return decorate
