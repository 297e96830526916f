from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from trb.numerics import pin_environment

# Nothing in the tests may reach the Hugging Face Hub or the user's caches.
_HF_HOME = tempfile.mkdtemp(prefix="trb-tests-hf-")
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["HF_HOME"] = _HF_HOME
os.environ["HF_DATASETS_CACHE"] = os.path.join(_HF_HOME, "datasets")
os.environ.setdefault("TRB_LOCK_WAIT", "60")
# Releases checked in full by the engine are remembered here, not in the user's ~/.cache/trb (trb/verified.py).
os.environ["TRB_CACHE"] = tempfile.mkdtemp(prefix="trb-tests-cache-")
_OWNER = os.getpid()
# torch on the CPU kernels `make demo` pins (trb/numerics.py: the demo's end-to-end test compares its figures with
# the docs'), read when torch is imported, so set before any test imports it; and one thread a worker: two workers
# on two cores with torch's default of a thread per core each made the demo 3-6 times slower than alone.
pin_environment()
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")


@atexit.register
def _remove_test_homes() -> None:  # not a forked child's exit: the folders are the test session's
    if os.getpid() == _OWNER:
        shutil.rmtree(_HF_HOME, ignore_errors=True)
        shutil.rmtree(os.environ["TRB_CACHE"], ignore_errors=True)


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

# The Label Studio server fixture and --skip-label-studio (tests marked label_studio); a headless Chromium; the
# tiers' markers and the check that a test starting a real part carries its marker; heavy fixtures built once per
# run and shared read-only; pytester, for the tests of those checks.
pytest_plugins = ["ls_server", "browser", "markers", "shared", "pytester"]


@pytest.fixture
def corpus_dir(tmp_path: Path) -> Path:
    """A fresh, empty corpus."""
    from corpus.store import init_corpus

    return init_corpus(tmp_path / "corpus")


@pytest.fixture
def cli(capsys):
    """Run ``trb-corpus ARGS`` in-process: returns (exit code, stdout, stderr)."""
    from corpus.cli import main

    def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture(scope="session")
def trb_wheel(tmp_path_factory) -> Path:
    """This checkout's wheel, built once per test session (tests/wheelenv.py; offline, the checkout untouched)."""
    from wheelenv import build_wheel

    return build_wheel(tmp_path_factory.mktemp("wheel"))
