"""Valid schema-v1 records for tests, built as plain dicts (what a lab would write)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

ACTIONS = ["up", "down", "left", "right", "wait"]


def session(session_id: str = "s1", n_steps: int = 3, *, subject: str = "subj-1", context: str = "ctx-a",
            source_kind: str = "human_session") -> dict:
    steps = []
    for t in range(n_steps):
        steps.append({
            "t": t,
            "observation": f"step {t}: you are at B{t + 1}",
            "r": {"goal": "C3", "planned_next": "right", "caused_by_self": 0.5, "confidence": 0.6},
            "action": "right",
            "action_space": list(ACTIONS),
            "outcome": f"moved to B{t + 2}",
        })
    return {
        "kind": "session",
        "session_id": session_id,
        "source": {"kind": source_kind, "collector": "lab-a", "consent_ref": "consent/2026/001", "licence": "CC-BY-4.0"},
        "subject_id": subject,
        "context": {"context_id": context, "stimulus_set": "grid5", "subject_population": "adults", "language": "en"},
        "steps": steps,
    }


def counterfactual(cf_id: str = "s1.t0.cf0", session_id: str = "s1", t: int = 0, *, origin: str = "same_session_revision",
                   probs: dict | None = None, n: int | None = 8) -> dict:
    """A counterfactual with a distribution Φ from ``n`` annotators (8: above a release's default minimum of 5)."""
    rec = {
        "kind": "counterfactual",
        "cf_id": cf_id,
        "session_id": session_id,
        "t": t,
        "r_prime": {"goal": "C3", "planned_next": "up"},
        "origin": origin,
        "author": {"person_id": "ann-1"},
        "phi": {"type": "distribution", "probs": probs or {"up": 0.75, "right": 0.25}, "n": n},
    }
    if origin == "synthetic":
        rec["author"] = {"generator": {"name": "slot-perturb", "version": "1", "seed": 7}}
    if origin == "paired_session":
        rec["paired_session_id"] = session_id
    return rec


def attribution(item_id: str = "s1.t1.attr", session_id: str = "s1", t: int = 1, label: str = "self") -> dict:
    return {"kind": "attribution", "item_id": item_id, "session_id": session_id, "t": t, "design_label": label}


def annotation(annotation_id: str = "a1", target_id: str = "s1.t1.attr", *, annotator: str = "ann-1",
               label: str = "self") -> dict:
    return {
        "kind": "annotation",
        "annotation_id": annotation_id,
        "target": {"kind": "attribution", "id": target_id},
        "annotator_id": annotator,
        "value": {"type": "attribution", "label": label},
        "created_at": "2026-11-29T10:00:00Z",
    }


def transfer_context(context_id: str = "ctx-t") -> dict:
    return {"kind": "transfer_context", "context_id": context_id, "description": "new stimuli, German self-report",
            "collector_org": "Partner Lab B", "attestation_ref": "attest/partner-b/2026-11"}


def small_corpus() -> list[dict]:
    """Two sessions with counterfactuals of each origin, attribution items and annotations."""
    return [
        transfer_context(),
        session("s1"),
        session("s2", n_steps=4, subject="subj-2", context="ctx-t"),
        counterfactual("s1.t0.cf0", "s1", 0),
        counterfactual("s1.t0.cf1", "s1", 0, origin="synthetic", probs={"up": 0.5, "down": 0.5}),
        counterfactual("s2.t2.cf0", "s2", 2, origin="paired_session"),
        attribution("s1.t1.attr", "s1", 1, "self"),
        attribution("s2.t3.attr", "s2", 3, "exogenous"),
        annotation("a1", "s1.t1.attr", annotator="ann-1", label="self"),
        annotation("a2", "s1.t1.attr", annotator="ann-2", label="exogenous"),
    ]


def write_jsonl(path: Path, records: list) -> Path:
    """Write records (dicts, or raw str/bytes lines) one per line."""
    with open(path, "wb") as f:
        for rec in records:
            if isinstance(rec, bytes):
                f.write(rec + b"\n")
            elif isinstance(rec, str):
                f.write(rec.encode() + b"\n")
            else:
                f.write(json.dumps(rec, ensure_ascii=False).encode() + b"\n")
    return path


def mutated(rec: dict, path, value) -> dict:
    """A deep copy of ``rec`` with the value at ``path`` replaced (or deleted if value is DELETE): a slash-separated
    string (digits are list indices), or a sequence of keys and indices taken as they are."""
    out = copy.deepcopy(rec)
    parts = [int(p) if p.isdigit() else p for p in path.strip("/").split("/")] if isinstance(path, str) else path
    node = out
    for p in parts[:-1]:
        node = node[p]
    if value is DELETE:
        del node[parts[-1]]
    else:
        node[parts[-1]] = value
    return out


DELETE = object()


def store_counts(corpus: Path) -> dict[str, int]:
    """Row counts of every store table, read with plain DuckDB (not the toolkit)."""
    import duckdb

    con = duckdb.connect(str(corpus / "corpus.duckdb"), read_only=True)
    try:
        tables = [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables ORDER BY 1").fetchall()]
        return {t: con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}
    finally:
        con.close()


def store_rows(corpus_dir: Path, sql: str, params=None) -> list[tuple]:
    """Rows from the corpus store, read with plain DuckDB (not the toolkit)."""
    import duckdb

    con = duckdb.connect(str(Path(corpus_dir) / "corpus.duckdb"), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def like_7f3a(name: str = "b2c9", *, annotations: bool = False) -> list[dict]:
    """The packaged 7f3a example's sessions, counterfactuals and attribution items as test data of their own: ids
    renamed (``7f3a`` -> ``name``), source kind ``simulated`` (not an example, so it is pushed as tasks), and
    without the example's invented annotations (with them if ``annotations``). It has what real sessions have and the factories' lack: an
    open-ended step, action texts, credit beliefs and an extension slot (``endorses_last_output``)."""
    from corpus.examples import example_path

    out = []
    for line in example_path("7f3a").read_text(encoding="utf-8").splitlines():
        rec = json.loads(line.replace("7f3a", name))
        if rec["kind"] == "annotation" and not annotations:
            continue
        if rec["kind"] == "session":
            rec["source"]["kind"] = "simulated"
        out.append(rec)
    return out
