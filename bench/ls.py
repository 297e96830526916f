"""A Label Studio server of its own for a benchmark, started as the tests start theirs (`.venv-ls`, a prepared
data dir copied, a free loopback port) and stopped on exit."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


@contextmanager
def label_studio():
    """Yields (url, the admin's client, a scratch directory); the server and the directory go on exit."""
    import ls_server
    from annotate.client import connect

    binary = ls_server._binary()
    ls_server._prepare_template(binary)
    work = Path(tempfile.mkdtemp(prefix="trb-bench-ls-"))
    shutil.copytree(ls_server.TEMPLATE, work / "data")
    (work / "home").mkdir()
    port = ls_server.free_port()
    log = work / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(binary), "start", "--no-browser", "--internal-host", "127.0.0.1", "--port",
                                 str(port)], env=ls_server._env(work / "home", work / "data"), stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        ls_server._wait_up(url, proc, log)
        yield url, connect(url, ls_server.TOKEN), work
    finally:
        ls_server.stop(proc)
        shutil.rmtree(work, ignore_errors=True)
