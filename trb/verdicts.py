"""One rule for every verdict the report gives: a figure's interval against a threshold, never its point value.

A track declares a verdict on a figure as a :class:`FlagRule` on its :class:`~trb.tracks.base.Metric`
(``Metric.verdict``); :func:`decide` applies it to the figure's interval:

* **flagged**: the whole interval lies on the flagged side of the threshold;
* **not flagged**: the whole interval lies on the other side;
* **not established**: the interval reaches both sides (or there is no interval: one session, or point values
  only): the verdict says so, with the figures;
* **undefined**: the figure itself is undefined; a flag on it is impossible.

Where the interval's coverage is not good enough at the sizes runs have, the rule names an exact test instead
(``FlagRule.test``): ``"paired exact"`` (McNemar's, for the rollout tracks' paired binary outcomes) or
``"sign flip"`` (paired continuous differences), each as two one-sided tests at half the interval's miss rate:
flagged when the test establishes the flagged side, not flagged when it establishes the other, else not
established (:func:`decide_test`; the track supplies the two p-values: :mod:`trb.paired_tests`).

Every verdict carries its rule in words (``rule``), which the report prints in Markdown, HTML and JSON. A verdict
decided this way errs under the null at most as often as the interval fails to cover: at a 95 % interval, at most
2.5 % of runs of a figure exactly at the threshold are flagged (tests/trb/test_verdicts.py checks it by simulation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

__all__ = ["FlagRule", "decide", "decide_test", "verdict_of", "FLAGGED", "NOT_FLAGGED", "NOT_ESTABLISHED", "UNDEFINED", "verdict_text",
           "verdict_short"]

#: How a verdict is decided: by the figure's interval, or by an exact test of the two paired conditions.
TESTS = {"interval": "the figure's interval",
         "paired exact": "exact paired test (McNemar's: the discordant pairs ~ Binomial(m, ½) under no difference)",
         "sign flip": "paired sign-flip randomisation test of the per-pair differences"}

FLAGGED = "flagged"
NOT_FLAGGED = "not flagged"
NOT_ESTABLISHED = "not established"
UNDEFINED = "undefined"


@dataclass(frozen=True)
class FlagRule:
    """A flag on a figure, decided by its interval against ``threshold``.

    Attributes:
        name: the flag's name, as the report says it ("legible but harmful").
        threshold: the threshold.
        side: the flagged side: ``"below"`` or ``"above"`` the threshold.
        inclusive: whether the threshold itself is on the flagged side (a lift ≤ 0 is flagged: ``inclusive``).
        says: what a flag means, in one line.
        red: whether a flagged figure is shown red (the spec's RED flags).
        test: ``"interval"`` (the figure's interval against the threshold), or an exact test the track computes
            (``"paired exact"``, ``"sign flip"``; :func:`decide_test`).
    """

    name: str
    threshold: float
    side: Literal["below", "above"]
    says: str
    inclusive: bool = False
    red: bool = True
    test: str = "interval"

    def __post_init__(self) -> None:
        if self.side not in ("below", "above"):
            raise ValueError(f"a flag's side is 'below' or 'above', not {self.side!r}")
        if self.test not in TESTS:
            raise ValueError(f"a flag's test is one of {', '.join(TESTS)}, not {self.test!r}")

    def rule(self, confidence: float = 0.95) -> str:
        """The rule in words."""
        pct = f"{round(100 * confidence)}%"
        if self.test != "interval":
            level = f"{(1 - confidence) / 2:g}"
            where = "below" if self.side == "below" else "above"
            other = "above" if self.side == "below" else "below"
            return (f"by the {TESTS[self.test]}, each side one-sided at {level}: flagged when it establishes the "
                    f"figure {where} {self.threshold:g}; not flagged when it establishes it {other}; otherwise "
                    "not established")
        flag, clear = self.clauses()
        where = ("at or " if self.inclusive else "") + self.side
        return (f"flagged when the whole {pct} interval lies {where} {self.threshold:g} ({flag}); not flagged when "
                f"{clear}; otherwise (the interval reaches both sides, or there is none) not established")

    def clauses(self) -> tuple[str, str]:
        """(the flagged clause, the cleared clause) of the rule: ``("upper bound < 1", "lower bound ≥ 1")``."""
        t = f"{self.threshold:g}"
        if self.side == "below":
            return (f"upper bound ≤ {t}", f"lower bound > {t}") if self.inclusive else \
                (f"upper bound < {t}", f"lower bound ≥ {t}")
        return (f"lower bound ≥ {t}", f"upper bound < {t}") if self.inclusive else \
            (f"lower bound > {t}", f"upper bound ≤ {t}")


def _bad(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def decide(rule: FlagRule, value, ci_low, ci_high, *, confidence: float = 0.95) -> dict:
    """The verdict of ``rule`` on a figure (point ``value``, interval ``[ci_low, ci_high]``).

    Returns ``{"name", "verdict", "rule", "value", "ci_low", "ci_high", "threshold", "says", "red"}`` with
    ``verdict`` one of flagged, not flagged, not established, undefined.
    """
    out = {"name": rule.name, "rule": rule.rule(confidence), "threshold": rule.threshold, "says": rule.says,
           "flag_clause": rule.clauses()[0], "clear_clause": rule.clauses()[1],
           "value": None if _bad(value) else float(value), "ci_low": None if _bad(ci_low) else float(ci_low),
           "ci_high": None if _bad(ci_high) else float(ci_high), "red": False}
    if out["value"] is None:
        out["verdict"] = UNDEFINED
        return out
    lo, hi, t = out["ci_low"], out["ci_high"], rule.threshold
    if lo is None or hi is None:
        out["verdict"] = NOT_ESTABLISHED
        out["why"] = "no interval"
        return out
    if rule.side == "below":
        flagged = hi <= t if rule.inclusive else hi < t
        clear = lo > t if rule.inclusive else lo >= t
    else:
        flagged = lo >= t if rule.inclusive else lo > t
        clear = hi < t if rule.inclusive else hi <= t
    out["verdict"] = FLAGGED if flagged else NOT_FLAGGED if clear else NOT_ESTABLISHED
    out["red"] = bool(flagged and rule.red)
    if out["verdict"] == NOT_ESTABLISHED:
        out["why"] = f"the interval reaches both sides of {t:g}"
    return out


def decide_test(rule: FlagRule, value, test: dict | None, *, confidence: float = 0.95) -> dict:
    """The verdict of ``rule`` (an exact-test rule) from ``test``: ``{"p_flag", "p_clear", "figures"}``, the
    one-sided p-values of "the figure is not on the flagged side" and "not on the other side", and what they were
    computed from. No test (None): not established."""
    alpha = (1 - confidence) / 2
    out = {"name": rule.name, "rule": rule.rule(confidence), "threshold": rule.threshold, "says": rule.says,
           "test": rule.test, "value": None if _bad(value) else float(value), "ci_low": None, "ci_high": None,
           "red": False}
    out["flag_clause"] = f"{rule.test} test p < {alpha:g} for the flagged side"
    out["clear_clause"] = f"{rule.test} test p < {alpha:g} for the other side"
    if out["value"] is None:
        out["verdict"] = UNDEFINED
        return out
    if not test:
        out["verdict"], out["why"] = NOT_ESTABLISHED, "no test"
        return out
    out.update(p_flag=float(test["p_flag"]), p_clear=float(test["p_clear"]), figures=test.get("figures"))
    if out["p_flag"] < alpha:
        out["verdict"] = FLAGGED
    elif out["p_clear"] < alpha:
        out["verdict"] = NOT_FLAGGED
    else:
        out["verdict"] = NOT_ESTABLISHED
        out["why"] = "the test establishes neither side"
    out["red"] = bool(out["verdict"] == FLAGGED and rule.red)
    figs = f"{test.get('figures')}: " if test.get("figures") else ""
    out["flag_clause"] = f"{figs}one-sided p = {out['p_flag']:.3g} < {alpha:g}"
    out["clear_clause"] = f"{figs}one-sided p = {out['p_clear']:.3g} < {alpha:g} for the other side"
    out["neither"] = f"{figs}one-sided p = {out['p_flag']:.3g} and {out['p_clear']:.3g}, neither < {alpha:g}"
    if test.get("why"):  # the track's own reason (no discordant pair)
        out["neither"] = f"{test['why']}; {out['neither']}"
    return out


def verdict_of(rule: FlagRule, value, ci_low, ci_high, test: dict | None = None, *,
               confidence: float = 0.95) -> dict:
    """The verdict of ``rule`` on a figure, as the report gives it: by its interval (:func:`decide`), or, for an
    exact-test rule, by ``test`` (the track's ``describe(...)["verdict_test"]``; :func:`decide_test`) with the
    interval kept beside it. ``trb report`` and ``trb calibrate`` both decide through this one function."""
    if rule.test == "interval":
        return decide(rule, value, ci_low, ci_high, confidence=confidence)
    v = decide_test(rule, value, test, confidence=confidence)
    v["ci_low"] = None if _bad(ci_low) else float(ci_low)
    v["ci_high"] = None if _bad(ci_high) else float(ci_high)
    return v


def verdict_text(v: dict) -> str:
    """A verdict in one line, with its figures and the clause of its rule that decided it."""
    figs = "undefined" if v["value"] is None else f"{v['value']:.3f}" + (
        f" [{v['ci_low']:.3f}, {v['ci_high']:.3f}]" if v["ci_low"] is not None and v["ci_high"] is not None
        else " (no interval)")
    if v["verdict"] == FLAGGED:
        return f"{'RED: ' if v['red'] else ''}{v['name']}: {v['says']} ({figs}: {v['flag_clause']})"
    if v["verdict"] == NOT_FLAGGED:
        return f"{v['name']}: not flagged ({figs}: {v['clear_clause']})"
    if v["verdict"] == NOT_ESTABLISHED:
        if v.get("neither"):
            return f"{v['name']}: not established ({figs}; {v['neither']})"
        return f"{v['name']}: not established ({figs}: neither {v['flag_clause']} nor {v['clear_clause']})"
    return f"{v['name']}: no verdict on an undefined figure"


def verdict_short(v: dict) -> str:
    """A verdict that is not a flag, in a few words for a table cell whose figures stand beside it."""
    if v["verdict"] == NOT_ESTABLISHED:
        why = v["why"] if v.get("why") in ("no interval", "no test") else v.get("neither") or \
            f"neither {v['flag_clause']} nor {v['clear_clause']}"
        return f"{v['name']}: not established ({why})"
    if v["verdict"] == NOT_FLAGGED:
        return f"{v['name']}: not flagged ({v['clear_clause']})"
    return verdict_text(v)
