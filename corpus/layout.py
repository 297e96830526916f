"""The release format: configs, their columns, splits and file names.

A release directory is a Hugging Face dataset repository::

    data/<config>/<split>-NNNNN-of-NNNNN.parquet
    README.md          dataset card (YAML front matter declares configs and data_files)
    DATASHEET.md       the datasheet, filled from the corpus
    croissant.json     Croissant 1.1 metadata with RAI fields and file sha256s
    manifest.json      identity, counts, gates, file hashes (schemas/release_manifest.schema.json)

The eval engine reads only this format (through DuckDB over the parquet files),
never the corpus store.
"""

from __future__ import annotations

import pyarrow as pa

__all__ = ["FORMAT_VERSION", "SPLITS", "SPLIT_FRACTIONS", "CONFIGS", "CONFIG_DESCRIPTIONS", "arrow_schema",
           "shard_name", "ROWS_PER_SHARD"]

FORMAT_VERSION = 1
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
        ("source_kind", _S, "human_session, model_rollout, simulated or illustrative."),
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

CONFIG_DESCRIPTIONS = {
    "sessions": "One row per session: source, subject, context, split.",
    "steps": "One row per step: observation, r_t slots, action, action space, outcome.",
    "counterfactuals": "Track 1: counterfactual values r' and the human continuation Φ(r').",
    "attribution": "Track 3: outcomes caused by the agent or by an exogenous change, with labels.",
    "transfer": "Track 6: held-out contexts and their third-party provenance.",
}


def arrow_schema(config: str) -> pa.Schema:
    return pa.schema([pa.field(name, typ) for name, typ, _ in CONFIGS[config]])


def shard_name(config: str, split: str, index: int, total: int) -> str:
    """Path of one parquet shard inside a release directory."""
    return f"data/{config}/{split}-{index:05d}-of-{total:05d}.parquet"
