"""Schema v1 rules a JSON Schema cannot state, checked on one record at a time.

Schema 1.1 adds: a field new in 1.1 needs ``"schema_version": "1.1"``; a
``published_dataset`` source names its dataset and licence, other kinds name no
dataset; ``action_texts`` needs an action space of the same length; an extension slot may say who
states it (``speaker``).

Names a reader would take for one another are refused: two actions of one action space that are equal after
Unicode NFKC with invisible (default-ignorable) characters removed (``ﬁle`` and ``file``, full-width ``Ａ`` and
``A``), and an ``r_extensions`` slot named like a core slot of r_t (``Goal``, ``planned-next``, ``CONFIDENCE``:
compared after NFKC and case folding, ignoring ``.``, ``_``, ``:`` and ``-``).

Each rule yields ``(json_pointer, message)``. Rules that need other records (a
counterfactual's step must exist, Φ's actions must lie in that step's action space)
are checked by the corpus store at ingest, where every record is in reach.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator

from schemas.models import Annotation, Attribution, Counterfactual, RSnapshot, Session, TransferContext
from toolkit.skeleton import strip_ignorable

__all__ = ["PHI_TOLERANCE", "CORE_SLOTS", "record_rule_errors", "action_key", "core_slot_named_like",
           "actions_alike"]

#: How far a Φ distribution may sum from 1.
PHI_TOLERANCE = 1e-6

_EXT_TYPES = {"string": (str,), "number": (int, float), "boolean": (bool,)}
#: The slots of r_t itself; an extension slot may not be named like one of them.
CORE_SLOTS = tuple(RSnapshot.model_fields)
_SLOT_SEPARATORS = str.maketrans("", "", "._:-")
_CORE_KEYS = {unicodedata.normalize("NFKC", c).casefold().translate(_SLOT_SEPARATORS): c for c in CORE_SLOTS}
_CORE_INITIALS = frozenset(k[0] for k in _CORE_KEYS)


def action_key(action: str) -> str:
    """``action`` as a reader sees it: NFKC, without default-ignorable characters (two actions alike are one)."""
    return action if action.isascii() else strip_ignorable(unicodedata.normalize("NFKC", strip_ignorable(action)))


def actions_alike(space: list[str]) -> Iterator[tuple[int, int]]:
    """``(i, j)``, i < j, for each action ``space[j]`` that differs from an earlier ``space[i]`` but reads alike."""
    if "".join(space).isascii():  # the common case: NFKC changes no ASCII text
        return
    first: dict[str, int] = {}
    for j, action in enumerate(space):
        key = action_key(action)
        i = first.setdefault(key, j)
        if i != j and space[i] != action:
            yield i, j


def core_slot_named_like(name: str) -> str | None:
    """The core slot of r_t that the extension slot ``name`` is named like (NFKC, case-folded, without
    ``._:-``), or None."""
    key = (name if name.isascii() else unicodedata.normalize("NFKC", name)).casefold()
    if key.lstrip("._:-")[:1] not in _CORE_INITIALS:  # the common case, cheaply
        return None
    return _CORE_KEYS.get(key.translate(_SLOT_SEPARATORS))


def _ext_errors(r: RSnapshot | None, declared: dict, where: str) -> Iterator[tuple[str, str]]:
    if r is None or not r.ext:
        return
    for name, value in r.ext.items():
        slot = declared.get(name)
        if slot is None:
            known = ", ".join(sorted(declared)) or "none declared"
            yield f"{where}/ext/{name}", f"unknown r_t slot {name!r}: not declared in r_extensions ({known})"
            continue
        ok = _EXT_TYPES[slot.type]
        if not isinstance(value, ok) or (slot.type == "number" and isinstance(value, bool)):
            yield f"{where}/ext/{name}", f"{value!r} is not of type {slot.type!r} declared for slot {name!r}"


def _needs_1_1(record, where: str, what: str) -> Iterator[tuple[str, str]]:
    if record.schema_version != "1.1":
        yield where, f"{what} is new in record schema 1.1: the record must say \"schema_version\": \"1.1\""


def _source_errors(s: Session) -> Iterator[tuple[str, str]]:
    src = s.source
    if src.kind == "published_dataset":
        yield from _needs_1_1(s, "/source/kind", "source kind 'published_dataset'")
        if src.dataset is None:
            yield "/source/dataset", ("a published_dataset source must name its dataset "
                                      "(name, revision, citation)")
        if not (src.licence or "").strip():
            yield "/source/licence", "a published_dataset source must state the dataset's licence"
    elif src.dataset is not None:
        yield "/source/dataset", f"source.dataset is only for source kind 'published_dataset', not {src.kind!r}"
    elif "dataset" in src.model_fields_set:  # an explicit null: still a 1.1 field
        yield from _needs_1_1(s, "/source/dataset", "source.dataset")


def _session_errors(s: Session) -> Iterator[tuple[str, str]]:
    yield from _source_errors(s)
    for name, slot in s.r_extensions.items():
        if (core := core_slot_named_like(name)) is not None:
            yield (f"/r_extensions/{name}", f"extension slot {name!r} is named like the core slot {core!r} "
                   f"(compared case-folded, ignoring . _ : -): name it apart from {', '.join(CORE_SLOTS)}")
        if "speaker" in slot.model_fields_set:
            yield from _needs_1_1(s, f"/r_extensions/{name}/speaker", "r_extensions.*.speaker")
    for i, step in enumerate(s.steps):
        here = f"/steps/{i}"
        if step.t != i:
            yield f"{here}/t", f"expected {i} (steps are numbered contiguously from 0), got {step.t}"
        if "action_texts" in step.model_fields_set:
            yield from _needs_1_1(s, f"{here}/action_texts", "action_texts")
        if step.action_texts is not None:
            if step.action_space is None:
                yield f"{here}/action_texts", "action_texts needs an action_space (each text is an action's)"
            elif len(step.action_texts) != len(step.action_space):
                yield (f"{here}/action_texts", f"{len(step.action_texts)} action_texts for "
                       f"{len(step.action_space)} actions in action_space: they must align one to one")
        if step.action_space is not None:
            if len(set(step.action_space)) != len(step.action_space):
                yield f"{here}/action_space", "action_space has repeated actions"
            for a, b in actions_alike(step.action_space):
                yield (f"{here}/action_space/{b}", f"{step.action_space[b]!r} reads as {step.action_space[a]!r} "
                       f"(action {a}) after Unicode NFKC normalisation: give actions that differ visibly")
            if step.action not in step.action_space:
                yield f"{here}/action", f"{step.action!r} is not in the step's action_space {step.action_space}"
        yield from _ext_errors(step.r, s.r_extensions, f"{here}/r")


def _counterfactual_errors(c: Counterfactual) -> Iterator[tuple[str, str]]:
    a = c.author
    if (a.person_id is None) == (a.generator is None):
        yield "/author", "author must name exactly one of person_id or generator"
    elif c.origin == "synthetic" and a.generator is None:
        yield "/author", "a synthetic counterfactual must name its generator (name, version, seed)"
    elif c.origin != "synthetic" and a.person_id is None:
        yield "/author", f"origin {c.origin!r} is human: author must be a person_id, not a generator"
    if c.origin == "paired_session" and c.paired_session_id is None:
        yield "/paired_session_id", "origin 'paired_session' requires paired_session_id"
    if c.origin != "paired_session" and c.paired_session_id is not None:
        yield "/paired_session_id", f"paired_session_id is only for origin 'paired_session', not {c.origin!r}"
    if c.phi is not None and c.phi.type == "distribution":
        total = sum(c.phi.probs.values())
        if abs(total - 1.0) > PHI_TOLERANCE:
            yield "/phi/probs", f"probabilities sum to {total:.9g}, expected 1 (±{PHI_TOLERANCE:g})"


def _annotation_errors(a: Annotation) -> Iterator[tuple[str, str]]:
    vt = a.value.type
    if a.target.kind == "attribution" and vt != "attribution":
        yield "/value/type", f"an annotation of an attribution item takes a value of type 'attribution', not {vt!r}"
    if a.target.kind == "counterfactual" and vt not in ("action", "continuation"):
        yield "/value/type", f"an annotation of a counterfactual takes 'action' or 'continuation', not {vt!r}"
    if a.role == "annotator" and a.method is not None:
        yield "/method", "method is for adjudications (role adjudicator or reviewer)"
    if a.role != "annotator" and a.method is None:
        yield "/method", f"an annotation with role {a.role!r} must say its method"


def record_rule_errors(record: Session | Counterfactual | Attribution | Annotation | TransferContext) -> list[tuple[str, str]]:
    """Every single-record rule ``record`` breaks, as ``(json_pointer, message)``."""
    if isinstance(record, Session):
        return list(_session_errors(record))
    if isinstance(record, Counterfactual):
        return list(_counterfactual_errors(record))
    if isinstance(record, Annotation):
        return list(_annotation_errors(record))
    return []
