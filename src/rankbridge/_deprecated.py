"""The one warning of the deprecated module paths (``rankbridge.compare``, ``rankbridge.gate``,
``rankbridge.adapters.*``, ``rankbridge.callbacks.*``).

Each alias module re-exports the new module's names with a plain import (``from new import *`` and its
``__all__``, or the names listed), which is what type checkers read, and then calls :func:`warn_moved` once
at its top. The import system runs a module's body once per process, so the warning is raised once: on the
first import, pointing at the line that imported the alias.
"""

from __future__ import annotations

import warnings

__all__ = ["warn_moved"]


def warn_moved(old: str, new: str, *, also_called: bool = False) -> None:
    """Warn (``DeprecationWarning``) that the module ``old`` moved to ``new``, where its names now live.

    Call it from the alias module's top level with ``__name__`` as ``old``. ``also_called``: ``old`` is also
    the name of a function of the package (``rankbridge.compare(...)``), which stays: only the module path is
    deprecated, and the message says so.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_moved("rankbridge.old", "rankbridge.new")
    >>> str(caught[0].message)
    'rankbridge.old is deprecated: import from rankbridge.new instead (same names)'
    """
    if also_called:
        message = f"{old} is deprecated as a module: import from {new} instead (same names), or call {old}(...)"
    else:
        message = f"{old} is deprecated: import from {new} instead (same names)"
    # 3: past this function and the alias module's body, to the import statement (the import system's own
    # frames in between are skipped by warnings)
    warnings.warn(message, DeprecationWarning, stacklevel=3)
