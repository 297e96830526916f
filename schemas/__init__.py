"""The published contract: JSON Schema files (draft 2020-12) and the models they come from."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

from schemas.models import RECORD_MODELS, SCHEMA_BASE_URL, SCHEMA_FILES
from schemas.versions import SCHEMA_VERSION, TRB_VERSION

RECORD_KINDS: tuple[str, ...] = tuple(RECORD_MODELS)

__all__ = ["SCHEMA_VERSION", "SCHEMA_BASE_URL", "TRB_VERSION", "RECORD_KINDS", "SCHEMA_FILES", "load_schema"]


@cache
def load_schema(name: str) -> dict:
    """The checked-in JSON Schema ``name`` (a record kind or ``release_manifest``)."""
    # not strict_json: the JSON Schemas shipped inside this package
    return json.loads(resources.files("schemas").joinpath(f"{name}.schema.json").read_text(encoding="utf-8"))
