"""Read an inspect_ai evaluation log with inspect_ai's own reader; print it as JSON lines.

Run by :mod:`corpus.importers.inspect_log` with an interpreter that has ``inspect_ai``
(its own venv, ``.venv-inspect``: see the Makefile): ``python inspect_reader.py LOG``.
This file imports nothing from the toolkit. Output, one JSON object a line:
``{"header": {...}}`` (the eval spec: task, model, eval id, dataset, status,
log version, inspect_ai version), then ``{"sample": {...}}`` per sample (id, epoch,
messages, choices, target, score values, error). A log inspect_ai cannot read exits 2
with its reason on stderr.
"""

from __future__ import annotations

import json
import sys


def main(argv: list[str]) -> int:
    try:
        import inspect_ai
        from inspect_ai.log import read_eval_log
    except ImportError as e:  # pragma: no cover - the caller checks the interpreter first
        print(f"inspect_ai is not installed in {sys.executable}: {e}", file=sys.stderr)
        return 3
    path = argv[0]
    try:
        log = read_eval_log(path, resolve_attachments=True)
    except Exception as e:  # inspect_ai raises many kinds; the caller reports the reason
        print(f"{type(e).__name__}: {e}".splitlines()[0], file=sys.stderr)
        return 2
    spec = log.eval
    header = {"task": spec.task, "eval_id": spec.eval_id, "run_id": spec.run_id, "model": spec.model,
              "created": spec.created, "dataset": spec.dataset.name if spec.dataset else None,
              "status": log.status, "log_version": log.version, "inspect_ai": inspect_ai.__version__}
    out = sys.stdout
    out.write(json.dumps({"header": header}) + "\n")
    for s in log.samples or []:
        d = s.model_dump(mode="json", include={"id", "epoch", "messages", "choices", "target"})
        d["scores"] = {k: v.value for k, v in (s.scores or {}).items()}
        d["error"] = s.error.message if s.error is not None else None
        out.write(json.dumps({"sample": d}) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
