"""How `trb-annotate` treats its settings and a server that never answers (issue 18, points 7 and 8).

* A URL's credentials (``user:password@``, ``?token=``, ``?access_token=``, ``?key=``) never reach stderr,
  stdout or what push and pull store; the server is still named (host and port).
* A server that accepts connections and never answers (a real socket, :mod:`hung_server`) fails within
  ``TRB_LS_DEADLINE``, saying which URL and request it waited for, how long and how many attempts; while it
  waits, a line on stderr says so.
* A bad ``TRB_LS_*`` value, a key an HTTP header cannot carry and a URL that is not http(s) are one line
  each, naming the variable (never the key), before any request.

None of these needs a Label Studio server: the first request is refused, or goes to a port nobody listens
on, or to the hung socket. The real server's tests (tests/annotate/test_annotate_label_studio.py) keep
the normal paths honest.
"""

from __future__ import annotations

import time

import pytest

from annotate.cli import main
from annotate.client import DEFAULT_DEADLINE, LabelStudioClient, Project, connect
from annotate.errors import LabelStudioUnreachable
from annotate.pull import source_name
from corpus import Corpus, ingest, init_corpus
from factories import attribution, session, write_jsonl
from hung_server import HungServer
from ls_server import free_port
from tests_paths import ROOT
from toolkit.errors import ExitCode
from toolkit.urls import redact_url, url_secrets

# waits out deadlines against hung and slow local servers (seconds per test)
pytestmark = pytest.mark.slow

PASSWORD = "hunter2-pw-5eed"
TOKEN = "tok-0123456789abcdef"
KEY = "trbkey0123456789abcdef"


def _cli(capsys, monkeypatch, env: dict, *args) -> tuple[int, str, str]:
    for k in ("LABEL_STUDIO_URL", "LABEL_STUDIO_API_KEY", "TRB_LS_RETRIES", "TRB_LS_DEADLINE"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    capsys.readouterr()
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture()
def corpus(tmp_path):
    c = Corpus(init_corpus(tmp_path / "c"))
    ingest(c, [write_jsonl(tmp_path / "in.jsonl", [session("s1"), attribution("A1", "s1", 1, "self")])],
           progress=False)
    return c


def _down() -> str:
    return f"127.0.0.1:{free_port()}"


# -- credentials in the URL ------------------------------------------------------------------------------------

CREDENTIAL_URLS = {
    "userinfo": "http://admin:" + PASSWORD + "@{host}",
    "token": "http://{host}/?token=" + TOKEN,
    "access_token": "http://{host}/?access_token=" + TOKEN + "&page=1",
    "key and userinfo": "http://admin:" + PASSWORD + "@{host}/?key=" + TOKEN,
    "api-key in the fragment": "http://{host}/#api-key=" + TOKEN,
}


@pytest.mark.parametrize("form", list(CREDENTIAL_URLS))
@pytest.mark.parametrize("command", ["status", "push", "pull"])
def test_credentials_in_the_url_never_reach_a_message(corpus, capsys, monkeypatch, form, command):
    host = _down()
    url = CREDENTIAL_URLS[form].format(host=host)
    args = {"status": ["status"], "push": ["push", "--kind", "attribution", "--corpus", corpus.dir, "-q"],
            "pull": ["pull", "--corpus", corpus.dir, "-q"]}[command]
    code, out, err = _cli(capsys, monkeypatch, {"LABEL_STUDIO_URL": url, "LABEL_STUDIO_API_KEY": KEY,
                                                "TRB_LS_RETRIES": "0"}, *args)
    assert code == ExitCode.UNREACHABLE, err
    assert PASSWORD not in out + err and TOKEN not in out + err and KEY not in out + err
    assert "cannot reach Label Studio at http://" in err and host.split(":")[1] in err  # the server is still named
    assert len(err.strip().splitlines()) == 1
    # nothing push or pull left in the corpus holds them either (the ledger and change log hold a hash at most)
    for f in corpus.dir.glob(".trb-annotate/*"):
        assert PASSWORD not in f.read_text() and TOKEN not in f.read_text()


@pytest.mark.parametrize("form", list(CREDENTIAL_URLS))
def test_the_client_shows_and_stores_the_url_without_credentials(form):
    url = CREDENTIAL_URLS[form].format(host="ls.example:8080")
    client = LabelStudioClient(url, KEY)
    stored = source_name(client, Project(3, "p", "attribution", 1, 0), "2026-01-01T00:00:00Z")
    for shown in (client.url, stored, redact_url(url)):
        assert PASSWORD not in shown and TOKEN not in shown and "ls.example:8080" in shown
    assert stored.startswith("label-studio http") and "project 3 'p'" in stored
    assert set(url_secrets(url)) & {PASSWORD, TOKEN, f"admin:{PASSWORD}"}


def test_a_url_without_credentials_is_shown_as_typed():
    for url in ("http://localhost:8080", "https://ls.example/label-studio/", "http://h/?page=2&ordering=id"):
        assert redact_url(url) == url and url_secrets(url) == []
    assert LabelStudioClient("http://localhost:8080/", KEY).url == "http://localhost:8080"


# -- a server that accepts connections and never answers ----------------------------------------------------

def test_a_hung_server_fails_within_the_deadline_naming_what_it_waited_for(capsys, monkeypatch):
    with HungServer() as hung:
        t0 = time.monotonic()
        code, out, err = _cli(capsys, monkeypatch, {"LABEL_STUDIO_URL": hung.url, "LABEL_STUDIO_API_KEY": KEY,
                                                    "TRB_LS_DEADLINE": "6"}, "status")
        elapsed = time.monotonic() - t0
        assert hung.connections >= 1  # it did connect: this is a hang, not a refusal
    assert code == ExitCode.UNREACHABLE
    assert 5.5 <= elapsed < 12, elapsed
    lines = err.strip().splitlines()
    assert lines[-1].startswith(f"Label Studio at {hung.url} did not answer GET /api/projects (list projects) "
                                "within 6 s (1 attempt, ReadTimeout; TRB_LS_DEADLINE=6 s)"), lines[-1]
    # while it waited (after 5 s), one line said what for
    assert lines[:-1] == [f"waiting for Label Studio at {hung.url} to answer GET /api/projects (list projects): "
                          "attempt 1 of 5, gives up after 6 s (TRB_LS_DEADLINE)"]
    assert KEY not in err and out == ""


def test_retries_on_a_hung_server_stay_within_the_deadline_and_say_so():
    said: list[str] = []
    with HungServer() as hung:
        client = connect(hung.url, KEY, timeout=1.0, deadline=4.0, backoff=0.1, retries=10, notify=said.append)
        t0 = time.monotonic()
        with pytest.raises(LabelStudioUnreachable) as e:
            client.check()
        elapsed = time.monotonic() - t0
    assert elapsed < 5.0, elapsed  # 10 retries of 1 s would be 11 s: the deadline cut them
    msg = e.value.message
    assert "did not answer GET /api/current-user/whoami (check the API key) within" in msg
    n = int(msg.split(" attempts,")[0].rsplit("(", 1)[1])
    assert 3 <= n <= 4 and e.value.exit_code == ExitCode.UNREACHABLE
    retry_lines = [s for s in said if "retrying in" in s]
    assert len(retry_lines) == n - 1 and all(hung.url in s and "gives up after 4 s" in s for s in retry_lines)


def test_the_default_deadline_is_under_a_minute_and_documented():
    assert DEFAULT_DEADLINE < 60
    guide = (ROOT / "docs" / "guides" / "annotators.md").read_text(encoding="utf-8")
    assert "TRB_LS_DEADLINE" in guide and f"default {DEFAULT_DEADLINE:g}" in guide


def test_quick_retries_print_nothing_and_keep_their_backoff():
    said, slept = [], []
    with pytest.raises(LabelStudioUnreachable, match="cannot reach Label Studio.*after 4 attempts"):
        connect(f"http://{_down()}", KEY, retries=3, backoff=0.01, sleep=slept.append, notify=said.append).check()
    assert slept == [0.01, 0.02, 0.04] and said == []


# -- settings that are not one ----------------------------------------------------------------------------------

BAD = [
    ("TRB_LS_RETRIES", "abc", ExitCode.USAGE, "TRB_LS_RETRIES='abc' is not a whole number, 0 or more"),
    ("TRB_LS_RETRIES", "-1", ExitCode.USAGE, "TRB_LS_RETRIES='-1' is not a whole number, 0 or more"),
    ("TRB_LS_RETRIES", "1.5", ExitCode.USAGE, "TRB_LS_RETRIES='1.5' is not a whole number, 0 or more"),
    ("TRB_LS_DEADLINE", "abc", ExitCode.USAGE, "TRB_LS_DEADLINE='abc' is not a number of seconds above 0"),
    ("TRB_LS_DEADLINE", "0", ExitCode.USAGE, "TRB_LS_DEADLINE='0' is not a number of seconds above 0"),
    ("TRB_LS_DEADLINE", "-3", ExitCode.USAGE, "TRB_LS_DEADLINE='-3' is not a number of seconds above 0"),
    ("TRB_LS_DEADLINE", "nan", ExitCode.USAGE, "TRB_LS_DEADLINE='nan' is not a number of seconds above 0"),
    ("TRB_LS_DEADLINE", "inf", ExitCode.USAGE, "TRB_LS_DEADLINE='inf' is not a number of seconds above 0"),
    ("LABEL_STUDIO_API_KEY", "clé0123456789abcdef", ExitCode.AUTH,
     "LABEL_STUDIO_API_KEY has a non-ASCII character at position 3 of 19"),
    ("LABEL_STUDIO_API_KEY", KEY + "\n", ExitCode.AUTH,
     f"LABEL_STUDIO_API_KEY has a space or control character at position {len(KEY) + 1} of {len(KEY) + 1}"),
    ("LABEL_STUDIO_API_KEY", "trb key 0123456789", ExitCode.AUTH,
     "LABEL_STUDIO_API_KEY has a space or control character at position 4 of 18"),
    ("LABEL_STUDIO_URL", "localhost:8080", ExitCode.AUTH, "LABEL_STUDIO_URL 'localhost:8080' is not an http(s) URL"),
    ("LABEL_STUDIO_URL", "http://[::1", ExitCode.AUTH, "LABEL_STUDIO_URL 'http://[::1' is not an http(s) URL"),
    ("LABEL_STUDIO_URL", "ftp://admin:" + PASSWORD + "@ls.example", ExitCode.AUTH,
     "LABEL_STUDIO_URL 'ftp://ls.example' is not an http(s) URL"),
    # a raw "/" in the password: no URL httpx can send; shown with everything before the "@" cut
    ("LABEL_STUDIO_URL", "http://admin:" + PASSWORD + "/x@ls.example", ExitCode.AUTH,
     "LABEL_STUDIO_URL 'http://***@ls.example' is not an http(s) URL"),
]


@pytest.mark.parametrize("name,value,code,starts", BAD, ids=[f"{b[0]}={b[1]!r}" for b in BAD])
def test_a_bad_setting_is_one_line_naming_it_before_any_request(capsys, monkeypatch, name, value, code, starts):
    env = {"LABEL_STUDIO_URL": f"http://{_down()}", "LABEL_STUDIO_API_KEY": KEY, name: value}
    got, out, err = _cli(capsys, monkeypatch, env, "status")
    assert got == code, err
    assert err.strip().splitlines() == [err.strip()] and err.startswith(starts), err
    assert "Traceback" not in err and "cannot reach" not in err and out == ""
    if name == "LABEL_STUDIO_API_KEY":
        assert value.strip() not in err
    assert PASSWORD not in err


def test_a_decimal_deadline_is_a_setting_not_an_error(capsys, monkeypatch):
    code, out, err = _cli(capsys, monkeypatch, {"LABEL_STUDIO_URL": f"http://{_down()}", "LABEL_STUDIO_API_KEY": KEY,
                                                "TRB_LS_DEADLINE": "2.5", "TRB_LS_RETRIES": "0"}, "status")
    assert code == ExitCode.UNREACHABLE and err.startswith("cannot reach Label Studio") and out == ""
