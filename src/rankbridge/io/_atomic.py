"""Atomic writes: build beside the target, then rename over it.

:func:`atomic_write` writes one text file; :func:`atomic_path` gives a temporary name for a writer that
wants a path (Parquet); :func:`atomic_dir` builds a whole folder (a BEIR dataset).
A failure leaves the target as it was and no temporary file or folder behind.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TextIO

from rankbridge.errors import InputError

__all__ = ["atomic_dir", "atomic_path", "atomic_write"]


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike[str]) -> Iterator[TextIO]:
    """Open a text file for writing that appears at ``path`` only if the block succeeds.

    On any error the temporary file is removed and ``path`` is left as it was. A symbolic link is
    followed (the file it points to is replaced, the link stays). A target that exists and is not a
    regular file -- ``/dev/stdout``, a named pipe, a device -- is written directly, since renaming over
    it would replace the device with a file; a directory is refused.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "out.txt"
    >>> with atomic_write(p) as fh:
    ...     _ = fh.write("done\\n")
    >>> p.read_text()
    'done\\n'
    """
    # a text file opened on atomic_path's name: the same target rules, fsync and clean-up
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8", newline="\n") as fh:
        yield fh


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary file name beside ``path`` that becomes ``path`` only if the block succeeds.

    For writers that take a file name (``Dataset.to_parquet``, ``DataFrame.to_parquet``). On any error the
    temporary file is removed and ``path`` is left as it was. A target that exists and is not a regular
    file (``/dev/stdout``, a pipe) is yielded as it is, so the writer writes to it directly; a directory
    is refused.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "rows.bin"
    >>> with atomic_path(p) as tmp:
    ...     _ = tmp.write_bytes(b"PAR1")
    >>> p.read_bytes(), sorted(q.name for q in p.parent.iterdir())
    (b'PAR1', ['rows.bin'])
    """
    target = Path(os.path.realpath(path)) if os.path.islink(path) else Path(path)
    try:
        mode: int | None = target.stat().st_mode
    except OSError:  # missing, or an unreadable parent and the like: mkstemp below reports it
        mode = None
    if mode is not None and stat.S_ISDIR(mode):
        raise InputError(f"cannot write {str(path)!r}: expected a file name, found a directory")
    if mode is not None and not stat.S_ISREG(mode):
        yield target
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; a result file should be readable like any other
        yield tmp
        with open(tmp, "rb+") as fh:  # the writer closed it; make the bytes durable before the rename
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_dir(
    path: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    replaceable: Callable[[Path], list[str]] | None = None,
) -> Iterator[Path]:
    """Yield a temporary folder beside ``path`` that becomes ``path`` only if the block succeeds.

    A missing or empty target is simply replaced. A non-empty folder is refused unless ``overwrite`` is
    true; then ``replaceable(folder)`` (when given) lists the entries that make it unsafe to delete, and
    any such entry refuses the overwrite too. A target that is not a folder is always refused.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp()) / "data"
    >>> with atomic_dir(root) as tmp:
    ...     _ = (tmp / "a.txt").write_text("x")
    >>> sorted(p.name for p in root.iterdir())
    ['a.txt']
    """
    target = Path(path)
    if target.exists() or target.is_symlink():
        if not target.is_dir():
            raise InputError(f"cannot write folder {str(path)!r}: expected a folder or a new name, found a file")
        entries = sorted(p.name for p in target.iterdir())
        if entries and not overwrite:
            shown = ", ".join(entries[:5]) + (", ..." if len(entries) > 5 else "")
            raise InputError(
                f"cannot write folder {str(path)!r}: it is not empty (holds {shown}); pass overwrite=True to replace it"
            )
        if entries and replaceable is not None:
            foreign = replaceable(target)
            if foreign:
                raise InputError(
                    f"cannot overwrite folder {str(path)!r}: it holds files this writer did not make "
                    f"({', '.join(foreign[:5])}); remove them or choose another folder"
                )
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    old: Path | None = None
    try:
        os.chmod(tmp, 0o755)  # mkdtemp creates 0700
        yield tmp
        if target.is_dir() and any(target.iterdir()):
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
            os.replace(target, old / "data")
        try:
            os.replace(tmp, target)
        except BaseException:
            if old is not None:  # put the previous folder back
                os.replace(old / "data", target)
                shutil.rmtree(old, ignore_errors=True)
                old = None
            raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
