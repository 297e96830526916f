"""The adapter conformance suite: does an adapter honour the TRB contract?

A lab calls one function on its adapter and a small release::

    from trb.testing import check_adapter

    report = check_adapter(MyAdapter(...), "releases/0.1.0", max_items=40)
    print(report.render())
    assert report.passed

Every check runs the adapter's real hooks on real contexts of the release (the
same contexts ``trb run`` hands it) and is reported with what it saw:

* ``contract``: the two hooks, ``spec`` and ``tier``; every declared capability implemented.
* ``spec``: ``spec()`` is JSON-serialisable and the same on every call.
* ``act_distribution``: ``act`` returns a probability for exactly the step's action
  space, non-negative, summing to 1 (within 1e-4), with and without an override.
* ``act_deterministic``: the same call twice gives the same distribution.
* ``override_is_local``: ``act(c, r')`` changes neither ``c`` nor ``r'``, and leaves
  nothing behind: ``act(c)`` and ``emit_r(c)`` after it equal what they were before.
* ``emit_r_slots``: ``emit_r`` returns a mapping of known slots; probabilities in [0, 1];
  ``planned_next`` one of the step's actions when it has an action space.
* ``batched_act`` / ``batched_emit``: where declared, the batched hook equals the
  single calls (within ``tolerance``).
* ``continuation_scoring``: where declared, a finite log-probability <= 0.

:func:`assert_conformance` raises :class:`trb.errors.CheckFailed` naming every failed check.
"""

from __future__ import annotations

import copy
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from schemas.release_format import R_SLOTS
from trb.adapters.capabilities import BatchedAct, BatchedEmit, ContinuationScoring, bind
from trb.errors import AdapterError, CheckFailed, TrbError

__all__ = ["Check", "ConformanceReport", "check_adapter", "assert_conformance"]

_PROB_SLOTS = ("caused_by_self", "confidence")


@dataclass
class Check:
    name: str
    passed: bool
    detail: str = ""
    n: int = 0  # how many cases it was checked on


@dataclass
class ConformanceReport:
    adapter: str
    tier: str | None
    capabilities: list[str]
    checks: list[Check] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks)

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    def render(self) -> str:
        lines = [f"adapter {self.adapter} ({self.tier}); capabilities: {', '.join(self.capabilities) or 'none'}"]
        for c in self.checks:
            mark = "ok  " if c.passed else "FAIL"
            lines.append(f"  {mark} {c.name:<22} {c.n:>4} case(s)  {c.detail}")
        lines.append("conformance passed" if self.passed else f"conformance FAILED ({len(self.failed)} check(s))")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {"adapter": self.adapter, "tier": self.tier, "capabilities": self.capabilities, "passed": self.passed,
                "checks": [vars(c) for c in self.checks]}


def _contexts(release_dir, split: str | None, max_items: int):
    """Up to ``max_items`` Track 1 (context, r') cases and as many Track 3 contexts from the release."""
    from trb.releases import Release
    from trb.tracks.track1 import track1_items
    from trb.tracks.track3 import track3_items

    rel = Release(release_dir)
    try:
        splits = [split] if split else [s for s in ("eval", "dev", "train", "transfer") if s in rel.splits]
        acts, emits = [], []
        for s in splits:
            for item in track1_items(rel, s):
                if item.context.action_space and len(acts) < max_items:
                    acts.append((item.context, item.r_prime))
                if len(acts) >= max_items:
                    break
            for item in track3_items(rel, s):
                if len(emits) >= max_items:
                    break
                emits.append(item.context)
            if len(acts) >= max_items and len(emits) >= max_items:
                break
        return acts, emits
    finally:
        rel.close()


def _dist_problem(p, space) -> str | None:
    if not isinstance(p, Mapping):
        return f"returned {type(p).__name__}, not a mapping of action -> probability"
    if set(p) != set(space):
        return f"returned actions {sorted(p)}, expected exactly {sorted(space)}"
    vals = [float(v) for v in p.values()]
    if any(not math.isfinite(v) or v < 0 for v in vals):
        return "a probability is negative or not finite"
    if abs(sum(vals) - 1.0) > 1e-4:
        return f"probabilities sum to {sum(vals):.6g}"
    return None


def _max_diff(p: Mapping, q: Mapping) -> float:
    return max((abs(float(p.get(a, 0.0)) - float(q.get(a, 0.0))) for a in set(p) | set(q)), default=0.0)


def _r_diff(a: Mapping | None, b: Mapping | None) -> float | str:
    """The largest difference between two r reports (inf when a non-numeric slot differs)."""
    a, b = dict(a or {}), dict(b or {})
    worst = 0.0
    for k in set(a) | set(b):
        x, y = a.get(k), b.get(k)
        if isinstance(x, (int, float)) and isinstance(y, (int, float)):
            worst = max(worst, abs(float(x) - float(y)))
        elif x != y:
            return math.inf
    return worst


def check_adapter(adapter, release_dir: str | os.PathLike, *, split: str | None = None, max_items: int = 24,
                  tolerance: float = 1e-5) -> ConformanceReport:
    """Run every conformance check of ``adapter`` on contexts of the release at ``release_dir``.

    ``split`` picks the split the contexts come from (default: eval, else the first the
    release has); ``max_items`` bounds the cases per check. Never raises for an adapter
    that breaks its contract: that is a failed check. Raises ReleaseError for a bad release.
    """
    name = type(getattr(adapter, "adapter", adapter)).__name__
    try:
        bound = bind(adapter)
    except AdapterError as e:
        report = ConformanceReport(name, getattr(adapter, "tier", None), [])
        report.checks.append(Check("contract", False, e.message, 1))
        return report
    report = ConformanceReport(bound.name, bound.tier, sorted(bound.capabilities))
    report.checks.append(Check("contract", True, "two hooks, spec, tier and every declared capability present", 1))
    add = report.checks.append

    def guarded(check: str, fn):
        try:
            fn()
        except (TrbError, Exception) as e:  # an adapter that raises fails the check, the suite goes on
            add(Check(check, False, f"raised {type(e).__name__}: {e}"))

    try:
        s1, s2 = bound.spec(), bound.spec()
        json.dumps(s1, sort_keys=True)
        add(Check("spec", s1 == s2, "JSON-serialisable and stable" if s1 == s2 else "differs between two calls", 2))
    except Exception as e:  # noqa: BLE001
        add(Check("spec", False, f"spec() is not JSON-serialisable or raised: {type(e).__name__}: {e}", 1))

    acts, emits = _contexts(release_dir, split, max_items)
    if not acts and not emits:
        add(Check("cases", False, "the release has no Track 1 or Track 3 item to check the adapter on"))
        return report

    def act_checks():
        bad, nondet, n = [], 0, 0
        for ctx, rp in acts:
            for r in (None, rp):
                p = bound.act(ctx, r)
                n += 1
                problem = _dist_problem(p, ctx.action_space)
                if problem:
                    bad.append(f"step {ctx.t} of {ctx.session_id}: {problem}")
                    continue
                if _max_diff(p, bound.act(ctx, r)) > tolerance:
                    nondet += 1
        add(Check("act_distribution", not bad, bad[0] if bad else "exactly the action space, summing to 1", n))
        add(Check("act_deterministic", nondet == 0, f"{nondet} call(s) gave a different distribution the second time"
                  if nondet else "the same call gives the same distribution", n))

    def override_checks():
        problems, n = [], 0
        for ctx, rp in acts:
            ctx_before, rp_before = copy.deepcopy(ctx), copy.deepcopy(rp)
            own_before, emit_before = bound.act(ctx, None), bound.emit_r(ctx)
            bound.act(ctx, rp)
            n += 1
            if ctx != ctx_before or ctx.extras != ctx_before.extras:
                problems.append(f"act(c, r') changed the context of step {ctx.t} of {ctx.session_id}")
            if rp != rp_before:
                problems.append(f"act(c, r') changed r' at step {ctx.t} of {ctx.session_id}")
            if _max_diff(bound.act(ctx, None), own_before) > tolerance:
                problems.append(f"after act(c, r'), act(c) differs at step {ctx.t} of {ctx.session_id}: the override "
                                "persisted")
            if _r_diff(bound.emit_r(ctx), emit_before) > tolerance:
                problems.append(f"after act(c, r'), emit_r(c) differs at step {ctx.t} of {ctx.session_id}")
        add(Check("override_is_local", not problems, problems[0] if problems else
                  "r_override changes neither the context nor r', and does not persist", n))

    def emit_checks():
        problems = []
        for ctx in emits + [c for c, _ in acts]:
            r = bound.emit_r(ctx)
            if not isinstance(r, Mapping):
                problems.append(f"emit_r returned {type(r).__name__}, not a mapping")
                continue
            unknown = set(r) - set(R_SLOTS) - {"ext"}
            if unknown:
                problems.append(f"emit_r returned unknown slot(s) {sorted(unknown)}")
            for slot in _PROB_SLOTS:
                v = r.get(slot)
                if v is not None and not (isinstance(v, (int, float)) and 0.0 <= float(v) <= 1.0):
                    problems.append(f"{slot}={v!r} is not a probability")
            plan = r.get("planned_next")
            if plan is not None and ctx.action_space and plan not in ctx.action_space:
                problems.append(f"planned_next={plan!r} is not an action of step {ctx.t} of {ctx.session_id}")
        add(Check("emit_r_slots", not problems, problems[0] if problems else "known slots, probabilities in [0, 1]",
                  len(emits) + len(acts)))

    def batched_act_check():
        batched = bound.get(BatchedAct)
        contexts = [c for c, _ in acts]
        rs = [rp if i % 2 else None for i, (_, rp) in enumerate(acts)]
        many = batched.act_batch(contexts, rs)
        worst = max((_max_diff(p, bound.act(c, r)) for c, r, p in zip(contexts, rs, many)), default=0.0) \
            if len(many) == len(contexts) else math.inf
        add(Check("batched_act", worst <= tolerance, f"max |batched − single| = {worst:.3g}", len(contexts)))

    def batched_emit_check():
        batched = bound.get(BatchedEmit)
        contexts = emits + [c for c, _ in acts]
        many = batched.emit_r_batch(contexts)
        worst = max((_r_diff(r, bound.emit_r(c)) for c, r in zip(contexts, many)), default=0.0) \
            if len(many) == len(contexts) else math.inf
        add(Check("batched_emit", worst <= tolerance, f"max |batched − single| = {worst:.3g}", len(contexts)))

    def continuation_check():
        scorer = bound.get(ContinuationScoring)
        bad, n = [], 0
        for ctx, rp in acts[:4]:
            text = ctx.action_space[0]
            for r in (None, rp):
                v = scorer.score_continuation(ctx, text, r_override=r)
                n += 1
                if not isinstance(v, (int, float)) or not math.isfinite(float(v)) or float(v) > 1e-9:
                    bad.append(f"score_continuation returned {v!r}, not a finite log-probability <= 0")
        add(Check("continuation_scoring", not bad, bad[0] if bad else "finite log-probabilities <= 0", n))

    if acts:
        guarded("act_distribution", act_checks)
        guarded("override_is_local", override_checks)
    guarded("emit_r_slots", emit_checks)
    if bound.has(BatchedAct) and acts:
        guarded("batched_act", batched_act_check)
    if bound.has(BatchedEmit):
        guarded("batched_emit", batched_emit_check)
    if bound.has(ContinuationScoring) and acts:
        guarded("continuation_scoring", continuation_check)
    return report


def assert_conformance(adapter, release_dir: str | os.PathLike, **kwargs) -> ConformanceReport:
    """:func:`check_adapter`, raising :class:`~trb.errors.CheckFailed` when any check fails."""
    report = check_adapter(adapter, release_dir, **kwargs)
    if not report.passed:
        raise CheckFailed(f"adapter {report.adapter} does not conform: " + "; ".join(
            f"{c.name}: {c.detail}" for c in report.failed))
    return report
