"""A Label Studio server of its own for a benchmark, started as the tests start theirs (`.venv-ls`, a prepared
template copied, a free loopback port; on SQLite or on a PostgreSQL server it starts itself) and stopped on exit."""

from __future__ import annotations

import shutil
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


@contextmanager
def label_studio(backend: str = "sqlite", workers: int | None = None):
    """Yields (url, the admin's client, a scratch directory); the server and the directory go on exit. ``workers``:
    serve Label Studio by gunicorn with that many worker processes (``ls_server._serve_command``)."""
    import ls_server
    from annotate.client import connect

    work = Path(tempfile.mkdtemp(prefix="trb-bench-ls-"))
    try:
        with ls_server.running(backend, work / "server", workers) as server:
            yield server.url, connect(server.url, ls_server.TOKEN), work
    finally:
        shutil.rmtree(work, ignore_errors=True)
