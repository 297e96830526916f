"""sha256 of a file, streamed: the one helper every package uses (release files, weights, checkpoints)."""

from __future__ import annotations

import hashlib
import os

__all__ = ["sha256_file"]

_CHUNK = 1 << 20


def sha256_file(path: str | os.PathLike, h=None) -> str:
    """The lowercase hex sha256 of the file at ``path``, read in 1 MiB chunks.

    ``h``: an existing hashlib object to feed instead of a fresh one (its hexdigest is returned).
    """
    h = h if h is not None else hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()
