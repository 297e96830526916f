"""A server that answers, but not as Label Studio does, and one that echoes what it was sent (issue 41, points 3, 4).

* Every answer that is not Label Studio's (JSON of another shape, an HTML page, an empty body, a 200 carrying an
  error, text that is not JSON, a NaN), to every request push, pull and status make (projects, users, tasks, the
  export, an import, which the SDK reads), is one line from `trb-annotate push`, `pull` and `status`, naming the
  server and the request, with exit code 12 (SERVER): never a KeyError, a traceback or exit 70.
* No credential reaches stdout or stderr: not the password of a ``user:password@`` URL nor the Basic auth an HTTP
  client makes of it, not a ``Token``/``Bearer`` key a server echoes back, not a ``;jsessionid=`` path parameter
  nor a fragment's token; and a one-letter key masks the key only, never the letter in other words.

The server is a real loopback HTTP server told what to answer (tests/answer_server.py); Label Studio itself is
not needed (its own tests, tests/annotate/test_annotate_label_studio.py, keep the good answers honest).
"""

from __future__ import annotations

import base64
import json

import pytest

from annotate.cli import main
from annotate.tasks import project_settings
from answer_server import HTML, JSON, AnswerServer
from corpus import Corpus, ingest, init_corpus
from factories import attribution, session, write_jsonl
from toolkit.errors import ExitCode

PROJECT = {"id": 7, "title": "TRB caused_by_self", "maximum_annotations": 3, "task_number": 1,
           **project_settings("attribution")}
PROJECTS = json.dumps([PROJECT])
TASKS = json.dumps({"tasks": [{"id": 1, "data": {}}], "total": 1})
EMPTY = json.dumps({"tasks": [], "total": 0})

# name -> (what the server answers, by path prefix; the request the error must name; commands that reach it)
BAD = {
    "wrong shape": ({"/api/projects": (200, JSON, '{"foo": 1}')}, "GET /api/projects", ("status", "push", "pull")),
    "html page": ({"/api/projects": (200, HTML, "<!DOCTYPE html>\n<html><body>Sign in</body></html>")},
                  "GET /api/projects", ("status", "push", "pull")),
    "empty body": ({"/api/projects": (200, JSON, "")}, "GET /api/projects", ("status", "push", "pull")),
    "200 with an error": ({"/api/projects": (200, JSON, '{"error": "database is down"}')}, "GET /api/projects",
                          ("status", "push", "pull")),
    "not json": ({"/api/projects": (200, "text/plain", "OK")}, "GET /api/projects", ("status", "push", "pull")),
    "a NaN": ({"/api/projects": (200, JSON, '[{"id": NaN, "title": "x"}]')}, "GET /api/projects",
              ("status", "push", "pull")),
    "a project without a title": ({"/api/projects": (200, JSON, '[{"id": 7}]')}, "GET /api/projects",
                                  ("status", "push", "pull")),
    "users of another shape": ({"/api/users": (200, JSON, '{"foo": 1}'), "/api/projects": (200, JSON, PROJECTS)},
                               "GET /api/users", ("status", "pull")),
    "tasks of another shape": ({"/api/users": (200, JSON, "[]"), "/api/tasks": (200, JSON, '{"results": 3}'),
                                "/api/projects": (200, JSON, PROJECTS)}, "GET /api/tasks", ("status", "push", "pull")),
    "an export of another shape": ({"/api/users": (200, JSON, "[]"), "/api/tasks": (200, JSON, TASKS),
                                    "/api/projects/7/export": (200, JSON, '{"foo": 1}'),
                                    "/api/projects": (200, JSON, PROJECTS)},
                                   "GET /api/projects/7/export", ("status", "pull")),
    "annotations of another shape": ({"/api/users": (200, JSON, "[]"), "/api/tasks": (200, JSON, TASKS),
                                      "/api/projects/7/export": (200, JSON, '[{"id": 1, "annotations": [{"id": "x"}]}]'),
                                      "/api/projects": (200, JSON, PROJECTS)},
                                     "GET /api/projects/7/export", ("status", "pull")),
    "an import answer of another shape": ({"/api/projects/7/import": (201, JSON, "[1, 2]"),
                                           "/api/tasks": (200, JSON, EMPTY), "/api/projects": (200, JSON, PROJECTS)},
                                          "POST /api/projects/7/import", ("push",)),
    "an import answering an error": ({"/api/projects/7/import": (201, JSON, '{"error": "disk full"}'),
                                      "/api/tasks": (200, JSON, EMPTY), "/api/projects": (200, JSON, PROJECTS)},
                                     "POST /api/projects/7/import", ("push",)),
}
CASES = [(name, command) for name, (_, _, commands) in BAD.items() for command in commands]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """One corpus for every command (none of them gets far enough to write to it)."""
    tmp = tmp_path_factory.mktemp("bad_answers")
    c = Corpus(init_corpus(tmp / "c"))
    ingest(c, [write_jsonl(tmp / "in.jsonl", [session("s1"), attribution("A1", "s1", 1, "self")])], progress=False)
    return c


def _args(command: str, corpus: Corpus) -> list[str]:
    return {"status": ["status"], "push": ["push", "--kind", "attribution", "--corpus", str(corpus.dir), "-q"],
            "pull": ["pull", "--corpus", str(corpus.dir), "-q"]}[command]


def _cli(capsys, monkeypatch, url: str, key: str, args: list[str]) -> tuple[int, str, str]:
    monkeypatch.setenv("LABEL_STUDIO_URL", url)
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", key)
    monkeypatch.setenv("TRB_LS_RETRIES", "0")
    capsys.readouterr()
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("name,command", CASES, ids=[f"{c}-{n}" for n, c in CASES])
def test_an_answer_that_is_not_label_studios_is_one_line_naming_the_server_and_the_request(
        corpus, capsys, monkeypatch, name, command):
    answers, request, _ = BAD[name]
    with AnswerServer(answers) as srv:
        code, out, err = _cli(capsys, monkeypatch, srv.url, "trbkey0123456789abcdef", _args(command, corpus))
    lines = err.strip().splitlines()
    assert code == ExitCode.SERVER, err
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"Label Studio at {srv.url} gave an unexpected answer to {request} ("), err
    assert out == ""


def test_what_the_answer_was_instead_is_said(corpus, capsys, monkeypatch):
    said = {}
    for name in ("wrong shape", "html page", "empty body", "200 with an error", "a NaN"):
        with AnswerServer(BAD[name][0]) as srv:
            said[name] = _cli(capsys, monkeypatch, srv.url, "trbkey0123456789abcdef", ["status"])[2]
    assert "a JSON object with keys 'foo' where a list of projects" in said["wrong shape"]
    assert "an HTML page where JSON was expected" in said["html page"]
    assert "an empty body where JSON was expected" in said["empty body"]
    assert "an error in place of a list of projects" in said["200 with an error"]
    assert "(error: 'database is down')" in said["200 with an error"]
    assert "NaN is not a JSON number" in said["a NaN"]


# -- credentials -------------------------------------------------------------------------------------------------

PASSWORD = "hunter2-pw-5eed"
SESSION = "SESS0a1b2c3d4e5f"
FRAGMENT = "frag0123456789abcdefXYZ"
#: A server's error page that echoes the request headers, with words that hold the letter of a one-letter key.
ECHO = (400, "text/plain", "bad request (keep tracebacks off); you sent:\n{headers}")


def _urls(host: str) -> dict[str, str]:
    return {"basic auth": f"http://admin:{PASSWORD}@{host}",
            "path parameter": f"http://{host}/;jsessionid={SESSION}",
            "token path parameter": f"http://{host}/app;token={SESSION}",
            "fragment": f"http://{host}/#access_token={FRAGMENT}",
            "bare fragment": f"http://{host}/#{FRAGMENT}"}


@pytest.mark.parametrize("form", list(_urls("h")))
@pytest.mark.parametrize("command", ["status", "push", "pull"])
def test_no_credential_of_the_url_reaches_the_terminal_even_when_the_server_echoes_the_headers(
        corpus, capsys, monkeypatch, form, command):
    with AnswerServer(default=ECHO) as srv:
        url = _urls(srv.host)[form]
        code, out, err = _cli(capsys, monkeypatch, url, "trbkey0123456789abcdef", _args(command, corpus))
    basic = base64.b64encode(f"admin:{PASSWORD}".encode()).decode()
    assert code == ExitCode.SERVER and len(err.strip().splitlines()) == 1, err
    assert "HTTP 400" in err and "keep tracebacks off" in err  # the server's words are shown...
    for secret in (PASSWORD, basic, SESSION, FRAGMENT, "trbkey0123456789abcdef"):
        assert secret not in out + err  # ...its echo of the credentials is not
    assert ("Authorization: Basic ***" if form == "basic auth" else "Authorization: Token ***") in err
    assert srv.host in err  # the server is still named


@pytest.mark.parametrize("key", ["k", "ab12"])
def test_a_short_key_is_masked_where_it_stands_as_a_value_and_nowhere_else(corpus, capsys, monkeypatch, key):
    body = f"denied (keep tracebacks off): key={key}&page=2, echo: {key}. You sent {{headers}}"
    with AnswerServer(default=(400, "text/plain", body)) as srv:
        code, out, err = _cli(capsys, monkeypatch, srv.url, key, ["status"])
    assert code == ExitCode.SERVER and len(err.strip().splitlines()) == 1
    assert "keep tracebacks off" in err and "keep-alive" in err  # words holding the key's letters survive
    assert "Authorization: Token ***" in err and "key=***&page=2" in err and "echo: ***." in err
    assert f"Token {key}" not in err and f"={key}&" not in err and f" {key}." not in err
