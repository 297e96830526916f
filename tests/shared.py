"""Heavy fixtures built once per test run and shared read-only (a pytest plugin).

:func:`built_once` makes a folder by calling a builder once per test run: under pytest-xdist the workers share
it (the first to take its lock builds it, the others wait and then read it), so a model converted or trained for
several test files is converted or trained once. Each shared folder is fingerprinted when built (every file's
path, size and sha256) and checked again when the session ends: a test that wrote into a shared fixture fails
the session, naming the folder and the files that changed (the tests run as root on CI, so file modes would not
stop it). A test that needs to write copies the folder first.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from filelock import FileLock

_READY = ".trb-built"
#: The shared folders this process handed out: path -> fingerprint when built.
_HANDED: dict[Path, dict[str, list]] = {}


def _fingerprint(folder: Path) -> dict[str, list]:
    out = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.is_symlink() and path.name != _READY:
            h = hashlib.sha256()
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
            out[str(path.relative_to(folder))] = [path.stat().st_size, h.hexdigest()]
    return out


def shared_root(tmp_path_factory) -> Path:
    """The folder every process of this test run sees: the session's temp folder, or under pytest-xdist the
    folder above the workers' own."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def built_once(tmp_path_factory, name: str, build: Callable[[Path], object]) -> Path:
    """The folder ``name``, made by ``build(folder)`` once per test run and read-only afterwards."""
    target = shared_root(tmp_path_factory) / "shared" / name
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        ready = target / _READY
        if not ready.exists():
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir()
            build(target)
            ready.write_text(json.dumps(_fingerprint(target)))
    if target not in _HANDED:
        _HANDED[target] = json.loads((target / _READY).read_text())
    return target


def changed_files(folder: Path, before: dict[str, list]) -> list[str]:
    """The files of ``folder`` that were added, removed or changed since ``before``."""
    now = _fingerprint(folder)
    return sorted(p for p in set(before) | set(now) if before.get(p) != now.get(p))


@pytest.fixture(scope="session", autouse=True)
def _shared_folders_stay_as_built():
    yield
    broken = {str(folder): changed for folder, before in _HANDED.items()
              if folder.exists() and (changed := changed_files(folder, before))}
    assert not broken, f"a test wrote into a shared read-only fixture (copy it first): {broken}"
