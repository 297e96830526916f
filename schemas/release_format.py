"""The release format: the one contract between the writer (``corpus``) and the reader (``trb``).

A release directory is a Hugging Face dataset repository::

    data/<config>/<split>-NNNNN-of-NNNNN.parquet
    README.md          dataset card (YAML front matter declares configs and data_files)
    DATASHEET.md       the datasheet, filled from the corpus
    croissant.json     Croissant 1.1 metadata with RAI fields and file sha256s
    manifest.json      identity, counts, gates, file hashes (schemas/release_manifest.schema.json)

Everything both sides must agree on lives here and nowhere else: the configs and
their columns, the splits, the r-slot names and how a row's r is decoded, the
content-SHA definition, the synthetic-cap constant, the default annotator minimum,
the human origins, and the file check against the manifest. ``corpus`` writes with it, ``trb`` reads with it.

The release SHA is the content: row order, sharding, the parquet writer and compression do not
change it, and one changed value anywhere does. A manifest names the definition its SHA follows
(``content_format``). Releases are cut with format 2 (:data:`CONTENT_FORMAT`); a manifest without
the field was cut before it, and its SHA is format 1's, verified as it always was. Both are defined
here so that anyone can recompute them from the parquet files, in any language.

**Content format 2** (``trb-release-content/2``; a value-by-value reference implementation is
``tests/content_reference.py``):

1. *The table of a config*: all its files together, with exactly its columns (:data:`CONFIGS`:
   names, order, Arrow types). A column stored under another Arrow type is read as the declared one
   when the cast loses nothing (``int64`` holding ``int32`` values, ``large_string``); a column of
   :data:`ADDED_COLUMNS` that a file lacks is null. A file with any other column, or lacking any
   other, has no format-2 SHA (``verify`` names it).
2. *Row order*: ascending by ``split``, then by the config's key columns (:data:`CONTENT_KEYS`:
   ``session_id``; ``session_id, t``; ``cf_id``; ``item_id``; ``context_id``), strings compared by
   their UTF-8 bytes, integers by value, a null before any value. Rows equal on all of these (a cut
   release has none: the keys are unique) follow one another in the bytewise order of their *row
   digests*, the config digest (step 4) of a table of that one row; rows equal in every column are
   interchangeable, so every set of rows has one order.
3. *Column digest*: a column of ``n`` values (in that order) of type ``T`` is a list of byte
   streams ``S(T)``; its digest is ``sha256(sha256(s1) + sha256(s2) + ...)`` over them (32-byte
   digests, an empty stream's included):

   - every type starts with *validity*: ``n`` bytes, ``01`` for a value, ``00`` for a null;
   - ``bool``: then ``n`` bytes, ``01`` for true, ``00`` for false or null;
   - ``int32``, ``int64``: then ``n`` × 8 bytes, each value as a little-endian two's-complement
     int64, 0 for a null;
   - ``float64``: then ``n`` × 8 bytes, each value's IEEE 754 binary64 bits, little-endian (so
     ``-0.0`` is not ``0.0``), 0 for a null, every NaN as ``0x7FF8000000000000``;
   - ``string``: then *lengths*, ``n`` × 8 bytes, each value's length in UTF-8 bytes as a
     little-endian int64 (0 for a null); then *data*, the UTF-8 bytes of the values one after
     another, as stored (no Unicode normalisation);
   - ``list<E>``: then *lengths*, ``n`` × 8 bytes, each list's number of elements as a
     little-endian int64 (0 for a null list); then ``S(E)`` of the column of the elements of all
     the lists, one list after another;
   - ``struct<f1: T1, f2: T2, ...>``: then ``S(T1)`` of the column of the ``n`` values of field
     ``f1`` (null where the struct is null), then ``S(T2)``, ..., in the declared field order.

   So a null is told from an empty string or list, list boundaries and struct fields are bound,
   and so is every value of every column.
4. ``config_digest = sha256("".join(f"{column}\\t{column_digest}\\n" for every column, in order))``,
   digests in lowercase hex.
5. ``release_sha = sha256("trb-release-content/2\\n" + "".join(f"{config}\\t{n_rows}\\t{config_digest}\\n"
   for config in sorted(configs with at least one row))``.

A release's shards, read in path order (``dev``, ``eval``, ``train``, ``transfer``, each shard
written in key order), hold their rows in this order already: the digest is taken a batch at a
time as the files are written or read. Rows that come out of order are sorted
(:class:`ContentDigest` then reads their files again, whole).

**Content format 1** (``trb-release-content/1``, releases cut before format 2):

1. Every row of every config is a JSON object of its columns (the split
   included), serialised canonically: keys sorted, no whitespace, UTF-8, floats
   in their shortest round-tripping form, lists in their stored order. A column
   of :data:`ADDED_COLUMNS` is left out while it is null (so a release cut before
   schema 1.1, whose files lack them, verifies as it always did).
2. Each row's serialisation is hashed with sha256 (32 raw bytes).
3. Per config, the row digests are sorted bytewise and hashed together:
   ``config_digest = sha256(concat(sorted(row_digests)))``.
4. ``release_sha = sha256("trb-release-content/1\\n" + "".join(f"{config}\\t{n_rows}\\t{config_digest}\\n"
   for config in sorted(configs)))``, digests in lowercase hex; a config is listed when it has a file.

The manifest's other claims are bound to the rows in two ways (:mod:`schemas.release_check`
checks both, for ``trb-corpus verify`` and ``trb run`` alike): those that follow from the
rows (kind, counts, subjects, synthetic shares, label source, the annotators behind Φ, the
split of every session from the salt and fractions, PII redactions, the gates that must
have passed) are recomputed from them; the rest (version, parent, trainer organisations,
gate figures, the excluded count, the versions and the date) are covered by
``claims_sha256`` (manifest format 2, :func:`claims_digest`): the sha256 of every field of
the manifest but itself, canonically serialised, after ``trb-release-claims/1\n``.

A reader takes a missing added column (:data:`ADDED_COLUMNS`) as null.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from schemas.release_files import HUB_ARTEFACTS, file_differences
from toolkit import strict_json

__all__ = [
    "SPLITS", "SPLIT_FRACTIONS", "ROWS_PER_SHARD", "CONFIGS", "CONFIG_DESCRIPTIONS",
    "MANIFEST", "R_SLOTS", "R_PREFIX", "ORIGINS", "HUMAN_ORIGINS", "SYNTHETIC_ORIGIN", "SYNTHETIC_CAP",
    "MIN_ANNOTATORS", "ADDED_COLUMNS", "REAL_SOURCE_KINDS", "SMOKE_SOURCE_KINDS", "MANIFEST_FORMAT_VERSION",
    "HUB_RECORD", "HUB_ARTEFACTS", "RELEASE_GATES", "WAIVED", "WAIVABLE_GATES", "waived_gates", "ANNOTATOR_GATED_SPLITS", "REDACTION_MARKER",
    "SPLIT_HASH_DIGITS", "SPLIT_HASH_SCALE", "CONTENT_FORMAT", "CONTENT_FORMATS", "CONTENT_KEYS",
    "arrow_schema", "shard_name", "data_files", "decode_r", "ContentDigest", "release_sha_of_files",
    "read_manifest", "file_differences", "claims_digest", "split_edges", "subject_split",
]


#: The core r-slot names, in schema order; a row also carries ``<prefix>ext`` (declared extension slots, JSON).
R_SLOTS = ("goal", "planned_next", "caused_by_self", "confidence")
#: config -> the column prefix of its r slots: a step's recorded r_t, a counterfactual's r'.
R_PREFIX = {"steps": "r_", "counterfactuals": "rp_"}
#: Counterfactual origins (spec §3, Track 1 inputs); the first two are written by people.
ORIGINS = ("same_session_revision", "paired_session", "synthetic")
HUMAN_ORIGINS = ("same_session_revision", "paired_session")
SYNTHETIC_ORIGIN = "synthetic"
#: Source kinds a ``trb`` release may hold (real data); ``simulated`` and ``illustrative`` are for smoke releases.
#: ``published_dataset`` sessions are real items of a published dataset, not people's sessions: their r_t is the
#: dataset's answer, so they are stimuli for Track 1 whose counterfactuals are synthetic (counted against the cap)
#: and whose Φ(r') comes from annotators, gated like any real data's (README "Importing outside data").
REAL_SOURCE_KINDS = ("human_session", "model_rollout", "published_dataset")
#: Source kinds that make a release a smoke release (no TRB score may be claimed from it, spec §6).
SMOKE_SOURCE_KINDS = ("simulated", "illustrative")
#: At most this many synthetic counterfactuals per human one (spec §5, whitepaper §4.4).
SYNTHETIC_CAP = 3.0
#: Default least number of annotators behind a distribution Φ(r') in the eval and transfer splits
#: (``trb-corpus release --min-annotators``; the value a release used is in its manifest and card).
MIN_ANNOTATORS = 5
#: The manifest's file name inside a release directory.
MANIFEST = "manifest.json"
#: The manifest format releases are cut with: 2 carries ``claims_sha256`` (:func:`claims_digest`); a format-1
#: manifest (cut before claims were bound) is read, its claims recomputed from the rows where they can be.
MANIFEST_FORMAT_VERSION = 2
#: What ``trb-corpus publish`` writes beside the manifest (the hub commit; schemas.models.HubRecord).
HUB_RECORD = "hub.json"
#: The gates every release passed, by name (``trb-corpus release``; README "Releases").
RELEASE_GATES = ("release_kind", "synthetic_cap", "transfer_provenance", "split_discipline", "completeness",
                 "min_annotators", "pii_scan", "immutability")
#: How a waived gate's bar begins in a manifest (``cut_release(waive_synthetic_cap=True)``): its figure is recorded,
#: its rule not enforced. Only a smoke release may waive, and only these gates.
WAIVED = "WAIVED for this smoke release"
WAIVABLE_GATES = ("synthetic_cap",)


def waived_gates(manifest: Mapping) -> set[str]:
    """The names of the gates ``manifest`` records as waived."""
    return {g["name"] for g in manifest.get("gates") or () if str(g.get("bar") or "").startswith(WAIVED)}


#: The splits whose distribution Φ(r') must come from at least ``min_annotators`` annotators.
ANNOTATOR_GATED_SPLITS = ("eval", "transfer")
#: What a redacted piece of personal data is replaced with: ``[REDACTED:<kind>]`` (corpus.pii.redact).
REDACTION_MARKER = "[REDACTED:"

#: The content-SHA definition releases are cut with (the module docstring); a manifest names its own
#: (``content_format``, absent in releases cut before format 2: those are format 1).
CONTENT_FORMAT = 2
CONTENT_FORMATS = (1, 2)
#: Every split a release may have; ``transfer`` holds the sessions of declared transfer contexts.
SPLITS = ("train", "dev", "eval", "transfer")
#: Share of subjects assigned to each in-distribution split.
SPLIT_FRACTIONS = {"train": 0.7, "dev": 0.1, "eval": 0.2}
ROWS_PER_SHARD = 500_000

_S, _I, _BI, _D, _B = pa.string(), pa.int32(), pa.int64(), pa.float64(), pa.bool_()
_PROBS = pa.list_(pa.struct([("action", _S), ("p", _D)]))
_LABELS = pa.list_(pa.struct([("annotator_id", _S), ("role", _S), ("label", _S), ("method", _S)]))

#: config -> [(column, Arrow type, description)]; every config has a ``split`` column.
CONFIGS: dict[str, list[tuple[str, pa.DataType, str]]] = {
    "sessions": [
        ("session_id", _S, "Session id."),
        ("split", _S, "train, dev, eval or transfer."),
        ("source_kind", _S, "human_session, model_rollout, published_dataset, simulated or illustrative."),
        ("collector", _S, "Who collected the session."),
        ("consent_ref", _S, "Consent record reference."),
        ("licence", _S, "Licence of the session data."),
        ("subject_id", _S, "Pseudonymous subject id."),
        ("context_id", _S, "Context id."),
        ("stimulus_set", _S, "Stimulus set of the context."),
        ("subject_population", _S, "Subject population of the context."),
        ("language", _S, "BCP 47 language of the self-report."),
        ("r_extensions", _S, "Declared extension slots (JSON object)."),
        ("n_steps", _I, "Number of steps."),
        ("dataset_name", _S, "For published_dataset: the dataset's name (schema 1.1)."),
        ("dataset_revision", _S, "For published_dataset: the dataset's revision (version, tag or commit)."),
        ("dataset_citation", _S, "For published_dataset: how to cite the dataset."),
        ("dataset_item", _S, "For published_dataset: the item's own id in the dataset."),
    ],
    "steps": [
        ("session_id", _S, "Session id."),
        ("split", _S, "The session's split."),
        ("t", _I, "Step index from 0."),
        ("observation", _S, "What the agent saw (plain text)."),
        ("has_r", _B, "Whether an r_t snapshot was recorded."),
        ("r_goal", _S, "r_t goal slot."),
        ("r_planned_next", _S, "r_t planned_next slot."),
        ("r_caused_by_self", _D, "r_t caused_by_self slot (probability)."),
        ("r_confidence", _D, "r_t confidence slot (probability)."),
        ("r_ext", _S, "r_t extension slots (JSON object)."),
        ("action", _S, "The action taken."),
        ("action_space", pa.list_(_S), "The discrete action space; null when open-ended."),
        ("outcome", _S, "Outcome of the step (plain text)."),
        ("action_texts", pa.list_(_S), "Each action's text beside its label, aligned with action_space; null when "
                                       "the actions are their own text (schema 1.1)."),
    ],
    "counterfactuals": [
        ("cf_id", _S, "Counterfactual id."),
        ("split", _S, "The session's split."),
        ("session_id", _S, "Session id."),
        ("t", _I, "Step whose r_t is replaced."),
        ("rp_goal", _S, "r' goal slot."),
        ("rp_planned_next", _S, "r' planned_next slot."),
        ("rp_caused_by_self", _D, "r' caused_by_self slot."),
        ("rp_confidence", _D, "r' confidence slot."),
        ("rp_ext", _S, "r' extension slots (JSON object)."),
        ("origin", _S, "same_session_revision, paired_session or synthetic."),
        ("paired_session_id", _S, "For paired_session: the session r' came from."),
        ("adversarial", _B, "r' built to mislead."),
        ("ood", _B, "r' out of distribution."),
        ("author_person", _S, "Author (human origins)."),
        ("generator_name", _S, "Generator name (synthetic)."),
        ("generator_version", _S, "Generator version (synthetic)."),
        ("generator_seed", _BI, "Generator seed (synthetic)."),
        ("phi_type", _S, "distribution or text; null when Φ is lacking."),
        ("phi_probs", _PROBS, "Φ(r') over the action space, sorted by action."),
        ("phi_text", _S, "Φ(r') as a text continuation."),
        ("phi_n", _I, "Annotators behind Φ(r')."),
    ],
    "attribution": [
        ("item_id", _S, "Attribution item id."),
        ("split", _S, "The session's split."),
        ("session_id", _S, "Session id."),
        ("t", _I, "Step whose outcome is attributed."),
        ("design_label", _S, "self or exogenous, as built into the session."),
        ("endorsed", _B, "Whether the subject endorsed the outcome."),
        ("note", _S, "Curator note."),
        ("label", _S, "The label Track 3 scores against."),
        ("label_source", _S, "design or adjudicated."),
        ("annotations", _LABELS, "Every annotator and adjudicator label."),
    ],
    "transfer": [
        ("context_id", _S, "Transfer context id."),
        ("split", _S, "Always transfer."),
        ("description", _S, "What is held out."),
        ("collector_org", _S, "Organisation that collected the context (not a trainer of the model)."),
        ("attestation_ref", _S, "Reference to its attestation."),
        ("n_sessions", _I, "Sessions of this context in the release."),
    ],
}

#: config -> the columns that identify a row besides its split: the content order of format 2 (rows sorted by
#: split, then these). Unique in a cut release (the corpus store's keys).
CONTENT_KEYS: dict[str, tuple[str, ...]] = {
    "sessions": ("session_id",),
    "steps": ("session_id", "t"),
    "counterfactuals": ("cf_id",),
    "attribution": ("item_id",),
    "transfer": ("context_id",),
}

#: config -> columns added after the first release format: absent from older releases' files (read as null), and
#: left out of a row's content serialisation while null (see the module docstring).
ADDED_COLUMNS: dict[str, tuple[str, ...]] = {
    "sessions": ("dataset_name", "dataset_revision", "dataset_citation", "dataset_item"),
    "steps": ("action_texts",),
}

CONFIG_DESCRIPTIONS = {
    "sessions": "One row per session: source, subject, context, split.",
    "steps": "One row per step: observation, r_t slots, action, action space, outcome.",
    "counterfactuals": "Track 1: counterfactual values r' and the human continuation Φ(r').",
    "attribution": "Track 3: outcomes caused by the agent or by an exogenous change, with labels.",
    "transfer": "Track 6: held-out contexts and their third-party provenance.",
}


#: A subject's u is the first this-many hex digits of ``sha256(f"{salt}:{subject_id}")``, over this scale.
SPLIT_HASH_DIGITS = 16
SPLIT_HASH_SCALE = 2**64


def split_edges(fractions: Mapping[str, float]) -> tuple[list[tuple[str, float]], str]:
    """``[(split, upper edge of u)]`` for the splits with a share, and the split of a u past every edge.

    The splits are cut in :data:`SPLIT_FRACTIONS` order (train, dev, eval) whatever the order of ``fractions``'
    keys: a manifest re-saved with sorted keys, or with its fractions in another order, names the same rule."""
    edges, edge, last = [], 0.0, None
    order = [s for s in SPLIT_FRACTIONS if s in fractions] + [s for s in fractions if s not in SPLIT_FRACTIONS]
    for split in order:
        share = fractions[split]
        if share <= 0:
            continue
        edge += share
        last = split
        edges.append((split, edge))
    return edges, last or "train"


def subject_split(salt: str, subject_id: str, fractions: Mapping[str, float] = SPLIT_FRACTIONS) -> str:
    """The in-distribution split of ``subject_id`` under ``salt`` (``corpus.splits`` has the whole rule)."""
    u = int(hashlib.sha256(f"{salt}:{subject_id}".encode()).hexdigest()[:SPLIT_HASH_DIGITS], 16) / SPLIT_HASH_SCALE
    edges, past = split_edges(fractions)
    return next((split for split, edge in edges if u < edge), past)


def arrow_schema(config: str) -> pa.Schema:
    return pa.schema([pa.field(name, typ) for name, typ, _ in CONFIGS[config]])


def shard_name(config: str, split: str, index: int, total: int) -> str:
    """Path of one parquet shard inside a release directory."""
    return f"data/{config}/{split}-{index:05d}-of-{total:05d}.parquet"


def data_files(directory: str | os.PathLike, config: str, split: str | None = None) -> list[Path]:
    """The parquet shards of ``config`` (of one ``split`` if given) in a release directory, sorted."""
    pattern = f"data/{config}/{split}-*.parquet" if split else f"data/{config}/*.parquet"
    return sorted(Path(directory).glob(pattern))


def decode_r(row: Mapping, prefix: str) -> dict:
    """The r slots of one row (``prefix`` from :data:`R_PREFIX`), extension slots decoded from JSON under ``ext``."""
    r = {k: row.get(f"{prefix}{k}") for k in R_SLOTS}
    ext = row.get(f"{prefix}ext")
    r["ext"] = strict_json.loads(ext) if ext else None  # a release is someone else's file: strict
    return r


def read_manifest(directory: str | os.PathLike) -> dict:
    """The parsed ``manifest.json`` of a release directory, read strictly (:mod:`toolkit.strict_json`).

    Raises:
        OSError: as reading the file does.
        toolkit.strict_json.StrictJSONError: (a ValueError) not JSON, a non-finite number or a repeated key,
            naming the file and where.
    """
    return strict_json.load(Path(directory) / MANIFEST)


_CLAIMS_PREFIX = b"trb-release-claims/1\n"


def claims_digest(manifest: Mapping) -> str:
    """``claims_sha256`` of a manifest: sha256 of ``trb-release-claims/1\\n`` and every field but itself, as
    canonical JSON (keys sorted, no whitespace, UTF-8, floats in their shortest round-tripping form)."""
    body = {k: v for k, v in manifest.items() if k != "claims_sha256"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(_CLAIMS_PREFIX + text.encode("utf-8")).hexdigest()


# -- the content SHA ---------------------------------------------------------------------------------

_PREFIX_1 = b"trb-release-content/1\n"
_PREFIX_2 = b"trb-release-content/2\n"


class _Content1:
    """Content format 1: a canonical-JSON sha256 per row, sorted per config (the module docstring)."""

    def __init__(self) -> None:
        self._rows: dict[str, bytearray] = {}

    def add_config(self, config: str) -> None:
        self._rows.setdefault(config, bytearray())

    def add_batch(self, config: str, batch: pa.RecordBatch | pa.Table, source: Path | None = None) -> None:
        buf = self._rows.setdefault(config, bytearray())
        sha, dumps, opt = hashlib.sha256, orjson.dumps, orjson.OPT_SORT_KEYS
        added = [c for c in ADDED_COLUMNS.get(config, ()) if c in batch.schema.names]
        all_null = [c for c in added if batch.column(c).null_count == batch.num_rows]
        if all_null:  # the common case: a whole batch without the added columns' data
            batch = batch.drop_columns(all_null) if isinstance(batch, pa.Table) else \
                pa.Table.from_batches([batch]).drop_columns(all_null)
        mixed = [c for c in added if c not in all_null]
        for row in batch.to_pylist():
            for c in mixed:
                if row[c] is None:
                    del row[c]
            buf += sha(dumps(row, option=opt)).digest()

    def config_digests(self) -> dict[str, tuple[int, str]]:
        out = {}
        for config, buf in self._rows.items():
            digests = np.sort(np.frombuffer(bytes(buf), dtype="S32")) if buf else np.array([], dtype="S32")
            out[config] = (len(digests), hashlib.sha256(digests.tobytes()).hexdigest())
        return out

    def hexdigest(self) -> str:
        h = hashlib.sha256(_PREFIX_1)
        for config, (n, digest) in sorted(self.config_digests().items()):
            h.update(f"{config}\t{n}\t{digest}\n".encode())
        return h.hexdigest()


# content format 2: column streams (the module docstring) ---------------------------------------------

_ONES = b""
_NAN = np.uint64(0x7FF8000000000000)


def _n_streams(t: pa.DataType) -> int:
    """How many byte streams a column of type ``t`` has."""
    if pa.types.is_struct(t):
        return 1 + sum(_n_streams(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return 2 + _n_streams(t.value_type)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return 3
    return 2


def _validity(a: pa.Array) -> bytes | memoryview:
    global _ONES
    if a.null_count == 0:
        if len(_ONES) < len(a):
            _ONES = b"\x01" * max(len(a), 65_536)
        return memoryview(_ONES)[:len(a)]
    return a.is_valid().to_numpy(zero_copy_only=False).view(np.uint8).data


def _offsets(a: pa.Array) -> np.ndarray:
    """The offsets of a string or list array's values (``len(a) + 1`` of them, its slice honoured)."""
    wide = pa.types.is_large_string(a.type) or pa.types.is_large_list(a.type)
    return np.frombuffer(a.buffers()[1], np.int64 if wide else np.int32)[a.offset:a.offset + len(a) + 1]


def _lengths(a: pa.Array) -> np.ndarray:
    """Each value's length (bytes of a string, elements of a list) as int64, 0 for a null."""
    lengths = np.diff(_offsets(a).astype(np.int64))
    if a.null_count:
        lengths[~a.is_valid().to_numpy(zero_copy_only=False)] = 0
    return lengths.astype("<i8", copy=False)


def _feed(a: pa.Array, hs: list, i: int) -> int:
    """Update the stream hashers ``hs[i:]`` with column ``a`` (one chunk); the index past its streams."""
    t = a.type
    hs[i].update(_validity(a))
    i += 1
    if pa.types.is_struct(t):
        for child in a.flatten():  # flatten() gives each field the struct's nulls too: a null struct's fields are null
            i = _feed(child, hs, i)
        return i
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        hs[i].update(_lengths(a).data)
        return _feed(a.flatten(), hs, i + 1)  # the elements of the non-null lists, in order
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        if a.null_count:
            a = pc.fill_null(a, "")  # a null's slot holds no bytes
        hs[i].update(_lengths(a).data)
        offsets = _offsets(a)
        data = a.buffers()[2]
        hs[i + 1].update(memoryview(data)[int(offsets[0]):int(offsets[-1])] if data is not None else b"")
        return i + 2
    if pa.types.is_boolean(t):
        v = (pc.fill_null(a, False) if a.null_count else a).to_numpy(zero_copy_only=False).view(np.uint8)
    elif pa.types.is_integer(t):
        v = (pc.fill_null(a, 0) if a.null_count else a).to_numpy(zero_copy_only=False).astype("<i8", copy=False)
    elif pa.types.is_floating(t):
        x = (pc.fill_null(a, 0.0) if a.null_count else a).to_numpy(zero_copy_only=False).astype("<f8", copy=False)
        nan = np.isnan(x)
        v = x.view("<u8")
        if nan.any():
            v = v.copy()
            v[nan] = _NAN
    else:
        raise ValueError(f"no content/2 encoding for Arrow type {t}")
    hs[i].update(np.ascontiguousarray(v).data)
    return i + 1


def _feed_column(column: pa.ChunkedArray, hs: list) -> None:
    for chunk in column.chunks:
        if len(chunk):
            _feed(chunk, hs, 0)


_POOL: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    """Threads that hash columns (hashlib and numpy let go of the GIL) while the caller reads the next batch."""
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1)), thread_name_prefix="trb-sha")
    return _POOL


def _forget_pool() -> None:  # a forked child has none of the parent's threads
    global _POOL
    _POOL = None


os.register_at_fork(after_in_child=_forget_pool)


class _Columns:
    """The stream hashers of every column of a table of ``schema``; a table is hashed in the background, column
    by column, while the next is read (each column's batches in turn)."""

    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema
        self.n = 0
        self.hashers = [[hashlib.sha256() for _ in range(_n_streams(f.type))] for f in self.schema]
        self._pending: list = []

    def _wait(self) -> None:
        pending, self._pending = self._pending, []
        for f in pending:
            f.result()

    def add(self, table: pa.Table) -> None:
        self._wait()
        pool = _pool()
        self._pending = [pool.submit(_feed_column, column, hs) for hs, column in zip(self.hashers, table.columns)]
        self.n += table.num_rows

    def digest(self) -> bytes:
        self._wait()
        h = hashlib.sha256()
        for f, hs in zip(self.schema, self.hashers):
            col = hashlib.sha256(b"".join(s.digest() for s in hs)).hexdigest()
            h.update(f"{f.name}\t{col}\n".encode())
        return h.digest()


def _normalise(config: str, batch: pa.RecordBatch | pa.Table) -> pa.Table:
    """``batch`` as a table of exactly the config's declared columns and types (a missing added column is null).

    Raises:
        ValueError: a column the config does not declare, a declared one missing, or one that does not cast.
    """
    schema = arrow_schema(config)
    table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
    names = table.schema.names
    extra = sorted(set(names) - set(schema.names))
    if extra:
        raise ValueError(f"column(s) {', '.join(extra)} are not columns of the {config} config")
    if names == schema.names and table.schema.equals(schema):
        return table
    columns = []
    for f in schema:
        if f.name in names:
            col = table.column(f.name)
            columns.append(col if col.type == f.type else col.cast(f.type))
        elif f.name in ADDED_COLUMNS.get(config, ()):
            columns.append(pa.nulls(table.num_rows, f.type))
        else:
            raise ValueError(f"column {f.name} of the {config} config is missing")
    return pa.Table.from_arrays(columns, schema=schema)


def _order_columns(config: str) -> tuple[str, ...]:
    return ("split", *CONTENT_KEYS[config])


def _in_order(table: pa.Table, keys: tuple[str, ...]) -> tuple | None:
    """The last row's key if ``table``'s rows are in strictly ascending key order with no null key, else None."""
    cols = [table.column(k) for k in keys]
    if any(c.null_count for c in cols):
        return None
    n = table.num_rows
    if n > 1:
        ok = None  # row i < row i+1, deciding from the last key column to the first
        for c in reversed(cols):
            a, b = c.slice(0, n - 1), c.slice(1)
            lt = pc.less(a, b)
            ok = lt if ok is None else pc.or_(lt, pc.and_(pc.equal(a, b), ok))
        if not pc.all(ok).as_py():
            return None
    return tuple(c[n - 1].as_py() for c in cols) if n else ()


def _row_digest(table: pa.Table, i: int) -> bytes:
    cols = _Columns(table.schema)
    cols.add(table.slice(i, 1))
    return cols.digest()


def _sorted(config: str, table: pa.Table) -> pa.Table:
    """``table``'s rows in content/2 order: by split and the config's key columns, ties by their row digest."""
    keys = _order_columns(config)
    idx = pc.sort_indices(table, sort_keys=[(k, "ascending", "at_start") for k in keys])
    table = table.take(idx)
    n = table.num_rows
    if n < 2:
        return table
    same = None
    for k in keys:
        c = table.column(k)
        a, b = c.slice(0, n - 1), c.slice(1)
        eq = pc.or_kleene(pc.and_kleene(pc.is_null(a), pc.is_null(b)), pc.fill_null(pc.equal(a, b), False))
        same = eq if same is None else pc.and_(same, eq)
    tied = np.flatnonzero(same.to_numpy(zero_copy_only=False))
    if not len(tied):
        return table
    order = np.arange(n)
    run_start = None
    for j, i in enumerate(tied):  # runs of rows equal on every key: i and i+1 tie
        if run_start is None:
            run_start = i
        if j + 1 == len(tied) or tied[j + 1] != i + 1:
            rows = range(run_start, i + 2)
            order[run_start:i + 2] = sorted(rows, key=lambda r: _row_digest(table, r))
            run_start = None
    return table.take(pa.array(order))


class _Content2:
    """Content format 2: rows in key order, each column's byte streams hashed (the module docstring).

    Batches are hashed as they come while they arrive in order (a release's shards, read in path order,
    are); once a config's rows come out of order, its files (``source``) are read again whole and sorted.
    """

    def __init__(self) -> None:
        self._cols: dict[str, _Columns] = {}
        self._last: dict[str, tuple] = {}
        self._sources: dict[str, list[Path]] = {}
        self._unordered: set[str] = set()
        self._unsourced: set[str] = set()

    def add_config(self, config: str) -> None:
        self._sources.setdefault(config, [])

    def add_batch(self, config: str, batch: pa.RecordBatch | pa.Table, source: Path | None = None) -> None:
        sources = self._sources.setdefault(config, [])
        if source is None:
            self._unsourced.add(config)
        elif not sources or sources[-1] != source:
            sources.append(source)
        table = _normalise(config, batch)  # every file's columns are checked, even those read again
        if config in self._unordered or not table.num_rows:
            return
        last = _in_order(table, _order_columns(config))
        if last is None or (config in self._last and not _before(self._last[config], table, _order_columns(config))):
            self._unordered.add(config)
            return
        self._last[config] = last
        self._cols.setdefault(config, _Columns(table.schema)).add(table)

    def config_digests(self) -> dict[str, tuple[int, str]]:
        for config in self._unordered:
            if config in self._unsourced:
                raise ValueError(f"{config} rows out of content order, and not every batch named its file")
            tables = [_normalise(config, pq.read_table(p)) for p in self._sources[config]]
            cols = _Columns(arrow_schema(config))
            if tables:
                cols.add(_sorted(config, pa.concat_tables(tables)))
            self._cols[config] = cols
        self._unordered.clear()
        return {c: (cols.n, cols.digest().hex()) for c, cols in self._cols.items() if cols.n}

    def hexdigest(self) -> str:
        h = hashlib.sha256(_PREFIX_2)
        for config, (n, digest) in sorted(self.config_digests().items()):
            h.update(f"{config}\t{n}\t{digest}\n".encode())
        return h.hexdigest()


def _before(last: tuple, table: pa.Table, keys: tuple[str, ...]) -> bool:
    """Whether key ``last`` comes strictly before ``table``'s first row's."""
    first = tuple(table.column(k)[0].as_py() for k in keys)
    return last < first


class ContentDigest:
    """Accumulates the rows of a release, batch by batch; :meth:`hexdigest` gives the release SHA of
    ``content_format`` (the module docstring: 1, a canonical-JSON digest per row; 2, column streams).

    ``add_batch(config, batch, source)``: ``source`` is the parquet file the rows are in; content format 2
    reads a config's files again, whole, if its rows come out of content order. ``add_config(config)``: a
    file of ``config`` was read (format 1 lists a config with files even with no rows; format 2 does not).
    """

    def __init__(self, content_format: int = CONTENT_FORMAT) -> None:
        if content_format not in CONTENT_FORMATS:
            raise ValueError(f"content format {content_format!r} is not one of {CONTENT_FORMATS}")
        self.content_format = content_format
        self._impl = _Content1() if content_format == 1 else _Content2()

    def add_batch(self, config: str, batch: pa.RecordBatch | pa.Table, source: str | os.PathLike | None = None) -> None:
        self._impl.add_batch(config, batch, None if source is None else Path(source))

    def add_config(self, config: str) -> None:
        self._impl.add_config(config)

    def config_digests(self) -> dict[str, tuple[int, str]]:
        """config -> (rows, config digest in hex)."""
        return self._impl.config_digests()

    def hexdigest(self) -> str:
        return self._impl.hexdigest()


def release_sha_of_files(files: Iterable[tuple[str, Path]], batch_rows: int = 65_536,
                         content_format: int = CONTENT_FORMAT) -> tuple[str, dict[str, int]]:
    """The release SHA of ``content_format`` recomputed from ``(config, parquet path)`` pairs, and the row count
    per config. Pass a config's files in path order (``data/<config>/<split>-NNNNN-of-NNNNN.parquet`` sorted):
    a release's rows then come in content order, hashed as they are read.

    Raises:
        ValueError: (format 2) a file has a column its config does not declare, lacks one, or one that does not cast.
    """
    digest = ContentDigest(content_format)
    counts: dict[str, int] = {}
    for config, path in files:
        pf = pq.ParquetFile(path)
        for batch in pf.iter_batches(batch_size=batch_rows):
            digest.add_batch(config, batch, path)
            counts[config] = counts.get(config, 0) + batch.num_rows
        counts.setdefault(config, 0)
        digest.add_config(config)
    return digest.hexdigest(), counts
