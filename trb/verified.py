"""Releases this machine has checked in full: the full check (:mod:`schemas.release_check`) once per release
directory, then a cheap fingerprint.

Before scoring, :class:`trb.releases.Release` calls :func:`ensure_checked`: every file's sha256, the
claims digest, the release SHA recomputed from every row and every claim the rows determine. That
reads the whole release, so a directory that passed is remembered in
``$TRB_CACHE/verified/<release SHA>.json`` (``TRB_CACHE`` defaults to ``$XDG_CACHE_HOME/trb``, else
``~/.cache/trb``) under its **fingerprint**: sha256 over this check's version, the directory's
resolved path, the manifest's bytes, and for every entry under the directory its path, size,
mtime, ctime, inode and device; for a symbolic link (a Hugging Face cache snapshot is made of
them) those of the link and of the content it resolves to, so a changed blob is seen too. The next open of that directory stats its files, hashes the
manifest and compares: equal, the full check is skipped; anything different, it runs again.

A tamper after the check is caught because it changes a file's size, mtime or ctime (or adds,
removes or renames a file). Restoring the mtime (``touch -r``, ``os.utime``) still changes the
ctime, which no user call can set back; only setting the system clock back (root) or editing the
disk under the filesystem could hide a tamper from the fingerprint, and both are beyond what this
cache defends against. A copied or moved release is a new directory: checked in full once more.
The cache is as trustworthy as the directory it is in: whoever can write ``$TRB_CACHE`` can mark a
release as checked (it is made readable by its owner only). An unwritable cache is not an error:
every open then checks in full.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from schemas.release_check import check_release, load_manifest
from schemas.release_format import MANIFEST
from schemas.versions import TOOLKIT_VERSION
from trb.errors import ReleaseError

__all__ = ["CHECK_VERSION", "CheckRecord", "cache_dir", "ensure_checked", "fingerprint"]

#: Bumped when the check changes: every directory is then checked in full again (so is a new toolkit version).
CHECK_VERSION = "3"


@dataclass(frozen=True)
class CheckRecord:
    """How a release was checked before it was read: ``"full"`` now, or ``"cached"`` (a full check of the same
    files earlier); the manifest it checked, its sha256, and whether its claims are bound (format 2)."""

    how: str
    manifest: dict
    manifest_sha256: str
    claims_bound: bool
    notes: tuple[str, ...] = field(default=())

    def summary(self) -> dict:
        """What a run records of the check (``timings.release_check``)."""
        return {"checked": self.how, "manifest_sha256": self.manifest_sha256, "claims_bound": self.claims_bound}


def cache_dir() -> Path:
    """``$TRB_CACHE``, else ``$XDG_CACHE_HOME/trb``, else ``~/.cache/trb``."""
    if os.environ.get("TRB_CACHE"):
        return Path(os.environ["TRB_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "trb"


def fingerprint(directory: str | os.PathLike, manifest_bytes: bytes) -> str:
    """The fingerprint of a release directory's files as they are now (see the module docstring)."""
    d = Path(directory).resolve()
    h = hashlib.sha256(f"trb-verified/{CHECK_VERSION}/{TOOLKIT_VERSION}\n{d}\n".encode())
    h.update(hashlib.sha256(manifest_bytes).digest())
    for p in sorted(d.rglob("*")):
        try:
            stats = [p.lstat()]
        except OSError:
            continue
        if stat.S_ISLNK(stats[0].st_mode):
            try:
                stats.append(p.stat())  # what the link resolves to: a blob changed behind it changes this
            except OSError:
                pass  # a link to nothing: its own stat says so (and the check refuses it)
        line = "\t".join(f"{st.st_mode}\t{st.st_size}\t{st.st_mtime_ns}\t{st.st_ctime_ns}\t{st.st_ino}\t{st.st_dev}"
                         for st in stats)
        h.update(f"{p.relative_to(d).as_posix()}\t{line}\n".encode())
    return h.hexdigest()


def _entry_path(sha: str) -> Path:
    return cache_dir() / "verified" / f"{sha}.json"


# The cache entries below are read with plain json: this module wrote them (owner-only), and what is read is only
# compared with a fingerprint; a malformed entry means "check in full again", never a crash.
def _cached(sha: str, key: str, fp: str) -> bool:
    try:
        entries = json.loads(_entry_path(sha).read_text(encoding="utf-8")).get("directories") or {}
    except (OSError, ValueError, AttributeError):
        return False
    return isinstance(entries, dict) and entries.get(key) == fp


def _remember(sha: str, key: str, fp: str) -> None:
    path = _entry_path(sha)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            entries = json.loads(path.read_text(encoding="utf-8")).get("directories") or {}
        except (OSError, ValueError, AttributeError):
            entries = {}
        entries = {**(entries if isinstance(entries, dict) else {}), key: fp}
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"release_sha": sha, "check_version": CHECK_VERSION, "directories": entries}, f, indent=1)
        os.replace(tmp, path)
    except OSError:  # a cache that cannot be written only costs the next open a full check
        pass


def ensure_checked(directory: str | os.PathLike) -> CheckRecord:
    """Check ``directory`` against its manifest in full, unless this machine did for exactly these files.

    Raises:
        ReleaseError: no manifest, a manifest that is not one, or any difference between the release and its
            manifest (one line: the first difference, and how many more).
    """
    d = Path(directory)
    mpath = d / MANIFEST
    if not mpath.is_file():
        raise ReleaseError(f"{d} is not a TRB release (no {MANIFEST}); cut one with `trb-corpus release`")
    try:
        manifest_bytes = mpath.read_bytes()
    except OSError as e:
        raise ReleaseError(f"{mpath}: unreadable ({e.strerror or e})") from None
    manifest, why = load_manifest(d)
    if manifest is None:
        raise ReleaseError(f"{d}/{why}; refusing to score it")
    sha = manifest["release_sha"]
    key = str(d.resolve())
    before = fingerprint(d, manifest_bytes)
    bound = manifest.get("format_version", 1) >= 2
    if _cached(sha, key, before):
        return CheckRecord("cached", manifest, hashlib.sha256(manifest_bytes).hexdigest(), bound)
    check = check_release(d)
    if not check.ok:
        diffs = check.differences
        more = f" (and {len(diffs) - 1} more)" if len(diffs) > 1 else ""
        raise ReleaseError(f"{d}: the release's files or rows differ from its manifest: {diffs[0]}{more}; "
                           "refusing to score a tampered or incomplete release (`trb-corpus verify` lists every "
                           "difference)")
    if check.manifest != manifest:  # the manifest changed while it was checked: what was checked is not this
        raise ReleaseError(f"{mpath}: changed while the release was checked; open it again")
    if fingerprint(d, manifest_bytes) == before:  # nothing changed while the rows were read
        _remember(sha, key, before)
    return CheckRecord("full", manifest, hashlib.sha256(manifest_bytes).hexdigest(), bound, tuple(check.notes))
