"""The proxy adapter's batched emit_r and its no-r_t ablation, on a tiny GPT-2 trained here (no network, no mocks).

The model is test_proxy_adapter's: trained on the adapter's own prompt template, where the action
copies planned_next, so the reasoning span governs the action and emptying it (the ablation) must
change what the model does.
"""

from __future__ import annotations

import random

import pytest

# trains a tiny GPT-2 here (seconds of torch on the CPU)
pytestmark = pytest.mark.slow

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from test_proxy_adapter import SPACES, _build_model, _r  # noqa: E402

from trb.adapters import proxy  # noqa: E402
from trb.adapters.capabilities import bind  # noqa: E402
from trb.adapters.proxy import ADAPTER, PROB_SLOTS, ProxyAdapter  # noqa: E402
from trb.context import R_SLOTS, PastStep, StepContext  # noqa: E402
from trb.errors import AdapterError  # noqa: E402

MODES = ("prompt_fill", "free_cot")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        from shared import built_once

        yield built_once(tmp_path_factory, "tiny_proxy_lm", _build_model)  # shared with test_proxy_adapter.py


def _load(model_dir, **options) -> ProxyAdapter:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        return ProxyAdapter.load(model_dir, device="cpu", **options)


@pytest.fixture(scope="module")
def adapter(model_dir):
    return _load(model_dir)


def _step(rng: random.Random, n_history: int, space="any", self_reports: bool = False) -> StepContext:
    hist = []
    for t in range(n_history):
        past = rng.choice(SPACES)
        hist.append(PastStep(t=t, observation=f"at C{rng.randint(1, 4)}", action=rng.choice(past), action_space=past,
                             r=_r(rng, past) if self_reports and rng.random() < 0.5 else None,
                             outcome=rng.choice(("moved", "blocked"))))
    return StepContext(session_id=f"s{rng.randint(0, 99)}", t=n_history, history=tuple(hist),
                       observation=f"at C{rng.randint(1, 4)}",
                       action_space=rng.choice(SPACES) if space == "any" else space)


def _emit_prompt_tokens(adapter: ProxyAdapter, c: StepContext) -> int:
    return len(adapter.tokenizer(adapter._emit_base(c), add_special_tokens=False)["input_ids"])


def _mixed(adapter: ProxyAdapter, n: int = 24, seed: int = 3) -> list[StepContext]:
    """Steps with and without history (some with earlier self-reports), open-ended steps and actions the
    model never saw, of very different prompt lengths, all short enough for free_cot's 64 tokens."""
    rng = random.Random(seed)
    cs = [_step(rng, rng.choice((0, 0, 1, 2, 3)), self_reports=True) for _ in range(n)]
    cs += [_step(rng, 0, space=None), _step(rng, 2, space=None), _step(rng, 1, space=("north", "south")),
           _step(rng, 0, space=("north", "south"))]
    cs = [c for c in cs if _emit_prompt_tokens(adapter, c) + proxy.FREE_COT_MAX_TOKENS <= adapter._window()]
    rng.shuffle(cs)
    lengths = [_emit_prompt_tokens(adapter, c) for c in cs]
    assert len(cs) >= n // 2 and max(lengths) >= 5 * min(lengths) and max(lengths) - min(lengths) >= 100
    assert any(not c.history for c in cs) and any(c.history for c in cs) and any(not c.action_space for c in cs)
    return cs


def _same_reports(single: list[dict], batch: list[dict]) -> None:
    assert len(single) == len(batch)
    for s, b in zip(single, batch):
        assert set(s) == set(b), (s, b)
        for slot in s:
            if slot in PROB_SLOTS:
                assert isinstance(b[slot], float) and abs(s[slot] - b[slot]) <= 1e-6, (slot, s, b)
            else:
                assert s[slot] == b[slot], (slot, s, b)


def _same_dists(xs: list[dict], ys: list[dict], tol: float = 1e-6) -> None:
    assert len(xs) == len(ys)
    for x, y in zip(xs, ys):
        assert list(x) == list(y) and max(abs(x[a] - y[a]) for a in x) <= tol, (x, y)


# -- emit_r_batch ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_emit_r_batch_equals_the_single_calls_and_their_counters(model_dir, mode, monkeypatch):
    single_adapter, batch_adapter, chunked_adapter = (_load(model_dir, mode=mode) for _ in range(3))
    cs = _mixed(single_adapter)
    single = [single_adapter.emit_r(c) for c in cs]
    batch = batch_adapter.emit_r_batch(cs)
    _same_reports(single, batch)
    assert batch_adapter.emit_stats() == single_adapter.emit_stats()
    assert batch_adapter.emit_count == len(cs)
    assert batch_adapter.last_cot == single_adapter.last_cot
    # in small chunks (several forward passes of mixed lengths) the reports are the same
    monkeypatch.setattr(proxy, "GREEDY_BATCH_CONTEXTS", 3)
    monkeypatch.setattr(proxy, "GREEDY_BATCH_TOKENS", 600)
    _same_reports(single, chunked_adapter.emit_r_batch(cs))
    assert chunked_adapter.emit_stats() == single_adapter.emit_stats()
    # the mix exercises what it should: elicited slots, and (free_cot) slots the model did not write validly
    assert sum(len(r) for r in single) > len(cs)
    if mode == "free_cot":
        assert 0 < sum(single_adapter.missing_counts.values()) < len(cs) * len(R_SLOTS)
    else:
        assert all({"planned_next", "caused_by_self", "confidence"} <= set(r) for r in single)


def test_emit_r_batch_of_nothing_counts_nothing(adapter):
    before = adapter.emit_stats()
    assert adapter.emit_r_batch([]) == []
    assert adapter.emit_stats() == before


@pytest.mark.parametrize("mode", MODES)
def test_a_generation_config_beyond_greedy_argmax_is_honoured(model_dir, mode):
    """generate() applies a repetition penalty from the model's generation config; emit_r_batch decodes as it does."""
    single_adapter, batch_adapter = _load(model_dir, mode=mode), _load(model_dir, mode=mode)
    for a in (single_adapter, batch_adapter):
        a.model.generation_config.repetition_penalty = 1.5
    cs = _mixed(single_adapter, n=10, seed=5)
    _same_reports([single_adapter.emit_r(c) for c in cs], batch_adapter.emit_r_batch(cs))
    assert batch_adapter.emit_stats() == single_adapter.emit_stats()


def _too_long(rng: random.Random) -> StepContext:
    return _step(rng, 30)


@pytest.mark.parametrize("mode", MODES)
def test_an_over_long_prompt_is_refused_by_emit_r_batch(model_dir, mode):
    a = _load(model_dir, mode=mode)
    rng = random.Random(8)
    long, short = _too_long(rng), _step(rng, 0)
    assert _emit_prompt_tokens(a, long) > a._window()
    with pytest.raises(AdapterError, match="context window"):
        a.emit_r(long)
    with pytest.raises(AdapterError, match="context window"):
        a.emit_r_batch([short, long])
    assert a.emit_count == 0 and sum(a.missing_counts.values()) == 0
    if mode == "free_cot":  # a prompt that fits, but not with the 64 tokens free_cot may add, is refused too
        near = next(c for c in (_step(rng, n) for n in range(3, 30))
                    if a._window() - proxy.FREE_COT_MAX_TOKENS < _emit_prompt_tokens(a, c) < a._window() - 10)
        for call in (a.emit_r, lambda c: a.emit_r_batch([short, c])):
            with pytest.raises(AdapterError, match="context window"):
                call(near)
        assert a.emit_count == 0


# -- the no-r_t ablation --------------------------------------------------------------------------------------


def _discrete(n: int, seed: int) -> list[StepContext]:
    """Discrete steps like those the model was trained on (at most one earlier step)."""
    rng = random.Random(seed)
    return [_step(rng, rng.choice((0, 1))) for _ in range(n)]


def test_act_ablated_acts_with_an_empty_span_and_never_emits(adapter):
    cs = _discrete(6, seed=13)
    before = adapter.emit_stats()
    ablated = [adapter.act_ablated(c) for c in cs]
    assert adapter.emit_stats() == before  # emit_r was not called
    _same_dists(ablated, [adapter.act(c, r_override={}) for c in cs], tol=1e-9)
    assert adapter.emit_stats() == before


def test_the_ablation_changes_what_a_governed_model_does(adapter):
    """On the trained model the span governs the action (planned_next=a makes a the likeliest action): emptying
    the span moves the distribution a long way from the one acted through planned_next=a, for some a at every step."""
    rng = random.Random(2)
    for c in _discrete(6, seed=17):
        ablated = adapter.act_ablated(c)
        r = _r(rng, c.action_space)
        planned = {a: adapter.act(c, r_override={**r, "planned_next": a}) for a in c.action_space}
        assert all(max(planned[a], key=planned[a].get) == a for a in c.action_space)
        assert max(abs(planned[a][a] - ablated[a]) for a in c.action_space) > 0.5, (c, ablated, planned)


def test_act_ablated_batch_equals_the_single_calls(adapter):
    cs = _discrete(7, seed=19)
    before = adapter.emit_stats()
    batch = adapter.act_ablated_batch(cs)
    _same_dists(batch, [adapter.act_ablated(c) for c in cs])
    assert adapter.emit_stats() == before
    assert adapter.act_ablated_batch([]) == []
    open_ended = _step(random.Random(1), 0, space=None)
    with pytest.raises(AdapterError, match="open-ended"):
        adapter.act_ablated_batch([cs[0], open_ended])


def test_with_no_scaffold_the_ablation_is_act(model_dir):
    a = _load(model_dir, scaffold="none")
    cs = _discrete(5, seed=23)
    ablated = a.act_ablated_batch(cs)
    _same_dists(ablated, [a.act(c) for c in cs], tol=1e-6)
    for c in cs:
        assert a.act_ablated(c) == a.act(c)
        # whatever r says, an instruct base's action does not read it
        assert a.act_ablated(c) == a.act(c, r_override={"planned_next": c.action_space[-1], "confidence": 0.9})
    assert a.emit_count == 0


def test_an_over_long_prompt_is_refused_by_the_ablation(adapter):
    with pytest.raises(AdapterError, match="context window"):
        adapter.act_ablated_batch([_too_long(random.Random(8))])


# -- declared capabilities ------------------------------------------------------------------------------------


def test_bind_reports_batched_emit_and_r_ablation(adapter):
    bound = bind(adapter)
    assert {"batched_emit", "r_ablation"} <= bound.capabilities
    assert {"batched_emit", "r_ablation"} <= set(ADAPTER.capabilities)
    assert set(ADAPTER.capabilities) == set(bound.capabilities)
    cs = _discrete(4, seed=29)
    _same_dists(bound.act_ablated_many(cs), adapter.act_ablated_batch(cs))
    calls = adapter.emit_count
    _same_reports([adapter.emit_r(c) for c in cs], bound.emit_many(cs))
    assert adapter.emit_count == calls + 2 * len(cs)
