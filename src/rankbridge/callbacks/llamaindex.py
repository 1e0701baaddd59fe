"""Deprecated alias of :mod:`rankbridge.frameworks.llamaindex.capture`.

Importing it warns once (``DeprecationWarning``); every name is the object of the new module.
"""

from __future__ import annotations

from rankbridge._deprecated import warn_moved
from rankbridge.frameworks.llamaindex.capture import *  # noqa: F403
from rankbridge.frameworks.llamaindex.capture import __all__ as __all__

warn_moved(__name__, "rankbridge.frameworks.llamaindex.capture")
