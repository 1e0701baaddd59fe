"""Deprecated alias of :mod:`rankbridge.frameworks.langchain.capture`.

Importing it warns once (``DeprecationWarning``); every name is the object of the new module.
"""

from __future__ import annotations

import warnings

from rankbridge.frameworks.langchain.capture import *  # noqa: F403
from rankbridge.frameworks.langchain.capture import __all__ as __all__

warnings.warn(
    "rankbridge.callbacks.langchain is deprecated: import from "
    "rankbridge.frameworks.langchain.capture instead (same names)",
    DeprecationWarning,
    stacklevel=2,
)
