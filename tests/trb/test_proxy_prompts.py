"""Prompts a model recognises: named templates (trace, qa), the tokenizer's chat template, option texts one per
line, and length-normalised action scores, on a tiny GPT-2 made locally (tests/trb/cot_models.py)."""

from __future__ import annotations

import hashlib
import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from cot_models import CHAT_TEMPLATE, build_cot_gpt2  # noqa: E402

from trb.adapters.proxy import ProxyAdapter  # noqa: E402
from trb.adapters.templates import QA, TRACE, choose_template  # noqa: E402
from trb.context import PastStep, StepContext  # noqa: E402
from trb.errors import AdapterError  # noqa: E402

PAST = PastStep(t=0, observation="at C1", r={"goal": "C2", "planned_next": "left"}, action="left",
                action_space=("left", "right"), outcome="moved")
TRACE_CTX = StepContext(session_id="s", t=1, history=(PAST,), observation="at C2", action_space=("left", "right"))
MCQ = StepContext(session_id="q", t=0, history=(), observation="What is 2+2?", action_space=("A", "B"),
                  action_texts=("3, or so", "4"))
R = {"goal": "C1", "planned_next": "left", "caused_by_self": 0.4}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        yield build_cot_gpt2(tmp_path_factory.mktemp("prompt_gpt2"), steps=40)


@pytest.fixture(scope="module")
def plain(model_dir):
    return ProxyAdapter.load(model_dir, device="cpu", chat_template="off")


@pytest.fixture(scope="module")
def chat(model_dir):
    return ProxyAdapter.load(model_dir, device="cpu")  # chat_template="auto": the tokenizer has one


def test_the_trace_template_is_bit_identical_to_before(plain):
    want = ("Step 0: at C1\nSelf-report: goal=C2; planned_next=left\nAction: left\nOutcome: moved\nStep 1: at C2\n"
            "Actions: left, right\nReasoning: goal=C1; planned_next=left; caused_by_self=0.40\nAction:")
    assert plain.act_prompt(TRACE_CTX, R) == want == ProxyAdapter.prompt(TRACE_CTX, R)
    assert plain._emit_base(TRACE_CTX) == want.split("\nReasoning:")[0] + "\nReasoning:"
    assert plain.spec()["template_version"] == TRACE.version == "trb-proxy-cot-1"
    assert plain.act_prompt(TRACE_CTX, {}) == want.split("\nReasoning:")[0] + "\nReasoning:\nAction:"


def test_the_chat_template_is_applied_when_the_tokenizer_has_one(chat, plain):
    user = ("Step 0: at C1\nSelf-report: goal=C2; planned_next=left\nAction: left\nOutcome: moved\nStep 1: at C2\n"
            "Actions: left, right")
    want = (f"<|user|>\n{user}\n\n{TRACE.instructions}\n<|assistant|>\n"
            "Reasoning: goal=C1; planned_next=left; caused_by_self=0.40\nAction:")
    assert chat.act_prompt(TRACE_CTX, R) == want
    assert chat._emit_base(TRACE_CTX) == f"<|user|>\n{user}\n\n{TRACE.instructions}\n<|assistant|>\nReasoning:"
    s, off = chat.spec(), plain.spec()
    assert s["chat_template_applied"] is True and s["chat_template"] == "auto"
    assert s["chat_template_sha256"] == hashlib.sha256(CHAT_TEMPLATE.encode()).hexdigest()
    assert off["chat_template_applied"] is False and off["chat_template_sha256"] is None
    assert s["prompt_templates"] == {"trace": "trb-proxy-cot-1", "qa": "trb-proxy-qa-2"}
    p = chat.act(TRACE_CTX, r_override=R)
    assert set(p) == {"left", "right"} and abs(sum(p.values()) - 1) < 1e-9


def test_the_qa_template_for_a_one_step_question(plain, chat):
    assert choose_template("auto", MCQ) is QA and choose_template("auto", TRACE_CTX) is TRACE
    want = "Question: What is 2+2?\n(A) 3, or so\n(B) 4\nReasoning: planned_next=B\nAnswer: ("
    assert plain.act_prompt(MCQ, {"planned_next": "B"}) == want
    assert chat.act_prompt(MCQ, {"planned_next": "B"}) == (
        "<|user|>\nQuestion: What is 2+2?\n(A) 3, or so\n(B) 4\n\n" + QA.instructions
        + "\n<|assistant|>\nReasoning: planned_next=B\nAnswer: (")
    # the labels are the scored continuations
    from trb.adapters.lm_scoring import score_naive

    p = plain.act(MCQ, r_override={"planned_next": "B"})
    ref = score_naive(plain.model, plain.tokenizer, [(want, ["A", "B"])])[0]
    z = sum(math.exp(x) for x in ref)
    assert [p["A"], p["B"]] == pytest.approx([math.exp(x) / z for x in ref], abs=1e-6)
    # forced trace on the same item: options one per line, "label: text" (the comma is inside a text)
    trace = ProxyAdapter(plain.model, plain.tokenizer, path=plain.path, sha256=plain.sha256, hashed=plain.hashed,
                         chat_template="off", prompt_format="trace")
    assert trace.act_prompt(MCQ, {}) == "Step 0: What is 2+2?\nActions:\nA: 3, or so\nB: 4\nReasoning:\nAction:"
    with pytest.raises(AdapterError, match="prompt_format"):
        ProxyAdapter(plain.model, plain.tokenizer, path=plain.path, sha256=plain.sha256, hashed=plain.hashed,
                     prompt_format="mcq")


def _direct_logprobs(adapter, prompt: str, cont: str) -> list[float]:
    """Each continuation token's log-probability, straight from the model's logits on prompt + continuation."""
    tok, model = adapter.tokenizer, adapter.model
    ctx = tok(prompt, add_special_tokens=False)["input_ids"]
    ids = tok(cont, add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logits = model(torch.tensor([ctx + ids])).logits[0].double()
    logp = torch.log_softmax(logits, dim=-1)
    return [float(logp[len(ctx) + k - 1, t]) for k, t in enumerate(ids)]


def test_mean_and_sum_action_scores_against_transformers(plain):
    c = StepContext(session_id="s", t=0, history=(), observation="at C1", action_space=("left", "rightmost stay"))
    mean = ProxyAdapter(plain.model, plain.tokenizer, path=plain.path, sha256=plain.sha256, hashed=plain.hashed,
                        chat_template="off", action_score="mean")
    prompt = plain.act_prompt(c, {"planned_next": "left"})
    lps = {a: _direct_logprobs(plain, prompt, " " + a) for a in c.action_space}
    assert len(lps["left"]) != len(lps["rightmost stay"])  # the normalisation matters
    for adapter, agg in ((plain, sum), (mean, lambda x: sum(x) / len(x))):
        scores = [agg(lps[a]) for a in c.action_space]
        z = sum(math.exp(x) for x in scores)
        p = adapter.act(c, r_override={"planned_next": "left"})
        assert [p[a] for a in c.action_space] == pytest.approx([math.exp(x) / z for x in scores], abs=1e-5)
    assert mean.spec()["action_score"] == "mean" and plain.spec()["action_score"] == "sum"
