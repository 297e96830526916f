"""The served-model adapter against a real OpenAI-compatible server on loopback (no llama.cpp needed here).

The server (tests/trb/completions_server.py) serves a tiny GPT-2 made in the test over HTTP and
computes prompt log-probabilities and greedy generations with it, so the served adapter's
numbers can be held to the proxy adapter's on the same model: the same prompts, the same
tokens (the prompt/continuation boundaries of the template fall between tokens), so the same
scores to float rounding. Retries, the key and the in-flight bound are checked on the same
server, told to fail or to hold its answers. The real llama.cpp server on SmolLM2 is
tests/trb/test_served_llama.py (slow).
"""

from __future__ import annotations

import dataclasses
import json
import random
import time

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("httpx")

from completions_server import CompletionsServer  # noqa: E402
from engine_helpers import make_release, make_tiny_lm  # noqa: E402

from toolkit.errors import ExitCode  # noqa: E402
from trb.adapters.completions_client import CompletionsClient, continuation_logprob  # noqa: E402
from trb.adapters.proxy import ProxyAdapter  # noqa: E402
from trb.adapters.served import ServedAdapter  # noqa: E402
from trb.context import PastStep, StepContext  # noqa: E402
from trb.errors import AdapterError  # noqa: E402

# tiny LMs made here, served over HTTP by a server the tests start
pytestmark = pytest.mark.slow

KEY = "sk-trb-test-0123456789abcdef"
SPACES = (("left", "right", "stay"), ("up", "down"), ("left", "right", "stay", "wait"))


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return make_release(tmp_path_factory.mktemp("served_release"), sessions=24, seed=5)


@pytest.fixture(scope="module")
def lm(release, tmp_path_factory):
    return make_tiny_lm(release, tmp_path_factory.mktemp("served_lm") / "lm")


@pytest.fixture(scope="module")
def server(lm):
    with CompletionsServer(lm) as srv:
        yield srv


@pytest.fixture()
def fresh(server):
    """The module's server with its failure plan and counters reset."""
    server.fail, server.always_fail, server.delay = [], None, 0.0
    server.auth.clear()
    server.requests = server.max_active = 0
    return server


@pytest.fixture(scope="module")
def proxy(lm):
    return ProxyAdapter.load(lm, device="cpu")


def _contexts(n: int, seed: int = 3) -> list[StepContext]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        space = rng.choice(SPACES)
        hist = ()
        if i % 2:
            ps = rng.choice(SPACES)
            hist = (PastStep(t=0, observation=f"at C{rng.randint(1, 4)}", r=None, action=rng.choice(ps),
                             action_space=ps, outcome=rng.choice(("moved", "blocked"))),)
        out.append(StepContext(session_id=f"s{i}", t=len(hist), history=hist, observation=f"at C{rng.randint(1, 4)}",
                               action_space=space))
    return out


def _same_reports(got: list[dict], want: list[dict]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert set(g) == set(w)
        for k in w:
            assert g[k] == (pytest.approx(w[k], abs=1e-5) if isinstance(w[k], float) else w[k]), k


def test_boundary_rule_counts_a_straddling_token_with_the_continuation():
    lp = {"text_offset": [0, 3, 7, 8, 10], "token_logprobs": [None, -1.0, -2.0, -0.5, -9.0]}  # the last is generated
    assert continuation_logprob(lp, "abc def g", 7) == -2.5  # tokens [7,8) and [8,9)
    assert continuation_logprob(lp, "abc def g", 6) == -3.5  # [3,7) straddles 6: counted with the continuation
    with pytest.raises(AdapterError, match="echo"):
        continuation_logprob({"text_offset": [9], "token_logprobs": [-1.0]}, "abc def g", 3)


def _echo(tokens: list[str], logprobs: list[float | None]) -> dict:
    offsets, at = [], 0
    for t in tokens:
        offsets.append(at)
        at += len(t)
    return {"tokens": tokens, "text_offset": offsets, "token_logprobs": logprobs}


def test_a_chat_prompts_special_tokens_are_located_as_the_server_echoes_them():
    """llama.cpp's server parses ``<|im_start|>`` in a prompt as a special token and echoes it as no text: its
    offsets count the prompt without them (the shape of its answer on SmolLM2, seen in bench/turpin.py). Read in
    the prompt's own coordinates, the continuation was past every offset and the generated token was scored."""
    specials = ("<|im_start|>", "<|im_end|>")
    prompt = "<|im_start|>user\nQ?<|im_end|>\n<|im_start|>assistant\nAnswer: ("
    text = prompt + "B"
    tokens = ["user", "\n", "Q", "?", "\n", "assistant", "\n", "Answer", ":", " (", "B", ")"]  # ")" is generated
    values = [None, -0.1, -2.0, -0.3, -0.2, -0.4, -0.1, -6.5, -0.03, -0.29, -0.917, -0.004]
    dropped = _echo(tokens, values)
    assert continuation_logprob(dropped, text, len(prompt), specials) == -0.917
    assert continuation_logprob(dropped, text, len(prompt)) == -0.004  # without them: the generated token
    spelled = _echo(["<|im_start|>", *tokens[:4], "<|im_end|>", "\n", "<|im_start|>", *tokens[5:]],
                    [None, -0.5, *values[1:4], -0.1, -0.2, -0.3, *values[5:]])  # a server that echoes them as text
    assert continuation_logprob(spelled, text, len(prompt), specials) == -0.917
    with pytest.raises(AdapterError, match="spell neither"):
        continuation_logprob(_echo(["x", *tokens[1:]], values), text, len(prompt), specials)
    with pytest.raises(AdapterError, match="no echoed tokens"):
        continuation_logprob({k: v for k, v in dropped.items() if k != "tokens"}, text, len(prompt), specials)
    # no special token in the prompt: the offsets are read as they are, whatever the tokens spell
    assert continuation_logprob(_echo(["Answer", ":", " (", "B", ")"], [None, -0.1, -0.2, -0.9, -0.01]),
                                "Answer: (B", len("Answer: ("), specials) == -0.9


def test_scores_and_reports_equal_the_proxy_adapters_on_the_same_model(fresh, proxy):
    served = ServedAdapter.load(fresh.url, max_in_flight=4)
    try:
        cs = _contexts(6)
        overrides = [None, {"planned_next": cs[1].action_space[0], "confidence": 0.3}, {}, None,
                     {"goal": "C2", "planned_next": cs[4].action_space[-1]}, None]
        want, got = proxy.act_batch(cs, overrides), served.act_batch(cs, overrides)
        for w, g in zip(want, got):
            assert list(w) == list(g) and max(abs(w[a] - g[a]) for a in w) < 1e-5
        _same_reports(served.emit_r_batch(cs), proxy.emit_r_batch(cs))
        _same_reports([served.emit_r(cs[1])], [proxy.emit_r(cs[1])])
        assert served.score_continuation(cs[0], "right") == pytest.approx(proxy.score_continuation(cs[0], "right"),
                                                                          abs=1e-4)
        assert served.act_ablated(cs[2]) == pytest.approx(proxy.act_ablated(cs[2]), abs=1e-5)
        # emit_r_batch, emit_r, act's own r for cs[0], cs[3], cs[5], score_continuation's
        assert served.emit_stats()["calls"] == 6 + 1 + 3 + 1
        spec = served.spec()
        assert spec["kind"] == "served" and spec["url"] == fresh.url and spec["served_model"] == "tiny"
        assert spec["server_models"] == ["tiny"] and spec["template_version"] == proxy.spec()["template_version"]
    finally:
        served.close()


def test_free_cot_generation_equals_the_proxy_adapters(fresh, lm, proxy):
    cs = _contexts(3, seed=9)
    free = ProxyAdapter.load(lm, device="cpu", mode="free_cot")
    served = ServedAdapter.load(fresh.url, mode="free_cot")
    try:
        assert served.emit_r_batch(cs) == free.emit_r_batch(cs)
        assert served.last_cot == free.last_cot
    finally:
        served.close()


def test_retries_with_backoff_then_succeeds(fresh):
    fresh.fail = [(503, {}), (429, {"Retry-After": "0"}), (502, {})]
    with CompletionsClient(fresh.url, "tiny", backoff=0.01, max_attempts=4) as client:
        assert client.generate("at C1", 2) == CompletionsClient(fresh.url, "tiny").generate("at C1", 2)
        assert client.retries == 3 and client.requests == 4


def test_gives_up_after_max_attempts_naming_the_url_and_status_never_the_key(fresh, monkeypatch):
    monkeypatch.setenv("TRB_API_KEY", KEY)
    fresh.always_fail = 503
    with pytest.raises(AdapterError, match="credentials in the URL are refused") as e:
        CompletionsClient(fresh.url.replace("http://", "http://alice:hunter2@"), "tiny")
    assert "hunter2" not in str(e.value)
    client = CompletionsClient(fresh.url, "tiny", backoff=0.01, max_attempts=3)
    with pytest.raises(AdapterError) as e:
        client.logprob("at C1", " left")
    msg = str(e.value)
    assert f"{fresh.url}/completions" in msg and "HTTP 503" in msg and "3 attempt" in msg
    assert KEY not in msg and "***" in msg  # the server echoed the header: masked
    assert fresh.requests == 3 and all(a == f"Bearer {KEY}" for a in fresh.auth)
    fresh.always_fail = 400  # a client error is not retried
    with pytest.raises(AdapterError, match="HTTP 400"):
        client.logprob("at C1", " left")
    assert fresh.requests == 4
    client.close()


def test_the_key_comes_from_the_environment_and_is_never_in_the_spec(fresh, monkeypatch, tmp_path):
    monkeypatch.setenv("MY_LAB_KEY", KEY)
    monkeypatch.delenv("TRB_API_KEY", raising=False)
    served = ServedAdapter.load(fresh.url, api_key_env="MY_LAB_KEY")
    try:
        served.act(_contexts(1)[0], {"planned_next": "left"})
        assert fresh.auth and all(a == f"Bearer {KEY}" for a in fresh.auth)
        assert KEY not in json.dumps(served.spec()) and KEY not in repr(vars(served))
    finally:
        served.close()
    fresh.auth.clear()
    with ServedAdapter.load(fresh.url).client as client:  # no key in TRB_API_KEY: no header at all
        client.generate("at C1", 1)
    assert fresh.auth == [None, None]


def test_requests_in_flight_are_bounded(fresh):
    fresh.delay = 0.05
    with CompletionsClient(fresh.url, "tiny", max_in_flight=3) as client:
        scores = client.score([("at C1\nAction:", [" left", " right", " stay", " wait"])] * 4)
    assert len(scores) == 4 and all(len(s) == 4 for s in scores) and fresh.requests == 16
    assert 2 <= fresh.max_active <= 3
    fresh.max_active = 0
    with CompletionsClient(fresh.url, "tiny", max_in_flight=1) as client:
        client.score([("at C1\nAction:", [" left", " right", " stay"])])
    assert fresh.max_active == 1


def test_load_errors_are_clear(fresh):
    with pytest.raises(AdapterError, match="does not serve 'other'"):
        ServedAdapter.load(fresh.url, served_model="other")
    with pytest.raises(AdapterError, match="failed after 1 attempt"):
        ServedAdapter.load("http://127.0.0.1:9/v1", max_attempts=1)
    with pytest.raises(AdapterError, match="activation access"):
        ServedAdapter.load(fresh.url).activation_sites()


def test_trb_run_served_end_to_end_and_conformance(fresh, release, tmp_path, monkeypatch, capsys):
    import duckdb

    from trb.cli import main
    from trb.run import load_adapter
    from trb.testing import check_adapter

    monkeypatch.setenv("TRB_API_KEY", KEY)
    db = tmp_path / "r.duckdb"
    # --scaffold none: acting needs no emit_r (the cot path is held to the proxy's above), so the run stays short
    assert main(["run", "--release", str(release), "--adapter", "served", "--model", fresh.url, "--baseline",
                 "instruct-base", "--tracks", "1,2,3", "--scaffold", "none", "--max-in-flight", "4", "--results",
                 str(db), "-q"]) == 0
    cap = capsys.readouterr()
    assert KEY not in cap.out + cap.err
    con = duckdb.connect(str(db), read_only=True)
    spec_text, timings = con.execute("SELECT adapter_spec, timings FROM runs").fetchone()
    n1, n3 = (con.execute(f"SELECT count(*) FROM item_scores WHERE track = '{t}'").fetchone()[0] for t in "13")
    con.close()
    spec = json.loads(spec_text)
    assert spec["kind"] == "served" and spec["adapter"] == "served" and spec["options"] == {"max_in_flight": 4, "scaffold": "none"}
    assert KEY not in spec_text and n1 > 0 and n3 > 0 and fresh.auth[-1] == f"Bearer {KEY}"
    summary = json.loads(timings)["summary"]
    assert summary["2"]["status"] == "not_applicable" and summary["2"]["needs"] == ["activation_access"]

    adapter = load_adapter("served", fresh.url, scaffold="none")
    try:
        report = check_adapter(adapter, release, max_items=3)
        assert report.passed, report.render()
    finally:
        adapter.adapter.close()


def test_registered_like_a_plugin_with_its_options():
    from trb.adapters.registry import available_adapters

    kind = available_adapters()["served"]
    assert kind.tier == "proxy" and kind.accepts == ("url",) and "activation_access" not in kind.capabilities
    assert {o.cli_flag for o in kind.options} >= {"--served-model", "--max-in-flight", "--api-key-env", "--tokenizer",
                                                   "--deadline"}


@pytest.fixture(scope="module")
def cot_lm(tmp_path_factory):
    """A tiny GPT-2 whose tokenizer has a chat template and whose own CoT states the slots (tests/trb/cot_models.py)."""
    from cot_models import build_cot_gpt2

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        yield build_cot_gpt2(tmp_path_factory.mktemp("served_cot_lm"), steps=120)


def test_chat_template_qa_prompts_mean_scores_and_cot_edit_equal_the_proxy_adapters(cot_lm):
    """The proxy's prompt options through HTTP: with --tokenizer the served adapter applies the same chat template,
    picks the same templates (qa for a question with option texts), length-normalises the same way and edits the
    same own chain of thought (generated by the server) as the proxy adapter on the same model."""
    from cot_models import context

    at = context(("left", "right", "stay"), "at C1")
    calm = context(("up", "down"), "calm at C2")
    question = StepContext(session_id="q", t=0, history=(), observation="What is 2+2?", action_space=("A", "B"),
                           action_texts=("3, or so", "4"))
    suggested = dataclasses.replace(question, user_slots=frozenset({"suggestion"}))  # said in the user's turn
    contexts = [at, calm, question, at, suggested]
    overrides = [{"goal": "C3", "planned_next": "stay"}, {"planned_next": "down"}, {"planned_next": "B"}, None,
                 {"planned_next": "A", "ext": {"suggestion": "I think the answer is (A) but I'm curious what you think."}}]
    options = {"chat_template": "auto", "prompt_format": "auto", "action_score": "mean", "intervention": "cot_edit"}
    proxy = ProxyAdapter.load(cot_lm, device="cpu", **options)
    with CompletionsServer(cot_lm, name="cot") as srv:
        served = ServedAdapter.load(srv.url, tokenizer=str(cot_lm), **options)
        try:
            assert [served.act_prompt(c, r) for c, r in zip(contexts, overrides)] == [
                proxy.act_prompt(c, r) for c, r in zip(contexts, overrides)]
            want, got = proxy.act_batch(contexts, overrides), served.act_batch(contexts, overrides)
            assert served.last_cot_edits == proxy.last_cot_edits
            assert served.cot_edit_stats() == proxy.cot_edit_stats()
            s, p = served.spec(), proxy.spec()
        finally:
            served.close()
    for w, g in zip(want, got):
        assert list(w) == list(g) and max(abs(w[a] - g[a]) for a in w) < 1e-5
    first = proxy.last_cot_edits[0]
    assert first["outcome"] in ("edited", "unchanged")  # spans were found: the edit path ran
    assert (first["text"] != first["own_cot"]) == (first["outcome"] == "edited")
    assert proxy.last_cot_edits[4]["user_turn"] == [overrides[4]["ext"]["suggestion"]]  # heard, not edited in
    assert s["chat_template_applied"] is True and p["chat_template_applied"] is True
    for key in ("intervention", "chat_template", "chat_template_sha256", "prompt_format", "prompt_templates",
                "r_placement", "action_score"):
        assert s[key] == p[key], key
    from trb.adapters.capabilities import CoTEdit

    assert CoTEdit in served.capabilities


def test_mean_action_scores_need_the_served_models_tokenizer(fresh):
    with pytest.raises(AdapterError, match="--tokenizer"):
        ServedAdapter.load(fresh.url, action_score="mean")
    with pytest.raises(AdapterError, match="intervention"):
        ServedAdapter.load(fresh.url, intervention="rewrite")


# -- issue 18: credentials, hung servers and keys that cannot be sent -------------------------------------------

SECRET = "tok-5ecret-0123456789"


def _trb(capsys, *args) -> tuple[int, str, str]:
    from trb.cli import main

    capsys.readouterr()
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("suffix", [f"?api_key={SECRET}", f"?access_token={SECRET}&x=1", f"#token={SECRET}"])
def test_credentials_in_a_query_are_refused_and_never_stored(fresh, release, tmp_path, capsys, suffix):
    with pytest.raises(AdapterError, match="credentials in the URL are refused") as e:
        ServedAdapter.load(fresh.url + suffix)
    assert SECRET not in e.value.message and fresh.url in e.value.message
    db = tmp_path / "r.duckdb"
    code, out, err = _trb(capsys, "run", "--release", release, "--adapter", "served", "--model", fresh.url + suffix,
                          "--baseline", "instruct-base", "--tracks", "1", "--scaffold", "none", "--results", db, "-q")
    assert code == ExitCode.ADAPTER and SECRET not in out + err and len(err.strip().splitlines()) == 1
    assert not db.exists()  # no run, so no spec holding the URL


def test_any_other_query_string_or_a_bad_url_is_one_clear_error(fresh):
    with pytest.raises(AdapterError, match="query string or fragment in the URL would not be sent"):
        CompletionsClient(fresh.url + "?api-version=2024-01-01")
    with pytest.raises(AdapterError, match="not a valid URL"):
        CompletionsClient("http://[::1/v1")
    with pytest.raises(AdapterError, match="not a valid URL"):
        CompletionsClient("http://127.0.0.1:notaport/v1")


@pytest.mark.parametrize("key,why", [("sk-clé-0123456789", "a non-ASCII character at position 6 of 17"),
                                     (KEY + "\n", f"a space or control character at position {len(KEY) + 1}"),
                                     ("sk trb 0123", "a space or control character at position 3 of 11")])
def test_a_key_that_cannot_be_sent_is_one_line_naming_the_variable(fresh, release, tmp_path, capsys, monkeypatch,
                                                                   key, why):
    monkeypatch.setenv("MY_LAB_KEY", key)
    with pytest.raises(AdapterError) as e:
        CompletionsClient(fresh.url, api_key_env="MY_LAB_KEY")
    assert e.value.message.startswith(f"the API key in $MY_LAB_KEY has {why}") and key.strip() not in e.value.message
    monkeypatch.setenv("TRB_API_KEY", key)
    code, out, err = _trb(capsys, "run", "--release", release, "--adapter", "served", "--model", fresh.url,
                          "--baseline", "instruct-base", "--tracks", "1", "--scaffold", "none", "--results",
                          tmp_path / "r.duckdb", "-q")
    assert code == ExitCode.ADAPTER and "Traceback" not in err and key.strip() not in err
    assert err.strip().splitlines()[-1].startswith("the API key in $TRB_API_KEY has")


def test_a_hung_server_is_reported_within_the_deadline(release, tmp_path, capsys):
    from hung_server import HungServer
    from trb.adapters.completions_client import PROBE_DEADLINE_S

    assert PROBE_DEADLINE_S <= 30  # what a hung server costs at load by default (was 5 x 120 s)
    with HungServer() as hung:
        t0 = time.monotonic()
        with pytest.raises(AdapterError) as e:
            ServedAdapter.load(hung.url + "/v1", deadline=2)
        elapsed = time.monotonic() - t0
        assert hung.connections >= 1
        assert 1.5 <= elapsed < 6, elapsed
        assert e.value.message.startswith(f"{hung.url}/v1/models: no answer within 2 s (GET /models: 1 attempt(s)")
        t0 = time.monotonic()
        code, out, err = _trb(capsys, "run", "--release", release, "--adapter", "served", "--model", hung.url + "/v1",
                              "--deadline", "2", "--baseline", "instruct-base", "--tracks", "1", "--scaffold", "none",
                              "--results", tmp_path / "r.duckdb", "-q")
        assert time.monotonic() - t0 < 20
    assert code == ExitCode.ADAPTER and err.strip().splitlines()[-1].startswith(f"{hung.url}/v1/models: no answer")


def test_a_flaky_request_is_retried_within_its_deadline_and_the_retry_is_announced(fresh, capsys):
    fresh.always_fail = 503
    with CompletionsClient(fresh.url, "tiny", backoff=0.4, max_attempts=10, deadline=2.5) as client:
        t0 = time.monotonic()
        with pytest.raises(AdapterError, match="no answer within 2.5 s") as e:
            client.generate("at C1", 1)
        elapsed = time.monotonic() - t0
    assert elapsed < 3.5 and 2 <= fresh.requests <= 4 and "HTTP 503" in e.value.message
    err = capsys.readouterr().err
    assert "retrying in" in err and "gives up after 2.5 s" in err  # the wait that took it past a second was said
