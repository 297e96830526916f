"""An importer: each line of a text file is one model's answer, imported as a one-step `model_rollout` session.

It only converts: records and located problems, never a write. `trb-corpus import` then puts the records
through the 3:1 cap check, every schema, rule and reference check and one all-or-nothing ingest.
"""

from __future__ import annotations

from corpus.errors import InvalidInput, Problem
from corpus.importers import Converted, Importer, ImporterOption
from corpus.importers.base import identifier

__all__ = ["IMPORTER"]

MAPPING = "lines/1"


def convert(files, *, collector: str = "my-lab", model: str = "unknown") -> Converted:
    out = Converted(mapping=MAPPING)
    problems = []
    for path in files:
        records = []
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                problems.append(Problem(str(path), n, "/", "an empty line is not an answer"))
                continue
            sid = identifier(f"{path.stem}-{n}")
            records.append({
                "kind": "session", "session_id": sid, "subject_id": identifier(f"{model}-{path.stem}"),
                "source": {"kind": "model_rollout", "collector": collector},
                "context": {"context_id": identifier(path.stem), "stimulus_set": "lines",
                            "subject_population": "models", "language": "en"},
                "steps": [{"t": 0, "observation": f"line {n} of {path.name}", "action": line.strip()}],
            })
        out.batches[f"import lines {path}"] = records
        out.counts["sessions"] += len(records)
    if problems:
        raise InvalidInput(problems)
    return out


IMPORTER = Importer(
    name="lines", summary="one model answer a line, as a one-step session",
    help="Each non-empty line of FILE is one model's answer: a one-step model_rollout session "
         "(open-ended: no action space). An empty line is a problem; nothing is written.",
    convert=convert, mapping=MAPPING,
    options=(ImporterOption("collector", "Who collected the answers (source.collector).", default="my-lab"),
             ImporterOption("model", "The model that wrote them (the subject id's prefix).", default="unknown")),
)
