"""The served adapter against a server that answers, but not as an OpenAI-compatible one does, or echoes what it was
sent (issue 41, points 3 and 4).

Every such answer (JSON of another shape, an HTML page, an empty body, a 200 carrying an error, log-probabilities
that are not numbers) is one line from `trb run`, naming the server and the call (``GET /models``, ``POST
/completions``), with exit code 14 (ADAPTER), never a traceback; a key the server echoes back (``Authorization:
Bearer ...``), even a one-letter one, is masked, and the words holding its letter are not.

The server is a real loopback HTTP server told what to answer (tests/answer_server.py); no model is needed.
"""

from __future__ import annotations

import json

import pytest
from engine_helpers import make_release

from answer_server import HTML, JSON, AnswerServer
from toolkit.errors import ExitCode
from trb.adapters.completions_client import CompletionsClient
from trb.errors import AdapterError

MODELS = (200, JSON, json.dumps({"data": [{"id": "tiny"}]}))
#: name -> (what /v1/completions answers, what the error says it was)
BAD_COMPLETIONS = {
    "wrong shape": ((200, JSON, '{"foo": 1}'), "a JSON object with keys 'foo' where a completion"),
    "html page": ((200, HTML, "<!doctype html><title>Bad gateway</title>"), "an HTML page where JSON was expected"),
    "empty body": ((200, JSON, ""), "an empty body where JSON was expected"),
    "200 with an error": ((200, JSON, '{"error": {"message": "model not loaded"}}'),
                          "an error in place of a completion ('choices', a list of objects) (error: 'model not loaded')"),
    "not json": ((200, "text/plain", "OK"), "not JSON"),
    "no choices": ((200, JSON, '{"choices": []}'), "where a completion ('choices', a list of objects) was expected"),
    "logprobs not numbers": ((200, JSON, json.dumps({"choices": [{"text": "x", "logprobs": {
        "text_offset": [0, 1], "token_logprobs": [None, "high"]}}]})), "a token log-probability that is not a number"),
    "no logprobs": ((200, JSON, '{"choices": [{"text": "x"}]}'), "no logprobs in the answer"),
}


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return make_release(tmp_path_factory.mktemp("bad_answers_release"), sessions=6, seed=5)


def _trb(capsys, url: str, release, tmp_path) -> tuple[int, str, str]:
    from trb.cli import main

    capsys.readouterr()
    code = main(["run", "--release", str(release), "--adapter", "served", "--model", url, "--baseline",
                 "instruct-base", "--tracks", "1", "--scaffold", "none", "--split", "train", "--allow-train-split",
                 "--max-in-flight", "1", "--max-attempts", "1", "--results", str(tmp_path / "r.duckdb"), "-q"])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("name", list(BAD_COMPLETIONS))
def test_a_completion_that_is_not_one_is_an_error_naming_the_server_and_the_call(name):
    answer, said = BAD_COMPLETIONS[name]
    with AnswerServer({"/v1/models": MODELS, "/v1/completions": answer}) as srv:
        with CompletionsClient(srv.url + "/v1", "tiny", max_attempts=1) as client:
            with pytest.raises(AdapterError) as e:
                client.logprob("at C1 ", "left")
    assert e.value.message.startswith(f"{srv.url}/v1/completions: unexpected answer to POST /completions: ")
    assert said in e.value.message and len(e.value.lines()) == 1


@pytest.mark.parametrize("answer,said", [((200, JSON, '{"foo": 1}'), "a JSON object with keys 'foo' where a list of "
                                          "models"),
                                         ((200, HTML, "<html><body>Sign in</body></html>"), "an HTML page"),
                                         ((200, JSON, '{"data": [{"name": "x"}]}'), "where a list of models"),
                                         ((200, JSON, '{"detail": "not ready"}'), "(detail: 'not ready')")])
def test_trb_run_on_a_server_whose_model_list_is_not_one_is_one_line(release, tmp_path, capsys, answer, said):
    with AnswerServer({"/v1/models": answer}) as srv:
        code, out, err = _trb(capsys, srv.url + "/v1", release, tmp_path)
    lines = err.strip().splitlines()
    assert code == ExitCode.ADAPTER and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"{srv.url}/v1/models: unexpected answer to GET /models: ") and said in lines[0]


def test_trb_run_on_a_server_whose_completions_are_not_ones_is_one_line(release, tmp_path, capsys):
    with AnswerServer({"/v1/models": MODELS, "/v1/completions": BAD_COMPLETIONS["wrong shape"][0]}) as srv:
        code, out, err = _trb(capsys, srv.url + "/v1", release, tmp_path)
    lines = err.strip().splitlines()
    assert code == ExitCode.ADAPTER and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"{srv.url}/v1/completions: unexpected answer to POST /completions: ")


@pytest.mark.parametrize("key", ["k", "sk-trb-0123456789abcdef"])
def test_a_key_the_server_echoes_is_masked_and_nothing_else(release, tmp_path, capsys, monkeypatch, key):
    monkeypatch.setenv("TRB_API_KEY", key)
    echo = (401, "text/plain", "refused (keep tracebacks off); you sent:\n{headers}")
    with AnswerServer({"/v1/models": echo}) as srv:
        code, out, err = _trb(capsys, srv.url + "/v1", release, tmp_path)
    assert code == ExitCode.ADAPTER and len(err.strip().splitlines()) == 1, err
    assert "Authorization: Bearer ***" in err and f"Bearer {key}" not in err
    assert "keep tracebacks off" in err and "keep-alive" in err  # the letter k elsewhere survives
    assert "on GET /models" in err
