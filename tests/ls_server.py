"""A real Label Studio server for the tests marked ``label_studio`` (a pytest plugin).

The server is ``<repo>/.venv-ls/bin/label-studio`` (``make install-label-studio``; override
with ``TRB_LABEL_STUDIO_BIN``). It runs on one of two database back ends, and the session
fixture ``ls_server`` is parametrized over both, so every test that uses it runs on each:

- ``sqlite``: a data dir is prepared once (``label-studio init``, about 30 s) under
  ``.venv-ls/trb-test-data`` and copied for each test session;
- ``postgresql``: a PostgreSQL server the fixture starts itself (Debian's PostgreSQL 15, ``make
  install-postgresql``; its binaries from ``TRB_PG_BIN``, else ``pg_config --bindir``, else
  ``/usr/lib/postgresql/*/bin``), as the ``postgres`` user when the tests run as root (PostgreSQL
  refuses root), on loopback and a free port, its socket in the session's own temp dir. A
  cluster with Label Studio's database already made (``label-studio init`` against it) is
  prepared once under ``.venv-ls/trb-test-pg`` and copied (``cp -a``, a stopped cluster) for
  each test session, so a session starts in seconds there too.

``TRB_LS_TEST_BACKENDS`` (default ``sqlite,postgresql``) picks the back ends locally. Each
session's server has its own HOME, on a free loopback port; it is stopped (SIGTERM to its
process group), and its PostgreSQL with it, when the session ends (or when the tests move on to
the other back end). The admin user and its legacy token come from ``TRB_LS_TEST_USER`` /
``TRB_LS_TEST_PASSWORD`` / ``TRB_LS_TEST_TOKEN`` (defaults below: a throwaway local server).

``--skip-label-studio`` (or ``TRB_SKIP_LABEL_STUDIO=1``) skips these tests locally; with ``CI``
set it is refused, so CI never skips them.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from filelock import FileLock

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


def _env(home: Path, data: Path, db: dict | None = None) -> dict:
    """The server's environment: ``db`` holds the PostgreSQL settings (``DJANGO_DB``, ``POSTGRE_*``), or None
    for SQLite (in the data dir)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LABEL_STUDIO", "POSTGRE_")) and k not in ("USERNAME", "PASSWORD", "PORT", "HOST",
                                                                          "DJANGO_DB")}
    env.update(HOME=str(home), LABEL_STUDIO_BASE_DATA_DIR=str(data), LABEL_STUDIO_USERNAME=USER,
               LABEL_STUDIO_PASSWORD=PASSWORD, LABEL_STUDIO_USER_TOKEN=TOKEN,
               LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN="true", LATEST_VERSION_CHECK="false", SENTRY_DSN="",
               FRONTEND_SENTRY_DSN="", COLLECT_ANALYTICS="false", PYTHONUNBUFFERED="1")
    env.update(db or {})
    return env


def _init_data_dir(binary: Path, tmp: Path, db: dict | None) -> None:
    """``label-studio init`` into ``tmp/data`` (and the database in ``db``): the admin user, its token, legacy
    tokens on."""
    (tmp / "home").mkdir(exist_ok=True)
    r = subprocess.run([str(binary), "init", "--no-browser"], env=_env(tmp / "home", tmp / "data", db),
                       capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    if r.returncode != 0 or not (tmp / "data").is_dir():
        pytest.fail(f"label-studio init failed ({r.returncode}): {(r.stdout + r.stderr)[-2000:]}")


def _prepare_template(binary: Path) -> None:
    """A data dir with the admin user, its token and legacy tokens on (made once, then copied)."""
    stamp = TEMPLATE / ".trb-ready"
    if stamp.exists() and stamp.read_text() == TOKEN:
        return
    shutil.rmtree(TEMPLATE, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix="trb-ls-init-"))
    try:
        _init_data_dir(binary, tmp, None)
        TEMPLATE.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(tmp / "data", TEMPLATE)
        stamp.write_text(TOKEN)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ------------------------------------------------------------------ PostgreSQL
PG_TEMPLATE = ROOT / ".venv-ls" / "trb-test-pg"  # cluster/ (stopped, Label Studio's database made) + data/
PG_USER = "trb"
PG_DB = "labelstudio"


def pg_bin() -> Path:
    """The directory of PostgreSQL's server binaries (initdb, pg_ctl)."""
    if os.environ.get("TRB_PG_BIN"):
        return Path(os.environ["TRB_PG_BIN"])
    if shutil.which("pg_config"):
        r = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True)
        if r.returncode == 0 and (Path(r.stdout.strip()) / "initdb").exists():
            return Path(r.stdout.strip())
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name)
                   if p.parent.name.isdigit() else 0)
    if found and (found[-1] / "initdb").exists():
        return found[-1]
    pytest.fail("no PostgreSQL server binaries (initdb, pg_ctl): run `make install-postgresql` (or set TRB_PG_BIN; "
                "or TRB_LS_TEST_BACKENDS=sqlite locally)")


def _as_postgres(cmd: list[str]) -> list[str]:
    """``cmd`` as the ``postgres`` user when we are root (the server refuses to run as root)."""
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


def _own_dir(prefix: str) -> Path:
    """A fresh temp dir the PostgreSQL server's user owns (under /tmp: pytest's own temp dirs are root's, 0700)."""
    d = Path(tempfile.mkdtemp(prefix=prefix))
    if os.geteuid() == 0:
        shutil.chown(d, "postgres", "postgres")
    return d


@dataclass
class Postgres:
    """A running throwaway PostgreSQL server: its cluster dir, port and the settings Label Studio reads."""

    dir: Path  # holds cluster/, the socket and the log; owned by the server's user
    port: int

    @property
    def settings(self) -> dict:
        return {"DJANGO_DB": "default", "POSTGRE_NAME": PG_DB, "POSTGRE_USER": PG_USER, "POSTGRE_PASSWORD": "",
                "POSTGRE_HOST": "127.0.0.1", "POSTGRE_PORT": str(self.port)}

    def stop(self) -> None:
        subprocess.run(_as_postgres([str(pg_bin() / "pg_ctl"), "-D", str(self.dir / "cluster"), "-m", "fast", "-w",
                                     "stop"]), capture_output=True, timeout=60)


def start_postgres(d: Path) -> Postgres:
    """Start the cluster in ``d/cluster`` on 127.0.0.1 and a free port (socket in ``d``); waits until it serves."""
    port = free_port()
    r = subprocess.run(_as_postgres([str(pg_bin() / "pg_ctl"), "-D", str(d / "cluster"), "-l", str(d / "log"), "-w",
                                     "-t", "60", "-o", f"-p {port} -k {d} -c listen_addresses=127.0.0.1", "start"]),
                       capture_output=True, text=True, timeout=90)
    if r.returncode != 0:
        log = (d / "log").read_text(errors="replace")[-2000:] if (d / "log").exists() else ""
        pytest.fail(f"PostgreSQL did not start ({r.returncode}): {(r.stdout + r.stderr)[-1000:]} {log}")
    return Postgres(d, port)


def _prepare_pg_template(binary: Path) -> None:
    """A stopped PostgreSQL cluster whose database Label Studio has initialised (the admin, its legacy token), and
    the data dir that goes with it: made once (initdb + label-studio init, about 30 s), then copied per session."""
    stamp = PG_TEMPLATE / ".trb-ready"
    ready = f"{TOKEN} {pg_bin()}"  # a cluster is made by one major version of PostgreSQL: another remakes it
    if stamp.exists() and stamp.read_text() == ready:
        return
    shutil.rmtree(PG_TEMPLATE, ignore_errors=True)
    tmp = _own_dir("trb-ls-pg-init-")
    pg = None
    try:
        r = subprocess.run(_as_postgres([str(pg_bin() / "initdb"), "-D", str(tmp / "cluster"), "-A", "trust", "-U",
                                         PG_USER, "-E", "UTF8", "--locale", "C"]),
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            pytest.fail(f"initdb failed ({r.returncode}): {(r.stdout + r.stderr)[-2000:]}")
        pg = start_postgres(tmp)
        r = subprocess.run(_as_postgres([str(pg_bin() / "createdb"), "-h", "127.0.0.1", "-p", str(pg.port), "-U",
                                         PG_USER, PG_DB]), capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            pytest.fail(f"createdb failed ({r.returncode}): {(r.stdout + r.stderr)[-2000:]}")
        ls = Path(tempfile.mkdtemp(prefix="trb-ls-init-"))
        try:
            _init_data_dir(binary, ls, pg.settings)
            pg.stop()
            pg = None
            PG_TEMPLATE.mkdir(parents=True)
            subprocess.run(["cp", "-a", str(tmp / "cluster"), str(PG_TEMPLATE / "cluster")], check=True)
            shutil.copytree(ls / "data", PG_TEMPLATE / "data")
        finally:
            shutil.rmtree(ls, ignore_errors=True)
        stamp.write_text(ready)
    finally:
        if pg is not None:
            pg.stop()
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
    backend: str = "sqlite"  # or "postgresql"
    postgres: Postgres | None = None
    started_s: float = 0.0  # seconds from a copied template to a server that answers
    workers: int | None = None  # served by gunicorn with this many worker processes (None: `label-studio start`)


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


BACKENDS = ("sqlite", "postgresql")


def backends() -> list[str]:
    """The back ends the Label Studio tests run on: ``TRB_LS_TEST_BACKENDS`` (comma-separated), default both."""
    wanted = [b.strip() for b in os.environ.get("TRB_LS_TEST_BACKENDS", ",".join(BACKENDS)).split(",") if b.strip()]
    bad = [b for b in wanted if b not in BACKENDS]
    if bad or not wanted:
        raise pytest.UsageError(f"TRB_LS_TEST_BACKENDS={os.environ.get('TRB_LS_TEST_BACKENDS')!r}: each of "
                                f"{', '.join(BACKENDS)}")
    return wanted


def _serve_command(binary: Path, port: int, workers: int | None) -> list[str]:
    """How the server is started: ``label-studio start`` (Django's own server: one process, one request at a time
    doing Python work), or, with ``workers``, Label Studio's WSGI application under gunicorn with that many worker
    processes, as a team deploys it (Label Studio's own docker-compose serves it by uwsgi with four processes)."""
    if workers is None:
        return [str(binary), "start", "--no-browser", "--internal-host", "127.0.0.1", "--port", str(port)]
    package = next(binary.parent.parent.glob("lib/python*/site-packages/label_studio"), None)
    gunicorn = binary.parent / "gunicorn"
    if package is None or not gunicorn.exists():
        pytest.fail(f"no gunicorn or label_studio package beside {binary}: run `make install-label-studio`")
    # request lines as long as Label Studio's own uwsgi takes (buffer-size 65535): gunicorn's default of 4,094 bytes
    # refuses an export of 500 task ids ("Request Line is too large"); 0 is no limit
    return [str(gunicorn), "--workers", str(workers), "--threads", "1", "--timeout", "300", "--limit-request-line",
            "0", "--pythonpath", str(package), "--bind", f"127.0.0.1:{port}", "label_studio.core.wsgi:application"]


#: Server variants a test module may add to the back ends (``LS_SERVERS``): name -> (back end, gunicorn workers).
VARIANTS = {"sqlite": ("sqlite", None), "postgresql": ("postgresql", None), "sqlite-2-workers": ("sqlite", 2)}


@contextmanager
def running(backend: str, base: Path, workers: int | None = None) -> Iterator[Server]:
    """A Label Studio server on ``backend`` with its files under ``base`` (made here), stopped on exit; with
    ``workers``, served by that many gunicorn worker processes (:func:`_serve_command`)."""
    binary = _binary()
    pg = None
    # made once for every test process: a second pytest worker waits for the first to finish making it
    TEMPLATE.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(TEMPLATE.parent / f".trb-test-template-{backend}.lock")):
        if backend == "postgresql":
            _prepare_pg_template(binary)
        else:
            _prepare_template(binary)
    t0 = time.monotonic()
    base.mkdir(parents=True, exist_ok=True)
    (base / "home").mkdir()
    try:
        if backend == "postgresql":
            pgdir = _own_dir("trb-ls-pg-")
            subprocess.run(["cp", "-a", str(PG_TEMPLATE / "cluster"), str(pgdir / "cluster")], check=True)
            pg = start_postgres(pgdir)
            shutil.copytree(PG_TEMPLATE / "data", base / "data")
        else:
            shutil.copytree(TEMPLATE, base / "data")
        port = free_port()
        log = base / "server.log"
        with open(log, "wb") as out:
            env = _env(base / "home", base / "data", pg.settings if pg else None)
            if workers is not None:
                env["DJANGO_SETTINGS_MODULE"] = "label_studio.core.settings.label_studio"
            proc = subprocess.Popen(_serve_command(binary, port, workers), env=env, stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        server = Server(f"http://127.0.0.1:{port}", TOKEN, proc, log, backend, pg, workers=workers)
        try:
            _wait_up(server.url, proc, log)
            server.started_s = time.monotonic() - t0
            yield server
        finally:
            stop(proc)
    finally:
        if pg is not None:
            pg.stop()
            shutil.rmtree(pg.dir, ignore_errors=True)


def pytest_generate_tests(metafunc):
    """Every test that uses ``ls_server`` runs on each back end (its id says which: ``[sqlite]``, ``[postgresql]``),
    and on the server variants its module names in ``LS_SERVERS`` (``[sqlite-2-workers]``: :data:`VARIANTS`) whose
    back end is tested."""
    if "ls_server" in metafunc.fixturenames:
        wanted = backends()
        extra = [v for v in getattr(metafunc.module, "LS_SERVERS", ()) if v not in BACKENDS and VARIANTS[v][0] in wanted]
        # a variant on PostgreSQL starts a PostgreSQL server too, and carries its marker (tests/markers.py)
        params = [pytest.param(v, marks=pytest.mark.postgresql) if VARIANTS[v][0] == "postgresql" else v
                  for v in wanted + extra]
        metafunc.parametrize("ls_server", params, indirect=True, scope="session")


@pytest.fixture(scope="session")
def ls_server(request, tmp_path_factory) -> Iterator[Server]:
    """A running Label Studio server for the whole test session on one back end (stopped at its end)."""
    variant = getattr(request, "param", "sqlite")
    backend, workers = VARIANTS[variant]
    with running(backend, tmp_path_factory.mktemp(f"label-studio-{variant}"), workers) as server:
        yield server


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
    """Make a real user of the organisation (invite link + sign-up form) and return that user's own token.

    The user gets a first and last name from the e-mail's local part (``ui.one@…`` -> "Ui One"), as an operator
    should give every annotator: Label Studio's avatar shows their initials ("UO"), or without a name the first
    two letters of the e-mail, which ``ui.one`` and ``ui.two`` share ("UI")."""
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
        token = t.json()["token"]
    parts = [p.capitalize() for p in re.split(r"[._+-]", email.split("@")[0]) if p] or ["Annotator"]
    first, last = parts[0], " ".join(parts[1:]) or "X"
    with httpx.Client(base_url=url, timeout=30, headers={"Authorization": f"Token {token}"}) as c:
        me = c.get("/api/current-user/whoami")
        me.raise_for_status()
        c.patch(f"/api/users/{me.json()['id']}/", json={"first_name": first, "last_name": last}).raise_for_status()
    return token
