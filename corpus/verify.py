"""Verifying a release directory against its manifest, from the files alone (``trb-corpus verify``).

The check itself is the release format's (:mod:`schemas.release_check`), the one ``trb run``
makes too: every file, the claims digest, the release SHA and every claim recomputed from the rows.
"""

from __future__ import annotations

import os
from pathlib import Path

from corpus.errors import VerifyFailed
from schemas.release_check import check_release

__all__ = ["verify_release"]


def verify_release(directory: str | os.PathLike, notes: list[str] | None = None) -> dict:
    """Check every file, the claims digest, the release SHA and every claim the rows determine; return the manifest
    if all agree (``notes``, if given, gets what was not checked, e.g. a format-1 manifest's unbound claims).

    Raises:
        VerifyFailed: naming every difference (a changed, missing or unlisted file; a count; a claim; the SHA).
    """
    d = Path(directory)
    check = check_release(d)
    if not check.ok:  # an unreadable manifest is named with its directory, as every command names it
        raise VerifyFailed(str(d), [f"{d}/{x}" if check.manifest is None else x for x in check.differences])
    if notes is not None:
        notes += check.notes
    return check.manifest
