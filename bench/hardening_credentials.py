"""Issue 41, points 3 and 4: credentials printed, and tracebacks on a server's unexpected answers. Prints a table per
part and the before/after figures of bench/README.md.

    .venv/bin/python bench/hardening_credentials.py [--code DIR]   # DIR: the checkout whose code is measured

Every case runs the real command line in this process (``trb-annotate status``/``push``/``pull``, ``trb run
--adapter served``) against a real loopback HTTP server told what to answer (tests/answer_server.py): JSON of
another shape, an HTML page, an empty body, a 200 carrying an error, text that is not JSON, a NaN; or an error
page that echoes the request's headers. A credentials case *leaks* when stdout or stderr holds the URL's password,
the Basic auth made of it, the key after ``Token``/``Bearer``, a ``;jsessionid=``/``;token=`` value or a
fragment's token; it *mangles* when a word holding a one-letter key's letter lost it ("tracebac***"). A bad-answer
case is *clean* when the command exits with its server code (12, or 14 for the served adapter) and one line on
stderr naming the server and the request, with no traceback. ``--code`` points at another checkout (``git worktree
add --detach /tmp/before 5791892``) to measure its code with this script and the same servers.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import re
import sys
import tempfile
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PASSWORD = "hunter2-pw-0x5eed"
SESSION = "SESS0a1b2c3d4e5f"
FRAGMENT = "frag0123456789abcdefXYZ"
LONG_KEY = "trbkey0123456789abcdef"
ECHO_BODY = "you sent:\n{headers}\nbad request (keep tracebacks off)"  # the headers first, as a debug page shows them


def _run(main, args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    for k in ("LABEL_STUDIO_URL", "LABEL_STUDIO_API_KEY", "TRB_API_KEY"):
        os.environ.pop(k, None)
    os.environ.update(env)
    errors = sys.modules.get("annotate.errors")
    if errors is not None:  # the keys an earlier case registered (one process per command in real use)
        errors._SECRETS.clear()
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(args)
        except SystemExit as e:  # noqa: PERF203 - a case
            code = e.code if isinstance(e.code, int) else 1
        except BaseException as e:  # noqa: BLE001 - a crash outside the CLI's edge is a traceback too
            import traceback

            traceback.print_exc()
            code = f"raised {type(e).__name__}"
    return code, out.getvalue(), err.getvalue()


def _mangled(text: str) -> bool:
    """Whether a word lost a letter to the mask (``tracebac***s``, ``***eep-alive``): a mask with a letter or digit
    right beside it."""
    return re.search(r"[A-Za-z0-9]\*\*\*|\*\*\*[A-Za-z0-9]", text) is not None


def _corpus(tmp: Path):
    from corpus import Corpus, ingest, init_corpus
    from factories import attribution, session, write_jsonl

    c = Corpus(init_corpus(tmp / "c"))
    ingest(c, [write_jsonl(tmp / "in.jsonl", [session("s1"), attribution("A1", "s1", 1, "self")])], progress=False)
    return c


def _annotate_args(command: str, corpus) -> list[str]:
    return {"status": ["status"], "push": ["push", "--kind", "attribution", "--corpus", str(corpus.dir), "-q"],
            "pull": ["pull", "--corpus", str(corpus.dir), "-q"]}[command]


def credentials(corpus, release, tmp: Path) -> tuple[int, int, int]:
    """(outputs leaking a credential, outputs mangling a word, cases)."""
    from annotate.cli import main as annotate
    from answer_server import AnswerServer
    from trb.cli import main as trb

    basic = base64.b64encode(f"admin:{PASSWORD}".encode()).decode()
    leaks = mangled = n = 0
    print("\ncredentials: command, form -> leaked / mangled")
    for command in ("status", "push", "pull"):
        with AnswerServer(default=(400, "text/plain", ECHO_BODY)) as srv:
            forms = {"user:password@ + echoed headers": (f"http://admin:{PASSWORD}@{srv.host}", LONG_KEY),
                     ";jsessionid= path parameter": (f"http://{srv.host}/;jsessionid={SESSION}", LONG_KEY),
                     ";token= path parameter": (f"http://{srv.host}/app;token={SESSION}", LONG_KEY),
                     "#access_token= fragment": (f"http://{srv.host}/#access_token={FRAGMENT}", LONG_KEY),
                     "a bare token fragment": (f"http://{srv.host}/#{FRAGMENT}", LONG_KEY),
                     "echoed key (long)": (srv.url, LONG_KEY),
                     "echoed key 'k'": (srv.url, "k")}
            for form, (url, key) in forms.items():
                code, out, err = _run(annotate, _annotate_args(command, corpus),
                                      {"LABEL_STUDIO_URL": url, "LABEL_STUDIO_API_KEY": key, "TRB_LS_RETRIES": "0"})
                text = out + err
                leak = any(s in text for s in (PASSWORD, basic, SESSION, FRAGMENT, LONG_KEY)) or f"Token {key}\n" in \
                    text or f"Token {key} " in text or text.rstrip().endswith(f"Token {key}")
                mangle = _mangled(text)
                leaks += leak
                mangled += mangle
                n += 1
                print(f"  {command:6} {form:34} {'LEAK' if leak else 'ok':4} {'MANGLED' if mangle else ''}")
    for key in (LONG_KEY, "k"):
        with AnswerServer({"/v1/models": (401, "text/plain", ECHO_BODY)}) as srv:
            code, out, err = _run(trb, _served_args(srv.url + "/v1", release, tmp), {"TRB_API_KEY": key})
        text = out + err
        leak = f"Bearer {key}" in text
        mangle = _mangled(text)
        leaks += leak
        mangled += mangle
        n += 1
        print(f"  trb run served, echoed key {'(long)' if key == LONG_KEY else repr(key):10}      "
              f"{'LEAK' if leak else 'ok':4} {'MANGLED' if mangle else ''}")
    return leaks, mangled, n


def _bad_annotate_answers() -> dict:
    from annotate.tasks import project_settings

    projects = json.dumps([{"id": 7, "title": "TRB caused_by_self", "maximum_annotations": 3, "task_number": 1,
                            **project_settings("attribution")}])
    tasks = json.dumps({"tasks": [{"id": 1, "data": {}}], "total": 1})
    empty = json.dumps({"tasks": [], "total": 0})
    html, js = "text/html; charset=utf-8", "application/json"
    ok = {"/api/users": (200, js, "[]"), "/api/tasks": (200, js, tasks)}
    return {
        "projects: wrong shape": ({"/api/projects": (200, js, '{"foo": 1}')}, "GET /api/projects", "status push pull"),
        "projects: HTML page": ({"/api/projects": (200, html, "<!doctype html><html>Sign in</html>")},
                                "GET /api/projects", "status push pull"),
        "projects: empty body": ({"/api/projects": (200, js, "")}, "GET /api/projects", "status push pull"),
        "projects: 200 with an error": ({"/api/projects": (200, js, '{"error": "database is down"}')},
                                        "GET /api/projects", "status push pull"),
        "projects: not JSON": ({"/api/projects": (200, "text/plain", "OK")}, "GET /api/projects", "status push pull"),
        "projects: a NaN": ({"/api/projects": (200, js, '[{"id": NaN, "title": "x"}]')}, "GET /api/projects",
                            "status push pull"),
        "projects: no title": ({"/api/projects": (200, js, '[{"id": 7}]')}, "GET /api/projects", "status push pull"),
        "users: wrong shape": ({"/api/users": (200, js, '{"foo": 1}'), "/api/projects": (200, js, projects)},
                               "GET /api/users", "status pull"),
        "tasks: wrong shape": ({**ok, "/api/tasks": (200, js, '{"results": 3}'), "/api/projects": (200, js, projects)},
                               "GET /api/tasks", "status push pull"),
        "export: wrong shape": ({**ok, "/api/projects/7/export": (200, js, '{"foo": 1}'),
                                 "/api/projects": (200, js, projects)}, "GET /api/projects/7/export", "status pull"),
        "export: bad annotation": ({**ok, "/api/projects/7/export": (200, js, '[{"id": 1, "annotations": [{"id": "x"}]}]'),
                                    "/api/projects": (200, js, projects)}, "GET /api/projects/7/export", "status pull"),
        "import: wrong shape": ({"/api/projects/7/import": (201, js, "[1, 2]"), "/api/tasks": (200, js, empty),
                                 "/api/projects": (200, js, projects)}, "POST /api/projects/7/import", "push"),
        "import: 201 with an error": ({"/api/projects/7/import": (201, js, '{"error": "disk full"}'),
                                       "/api/tasks": (200, js, empty), "/api/projects": (200, js, projects)},
                                      "POST /api/projects/7/import", "push"),
    }


def _bad_served_answers() -> dict:
    js, html = "application/json", "text/html"
    models = (200, js, json.dumps({"data": [{"id": "tiny"}]}))
    return {
        "/models: wrong shape": ({"/v1/models": (200, js, '{"foo": 1}')}, "GET /models"),
        "/models: HTML page": ({"/v1/models": (200, html, "<html>Sign in</html>")}, "GET /models"),
        "/models: empty body": ({"/v1/models": (200, js, "")}, "GET /models"),
        "/models: 200 with an error": ({"/v1/models": (200, js, '{"detail": "not ready"}')}, "GET /models"),
        "/completions: wrong shape": ({"/v1/models": models, "/v1/completions": (200, js, '{"foo": 1}')},
                                      "POST /completions"),
        "/completions: 200 with an error": ({"/v1/models": models, "/v1/completions": (
            200, js, '{"error": {"message": "model not loaded"}}')}, "POST /completions"),
        "/completions: empty body": ({"/v1/models": models, "/v1/completions": (200, js, "")}, "POST /completions"),
        "/completions: logprobs not numbers": ({"/v1/models": models, "/v1/completions": (200, js, json.dumps(
            {"choices": [{"text": "x", "logprobs": {"text_offset": [0, 1], "token_logprobs": [None, "high"]}}]}))},
                                               "POST /completions"),
    }


def _served_args(url: str, release, tmp: Path) -> list[str]:
    return ["run", "--release", str(release), "--adapter", "served", "--model", url, "--baseline", "instruct-base",
            "--tracks", "1", "--scaffold", "none", "--split", "train", "--allow-train-split", "--max-in-flight", "1",
            "--max-attempts", "1", "--results", str(tmp / f"r{time.monotonic_ns()}.duckdb"), "-q"]


def bad_answers(corpus, release, tmp: Path) -> tuple[int, int, int]:
    """(tracebacks or exit 70, clean one-line errors naming the server and the request, cases)."""
    from annotate.cli import main as annotate
    from answer_server import AnswerServer
    from trb.cli import main as trb

    tracebacks = clean = n = 0
    print("\nbad answers: command, answer -> exit, traceback, one line naming server + request")

    def judge(label, code, err, host, request, server_code):
        nonlocal tracebacks, clean, n
        lines = err.strip().splitlines()
        tb = "Traceback" in err or code == 70 or not isinstance(code, int)
        ok = code == server_code and len(lines) == 1 and host in lines[0] and request in lines[0]
        tracebacks += tb
        clean += ok
        n += 1
        print(f"  {label:52} exit {code!s:>4} {'TRACEBACK' if tb else '':9} {'clean' if ok else 'NOT CLEAN'}")

    for name, (answers, request, commands) in _bad_annotate_answers().items():
        for command in commands.split():
            with AnswerServer(answers) as srv:
                code, out, err = _run(annotate, _annotate_args(command, corpus),
                                      {"LABEL_STUDIO_URL": srv.url, "LABEL_STUDIO_API_KEY": LONG_KEY,
                                       "TRB_LS_RETRIES": "0"})
            judge(f"trb-annotate {command} / {name}", code, err, srv.host, request, 12)
    for name, (answers, request) in _bad_served_answers().items():
        with AnswerServer(answers) as srv:
            code, out, err = _run(trb, _served_args(srv.url + "/v1", release, tmp), {})
        judge(f"trb run served / {name}", code, err, srv.host, request, 14)
    return tracebacks, clean, n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--code", type=Path, default=ROOT, help="the checkout whose code is measured (default: this one)")
    a = ap.parse_args()
    sys.path[:0] = [str(a.code.resolve()), str(ROOT / "tests"), str(ROOT / "tests" / "trb")]
    import annotate

    print(f"code measured: {Path(annotate.__file__).parent.parent}")
    from engine_helpers import make_release

    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        corpus = _corpus(tmp)
        release = make_release(tmp / "release", sessions=6, seed=5)
        leaks, mangled, n_cred = credentials(corpus, release, tmp)
        tracebacks, clean, n_bad = bad_answers(corpus, release, tmp)
    print(f"\noutputs holding a credential: {leaks} / {n_cred}; words mangled by masking a one-letter key: "
          f"{mangled} / {n_cred}")
    print(f"bad answers ending in a traceback or exit 70: {tracebacks} / {n_bad}; one line naming the server and "
          f"the request, with the server's exit code: {clean} / {n_bad}")
    print(f"({time.monotonic() - t0:.0f} s)")


if __name__ == "__main__":
    main()
