"""A real Label Studio server for the tests marked ``label_studio`` (a pytest plugin).

The server is ``<repo>/.venv-ls/bin/label-studio`` (``make install-label-studio``; override
with ``TRB_LABEL_STUDIO_BIN``). A data dir is prepared once (``label-studio init``, about 30 s)
under ``.venv-ls/trb-test-data`` and copied for each test session, which starts in seconds on a
free loopback port with its own HOME; the server is stopped (SIGTERM to its process group) when
the session ends. The admin user and its legacy token come from ``TRB_LS_TEST_USER`` /
``TRB_LS_TEST_PASSWORD`` / ``TRB_LS_TEST_TOKEN`` (defaults below: a throwaway local server).

``--skip-label-studio`` (or ``TRB_SKIP_LABEL_STUDIO=1``) skips these tests locally; with ``CI``
set it is refused, so CI never skips them.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
USER = os.environ.get("TRB_LS_TEST_USER", "admin@trb.test")
PASSWORD = os.environ.get("TRB_LS_TEST_PASSWORD", "trb-test-admin-pw")
TOKEN = os.environ.get("TRB_LS_TEST_TOKEN", "trbtesttoken0123456789")
TEMPLATE = ROOT / ".venv-ls" / "trb-test-data"


def pytest_addoption(parser):
    parser.addoption("--skip-label-studio", action="store_true", default=False,
                     help="Skip the tests against a real Label Studio server (refused when CI is set).")


def _skipping(config) -> bool:
    wanted = config.getoption("--skip-label-studio") or os.environ.get("TRB_SKIP_LABEL_STUDIO") == "1"
    if wanted and os.environ.get("CI"):
        raise pytest.UsageError("--skip-label-studio / TRB_SKIP_LABEL_STUDIO is refused when CI is set: "
                                "CI runs the Label Studio tests")
    return wanted


def pytest_collection_modifyitems(config, items):
    if _skipping(config):
        skip = pytest.mark.skip(reason="--skip-label-studio")
        for item in items:
            if "label_studio" in item.keywords:
                item.add_marker(skip)


def _binary() -> Path:
    path = Path(os.environ.get("TRB_LABEL_STUDIO_BIN") or ROOT / ".venv-ls" / "bin" / "label-studio")
    if not path.exists():
        pytest.fail(f"no Label Studio server at {path}: run `make install-label-studio` "
                    "(or skip these tests locally with --skip-label-studio)")
    return path


def _env(home: Path, data: Path) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("LABEL_STUDIO") and k not in ("USERNAME", "PASSWORD", "PORT", "HOST")}
    env.update(HOME=str(home), LABEL_STUDIO_BASE_DATA_DIR=str(data), LABEL_STUDIO_USERNAME=USER,
               LABEL_STUDIO_PASSWORD=PASSWORD, LABEL_STUDIO_USER_TOKEN=TOKEN,
               LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN="true", LATEST_VERSION_CHECK="false", SENTRY_DSN="",
               FRONTEND_SENTRY_DSN="", COLLECT_ANALYTICS="false", PYTHONUNBUFFERED="1")
    return env


def _prepare_template(binary: Path) -> None:
    """A data dir with the admin user, its token and legacy tokens on (made once, then copied)."""
    stamp = TEMPLATE / ".trb-ready"
    if stamp.exists() and stamp.read_text() == TOKEN:
        return
    shutil.rmtree(TEMPLATE, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix="trb-ls-init-"))
    try:
        (tmp / "home").mkdir()
        r = subprocess.run([str(binary), "init", "--no-browser"], env=_env(tmp / "home", tmp / "data"),
                           capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        if r.returncode != 0 or not (tmp / "data").is_dir():
            pytest.fail(f"label-studio init failed ({r.returncode}): {(r.stdout + r.stderr)[-2000:]}")
        TEMPLATE.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(tmp / "data", TEMPLATE)
        stamp.write_text(TOKEN)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    url: str
    token: str
    proc: subprocess.Popen
    log: Path


def _wait_up(url: str, proc: subprocess.Popen, log: Path, timeout: float = 180) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"Label Studio exited ({proc.returncode}): {log.read_text(errors='replace')[-2000:]}")
        try:
            r = httpx.get(f"{url}/health", timeout=2)
            if r.status_code == 200 and r.json().get("status") == "UP":
                who = httpx.get(f"{url}/api/current-user/whoami", headers={"Authorization": f"Token {TOKEN}"},
                                timeout=10)
                if who.status_code == 200 and who.json().get("email") == USER:  # ours, not a neighbour's
                    return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    pytest.fail(f"Label Studio did not come up at {url} in {timeout:.0f} s: {log.read_text(errors='replace')[-2000:]}")


@pytest.fixture(scope="session")
def ls_server(tmp_path_factory) -> Server:
    """A running Label Studio server for the whole test session (stopped at its end)."""
    binary = _binary()
    _prepare_template(binary)
    base = tmp_path_factory.mktemp("label-studio")
    shutil.copytree(TEMPLATE, base / "data")
    (base / "home").mkdir()
    port = free_port()
    log = base / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(binary), "start", "--no-browser", "--internal-host", "127.0.0.1",
                                 "--port", str(port)], env=_env(base / "home", base / "data"), stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    server = Server(f"http://127.0.0.1:{port}", TOKEN, proc, log)
    try:
        _wait_up(server.url, proc, log)
        yield server
    finally:
        stop(proc)


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        except ProcessLookupError:
            pass


def signup(url: str, admin_token: str, email: str, password: str = "annotator-pw-123") -> str:
    """Make a real user of the organisation (invite link + sign-up form) and return that user's own token."""
    import httpx

    invite = httpx.get(f"{url}/api/invite", headers={"Authorization": f"Token {admin_token}"}, timeout=30)
    invite.raise_for_status()
    link = invite.json()["invite_url"]
    with httpx.Client(base_url=url, follow_redirects=True, timeout=30) as c:
        c.get(link).raise_for_status()
        r = c.post(link, data={"email": email, "password": password, "csrfmiddlewaretoken": c.cookies["csrftoken"],
                               "allow_newsletters": "false"}, headers={"Referer": url + link})
        r.raise_for_status()
        t = c.get("/api/current-user/token")
        t.raise_for_status()
        return t.json()["token"]
