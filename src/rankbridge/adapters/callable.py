"""Deprecated alias of :mod:`rankbridge.frameworks.plain`.

Importing it warns once (``DeprecationWarning``); every name is the object of the new module.
"""

from __future__ import annotations

import warnings

from rankbridge.frameworks.plain import *  # noqa: F403
from rankbridge.frameworks.plain import __all__ as __all__

warnings.warn(
    "rankbridge.adapters.callable is deprecated: import from rankbridge.frameworks.plain instead (same names)",
    DeprecationWarning,
    stacklevel=2,
)
