"""Where a command writes: refused with one line, before any work, when no file or directory can be made there.

A command line's output option (``-o``, ``--out``, ``--workdir``, a new corpus directory) is checked once, at the
edge, so that a path through a file (``notes.txt/out``) or a directory given for a file is a usage error naming
the option, not an ``OSError`` deep in the work.
"""

from __future__ import annotations

import os
from pathlib import Path

from toolkit.errors import UsageError

__all__ = ["check_output_path"]


def check_output_path(path: str | os.PathLike, what: str, *, directory: bool) -> Path:
    """``path`` as a :class:`~pathlib.Path` when a file (``directory`` False) or a directory can be made there.

    Raises:
        UsageError: ``path`` is a directory where a file is written, a file (or FIFO, device...) where a directory
            is, or one of its parents is not a directory.
    """
    p = Path(path)
    if p.exists() or p.is_symlink():
        if directory and not p.is_dir():
            raise UsageError(f"{what} {p}: is a file, not a directory")
        if not directory and p.is_dir():
            raise UsageError(f"{what} {p}: is a directory, not a file")
        return p
    parent = p.absolute().parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise UsageError(f"{what} {p}: {parent} is a file, not a directory, so nothing can be made under it")
    return p
