"""Atomic file writes: write to a temporary file beside the target, then rename over it."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

__all__ = ["atomic_write"]


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike[str]) -> Iterator[TextIO]:
    """Open a text file for writing that appears at ``path`` only if the block succeeds.

    On any error the temporary file is removed and ``path`` is left as it was.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; a result file should be readable like any other
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
