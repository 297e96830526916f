"""The ingest's fast path: one JSONL line to its canonical form and hash, or to the reference path.

:func:`parse_record_fast` decodes and checks a line with ``msgspec`` Structs that mirror the
pydantic models of :mod:`schemas.models` (which stay the reference: they generate the published
JSON Schemas and word every error). The fast path only ever *accepts*: a line it has any doubt
about (not strict JSON, a type, range, field or rule it refuses) goes to
:func:`corpus.records.parse_record`, so a refused record's problems are the reference path's,
word for word. For that to hold the Structs are at least as strict as the models (a pattern
anchored at the very end of the text, ``[0-9]`` for a digit), and a record they accept has the
canonical form the reference path gives it, byte for byte (``tests/corpus/test_fast_records.py``
checks both on valid records and on many invalid mutations of them).

The canonical form is the record with every field (defaults filled), keys sorted, no spaces,
UTF-8, with the 1.1 fields ``source.dataset`` and ``steps[].action_texts`` left out while
they are null (:mod:`schemas.models`).
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Literal

import msgspec
import orjson
from msgspec import UNSET, Meta, Struct, UnsetType, field

from corpus.records import may_underflow, parse_record
from schemas.rules import PHI_TOLERANCE, actions_alike, core_slot_named_like

__all__ = ["FastRecord", "fast_path", "parse_record_fast"]

# Patterns end in \Z (Python's $ also matches before a final newline; the models' Rust regex does not).
Identifier = Annotated[str, Meta(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:\-]{0,127}\Z")]
NonEmpty = Annotated[str, Meta(min_length=1)]
Probability = Annotated[float, Meta(ge=0.0, le=1.0)]
Index = Annotated[int, Meta(ge=0, le=2_147_483_647)]
Count = Annotated[int, Meta(ge=1, le=2_147_483_647)]
Int64 = Annotated[int, Meta(ge=-(2**63), le=2**63 - 1)]
Language = Annotated[str, Meta(pattern=r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*\Z")]
CreatedAt = Annotated[str, Meta(pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?"
                                        r"(Z|[+-][0-9]{2}:[0-9]{2})\Z")]
SchemaVersion = Literal[1, "1.1"]


class _S(Struct, forbid_unknown_fields=True):
    pass


class Dataset(_S):
    name: NonEmpty
    revision: NonEmpty
    citation: NonEmpty
    item: NonEmpty | None = None


class Source(_S):
    kind: Literal["human_session", "model_rollout", "published_dataset", "simulated", "illustrative"]
    collector: NonEmpty
    consent_ref: str | None = None
    licence: str | None = None
    dataset: Dataset | None | UnsetType = UNSET  # UNSET: absent; None: an explicit null (a 1.1 field all the same)


class Context(_S):
    context_id: Identifier
    stimulus_set: NonEmpty
    subject_population: NonEmpty
    language: Language


class ExtensionSlot(_S):
    type: Literal["string", "number", "boolean"]
    description: NonEmpty
    speaker: Literal["agent", "user"] | None | UnsetType = UNSET  # UNSET: absent; None: an explicit null


class RSnapshot(_S):
    goal: str | None = None
    planned_next: str | None = None
    caused_by_self: Probability | None = None
    confidence: Probability | None = None
    ext: dict[str, str | float | bool] | None = None


class Step(_S):
    t: Index
    observation: str
    action: str
    r: RSnapshot | None = None
    action_space: Annotated[list[NonEmpty], Meta(min_length=1)] | None = None
    outcome: str | None = None
    action_texts: Annotated[list[NonEmpty], Meta(min_length=1)] | None | UnsetType = UNSET


class _Record(_S, tag_field="kind"):
    pass


class Session(_Record, tag="session"):
    session_id: Identifier
    source: Source
    subject_id: Identifier
    context: Context
    steps: Annotated[list[Step], Meta(min_length=1)]
    schema_version: SchemaVersion = 1
    r_extensions: dict[Identifier, ExtensionSlot] = field(default_factory=dict)


class Flags(_S):
    adversarial: bool = False
    ood: bool = False


class Generator(_S):
    name: NonEmpty
    version: NonEmpty
    seed: Int64


class Author(_S):
    person_id: Identifier | None = None
    generator: Generator | None = None


class PhiDistribution(_S, tag_field="type", tag="distribution"):
    probs: Annotated[dict[NonEmpty, Probability], Meta(min_length=1)]
    n: Count | None = None


class PhiText(_S, tag_field="type", tag="text"):
    text: NonEmpty
    n: Count | None = None


class Counterfactual(_Record, tag="counterfactual"):
    cf_id: Identifier
    session_id: Identifier
    t: Index
    r_prime: RSnapshot
    origin: Literal["same_session_revision", "paired_session", "synthetic"]
    author: Author
    schema_version: SchemaVersion = 1
    paired_session_id: Identifier | None = None
    flags: Flags = field(default_factory=Flags)
    phi: PhiDistribution | PhiText | None = None


class Attribution(_Record, tag="attribution"):
    item_id: Identifier
    session_id: Identifier
    t: Index
    design_label: Literal["self", "exogenous"]
    schema_version: SchemaVersion = 1
    endorsed: bool | None = None
    note: str | None = None


class AttributionValue(_S, tag_field="type", tag="attribution"):
    label: Literal["self", "exogenous", "unsure"]
    endorsed: bool | None = None
    rationale: str | None = None


class ActionValue(_S, tag_field="type", tag="action"):
    action: NonEmpty
    rationale: str | None = None


class ContinuationValue(_S, tag_field="type", tag="continuation"):
    text: NonEmpty
    rationale: str | None = None


class AnnotationTarget(_S):
    kind: Literal["attribution", "counterfactual"]
    id: Identifier


class LabelStudioRef(_S):
    project_id: Int64
    task_id: Int64
    annotation_id: Int64


class Annotation(_Record, tag="annotation"):
    annotation_id: Identifier
    target: AnnotationTarget
    annotator_id: Identifier
    value: AttributionValue | ActionValue | ContinuationValue
    created_at: CreatedAt
    schema_version: SchemaVersion = 1
    role: Literal["annotator", "adjudicator", "reviewer"] = "annotator"
    method: str | None = None
    revision: Count = 1
    label_studio: LabelStudioRef | None = None


class TransferContext(_Record, tag="transfer_context"):
    context_id: Identifier
    description: NonEmpty
    collector_org: NonEmpty
    attestation_ref: NonEmpty
    schema_version: SchemaVersion = 1


_DECODER = msgspec.json.Decoder(Session | Counterfactual | Attribution | Annotation | TransferContext)
_ENCODER = msgspec.json.Encoder(order="sorted")
#: Floats below this (in magnitude) are written alike by msgspec and orjson (the reference path's writer); from
#: 1e16 on msgspec writes ``1e16`` where orjson writes ``1e+16``, so a record with one takes the reference path.
_PLAIN_FLOAT = 1e16
_EXT_TYPES = {"string": (str,), "number": (float,), "boolean": (bool,)}


def _ext_ok(r: RSnapshot | None, declared: dict) -> bool:
    if r is None or not r.ext:
        return True
    for name, value in r.ext.items():
        slot = declared.get(name)
        if slot is None or type(value) not in _EXT_TYPES[slot.type]:
            return False
        if type(value) is float and not abs(value) < _PLAIN_FLOAT:
            return False
    return True


def _session_ok(s: Session) -> bool:
    src = s.source
    v11 = s.schema_version == "1.1"
    if src.kind == "published_dataset":
        if not v11 or src.dataset is None or src.dataset is UNSET or not (src.licence or "").strip():
            return False
    elif src.dataset is not UNSET:
        if src.dataset is not None or not v11:
            return False
        src.dataset = UNSET  # an explicit null: left out of the canonical form, as the model leaves it
    declared = s.r_extensions
    for name, slot in declared.items():
        if core_slot_named_like(name) is not None:
            return False
        if slot.speaker is not UNSET:
            if not v11:
                return False
            if slot.speaker is None:
                slot.speaker = UNSET  # an explicit null: left out of the canonical form, as the model leaves it
    for i, step in enumerate(s.steps):
        if step.t != i:
            return False
        texts = step.action_texts
        if texts is not UNSET:
            if not v11:
                return False
            if texts is None:
                step.action_texts = UNSET
            elif step.action_space is None or len(texts) != len(step.action_space):
                return False
        space = step.action_space
        if space is not None and (len(set(space)) != len(space) or step.action not in space or (
                not "".join(space).isascii() and next(actions_alike(space), None) is not None)):
            return False
        if step.r is not None and step.r.ext and not _ext_ok(step.r, declared):
            return False
    return True


def _counterfactual_ok(c: Counterfactual) -> bool:
    a = c.author
    if (a.person_id is None) == (a.generator is None):
        return False
    if (c.origin == "synthetic") != (a.generator is not None):
        return False
    if (c.origin == "paired_session") != (c.paired_session_id is not None):
        return False
    phi = c.phi
    if type(phi) is PhiDistribution and abs(sum(phi.probs.values()) - 1.0) > PHI_TOLERANCE:
        return False
    if c.r_prime.ext:  # which slots are declared is checked at ingest
        for value in c.r_prime.ext.values():
            if type(value) is float and not abs(value) < _PLAIN_FLOAT:
                return False
    return True


def _annotation_ok(a: Annotation) -> bool:
    vt = type(a.value)
    if a.target.kind == "attribution" and vt is not AttributionValue:
        return False
    if a.target.kind == "counterfactual" and vt is AttributionValue:
        return False
    return (a.role == "annotator") == (a.method is None)


_OK = {Session: _session_ok, Counterfactual: _counterfactual_ok, Annotation: _annotation_ok}
_ID_FIELD = {Session: "session_id", Counterfactual: "cf_id", Attribution: "item_id", Annotation: "annotation_id",
             TransferContext: "context_id"}


class FastRecord:
    """A valid record as the ingest stages it: kind, id, canonical JSON, its sha256, steps (of a session), and
    ``rec``, the record as a Struct of this module when the fast path took it (None when the reference path did:
    the ingest then stages its canonical document, as it did before the fast path)."""

    __slots__ = ("kind", "id", "canonical", "sha256", "n_steps", "rec")

    def __init__(self, kind: str, rid: str, canonical: bytes, sha256: str, n_steps: int, rec=None):
        self.kind, self.id, self.canonical, self.sha256, self.n_steps, self.rec = (
            kind, rid, canonical, sha256, n_steps, rec)


def _strict_json_ok(line: bytes) -> bool:
    """The common case of :func:`toolkit.strict_json.check`: finite numbers (orjson refuses the rest) and no key
    twice (a repeat leaves fewer ``:`` in the parsed value written back). False: let the reference path say."""
    try:
        value = orjson.loads(line)
        return b"\\u003" not in line and line.count(b":") == orjson.dumps(value).count(b":")
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):
        return False


def fast_path(line: bytes) -> FastRecord | None:
    """The record of ``line`` when the fast path accepts it; None when it leaves the line to the reference path."""
    if not _strict_json_ok(line) or may_underflow(line):  # a number that may underflow: the reference says
        return None
    try:
        rec = _DECODER.decode(line)
    except msgspec.ValidationError:  # a DecodeError is not possible after orjson has parsed it
        return None
    cls = type(rec)
    if cls in _OK and not _OK[cls](rec):
        return None
    canonical = _ENCODER.encode(rec)
    return FastRecord(cls.__struct_config__.tag, getattr(rec, _ID_FIELD[cls]), canonical,
                      hashlib.sha256(canonical).hexdigest(), len(rec.steps) if cls is Session else 0, rec)


def parse_record_fast(line: bytes) -> FastRecord | list[tuple[str, str]]:
    """:func:`corpus.records.parse_record`, faster: the same canonical form and hash for a valid record, and the
    same problems, word for word, for an invalid one (which the reference path parses again to word them)."""
    fast = fast_path(line)
    if fast is not None:
        return fast
    parsed = parse_record(line)
    if isinstance(parsed, list):
        return parsed
    n = len(parsed.model.steps) if parsed.kind == "session" else 0
    return FastRecord(parsed.kind, parsed.id, parsed.canonical, parsed.sha256, n)
