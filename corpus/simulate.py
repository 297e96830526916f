"""Writing recordings of the simulated task world (:mod:`simworld`) as schema-v1 JSONL."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import orjson
from tqdm import tqdm

from corpus.jsonl import open_text_out

__all__ = ["write_simulation"]


def write_simulation(output: str | os.PathLike, *, n_sessions: int, seed: int, annotators: int | None = None,
                     progress: bool = True) -> str:
    """Write ``n_sessions`` simulated sessions and their records to ``output``; return a summary line.

    ``annotators``: None gives every counterfactual the subject's exact Φ(r') (no annotator
    count: the release's annotator minimum does not apply to it); N gives the choices of N
    simulated annotators (``phi_n`` = N), e.g. 3 to see a release refuse them at the default
    minimum of 5. The file appears only when complete (written under a temporary name, then renamed).
    """
    from simworld import simulate

    out = Path(output)
    tmp = out.with_name(f".{out.name}.part-{os.getpid()}")
    counts: Counter = Counter()
    steps = 0
    try:
        with open_text_out(tmp, gz=out.suffix == ".gz") as f, \
                tqdm(total=n_sessions, unit="session", desc="simulating", disable=None if progress else True,
                     leave=False) as bar:
            for rec in simulate(n_sessions=n_sessions, seed=seed, annotators=annotators):
                f.write(orjson.dumps(rec))
                f.write(b"\n")
                kind = rec["kind"]
                counts[kind] += 1
                if kind == "session":
                    steps += len(rec["steps"])
                    bar.update(1)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    parts = ", ".join(f"{v} {k}" for k, v in counts.items())
    phi = f", Φ from {annotators} simulated annotator(s)" if annotators else ""
    return f"wrote {out}: {parts}; {steps} steps (seed {seed}{phi}, simulated: smoke-test data only)"
