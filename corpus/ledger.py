"""Which versions a corpus has released, wherever ``--out`` put them: ``<corpus>/releases/ledger.jsonl``.

A version is cut once per corpus: its content SHA is fixed by the first release of it, whatever
directory a later ``trb-corpus release --out`` names. The ledger is how the release command
knows, and the release lock (``<corpus>/releases/.release.lock``, :mod:`toolkit.locking`) makes
one release at a time per corpus, so two releases of one version cannot both write it.

Each line is one JSON object: ``version``, ``release_sha``, ``directory`` (absolute), ``state`` and
``pid``/``host``/``at``. A release appends ``"cutting"`` just before it renames its staged
directory into place and ``"released"`` right after, each line flushed to disk. A version is
released when a ``"released"`` line names it, or a ``"cutting"`` line whose directory holds a
manifest of that SHA (the release was killed between the rename and the second line). A
``"cutting"`` line whose directory does not hold it is a release that never happened. A torn
last line (a kill mid-append) is skipped. Releases under ``<corpus>/releases/`` cut before the
ledger existed count as released too.

The staging directories of releases that were killed (``.X.Y.Z.tmp-PID`` beside their
destination) and their DuckDB spill folders (``<corpus>/.release-PID.spill``) are removed by the
next release, once their process is gone (:func:`remove_stale`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from corpus.errors import CorpusBusy
from schemas.release_check import load_manifest
from toolkit.locking import FileLock

__all__ = ["LEDGER", "Released", "release_lock", "released_versions", "record", "remove_stale", "same_directory",
           "staging_name"]

#: The ledger's path inside a corpus directory.
LEDGER = Path("releases") / "ledger.jsonl"
_LOCK = Path("releases") / ".release.lock"
_STAGING = re.compile(r"^\..+\.tmp-(\d+)$")
_SPILL = re.compile(r"^\.release-(\d+)\.spill$")


@dataclass(frozen=True)
class Released:
    """One released version: its content SHA and the directory it was written to."""

    version: str
    release_sha: str
    directory: Path


def release_lock(corpus_dir: Path, *, wait_seconds: float | None, version: str) -> FileLock:
    """The corpus's release lock, held for a whole release (a second release waits, then is told who holds it)."""
    (corpus_dir / "releases").mkdir(parents=True, exist_ok=True)
    return FileLock(corpus_dir / _LOCK, exclusive=True, what=f"the releases of corpus {corpus_dir}", busy=CorpusBusy,
                    wait_seconds=wait_seconds, purpose=f"trb-corpus release {version}")


def staging_name(dest: Path) -> Path:
    """Where a release of ``dest`` is staged before its rename: ``.NAME.tmp-PID`` beside it."""
    return dest.parent / f".{dest.name}.tmp-{os.getpid()}"


def _holds(directory: Path, sha: str) -> bool:
    manifest, _ = load_manifest(directory)
    return manifest is not None and manifest["release_sha"] == sha


def released_versions(corpus_dir: Path) -> dict[str, Released]:
    """Every version the corpus has released (see the module docstring), by version."""
    out: dict[str, Released] = {}
    path = corpus_dir / LEDGER
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines() if path.is_file() else []
    for line in lines:
        try:
            # not strict_json: this module's append-only log; each release it names is checked by its manifest
            e = json.loads(line)
            entry = Released(e["version"], e["release_sha"], Path(e["directory"]))
            state = e["state"]
        except (ValueError, KeyError, TypeError):
            continue  # a line torn by a kill mid-append
        if state == "released" or (state == "cutting" and _holds(entry.directory, entry.release_sha)):
            out.setdefault(entry.version, entry)
    root = corpus_dir / "releases"
    for d in sorted(root.iterdir()) if root.is_dir() else []:
        if d.name.startswith(".") or d.name in out or not (d / "manifest.json").is_file():
            continue
        manifest, _ = load_manifest(d)
        if manifest is not None and manifest["version"] == d.name:
            out[d.name] = Released(d.name, manifest["release_sha"], d)
    return out


def record(corpus_dir: Path, state: str, version: str, release_sha: str, directory: Path) -> None:
    """Append one ledger line and flush it to disk (raises OSError as the write does: e.g. a full disk)."""
    line = json.dumps({"version": version, "release_sha": release_sha, "directory": os.path.abspath(directory),
                       "state": state, "pid": os.getpid(), "host": socket.gethostname(),
                       "at": datetime.now(timezone.utc).isoformat(timespec="seconds")}, ensure_ascii=False)
    path = corpus_dir / LEDGER
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, ("\n" if _needs_newline(path) else "").encode() + line.encode("utf-8") + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)


def _needs_newline(path: Path) -> bool:
    """Whether the ledger ends in a torn line (no newline): the next line must not be glued to it."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            if f.tell() == 0:
                return False
            f.seek(-1, os.SEEK_END)
            return f.read(1) != b"\n"
    except OSError:
        return False


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale(corpus_dir: Path, *directories: Path) -> list[Path]:
    """Remove the staging directories (``.NAME.tmp-PID``) in ``directories`` and the release spill folders of
    ``corpus_dir`` whose process is gone; return what was removed."""
    removed = []
    candidates = [(p, _STAGING) for d in directories if d.is_dir() for p in d.iterdir()]
    candidates += [(p, _SPILL) for p in corpus_dir.iterdir()] if corpus_dir.is_dir() else []
    for p, pattern in candidates:
        m = pattern.match(p.name)
        if m and p.is_dir() and not p.is_symlink() and not _pid_alive(int(m.group(1))):
            shutil.rmtree(p, ignore_errors=True)
            removed.append(p)
    return removed


def same_directory(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one directory (as absolute, normalised paths)."""
    return os.path.normpath(os.path.abspath(a)) == os.path.normpath(os.path.abspath(b))
