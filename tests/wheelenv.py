"""Build this project's wheel and install wheels or source trees into throwaway virtual environments, offline.

A fresh venv (:func:`fresh_venv`) gets no third-party packages of its own: one ``.pth``
line in its site-packages names the site-packages of the interpreter running the tests,
so torch, duckdb and the rest import from there and nothing is downloaded. A directory
added by a ``.pth`` line is not itself scanned for ``.pth`` files, so the checkout's
editable install (``__editable__*.pth`` in that site-packages) stays inactive: the only
copy of the project the venv can import is the one installed into it. (The checkout's
``trb_toolkit-*.dist-info`` is still visible to :mod:`importlib.metadata`, but the venv's
own site-packages comes first on ``sys.path``, so ``version()`` and ``entry_points()``,
which take the first distribution of a name, see the installed one.)

Packages are installed with pip (the test interpreter's, imported through that ``.pth``)
with ``--no-deps --no-build-isolation --no-index --ignore-installed``: no network, and
nothing outside the venv is uninstalled or touched.

Typical use (a session-scoped ``trb_wheel`` fixture in ``conftest.py`` builds the wheel
once)::

    bin_dir = fresh_venv(tmp_path / "venv", [trb_wheel, tmp_path / "my_adapter"])
    run_in(bin_dir, ["trb-corpus", "examples"], cwd=tmp_path)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from collections.abc import Sequence
from pathlib import Path

__all__ = ["ROOT", "build_wheel", "fresh_venv", "site_packages", "venv_env", "run_in"]

#: The checkout these tests belong to.
ROOT = Path(__file__).resolve().parents[1]

#: Never copied into a build: caches, environments, build outputs, work directories.
_IGNORED = shutil.ignore_patterns(".git", ".venv*", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache",
                                  "demo-work", "*.duckdb", "*.duckdb.wal")


def _pip(python: str | os.PathLike, *args: str, cwd: Path | None = None) -> None:
    cmd = [str(python), "-m", "pip", "--disable-pip-version-check", "--no-input", "-q", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=_clean_env(), timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")


def _clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV")}
    env["PIP_NO_INDEX"] = "1"
    env.update(extra or {})
    return env


def _source_copy(source: Path, dest: Path) -> Path:
    """The files of ``source`` a build should see: git's tracked and not-ignored ones, else all but _IGNORED."""
    try:
        listed = subprocess.run(["git", "-C", str(source), "ls-files", "-z", "--cached", "--others",
                                 "--exclude-standard"], capture_output=True, check=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        shutil.copytree(source, dest, ignore=_IGNORED)
        return dest
    for rel in filter(None, listed.decode("utf-8").split("\0")):
        src = source / rel
        if src.is_file():  # a tracked file deleted in the work tree is not built
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def build_wheel(out_dir: str | os.PathLike, source: str | os.PathLike = ROOT) -> Path:
    """Build the wheel of the project at ``source`` (default: this checkout) into ``out_dir``; return its path.

    The build runs on a copy of the source (git's tracked and untracked-but-not-ignored
    files), so a stale ``build/`` or ``*.egg-info`` cannot leak into the wheel and the
    checkout is left untouched. Offline: no build isolation, so the build backend
    (setuptools, in the ``dev`` extra) must be installed in the running interpreter.

    Raises:
        RuntimeError: pip failed (its output is in the message), or built no single wheel.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    src = _source_copy(Path(source), out / "src")
    before = set(out.glob("*.whl"))
    _pip(sys.executable, "wheel", "--no-deps", "--no-build-isolation", "-w", str(out), str(src))
    shutil.rmtree(src)
    built = sorted(set(out.glob("*.whl")) - before)
    if len(built) != 1:
        raise RuntimeError(f"expected one new wheel in {out}, found {[p.name for p in built]}")
    return built[0]


def site_packages(bin_dir: str | os.PathLike) -> Path:
    """The site-packages directory of the venv whose scripts are in ``bin_dir``."""
    root = Path(bin_dir).parent
    paths = sysconfig.get_paths(scheme="venv", vars={"base": str(root), "platbase": str(root)})
    return Path(paths["purelib"])


def fresh_venv(path: str | os.PathLike, installs: Sequence[str | os.PathLike] = ()) -> Path:
    """Make a virtual environment at ``path`` and install ``installs`` into it; return its bin directory.

    The venv sees the running interpreter's site-packages through a ``.pth`` file, without
    its ``.pth`` files (so not the checkout's editable install; see the module docstring).
    Each of ``installs`` is a wheel file or a source directory (a project with a
    ``pyproject.toml``), installed in order with ``pip install --no-deps
    --no-build-isolation --no-index --ignore-installed`` (a source directory is built in
    place, so pass a throwaway copy); the venv's console scripts are in the returned
    directory.

    Raises:
        RuntimeError: pip failed to install one of ``installs`` (its output is in the message).
    """
    root = Path(path)
    venv.EnvBuilder(with_pip=False, clear=True).create(root)
    bin_dir = root / ("Scripts" if os.name == "nt" else "bin")
    shared = dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))
    site = site_packages(bin_dir)
    site.mkdir(parents=True, exist_ok=True)
    (site / "_trb_test_shared_site_packages.pth").write_text("".join(f"{p}\n" for p in shared), encoding="utf-8")
    python = bin_dir / "python"
    for item in installs:
        _pip(python, "install", "--no-deps", "--no-build-isolation", "--ignore-installed", str(item),
             cwd=root)
    return bin_dir


def venv_env(bin_dir: str | os.PathLike, extra: dict[str, str] | None = None) -> dict[str, str]:
    """``os.environ`` for running the venv's programs: its bin directory first on ``PATH``, no ``PYTHONPATH``."""
    env = _clean_env(extra)
    env["PATH"] = str(bin_dir) + os.pathsep + env.get("PATH", "")
    env["VIRTUAL_ENV"] = str(Path(bin_dir).parent)
    return env


def run_in(bin_dir: str | os.PathLike, args: Sequence[str | os.PathLike], cwd: str | os.PathLike,
           timeout: float = 300, check: bool = True, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run ``args`` (``args[0]`` a console script or ``python`` of the venv) in ``cwd``; return the finished process.

    ``env`` adds to (or overrides) :func:`venv_env`'s environment.

    Raises:
        AssertionError: ``check`` is true and the program exited non-zero (its output is in the message).
    """
    exe = Path(bin_dir) / str(args[0])
    cmd = [str(exe), *map(str, args[1:])]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=venv_env(bin_dir, env), timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc
