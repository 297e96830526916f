"""The release gates (spec §5, DESIGN "Rules the toolkit enforces").

Each gate reads the release being cut (DuckDB relations ``assigned`` and the
per-config views ``rel_<config>``) and returns a :class:`GateResult` with its
figure, the bar, and the first offending ids when it fails. The PII scan and the
immutability check run while the files are written (see :mod:`corpus.release`).
"""

from __future__ import annotations

from schemas.models import GateResult
from schemas.release_format import HUMAN_ORIGINS, MIN_ANNOTATORS, SPLITS, SYNTHETIC_CAP, WAIVED
from toolkit.ceiling import ceiling_by_items
from toolkit.orgs import transfer_offences

__all__ = ["SYNTHETIC_CAP", "MIN_ANNOTATORS", "ANNOTATOR_GATED_SPLITS", "FIRST_OFFENDERS", "release_kind_gate",
           "synthetic_cap_gate", "transfer_provenance_gate", "split_discipline_gate", "completeness_gate",
           "min_annotators_gate", "phi_annotators", "waived", "WAIVED"]

#: The splits whose distribution Φ(r') must come from at least ``min_annotators`` annotators.
ANNOTATOR_GATED_SPLITS = ("eval", "transfer")

#: How many offending ids a failed gate names.
FIRST_OFFENDERS = 10


class _Offenders:
    """The rows a gate refuses: how many, and the first :data:`FIRST_OFFENDERS` of them in the gate's order (counted
    by DuckDB, not fetched: a release of a million simulated sessions would otherwise hold every session id)."""

    def __init__(self, con, sql: str, order: str, params=None) -> None:
        self.n = con.execute(f"SELECT count(*) FROM ({sql})", params).fetchall()[0][0]
        self.first = (con.execute(f"SELECT * FROM ({sql}) ORDER BY {order} LIMIT {FIRST_OFFENDERS}", params).fetchall()
                      if self.n else [])

    def __len__(self) -> int:
        return self.n

    def __bool__(self) -> bool:
        return self.n > 0


def _ids(rows: _Offenders) -> str:
    """The first offending ids of ``rows``, and how many more there are."""
    more = f" (and {rows.n - FIRST_OFFENDERS} more)" if rows.n > FIRST_OFFENDERS else ""
    return ", ".join(str(r[0]) for r in rows.first) + more


def release_kind_gate(con, kind: str) -> GateResult:
    """A ``trb`` release holds only real data (human sessions, model rollouts, published-dataset items:
    :data:`schemas.release_format.REAL_SOURCE_KINDS`)."""
    rows = _Offenders(con, "SELECT session_id, source_kind FROM rel_sessions WHERE source_kind IN ('simulated', "
                           "'illustrative')", "session_id")
    if kind == "smoke":
        return GateResult(name="release_kind", passed=True, figure=f"smoke: {len(rows)} simulated/illustrative session(s)",
                          bar="smoke releases may hold simulated or illustrative data; labelled SMOKE TEST")
    return GateResult(name="release_kind", passed=not rows, figure=f"{len(rows)} simulated/illustrative session(s)",
                      bar="0 in a trb release (use --kind smoke)",
                      detail=f"first offending sessions: {_ids(rows)}" if rows else None)


def waived(gate: GateResult) -> GateResult:
    """``gate`` recorded as waived: its figure kept, passed, its bar saying it was waived and what it is otherwise."""
    held = "held" if gate.passed else "not held"
    return GateResult(name=gate.name, passed=True, figure=gate.figure,
                      bar=f"{WAIVED} (a control set, never a TRB score; {held}; otherwise: {gate.bar})")


def synthetic_shares(con) -> dict[str, dict]:
    """'overall' and each split: synthetic and human counterfactual counts, share, within cap."""
    rows = con.execute(f"""
        SELECT split, count(*) FILTER (WHERE origin = 'synthetic'),
               count(*) FILTER (WHERE origin IN {HUMAN_ORIGINS})
        FROM rel_counterfactuals GROUP BY split ORDER BY split""").fetchall()
    out = {}
    for split, syn, hum in [("overall", sum(r[1] for r in rows), sum(r[2] for r in rows)), *rows]:
        total = syn + hum
        out[split] = {"synthetic": syn, "human": hum, "share": (syn / total) if total else None,
                      "within_cap": syn <= SYNTHETIC_CAP * hum}
    return out


def synthetic_cap_gate(con, shares: dict[str, dict]) -> GateResult:
    """Synthetic counterfactuals ≤ 3 × human ones, per split and overall."""
    bad = [s for s, v in shares.items() if not v["within_cap"]]
    figure = "; ".join(f"{s}: {v['synthetic']} synthetic / {v['human']} human" for s, v in shares.items())
    detail = None
    if bad:
        split_list = [s for s in bad if s != "overall"] or list(SPLITS)
        rows = _Offenders(con, f"""
            SELECT session_id, count(*) FILTER (WHERE origin = 'synthetic') AS syn,
                   count(*) FILTER (WHERE origin IN {HUMAN_ORIGINS}) AS hum
            FROM rel_counterfactuals WHERE split IN (SELECT unnest(?::VARCHAR[]))
            GROUP BY session_id HAVING syn > {SYNTHETIC_CAP} * hum""", f"syn - {SYNTHETIC_CAP} * hum DESC, session_id",
            [split_list])
        detail = f"over the cap in: {', '.join(bad)}; first offending sessions: {_ids(rows) or 'none singly'}"
    return GateResult(name="synthetic_cap", passed=not bad, figure=figure or "no counterfactuals",
                      bar=f"synthetic <= {SYNTHETIC_CAP:g} x human, per split and overall", detail=detail)


def transfer_provenance_gate(con, trainer_orgs: list[str]) -> GateResult:
    """Every transfer context, and every session of it, was collected by an org that did not train the model
    (names compared as organisations: :mod:`toolkit.orgs`), and the context has an attestation."""
    n = con.execute("SELECT count(*) FROM rel_transfer").fetchone()[0]
    bar = "collector (of the context and of each of its sessions) not among --trainer-org, with an attestation"
    if n == 0:
        return GateResult(name="transfer_provenance", passed=True, figure="no transfer contexts: no transfer split",
                          bar=bar)
    contexts = con.execute("SELECT context_id, collector_org, attestation_ref FROM rel_transfer "
                           "ORDER BY context_id").fetchall()
    sessions = con.execute("SELECT context_id, collector, count(*) FROM rel_sessions WHERE split = 'transfer' "
                           "GROUP BY ALL ORDER BY ALL").fetchall()
    bad = transfer_offences(contexts, sessions, list(trainer_orgs))
    shown = [f"{cid} ({'; '.join(map(str, why))})" for cid, why in sorted(bad.items())[:FIRST_OFFENDERS]]
    more = f" (and {len(bad) - FIRST_OFFENDERS} more)" if len(bad) > FIRST_OFFENDERS else ""
    return GateResult(
        name="transfer_provenance", passed=not bad,
        figure=f"{len(bad)} of {n} transfer context(s) collected by a trainer org (in the context record or its "
               "sessions' source) or without attestation",
        bar=f"0 (trainer orgs: {', '.join(trainer_orgs) or 'none given'}; names compared as organisations)",
        detail=f"first offending contexts: {', '.join(shown)}{more}" if bad else None)


def split_discipline_gate(con, parent_held_out: dict[str, str] | None) -> GateResult:
    """No session and no subject in two splits; a session held out in the parent stays held out."""
    subj = con.execute("""
        SELECT subject_id, list(DISTINCT split ORDER BY split) FROM assigned
        GROUP BY subject_id HAVING count(DISTINCT split) > 1 ORDER BY subject_id""").fetchall()
    sess = _Offenders(con, "SELECT session_id FROM assigned GROUP BY session_id HAVING count(*) > 1", "session_id")
    moved = []
    if parent_held_out:
        now = dict(con.execute("SELECT session_id, split FROM assigned").fetchall())
        moved = sorted((sid, was, now.get(sid)) for sid, was in parent_held_out.items() if now.get(sid) not in (was, None))
    problems = []
    if subj:
        problems.append("subjects in two splits: " + ", ".join(f"{s} {sp}" for s, sp in subj[:FIRST_OFFENDERS]))
    if sess:
        problems.append(f"sessions in two splits: {_ids(sess)}")
    if moved:
        problems.append("held-out sessions of the parent that left their split: "
                        + ", ".join(f"{s} ({a} -> {b})" for s, a, b in moved[:FIRST_OFFENDERS]))
    figure = f"{len(subj)} subject(s) and {len(sess)} session(s) in two splits; {len(moved)} held-out session(s) moved"
    return GateResult(name="split_discipline", passed=not problems, figure=figure,
                      bar="0 / 0 / 0 (splits by subject; eval and transfer stay held out)",
                      detail="\n".join(problems) or None)


def completeness_gate(con, excluded_lacking_phi: int, kind: str, datasheet_prompts: int) -> GateResult:
    """Every eval counterfactual has Φ; every eval attribution item has a label; a trb datasheet is complete.

    A failed gate's figure names only the checks that failed (the headline a refused release leads with);
    a passed one gives every count."""
    unlabeled = _Offenders(con, "SELECT item_id FROM rel_attribution WHERE split IN ('eval', 'transfer') "
                                "AND label IS NULL", "item_id")
    no_phi = _Offenders(con, "SELECT cf_id FROM rel_counterfactuals WHERE split IN ('eval', 'transfer') "
                             "AND phi_type IS NULL", "cf_id")
    sheet = datasheet_prompts if kind == "trb" else 0
    checks = [  # (failed, figure, bar, what to do)
        (bool(no_phi), f"{len(no_phi)} eval counterfactual(s) without Φ", "0 eval counterfactuals without Φ",
         f"eval counterfactuals without Φ: {_ids(no_phi)}"),
        (bool(unlabeled), f"{len(unlabeled)} eval item(s) without a label", "0 eval items without a label",
         f"eval attribution items without a label: {_ids(unlabeled)}"),
        (bool(sheet), f"the datasheet still has {sheet} [curator: ...] prompt(s)",
         "a curated datasheet (no curator prompt left)",
         f"the datasheet still has {sheet} [curator: ...] prompt(s): answer them in a copy of the template and give "
         "it with --datasheet FILE"),
    ]
    failed = [c for c in checks if c[0]]
    if failed:
        figure, bar = "; ".join(c[1] for c in failed), "; ".join(c[2] for c in failed)
    else:
        figure = (f"{checks[0][1]} ({excluded_lacking_phi} lacking Φ kept out of eval and transfer); "
                  f"{checks[1][1]}")
        bar = ", ".join(c[2] for c in checks[:3 if kind == "trb" else 2])
    return GateResult(name="completeness", passed=not failed, figure=figure, bar=bar,
                      detail="\n".join(c[3] for c in failed) or None)


#: A gated counterfactual falls short: a distribution Φ from fewer annotators than the minimum, or one that
#: states no annotator count, unless its session is simulated (the simulated world's Φ is the subject's
#: exact policy: no annotators, no annotator noise). Text Φ is one written continuation: not gated.
_SHORT_SQL = f"""
    SELECT r.cf_id, r.phi_n FROM rel_counterfactuals r JOIN rel_sessions s USING (session_id)
    WHERE r.split IN {ANNOTATOR_GATED_SPLITS} AND r.phi_type = 'distribution'
      AND (r.phi_n < $min OR (r.phi_n IS NULL AND s.source_kind <> 'simulated'))"""


def min_annotators_gate(con, min_annotators: int) -> GateResult:
    """Every eval/transfer distribution Φ(r') comes from at least ``min_annotators`` annotators.

    Exempt: text Φ (one continuation, the log-likelihood-ratio variant) and the simulated world's
    exact Φ (no annotator count). A Φ of real or illustrative data that states no count is refused.
    """
    total = con.execute(f"SELECT count(*) FROM rel_counterfactuals WHERE split IN {ANNOTATOR_GATED_SPLITS} "
                        "AND phi_type = 'distribution'").fetchone()[0]
    rows = _Offenders(con, _SHORT_SQL, "cf_id", {"min": min_annotators})
    unstated = con.execute(f"SELECT count(*) FROM ({_SHORT_SQL}) WHERE phi_n IS NULL", {"min": min_annotators}
                           ).fetchone()[0] if rows else 0
    figure = (f"{len(rows)} of {total} eval/transfer distribution Φ(r') from fewer than {min_annotators} annotators"
              + (f" ({unstated} stating no annotator count)" if unstated else ""))
    detail = None
    if rows:
        ids = ", ".join(f"{cf} (n={'none' if n is None else n})" for cf, n in rows.first)
        more = f" (and {len(rows) - FIRST_OFFENDERS} more)" if len(rows) > FIRST_OFFENDERS else ""
        detail = (f"first offending counterfactuals: {ids}{more}\n"
                  "collect more annotators' choices for them (trb-annotate), or cut with a lower minimum "
                  "(--min-annotators N; min_annotators= in cut_release), which the manifest and card then state")
    return GateResult(name="min_annotators", passed=not rows, figure=figure,
                      bar=f"0 (--min-annotators {min_annotators}; text Φ and simulated exact Φ exempt)",
                      detail=detail)


def phi_annotators(con, min_annotators: int) -> dict:
    """The manifest's ``phi_annotators``: the minimum, and per split the distribution-Φ counterfactuals,
    their annotator counts and the mean annotator-noise ceiling of Track 1 (:mod:`toolkit.ceiling`, with
    Φ as the plug-in truth), and the text-Φ count."""
    grouped = con.execute("""
        SELECT split, phi_type, phi_n,
               CASE WHEN phi_type = 'distribution' AND phi_n IS NOT NULL THEN phi_probs END AS probs, count(*)
        FROM rel_counterfactuals WHERE phi_type IS NOT NULL GROUP BY ALL""").fetchall()
    splits: dict[str, dict] = {}
    for split in [s for s in SPLITS if any(g[0] == s for g in grouped)]:
        dist = [({d["action"]: d["p"] for d in probs} if probs is not None else None, n, k)
                for sp, kind, n, probs, k in grouped if sp == split and kind == "distribution"]
        c = ceiling_by_items(dist)
        splits[split] = {
            "items": c.items, "unstated": c.unstated, "phi_n": {str(n): k for n, k in c.phi_n.items()},
            "phi_n_min": c.n_min, "phi_n_median": c.n_median, "phi_n_max": c.n_max,
            "oracle_g": None if c.oracle_g is None else round(c.oracle_g, 6),
            "text_items": sum(k for sp, kind, _, _, k in grouped if sp == split and kind == "text"),
        }
    return {"min_annotators": min_annotators, "gated_splits": list(ANNOTATOR_GATED_SPLITS), "splits": splits}
