"""Ordinal α, "unsure" as missing, and α's CI from a bootstrap of sessions (real corpus store, no Label Studio).

The references are independent of annotate.agreement: the ``krippendorff`` package (on the labels
as strings, with its own value domain) for every α, and a cluster bootstrap written here in numpy.
"""

import json

import krippendorff
import numpy as np
import pytest

from annotate.agreement import (
    ATTRIBUTION_ORDER,
    agreement,
    bootstrap_alpha,
    drop_unsure,
    krippendorff_alpha,
    project_agreement,
)
from corpus import Corpus, ingest, init_corpus
from corpus.labels import add_annotations, make_annotation
from corpus.review import ATTRIBUTION_LABELS
from factories import attribution, counterfactual, session, write_jsonl
from toolkit.errors import ExitCode

ORDER = ["self", "unsure", "exogenous"]


def _package_alpha(units, level, domain=ORDER):
    """The package's α on string reliability data (annotators × items, "nan" missing); None if undefined."""
    units = {k: v for k, v in units.items() if len(v) >= 2}
    who = sorted({a for labels in units.values() for a in labels})
    data = np.array([[labels.get(a, np.nan) for labels in units.values()] for a in who], dtype=object).astype(str)
    if not units or len({v for labels in units.values() for v in labels.values()}) < 2:
        return None
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement=level, value_domain=domain))


def test_the_order_covers_exactly_the_caused_by_self_labels():
    assert ATTRIBUTION_ORDER == ("self", "unsure", "exogenous")
    assert set(ATTRIBUTION_ORDER) == set(ATTRIBUTION_LABELS)


def test_ordinal_alpha_by_hand():
    # Two coders, three items: u1 self/self, u2 self/unsure, u3 exogenous/exogenous.
    # Coincidences: o_ss = 2, o_su = o_us = 1, o_ee = 2; n_s = 3, n_u = 1, n_e = 2, n = 6.
    # Ordinal delta^2_ck = (sum_{g=c..k} n_g - (n_c + n_k)/2)^2: su = (4 - 2)^2 = 4, se = (6 - 2.5)^2 = 12.25,
    # ue = (3 - 1.5)^2 = 2.25. Observed sum o*d = 2 * 4 = 8; expected sum n_c n_k d over c != k
    # = 2 * (3*1*4 + 3*2*12.25 + 1*2*2.25) = 180. alpha = 1 - (n - 1) * 8 / 180 = 1 - 40/180 = 7/9.
    # Nominal: observed 2, expected n^2 - sum n_c^2 = 36 - 14 = 22: alpha = 1 - 5 * 2 / 22 = 6/11.
    units = {"u1": {"A": "self", "B": "self"}, "u2": {"A": "self", "B": "unsure"},
             "u3": {"A": "exogenous", "B": "exogenous"}}
    assert krippendorff_alpha(units, level="ordinal", order=ATTRIBUTION_ORDER) == pytest.approx(7 / 9)
    assert krippendorff_alpha(units) == pytest.approx(6 / 11)
    assert _package_alpha(units, "ordinal") == pytest.approx(7 / 9)
    # "unsure" as missing: u2 keeps one label and leaves alpha's data; u1 and u3 agree: alpha = 1
    kept, dropped = drop_unsure(units)
    assert dropped == 1 and kept["u2"] == {"A": "self"}
    assert krippendorff_alpha(kept, level="ordinal", order=ATTRIBUTION_ORDER) == pytest.approx(1.0)
    a = project_agreement("caused_by_self", units, level="ordinal", order=ATTRIBUTION_ORDER, unsure="missing",
                          reps=50)
    assert (a.alpha, a.unsure_dropped, a.pairable_items, a.order) == (pytest.approx(1.0), 1, 2, ORDER)
    assert a.disagreements == [{"target_id": "u2", "votes": {"self": 1, "unsure": 1}}]  # as cast


def test_ordinal_alpha_weighs_self_against_exogenous_more_than_against_unsure():
    near = {f"u{i}": {"A": "self", "B": "self"} for i in range(4)} | {"x": {"A": "self", "B": "unsure"},
                                                                      "y": {"A": "exogenous", "B": "exogenous"}}
    far = {**near, "x": {"A": "self", "B": "exogenous"}}
    assert krippendorff_alpha(near, level="ordinal", order=ATTRIBUTION_ORDER) > krippendorff_alpha(
        far, level="ordinal", order=ATTRIBUTION_ORDER)


def _random_units(rng, n_items, sessions_of=None, p_missing=0.3):
    units = {}
    for j in range(n_items):
        truth = rng.integers(0, 3)
        labels = {}
        for a in "ABCD":
            if rng.random() < p_missing:
                continue
            labels[a] = ORDER[truth if rng.random() < 0.6 else rng.integers(0, 3)]
        if labels:
            units[f"i{j:03d}"] = labels
    return units


@pytest.mark.parametrize("level", ["nominal", "ordinal"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_full_data_alpha_of_the_bootstrap_arithmetic_is_the_packages(level, seed):
    units = _random_units(np.random.default_rng(seed), 60)
    for u, domain in ((units, ORDER), (drop_unsure(units)[0], ["self", "exogenous"])):
        ref = _package_alpha(u, level, domain)
        assert krippendorff_alpha(u, level=level, order=ATTRIBUTION_ORDER) == pytest.approx(ref, rel=1e-12, abs=1e-12)
        boot = bootstrap_alpha(u, level=level, order=ATTRIBUTION_ORDER, reps=10)
        assert boot.alpha == pytest.approx(ref, rel=1e-12, abs=1e-12)


def _numpy_cluster_bootstrap(units, sessions, level, reps, seed):
    """A cluster bootstrap written here: draw sessions (sorted) with replacement, pool their items' columns
    (a session drawn twice counts twice), α by the package; the interval over the defined ones."""
    units = {k: v for k, v in units.items() if len(v) >= 2}
    keys = sorted({sessions[i] for i in units})
    items_of = {k: [i for i in units if sessions[i] == k] for k in keys}
    idx = np.random.default_rng(seed).integers(0, len(keys), size=(reps, len(keys)))
    alphas, undefined = [], 0
    for row in idx:
        pooled = {f"{n}:{i}": units[i] for n, s in enumerate(row) for i in items_of[keys[s]]}
        a = _package_alpha(pooled, level)
        if a is None:
            undefined += 1
        else:
            alphas.append(a)
    return (float(np.percentile(alphas, 2.5)), float(np.percentile(alphas, 97.5))), undefined


@pytest.mark.parametrize("level", ["nominal", "ordinal"])
def test_cluster_bootstrap_matches_an_independent_numpy_one(level):
    rng = np.random.default_rng(7)
    units = _random_units(rng, 45)
    sessions = {item: f"s{rng.integers(0, 9)}" for item in units}
    ci, undefined = _numpy_cluster_bootstrap(units, sessions, level, reps=300, seed=11)
    boot = bootstrap_alpha(units, sessions, level=level, order=ATTRIBUTION_ORDER, reps=300, seed=11)
    assert boot.ci == pytest.approx(ci, rel=1e-9)
    assert (boot.resamples, boot.undefined, boot.sessions) == (300, undefined, 9)


def test_items_of_a_session_are_resampled_together():
    # 12 sessions of 10 items; within a session every item tells the same story (the annotators agree on
    # all of them, or disagree on all of them). Items look independent but are not: resampling items
    # gives a far narrower interval than resampling sessions.
    units, sessions = {}, {}
    for s in range(12):
        agree = s % 3 != 0
        for i in range(10):
            truth = ORDER[(s + i) % 3]
            other = truth if agree else ORDER[(s + i + 1) % 3]
            units[f"s{s}.i{i}"] = {"A": truth, "B": other}
            sessions[f"s{s}.i{i}"] = f"s{s:02d}"
    by_session = bootstrap_alpha(units, sessions, reps=1000, seed=0)
    by_item = bootstrap_alpha(units, None, reps=1000, seed=0)
    width = lambda b: b.ci[1] - b.ci[0]  # noqa: E731
    assert (by_session.sessions, by_item.sessions) == (12, 120)
    assert width(by_session) > 2 * width(by_item)
    assert by_session.alpha == by_item.alpha == pytest.approx(krippendorff_alpha(units))


def test_undefined_resamples_are_counted_and_left_out():
    # Two sessions: in one every label is self, in the other exogenous. A resample that draws one
    # session twice holds a single category: alpha undefined. The others draw both: alpha = 1.
    units = {"a1": {"A": "self", "B": "self"}, "a2": {"A": "self", "B": "self"},
             "b1": {"A": "exogenous", "B": "exogenous"}}
    sessions = {"a1": "sa", "a2": "sa", "b1": "sb"}
    idx = np.random.default_rng(5).integers(0, 2, size=(400, 2))
    expected = int((idx[:, 0] == idx[:, 1]).sum())
    boot = bootstrap_alpha(units, sessions, reps=400, seed=5)
    assert 100 < expected < 300
    assert (boot.undefined, boot.resamples, boot.ci, boot.alpha) == (expected, 400, (1.0, 1.0), 1.0)
    # every resample undefined: no interval, all counted
    one = {"a1": {"A": "self", "B": "self"}, "b1": {"A": "self", "B": "self"}}
    boot = bootstrap_alpha(one, {"a1": "sa", "b1": "sb"}, reps=100, seed=0)
    assert (boot.ci, boot.undefined, boot.alpha) == (None, 100, None)
    # one session only: nothing to resample
    boot = bootstrap_alpha(units, {"a1": "s", "a2": "s", "b1": "s"}, reps=100)
    assert (boot.ci, boot.resamples, boot.sessions) == (None, 0, 1)


@pytest.fixture()
def four_sessions(tmp_path):
    """Sessions s1..s4, two attribution items each; counterfactuals in s1 and s2; labels by a1..a3."""
    c = Corpus(init_corpus(tmp_path / "c"))
    recs = [session(f"s{s}", subject=f"subj-{s}") for s in range(1, 5)]
    recs += [attribution(f"s{s}.t{t}.attr", f"s{s}", t, "self") for s in range(1, 5) for t in (1, 2)]
    recs += [counterfactual("s1.t0.cf0", "s1", 0), counterfactual("s2.t0.cf0", "s2", 0)]
    ingest(c, [write_jsonl(tmp_path / "in.jsonl", recs)], progress=False)
    votes = {"s1.t1.attr": "self self self", "s1.t2.attr": "self unsure self",
             "s2.t1.attr": "exogenous exogenous unsure", "s2.t2.attr": "exogenous exogenous exogenous",
             "s3.t1.attr": "self exogenous self", "s3.t2.attr": "self exogenous unsure",
             "s4.t1.attr": "unsure unsure exogenous", "s4.t2.attr": "exogenous self exogenous"}
    anns = [make_annotation(target_kind="attribution", target_id=t, annotator_id=f"a{i + 1}",
                            value={"type": "attribution", "label": label}, created_at="2026-11-29T10:00:00Z",
                            annotation_id=f"t-{t}-{i}")
            for t, v in votes.items() for i, label in enumerate(v.split())]
    anns += [make_annotation(target_kind="counterfactual", target_id=cf, annotator_id=f"a{i + 1}",
                             value={"type": "action", "action": a}, created_at="2026-11-29T10:00:00Z",
                             annotation_id=f"t-{cf}-{i}")
             for cf, v in {"s1.t0.cf0": "up up wait", "s2.t0.cf0": "down down down"}.items()
             for i, a in enumerate(v.split())]
    add_annotations(c, anns)
    units = {t: {f"a{i + 1}": x for i, x in enumerate(v.split())} for t, v in votes.items()}
    return c, units


def test_agreement_resamples_the_sessions_the_store_names(four_sessions):
    corpus, units = four_sessions
    sessions = {t: t.split(".")[0] for t in units}
    res = agreement(corpus, level="ordinal", unsure="missing", reps=300, seed=4)
    a = res["caused_by_self"]
    kept, dropped = drop_unsure(units)
    assert (a.level, a.order, a.unsure, a.unsure_dropped, a.sessions) == ("ordinal", ORDER, "missing", dropped, 4)
    assert a.alpha == pytest.approx(_package_alpha(kept, "ordinal"), rel=1e-12)
    assert a.alpha_ci == bootstrap_alpha(kept, sessions, level="ordinal", order=ATTRIBUTION_ORDER, reps=300,
                                         seed=4).ci
    assert a.alpha_ci != bootstrap_alpha(kept, None, level="ordinal", order=ATTRIBUTION_ORDER, reps=300, seed=4).ci
    assert a.resamples == 300 and a.undefined_resamples >= 0
    # actions have no order: continuation stays nominal, and "unsure" does not apply to it
    c = res["continuation"]
    assert (c.level, c.order, c.unsure, c.sessions) == ("nominal", None, None, 2)
    # the default is today's: nominal, unsure a category
    d = agreement(corpus, reps=50)["caused_by_self"]
    assert (d.level, d.order, d.unsure, d.unsure_dropped) == ("nominal", None, "category", 0)
    assert d.alpha == pytest.approx(_package_alpha(units, "nominal", sorted(ORDER)), rel=1e-12)


def test_cli_agreement_states_the_level_order_and_undefined_resamples(four_sessions, capsys):
    from annotate.cli import main

    corpus, _ = four_sessions
    capsys.readouterr()
    args = ["agreement", "--corpus", str(corpus.dir), "--level", "ordinal", "--unsure", "missing",
            "--bootstrap", "200"]
    assert main(args + ["--json"]) == 0
    out = json.loads(capsys.readouterr().out)["caused_by_self"]
    assert (out["level"], out["order"], out["unsure"], out["sessions"], out["resamples"]) == (
        "ordinal", ORDER, "missing", 4, 200)
    assert isinstance(out["undefined_resamples"], int) and len(out["alpha_ci"]) == 2
    assert main(args) == 0
    text = capsys.readouterr().out
    line = next(x for x in text.splitlines() if x.startswith("caused_by_self:"))
    assert "ordinal self < unsure < exogenous; unsure as missing" in line
    assert f"from 200 resample(s) of 4 session(s), {out['undefined_resamples']} undefined (left out)" in line
    assert main(["agreement", "--corpus", str(corpus.dir), "--level", "interval"]) == ExitCode.USAGE
