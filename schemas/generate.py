"""Write (or check) the JSON Schema files from the models: ``python -m schemas.generate [--check]``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from schemas.models import SCHEMA_FILES

HERE = Path(__file__).resolve().parent


def render(model) -> str:
    """The schema file text for ``model``: draft 2020-12, stable key order, trailing newline."""
    schema = model.model_json_schema(mode="validation")
    head = {k: schema.pop(k) for k in ("$schema", "$id", "title", "description") if k in schema}
    return json.dumps({**head, **schema}, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    check = "--check" in (argv if argv is not None else sys.argv[1:])
    stale = []
    for name, model in SCHEMA_FILES.items():
        path = HERE / name
        text = render(model)
        if check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            path.write_text(text, encoding="utf-8")
    if stale:
        print("schema files out of date (run python -m schemas.generate): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
