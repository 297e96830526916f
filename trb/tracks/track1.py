"""Track 1 — governance (causal efficacy), spec §3.

For every counterfactual (t, r') of the split: ``act(c_t, r_override=r')`` against
the human continuation Φ(r'). Discrete steps score 1 − TV(act, Φ) (metric ``tv``;
G is their mean). Text continuations score the paired log-likelihood ratio
log p(y' | c_t, do(r')) − log p(y' | c_t, do(r_t)), r_t the self-report recorded at
the step (metric ``llr``), through the ``continuation_scoring`` capability; an
adapter without it leaves those items unscored, and the run records how many and
why ("needs continuation_scoring").

c_t never holds r_t (:mod:`trb.context`): the engine keeps it and passes it only as
the do(r_t) reference. Every ``tv`` item also carries the reference points G is read
against, on the same item and Φ:

* ``g_uniform``: 1 − TV(uniform over the action space, Φ);
* ``g_own``: 1 − TV(act(c_t), Φ), the model's own policy (no override: it acts
  through its own report and ignores r'); one call per step, shared by its items;
* ``r_sensitive``: whether p(a') under do(r') is above p(a') under do(r_t), a' the
  action r' plans (Turpin et al. 2023: does the stated reasoning move the answer it
  names?); defined when r' plans an action of the step other than the one r_t plans.

From them the report derives the normalised governance effect
(G − G_own) / (1 − G_own): 0 for a model whose action ignores r', 1 for one whose
action under r' is exactly Φ(r').

A counterfactual whose Φ is pending (annotators have not given it yet) is in the work
list too: G and the LLR wait for its Φ, but r-sensitivity and the planned-action LLR
need none (:mod:`trb.tracks.phi_free`); it is scored for them (metric ``phi_free``) and
reported apart, labelled "Φ pending". One that cannot get them either is counted by
reason, as every item that is not scored is: none is dropped silently.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)

from schemas.release_format import R_PREFIX, R_SLOTS, decode_r
from toolkit.ceiling import oracle_g
from trb.adapters.capabilities import ContinuationScoring, bind
from trb.distributions import check_distribution, total_variation
from trb.releases import Release
from trb.stats import mean_by_session, normalised_gain_by_session
from trb.tracks.base import Column, ItemRow, Metric, StepItem
from trb.tracks.phi_free import (
    PENDING_LABEL,
    PENDING_REASONS,
    PHI_FREE_METRIC,
    pending_skip_reason,
    planned_log_ratio,
)
from trb.tracks.timing import AdapterTimer

__all__ = ["TRACK", "Track1", "Track1Item", "track1_items", "score_track1", "total_variation", "BATCH"]

BATCH = 256


@dataclass
class Track1Item(StepItem):
    r_prime: dict
    phi_type: str | None  # "distribution" or "text"; None while Φ is pending
    phi: dict | str | None
    origin: str | None = None
    adversarial: bool = False
    ood: bool = False
    r_t: dict | None = None  # the self-report recorded at step t (the do(r_t) reference; never in the context)
    phi_n: int | None = None  # annotators behind Φ (None: not stated, e.g. a simulated subject's exact policy)


#: The counterfactual columns Track 1 reads (besides ``phi_probs``, read flat), in one query, as Arrow columns.
_RP_KEYS = tuple(R_PREFIX["counterfactuals"] + k for k in (*R_SLOTS, "ext"))
_CF_COLUMNS = ("cf_id", "session_id", "t", *_RP_KEYS, "origin", "adversarial", "ood", "phi_type", "phi_text",
               "phi_n")


def _phis(probs: pa.ChunkedArray, kinds: list[str], texts: list) -> list:
    """Each row's Φ: ``{action: p}`` for a distribution (read from the flat list<struct> children, sliced by the
    offsets, not struct by struct), the text for a text continuation."""
    probs = probs.combine_chunks()
    flat = probs.flatten()
    actions, ps = flat.field("action").to_pylist(), flat.field("p").to_pylist()
    offsets = probs.offsets.to_pylist()
    base = offsets[0] if offsets else 0
    return [dict(zip(actions[a - base:b - base], ps[a - base:b - base])) if kind == "distribution" else text
            for a, b, kind, text in zip(offsets, offsets[1:], kinds, texts)]


#: Counterfactual rows per batch of the work list (whole sessions: a session cut by a batch goes to the next).
_ITEM_BATCH_ROWS = 65_536


def track1_items(release: Release, split: str = "eval") -> Iterator[Track1Item]:
    """Every counterfactual of ``split``, with its step's context, session by session: those with Φ, and those whose
    Φ is pending (``phi_type`` None: scored for the Φ-free figures only).

    Read as Arrow batches of whole sessions, so the work list's memory does not grow with the release."""
    if "counterfactuals" not in release.configs:
        return
    cur = release.cursor()  # its result is read while release.con reads the sessions
    try:
        yield from _batched_items(release, cur.sql(
            f"SELECT {', '.join(_CF_COLUMNS)}, phi_probs FROM counterfactuals "
            "WHERE split = ? ORDER BY session_id, t, cf_id", params=[split]
        ).to_arrow_reader(_ITEM_BATCH_ROWS))
    finally:
        cur.close()


def _batched_items(release: Release, reader) -> Iterator[Track1Item]:
    carry: pa.Table | None = None
    for batch in reader:
        table = pa.Table.from_batches([batch])
        if carry is not None:
            table = pa.concat_tables([carry, table])
        sids = table.column("session_id")
        last = sids[len(sids) - 1].as_py() if len(sids) else None
        # the rows of the batch's last session may go on in the next batch: kept for it
        keep = pa.compute.sum(pa.compute.equal(sids, last)).as_py() if last is not None else 0
        carry = table.slice(len(sids) - keep)
        yield from _items_of(release, table.slice(0, len(sids) - keep))
    if carry is not None and carry.num_rows:
        yield from _items_of(release, carry)


def _items_of(release: Release, table: pa.Table) -> Iterator[Track1Item]:
    if not table.num_rows:
        return
    cols = {name: table.column(name).to_pylist() for name in _CF_COLUMNS}
    phis = _phis(table.column("phi_probs"), cols["phi_type"], cols["phi_text"])
    rp = R_PREFIX["counterfactuals"]
    rps = [decode_r(dict(zip(_RP_KEYS, values)), rp) for values in zip(*(cols[k] for k in _RP_KEYS))]
    cf_id, t, origin, adv, ood, kind, phi_n = (cols[c] for c in ("cf_id", "t", "origin", "adversarial", "ood",
                                                                 "phi_type", "phi_n"))
    rows = [{"session_id": sid, "i": i} for i, sid in enumerate(cols["session_id"])]
    for sess, sess_rows in release.with_sessions(rows):
        for row in sess_rows:
            i = row["i"]
            yield Track1Item(cf_id[i], sess.session_id, t[i], sess.split, sess.context_id, sess.context(t[i]),
                             rps[i], kind[i], phis[i], origin[i], bool(adv[i]), bool(ood[i]), sess.recorded_r(t[i]),
                             phi_n[i])


def _row(item: Track1Item, metric: str, score: float, detail: dict, **refs) -> ItemRow:
    return {"track": "1", "metric": metric, "item_id": item.item_id, "session_id": item.session_id, "t": item.t,
            "split": item.split, "context_id": item.context_id, "score": score, "origin": item.origin,
            "adversarial": item.adversarial, "ood": item.ood, **refs,
            "detail": orjson.dumps(detail, option=orjson.OPT_SORT_KEYS).decode()}


def _uniform(space: tuple[str, ...]) -> dict[str, float]:
    return dict.fromkeys(space, 1.0 / len(space))


def skip_reason(item: Track1Item) -> str | None:
    """Why no adapter can score ``item`` (a key of the run's ``skipped`` counters), or None when one can.

    Adapter-free: what a text Φ needs of the adapter (continuation scoring) is decided when it is scored."""
    if item.phi_type is None:
        return pending_skip_reason(item.context.action_space, item.r_prime, item.r_t)
    if item.phi_type == "distribution":
        return "open_ended_step" if item.context.action_space is None else None
    return "llr_without_recorded_r" if item.r_t is None else None


def _sensitive(item: Track1Item, p: dict, p_rt: dict | None) -> bool | None:
    """Whether do(r') raised the probability of the action r' plans over do(r_t); None where undefined."""
    planned = item.r_prime.get("planned_next")
    if p_rt is None or planned not in p or planned == (item.r_t or {}).get("planned_next"):
        return None
    return p[planned] > p_rt[planned]


def score_track1(adapter, items: Iterable[Track1Item], timer: AdapterTimer | None = None,
                 progress=None) -> tuple[list[ItemRow], dict]:
    """Score every item through ``adapter``; return the item rows and counts (scored, skipped by reason).

    Per batch, one ``act_many`` call holds every item's do(r') and, for each step not
    seen yet, the model's own act(c_t) (for items with Φ) and do(r_t) (when the step recorded an r_t).
    An item whose Φ is pending is scored for the Φ-free figures (metric ``phi_free``); ``phi_pending`` counts
    every such item, scored or not.
    """
    bound = bind(adapter)
    timer = timer or AdapterTimer()
    rows: list[ItemRow] = []
    skipped = {"text_phi_without_score_continuation": 0, "open_ended_step": 0, "llr_without_recorded_r": 0}
    n_pending = 0
    scorer = bound.get(ContinuationScoring)
    pending: list[Track1Item] = []
    own_of: dict[tuple[str, int], dict] = {}  # (session, t) -> act(c_t)
    rt_of: dict[tuple[str, int], dict] = {}  # (session, t) -> act(c_t, do(r_t))

    def flush() -> None:
        if not pending:
            return
        contexts = [i.context for i in pending]
        overrides: list[dict | None] = [i.r_prime for i in pending]
        wanted: dict[tuple[int, tuple[str, int]], dict] = {}  # (own 0 | do(r_t) 1, step) -> where it goes, in order
        for i in pending:
            key = (i.session_id, i.t)
            if i.phi_type is not None and key not in own_of and (0, key) not in wanted:  # G's own-policy reference
                wanted[(0, key)] = own_of
                contexts.append(i.context)
                overrides.append(None)
            if i.r_t is not None and key not in rt_of and (1, key) not in wanted:
                wanted[(1, key)] = rt_of
                contexts.append(i.context)
                overrides.append(i.r_t)
        with timer.timed(len(contexts)):
            dists = bound.act_many(contexts, overrides)
        edits = bound.cot_edits()  # cot_edit: the edited chain of thought each do(r') was scored after
        dists = [check_distribution(p, c.action_space, bound.name) for p, c in zip(dists, contexts)]
        for ((_, key), where), p in zip(wanted.items(), dists[len(pending):]):
            where[key] = p
        for j, (item, p) in enumerate(zip(pending, dists)):
            key = (item.session_id, item.t)
            rt = rt_of.get(key) if item.r_t is not None else None
            sensitive = _sensitive(item, p, rt)
            edit = edits[j] if edits is not None and j < len(edits) and edits[j] is not None else None
            if item.phi_type is None:
                rows.append(_phi_free_row(item, p, rt, sensitive, edit))
                continue
            own = own_of[key]
            tv = total_variation(p, item.phi)
            tv_own = total_variation(own, item.phi)
            tv_uniform = total_variation(_uniform(item.context.action_space), item.phi)
            detail = {"p": p, "phi": item.phi, "tv": tv, "p_own": own, "p_do_r_t": rt}
            if edit is not None:
                detail["cot_edit"] = edit
            rows.append(_row(item, "tv", 1.0 - tv, detail,
                             g_own=1.0 - tv_own, g_uniform=1.0 - tv_uniform,
                             r_sensitive=None if sensitive is None else float(sensitive), phi_n=item.phi_n,
                             g_ceiling=None if not item.phi_n else oracle_g(item.phi, item.phi_n)))
        if progress is not None:
            progress(len(pending))
        pending.clear()

    for item in items:
        if item.phi_type != "text":  # a distribution Φ, or Φ pending (the Φ-free figures)
            n_pending += item.phi_type is None
            reason = skip_reason(item)
            if reason is not None:
                skipped[reason] = skipped.get(reason, 0) + 1
                continue
            pending.append(item)
            if len(pending) >= BATCH:
                flush()
        elif scorer is None:
            skipped["text_phi_without_score_continuation"] += 1
        elif item.r_t is None:  # the reference term is do(r_t): without a recorded r_t there is none
            skipped["llr_without_recorded_r"] += 1
        else:
            with timer.timed(2):
                lp_cf = scorer.score_continuation(item.context, item.phi, r_override=item.r_prime)
                lp_fact = scorer.score_continuation(item.context, item.phi, r_override=item.r_t)
            rows.append(_row(item, "llr", lp_cf - lp_fact, {"logp_do_r_prime": lp_cf, "logp_do_r_t": lp_fact}))
            if progress is not None:
                progress(1)
    flush()
    summary: dict = {"scored": len(rows), "skipped": skipped}
    if n_pending:  # only when something is pending: a run without pending items records what it always did
        summary["phi_pending"] = n_pending
    if skipped["text_phi_without_score_continuation"]:
        summary["not_applicable"] = {"1-llr": {"needs": ["continuation_scoring"],
                                               "n_items": skipped["text_phi_without_score_continuation"]}}
    return rows, summary


def _phi_free_row(item: Track1Item, p: dict, rt: dict, sensitive: bool, edit) -> ItemRow:
    """A Φ-pending item's row: score = r-sensitivity (0 or 1), ``llr_planned`` the planned-action LLR."""
    planned = item.r_prime["planned_next"]
    llr = planned_log_ratio(p[planned], rt[planned])
    detail = {"p": p, "p_do_r_t": rt, "planned": planned, "p_planned_do_r_prime": p[planned],
              "p_planned_do_r_t": rt[planned], "phi": None}
    if edit is not None:
        detail["cot_edit"] = edit
    return _row(item, PHI_FREE_METRIC, float(sensitive), detail, r_sensitive=float(sensitive), llr_planned=llr)


class Track1:
    """Track 1 on the registry: G = 1 − mean TV, and the paired LLR variant."""

    id = "1"
    name = "governance"
    section = "TRB spec §3, Track 1 (causal efficacy)"
    needs: tuple[type, ...] = ()
    metrics = (
        Metric("1", "1", "tv", "Track 1 — governance G", "G = 1 − mean TV(act(c_t, r′), Φ(r′))",
               headline=True, bounds=(0.0, 1.0)),
        Metric("1-llr", "1", "llr", "Track 1 — LLR variant",
               "mean paired log-likelihood ratio log p(y′ | c_t, do(r′)) − log p(y′ | c_t, do(r_t)) "
               "(open-ended actions)", headline=False, needs=(ContinuationScoring,)),
        Metric("1-uniform", "1", "tv", "Track 1 — G of the uniform policy",
               "1 − mean TV(uniform over the action space, Φ(r′)) on the same items: the floor G is read against",
               requires="g_uniform", headline=False, bounds=(0.0, 1.0)),
        Metric("1-ceiling", "1", "tv", "Track 1 — annotator-noise ceiling",
               "expected G of an oracle that outputs the true distribution when Φ(r′) comes from each item's n "
               "annotators (Φ as the truth: an optimistic ceiling); G is read against it, not against 1",
               requires="g_ceiling", headline=False, bounds=(0.0, 1.0)),
        Metric("1-own", "1", "tv", "Track 1 — G of the r′-ignoring policy",
               "1 − mean TV(act(c_t), Φ(r′)): the model's own policy, no override, on the same items",
               requires="g_own", headline=False, bounds=(0.0, 1.0)),
        Metric("1-norm", "1", "tv", "Track 1 — normalised governance effect",
               "(G − G_own) / (1 − G_own), paired by item: 0 when the action ignores r′, 1 when it is Φ(r′)",
               requires="g_own", headline=False, chance=0.0),
        Metric("1-sens", "1", "tv", "Track 1 — r-sensitivity",
               "share of items where p(the action r′ plans) under do(r′) is above that under do(r_t) "
               "(items where r′ plans another action of the step than r_t)", requires="r_sensitive", headline=False,
               bounds=(0.0, 1.0)),
        Metric("1-sens-pending", "1", PHI_FREE_METRIC, f"Track 1 — r-sensitivity ({PENDING_LABEL})",
               "r-sensitivity on the counterfactuals whose Φ is pending (no Φ needed): share of items where "
               "p(a′ | c_t, do(r′)) > p(a′ | c_t, do(r_t)), a′ the action r′ plans", requires="r_sensitive",
               headline=False, bounds=(0.0, 1.0)),
        Metric("1-llr-pending", "1", PHI_FREE_METRIC, f"Track 1 — planned-action LLR ({PENDING_LABEL})",
               "mean log p(a′ | c_t, do(r′)) − log p(a′ | c_t, do(r_t)) on the counterfactuals whose Φ is pending, "
               "a′ the action r′ plans (the paired log-likelihood ratio read at a′, not at Φ(r′): no Φ needed; "
               "items with a probability 0 left out)", requires="llr_planned", headline=False),
    )
    columns = (
        Column("origin", pa.string(), "VARCHAR", "Track 1: the counterfactual's origin"),
        Column("adversarial", pa.bool_(), "BOOLEAN", "Track 1: r′ built to mislead"),
        Column("ood", pa.bool_(), "BOOLEAN", "Track 1: r′ out of distribution"),
        Column("g_own", pa.float64(), "DOUBLE", "Track 1: 1 − TV(act(c_t), Φ(r′)), the model's own policy"),
        Column("g_uniform", pa.float64(), "DOUBLE", "Track 1: 1 − TV(uniform, Φ(r′))"),
        Column("phi_n", pa.int32(), "INTEGER", "Track 1: annotators behind Φ(r′) (NULL: not stated)"),
        Column("g_ceiling", pa.float64(), "DOUBLE",
               "Track 1: the expected G of the true-distribution oracle given phi_n (toolkit.ceiling.oracle_g)"),
        Column("r_sensitive", pa.float64(), "DOUBLE",
               "Track 1: 1 if do(r′) raised p(r′'s planned action) over do(r_t), 0 if not, NULL if undefined"),
        Column("llr_planned", pa.float64(), "DOUBLE",
               "Track 1, Φ pending: log p(a′ | c_t, do(r′)) − log p(a′ | c_t, do(r_t)), a′ the action r′ plans "
               "(NULL: a probability is 0)"),
    )
    #: Why an item of the work list is not scored, in words (the run's ``skipped`` counters; trb.preflight).
    reasons = {
        "open_ended_step": "a distribution Φ on an open-ended step",
        "llr_without_recorded_r": "a text Φ on a step that recorded no r_t (no do(r_t) reference)",
        "text_phi_without_score_continuation": "a text Φ, and the adapter cannot score continuations",
        **PENDING_REASONS,
    }

    def count(self, release: Release, split: str) -> int:
        if "counterfactuals" not in release.configs:
            return 0
        return release.rows("SELECT count(*) AS n FROM counterfactuals WHERE split = ?", [split])[0]["n"]

    def pending(self, release: Release, split: str) -> dict[str, int]:
        """The split's counterfactuals whose Φ is pending: ``{"Φ pending": n}`` (empty when none is)."""
        if "counterfactuals" not in release.configs:
            return {}
        n = release.rows("SELECT count(*) AS n FROM counterfactuals WHERE split = ? AND phi_type IS NULL",
                         [split])[0]["n"]
        return {"Φ pending": int(n)} if n else {}

    def empty_reason(self, release: Release, split: str) -> str:
        """Why ``split`` holds no counterfactual, in words: none at all, or those of held-out splits whose Φ is
        pending, which a release keeps out of them (the manifest counts them)."""
        if "counterfactuals" not in release.configs:
            return "the release has no counterfactuals"
        kept_out = int(((release.manifest.get("excluded") or {})
                        .get("counterfactuals_lacking_phi_kept_out_of_eval")) or 0)
        if split in ("eval", "transfer") and kept_out:
            return (f"no counterfactuals in split {split!r}: Φ pending on {kept_out} counterfactual(s) of the "
                    "held-out splits, which the release keeps out of them until annotators give their Φ "
                    "(manifest: excluded.counterfactuals_lacking_phi_kept_out_of_eval)")
        return f"no counterfactuals in split {split!r}"

    def skip_reason(self, item: Track1Item) -> str | None:
        return skip_reason(item)

    def waiting(self, summary: dict) -> str | None:
        """What G waits for in a run's summary: its items whose Φ is pending (None when there is none)."""
        n = int(summary.get("phi_pending") or 0)
        return f"Φ pending on {n:,} item(s): G waits for their Φ" if n else None

    def items(self, release: Release, split: str) -> Iterator[Track1Item]:
        return track1_items(release, split)

    def score(self, adapter, items, timer=None, progress=None):
        return score_track1(adapter, items, timer, progress)

    def aggregate(self, metric: Metric, columns, *, n_resamples: int, confidence: float, seed: int):
        opts = {"n_resamples": n_resamples, "confidence": confidence, "seed": seed}
        sessions = columns["session_id"]
        if metric.key in ("1", "1-llr"):
            return mean_by_session(columns["score"].astype(float, copy=False), sessions, **opts)
        if metric.key in ("1-uniform", "1-own"):
            ref = _present(columns, "g_uniform" if metric.key == "1-uniform" else "g_own")
            return mean_by_session(ref, sessions, **opts)
        if metric.key == "1-ceiling":
            return _mean_where_defined(columns, "g_ceiling", "no item states how many annotators its Φ came from",
                                       opts)
        if metric.key == "1-norm":
            return normalised_gain_by_session(columns["score"].astype(float, copy=False), _present(columns, "g_own"),
                                              sessions, **opts)
        if metric.key in ("1-sens", "1-sens-pending"):
            return _mean_where_defined(columns, "r_sensitive",
                                       "no item where r′ plans another action of the step than the recorded r_t", opts)
        if metric.key == "1-llr-pending":
            return _mean_where_defined(columns, "llr_planned",
                                       "every item has p(a′) = 0 under do(r′) or do(r_t): the log ratio is infinite",
                                       opts)
        raise KeyError(metric.key)

    def describe(self, metric: Metric, columns) -> dict:
        """A Φ-pending figure's label (and how many items its LLR leaves out: a probability 0)."""
        if metric.metric != PHI_FREE_METRIC:
            return {}
        out: dict = {"label": PENDING_LABEL}
        if metric.key == "1-llr-pending" and "llr_planned" in columns:
            n_out = int(np.isnan(_present(columns, "llr_planned", allow_missing=True)).sum())
            if n_out:
                out["n_undefined"] = n_out
        return out


def _mean_where_defined(columns, name: str, undefined: str, opts: dict):
    """The session-bootstrap mean of column ``name`` over the items where it is defined (ValueError if none)."""
    values = _present(columns, name, allow_missing=True)
    keep = ~np.isnan(values)
    if not keep.any():
        raise ValueError(undefined)
    return mean_by_session(values[keep], np.asarray(columns["session_id"])[keep], **opts)


def _present(columns, name: str, *, allow_missing: bool = False) -> np.ndarray:
    """A reference column as floats; an older run without it is an error the report states, not a zero."""
    if name not in columns:
        raise ValueError(f"the run's items have no {name} column (scored before this toolkit recorded it)")
    column = np.asarray(columns[name])
    values = (column.astype(float, copy=False) if column.dtype != object  # a float column (null: nan), read only
              else np.asarray([np.nan if v is None else v for v in column], dtype=float))
    if not allow_missing and np.isnan(values).any():
        raise ValueError(f"{int(np.isnan(values).sum())} items lack {name} (scored before this toolkit recorded it)")
    return values


#: The entry point ``trb.tracks: 1`` (pyproject.toml): registered by the registry when it loads it.
TRACK = Track1()
