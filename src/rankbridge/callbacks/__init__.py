"""Deprecated alias of :mod:`rankbridge.capture`.

Importing it warns once (``DeprecationWarning``); every name is the object of the new module.
"""

from __future__ import annotations

import warnings

from rankbridge.capture import *  # noqa: F403
from rankbridge.capture import __all__ as __all__

warnings.warn(
    "rankbridge.callbacks is deprecated: import from rankbridge.capture instead (same names)",
    DeprecationWarning,
    stacklevel=2,
)
