"""A release directory's entries against its manifest's ``files`` list: the first thing every release check does.

What is accepted, and nothing else:

* **Listed paths**: each a relative path inside the directory that names a regular file whose size and
  sha256 are the manifest's. A symbolic link is judged by what it resolves to, like the Hugging Face
  cache's snapshots (``snapshots/<commit>/data/... -> ../../blobs/<hash>``): a link to a regular file
  with the listed content is that file; a link to other content, to nothing, or to anything that is
  not a regular file is refused. A FIFO, socket or device is never opened (reading a FIFO would block).
* **Directories** that hold a listed path (``data/``, ``data/steps/``), and what the Hub adds to a
  downloaded copy (:data:`~schemas.release_format.HUB_ARTEFACTS`); a directory reached through a
  symbolic link is walked once (a link loop ends there).
* ``manifest.json`` and ``hub.json`` (checked on their own).

Every other entry, of any kind (a file, a dot-file, a directory, a FIFO, a socket, a link) is a
difference, even one whose name looks like a shard (``data/steps/x.parquet/``).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

from toolkit.hashing import sha256_file

__all__ = ["HUB_ARTEFACTS", "file_differences"]

#: Unlisted paths the Hugging Face Hub itself puts in a downloaded copy of a published release (the repo's
#: ``.gitattributes``; huggingface_hub's download metadata under ``.cache/huggingface/``): not differences.
#: Nothing reads them; every other unlisted entry, dot-files included, is a difference.
HUB_ARTEFACTS = (".gitattributes", ".cache/huggingface/")
_OWN = ("manifest.json", "hub.json")


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a regular file"


def _hub_artefact(path: str, is_dir: bool) -> bool:
    """``path`` is what the Hub adds to a downloaded copy (a directory: one on the way to it, or under it)."""
    file, folder = HUB_ARTEFACTS
    if path == file or path.startswith(folder):
        return True
    return is_dir and (folder.startswith(path + "/"))


def _listed_difference(d: Path, path: str, entry: Mapping) -> str | None:
    """What is wrong with the listed ``path`` (None: its content is the manifest's)."""
    if path.startswith("/") or "\\" in path or any(part in ("", ".", "..") for part in path.split("/")):
        return f"{path}: not a path inside the release directory"
    p = d / path
    link = p.is_symlink()
    try:
        st = p.stat()  # follows a link: the content it resolves to is what counts
    except FileNotFoundError:
        return f"{path}: a symbolic link to nothing ({os.readlink(p)})" if link else f"{path}: missing"
    except OSError as e:
        return f"{path}: unreadable ({e.strerror or e})"
    if not stat.S_ISREG(st.st_mode):
        return f"{path}: {_kind(st.st_mode)}{' (through a symbolic link)' if link else ''}, not a file"
    through = f" (the content its symbolic link resolves to, {os.path.realpath(p)})" if link else ""
    if st.st_size != entry.get("bytes"):
        return f"{path}: {st.st_size} bytes{through}, the manifest says {entry.get('bytes')} bytes"
    try:
        sha = sha256_file(p)
    except OSError as e:
        return f"{path}: unreadable ({e.strerror or e})"
    if sha != entry.get("sha256"):
        return f"{path}: sha256 {sha[:16]}…{through} differs from the manifest's {str(entry.get('sha256'))[:16]}…"
    return None


def _unlisted(d: Path, listed: set[str]) -> list[str]:
    """Every entry under ``d`` that the manifest neither lists nor needs (module docstring), by path."""
    holders = {"/".join(parts[:i]) for parts in (p.split("/") for p in listed) for i in range(1, len(parts))}
    out: list[str] = []
    seen: set[tuple[int, int]] = set()

    def walk(folder: Path, prefix: str) -> None:
        try:
            st = folder.stat()
            if (st.st_dev, st.st_ino) in seen:
                return
            seen.add((st.st_dev, st.st_ino))
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as e:
            out.append(f"{prefix or '.'}: unreadable directory ({e.strerror or e})")
            return
        for e in entries:
            rel = f"{prefix}{e.name}"
            try:
                is_dir = e.is_dir()  # follows a link
            except OSError:
                is_dir = False
            if is_dir and rel in listed:
                continue  # a listed path that is a directory: the listed check names it
            if is_dir:
                if rel in holders or _hub_artefact(rel, True):
                    walk(Path(e.path), rel + "/")
                else:
                    link = " (a symbolic link to a directory)" if e.is_symlink() else ""
                    out.append(f"{rel}: a directory{link} not listed in the manifest")
                continue
            if rel in listed or (not prefix and rel in _OWN) or _hub_artefact(rel, False):
                continue
            try:
                mode = e.stat(follow_symlinks=False).st_mode
            except OSError:
                mode = 0
            what = ("" if stat.S_ISREG(mode) else " (a symbolic link)" if stat.S_ISLNK(mode)
                    else f" ({_kind(mode)})")
            out.append(f"{rel}: not listed in the manifest{what}")

    walk(d, "")
    return out


def file_differences(directory: str | os.PathLike, manifest: Mapping, *, unlisted: bool = True) -> list[str]:
    """Every way the entries of a release directory differ from its manifest's ``files`` list (module docstring):
    a listed file missing, not a regular file, or of another size or sha256 (a symbolic link by what it resolves
    to); with ``unlisted``, every entry of any kind the manifest does not account for. Empty when the directory is
    what the manifest says."""
    d = Path(directory)
    diffs: list[str] = []
    entries = manifest.get("files") or []
    listed = {f["path"]: f for f in entries if isinstance(f, Mapping) and isinstance(f.get("path"), str)}
    for path, entry in sorted(listed.items()):
        why = _listed_difference(d, path, entry)
        if why:
            diffs.append(why)
    if unlisted:
        diffs += _unlisted(d, set(listed))
    return diffs
