"""Schema v1 records (version 1.1) as pydantic models.

These models are the Python side of the published contract. The JSON Schema files
beside this module are generated from them (``python -m schemas.generate``) and a
test fails when the checked-in files and these models drift apart.

The models check *structure*: types, required fields, ranges, enumerations,
unknown fields. Rules that a JSON Schema cannot state (steps numbered from 0, an
action inside its step's action space, declared extension slots, Φ summing to 1,
the author matching the origin) live in :mod:`schemas.rules`, and rules that need
other records (a counterfactual pointing at an existing step) are checked at
ingest time by the corpus store.

Version 1.1 is additive over 1.0: the source kind ``published_dataset`` with its
``dataset`` provenance, ``Step.action_texts`` and ``ExtensionSlot.speaker``. A 1.0 record (``schema_version``
1, or none) validates as before and keeps its canonical form: the 1.1 fields are left
out of a record's serialisation while they are unset, so its content hash does not
change. A record that uses a 1.1 field says ``"schema_version": "1.1"``
(:mod:`schemas.rules`).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_serializer

#: The record schema version this toolkit writes (releases record it in their manifest).
SCHEMA_VERSION = "1.1"
#: Every ``schema_version`` a record may state: ``1`` (how 1.0 records state it; the default) and ``"1.1"``.
SCHEMA_VERSIONS = (1, "1.1")
SCHEMA_BASE_URL = "https://trb.trace-ai.org/schemas/v1"

__all__ = [
    "SCHEMA_VERSION",
    "SCHEMA_VERSIONS",
    "SCHEMA_BASE_URL",
    "SOURCE_KINDS",
    "Dataset",
    "Identifier",
    "Source",
    "Context",
    "ExtensionSlot",
    "RSnapshot",
    "Step",
    "Session",
    "Flags",
    "Generator",
    "Author",
    "PhiDistribution",
    "PhiText",
    "Counterfactual",
    "Attribution",
    "AttributionValue",
    "ActionValue",
    "ContinuationValue",
    "AnnotationTarget",
    "LabelStudioRef",
    "Annotation",
    "TransferContext",
    "RECORD_MODELS",
    "Record",
]

Identifier = Annotated[
    str,
    StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:\-]{0,127}$"),
]
NonEmpty = Annotated[str, StringConstraints(min_length=1)]
Probability = Annotated[float, Field(ge=0.0, le=1.0)]
#: Integers bounded to what every consumer (DuckDB, Arrow, parquet) stores exactly.
Index = Annotated[int, Field(ge=0, le=2_147_483_647)]
Count = Annotated[int, Field(ge=1, le=2_147_483_647)]
Int64 = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]
SchemaVersion = Literal[1, "1.1"]
_VERSION_HELP = ('The record schema version: 1 (schema 1.0; the default) or "1.1". A record that uses a field '
                 'added in 1.1 (source kind published_dataset, source.dataset, steps[].action_texts, '
                 'r_extensions.*.speaker) must say "1.1".')


class _Strict(BaseModel):
    """Unknown fields are errors: a typo must not pass as data."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def _record_config(kind: str, title: str, description: str) -> ConfigDict:
    return ConfigDict(
        extra="forbid",
        strict=True,
        frozen=True,
        title=title,
        json_schema_extra={
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"{SCHEMA_BASE_URL}/{kind}.schema.json",
            "description": description,
            "$comment": f"TRB record schema {SCHEMA_VERSION} (additive over 1.0: records of 1.0 stay valid).",
        },
    )


class Dataset(_Strict):
    """The published dataset an item comes from (source kind ``published_dataset``; schema 1.1)."""

    name: NonEmpty = Field(description="The dataset's name, e.g. 'BIG-Bench Hard'.")
    revision: NonEmpty = Field(description="Which release of it exactly: a version, tag or commit.")
    citation: NonEmpty = Field(description="How to cite it (a reference or a BibTeX entry).")
    item: NonEmpty | None = Field(default=None, description="The item's own id in the dataset (subset, index).")


#: Every source kind: the first three are real data (a trb release may hold them), the last two made up.
SOURCE_KINDS = ("human_session", "model_rollout", "published_dataset", "simulated", "illustrative")


class Source(_Strict):
    """Where a session came from, and under what consent and licence."""

    kind: Literal["human_session", "model_rollout", "published_dataset", "simulated", "illustrative"] = Field(
        description="human_session and model_rollout are real data; published_dataset (schema 1.1) is an item of a "
        "published dataset (its dataset and licence required), real data but not a person's session; simulated and "
        "illustrative data may only appear in smoke releases."
    )
    collector: NonEmpty = Field(description="Person or organisation that collected the session.")
    consent_ref: str | None = Field(
        default=None, description="Reference to the consent record (required in practice for human_session)."
    )
    licence: str | None = Field(default=None, description="SPDX id or licence name of the session data "
                                "(required for published_dataset: the dataset's licence).")
    dataset: Dataset | None = Field(
        default=None, description="Schema 1.1: the published dataset, for source kind published_dataset (required "
        "there, refused for every other kind)."
    )

    @model_serializer(mode="wrap")
    def _without_unset_1_1(self, handler):
        """A 1.0 source serialises as it always has: ``dataset`` only when set."""
        out = handler(self)
        if self.dataset is None:
            out.pop("dataset", None)
        return out


class Context(_Strict):
    """What Track 6 transfers across: stimuli, subjects, language of self-report."""

    context_id: Identifier = Field(description="Stable id of the context; a transfer_context record may declare it held out.")
    stimulus_set: NonEmpty
    subject_population: NonEmpty
    language: Annotated[str, StringConstraints(pattern=r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$")] = Field(
        description="BCP 47 tag of the language the self-report is written in."
    )


class ExtensionSlot(_Strict):
    """A declared r_t slot beyond the four core slots."""

    type: Literal["string", "number", "boolean"]
    description: NonEmpty
    speaker: Literal["agent", "user"] | None = Field(
        default=None, description="Schema 1.1: who states the slot's value when r (or r') is shown to a model: "
        "'agent' (the agent's own reasoning; the default when absent) or 'user' (words of the user beside the "
        "observation, e.g. a suggested answer: a proxy model reads them in the user's turn)."
    )

    @model_serializer(mode="wrap")
    def _without_unset_1_1(self, handler):
        """A 1.0 slot declaration serialises as it always has: ``speaker`` only when set."""
        out = handler(self)
        if self.speaker is None:
            out.pop("speaker", None)
        return out


class RSnapshot(_Strict):
    """The self-representation r_t in named slots. An absent slot was not reported."""

    goal: str | None = Field(default=None, description="What the agent says it is trying to reach.")
    planned_next: str | None = Field(default=None, description="The action the agent says it will take next.")
    caused_by_self: Probability | None = Field(
        default=None, description="The agent's belief that the latest outcome was caused by its own action."
    )
    confidence: Probability | None = Field(default=None, description="The agent's stated confidence.")
    ext: dict[str, str | float | bool] | None = Field(
        default=None, description="Values of the session's declared extension slots (r_extensions)."
    )


class Step(_Strict):
    """One step t: what the agent saw, r_t, the action (among its space), the outcome."""

    t: Index = Field(description="Step index; steps are numbered 0, 1, 2, … in order.")
    observation: str = Field(description="Plain-text rendering of what the agent saw.")
    r: RSnapshot | None = Field(default=None, description="The r_t snapshot, or null when none was recorded.")
    action: str = Field(description="The action taken: an element of action_space, or free text when open-ended.")
    action_space: Annotated[list[NonEmpty], Field(min_length=1)] | None = Field(
        default=None, description="The discrete actions available, or null for an open-ended step."
    )
    outcome: str | None = Field(default=None, description="Plain-text outcome of the step, if any.")
    action_texts: Annotated[list[NonEmpty], Field(min_length=1)] | None = Field(
        default=None, description="Schema 1.1: each action's text beside its label, aligned with action_space (same "
        "length; needs action_space), e.g. multiple-choice options: action_space ['A', 'B'], action_texts ['42', "
        "'17']. Null when the actions are their own text."
    )

    @model_serializer(mode="wrap")
    def _without_unset_1_1(self, handler):
        """A 1.0 step serialises as it always has: ``action_texts`` only when set."""
        out = handler(self)
        if self.action_texts is None:
            out.pop("action_texts", None)
        return out


class Session(_Strict):
    model_config = _record_config(
        "session",
        "TRB session",
        "One trace: ordered steps with r_t snapshots, its source and its context.",
    )

    kind: Literal["session"]
    schema_version: SchemaVersion = Field(default=1, description=_VERSION_HELP)
    session_id: Identifier
    source: Source
    subject_id: Identifier = Field(description="Pseudonymous subject id; never a name or contact.")
    context: Context
    r_extensions: dict[Identifier, ExtensionSlot] = Field(
        default_factory=dict, description="Extension slots declared for this session's r_t."
    )
    steps: Annotated[list[Step], Field(min_length=1)]


class Flags(_Strict):
    adversarial: bool = Field(default=False, description="r' built to mislead.")
    ood: bool = Field(default=False, description="r' outside the distribution seen in traces.")


class Generator(_Strict):
    name: NonEmpty
    version: NonEmpty
    seed: Int64


class Author(_Strict):
    """A person (human origins) or a generator (synthetic origin): exactly one."""

    person_id: Identifier | None = None
    generator: Generator | None = None


class PhiDistribution(_Strict):
    """Φ(r') as a distribution over the step's discrete action space."""

    type: Literal["distribution"]
    probs: dict[NonEmpty, Probability] = Field(min_length=1, description="Action -> probability; sums to 1.")
    n: Count | None = Field(default=None, description="How many annotators' choices the distribution is built from.")


class PhiText(_Strict):
    """Φ(r') as a human text continuation (the paired log-likelihood-ratio variant)."""

    type: Literal["text"]
    text: NonEmpty
    n: Count | None = None


class Counterfactual(_Strict):
    model_config = _record_config(
        "counterfactual",
        "TRB counterfactual",
        "A counterfactual value r' for step t of a session, its origin, and the human continuation Φ(r').",
    )

    kind: Literal["counterfactual"]
    schema_version: SchemaVersion = Field(default=1, description=_VERSION_HELP)
    cf_id: Identifier
    session_id: Identifier
    t: Index
    r_prime: RSnapshot
    origin: Literal["same_session_revision", "paired_session", "synthetic"]
    paired_session_id: Identifier | None = Field(
        default=None, description="For origin paired_session: the session r' was taken from."
    )
    flags: Flags = Field(default_factory=Flags)
    author: Author
    phi: Annotated[PhiDistribution | PhiText, Field(discriminator="type")] | None = Field(
        default=None, description="The human continuation Φ(r'); null while it has not been collected."
    )


class Attribution(_Strict):
    model_config = _record_config(
        "attribution",
        "TRB attribution item",
        "Track 3: an outcome at step t caused by the agent's own action or by an exogenous change.",
    )

    kind: Literal["attribution"]
    schema_version: SchemaVersion = Field(default=1, description=_VERSION_HELP)
    item_id: Identifier
    session_id: Identifier
    t: Index = Field(description="The step whose outcome is attributed.")
    design_label: Literal["self", "exogenous"] = Field(description="The cause, as built into the session.")
    endorsed: bool | None = Field(
        default=None, description="Whether the subject endorsed the outcome (demonstration vs endorsement)."
    )
    note: str | None = None


class AttributionValue(_Strict):
    type: Literal["attribution"]
    label: Literal["self", "exogenous", "unsure"]
    endorsed: bool | None = None
    rationale: str | None = None


class ActionValue(_Strict):
    type: Literal["action"]
    action: NonEmpty
    rationale: str | None = Field(default=None, description="The annotator's note beside the action, if any.")


class ContinuationValue(_Strict):
    type: Literal["continuation"]
    text: NonEmpty
    rationale: str | None = Field(default=None, description="The annotator's note beside the continuation, if any.")


class AnnotationTarget(_Strict):
    kind: Literal["attribution", "counterfactual"]
    id: Identifier


class LabelStudioRef(_Strict):
    project_id: Int64
    task_id: Int64
    annotation_id: Int64


class Annotation(_Strict):
    model_config = _record_config(
        "annotation",
        "TRB annotation",
        "One person's label on an attribution item or continuation of a counterfactual, or an adjudication.",
    )

    kind: Literal["annotation"]
    schema_version: SchemaVersion = Field(default=1, description=_VERSION_HELP)
    annotation_id: Identifier
    target: AnnotationTarget
    annotator_id: Identifier
    role: Literal["annotator", "adjudicator", "reviewer"] = "annotator"
    method: str | None = Field(default=None, description="For adjudications: how the label was decided.")
    value: Annotated[
        AttributionValue | ActionValue | ContinuationValue, Field(discriminator="type")
    ]
    created_at: Annotated[str, StringConstraints(pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")]
    revision: Count = 1
    label_studio: LabelStudioRef | None = None


class TransferContext(_Strict):
    model_config = _record_config(
        "transfer_context",
        "TRB transfer context",
        "Track 6: a held-out context with third-party provenance.",
    )

    kind: Literal["transfer_context"]
    schema_version: SchemaVersion = Field(default=1, description=_VERSION_HELP)
    context_id: Identifier
    description: NonEmpty
    collector_org: NonEmpty = Field(description="Organisation that collected the context's sessions.")
    attestation_ref: NonEmpty = Field(
        description="Reference to the collector's attestation that it did not train the model under test."
    )


RECORD_MODELS: dict[str, type[BaseModel]] = {
    "session": Session,
    "counterfactual": Counterfactual,
    "attribution": Attribution,
    "annotation": Annotation,
    "transfer_context": TransferContext,
}

Record = Annotated[
    Session | Counterfactual | Attribution | Annotation | TransferContext,
    Field(discriminator="kind"),
]


class GateResult(_Strict):
    name: NonEmpty
    passed: bool
    figure: str | float | int | None = None
    bar: str | float | int | None = None
    detail: str | None = None


class FileEntry(_Strict):
    path: NonEmpty
    sha256: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
    bytes: Annotated[int, Field(ge=0)]


class ParentRef(_Strict):
    version: NonEmpty
    release_sha: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]


class SyntheticShare(_Strict):
    synthetic: Annotated[int, Field(ge=0)]
    human: Annotated[int, Field(ge=0)]
    share: Probability | None = Field(description="synthetic / (synthetic + human); null when both are 0.")
    within_cap: bool = Field(description="synthetic <= 3 x human (spec section 5).")


class PhiAnnotatorSplit(_Strict):
    """One split's distribution-Φ counterfactuals: how many annotators stand behind Φ, and the noise ceiling."""

    items: Annotated[int, Field(ge=0)] = Field(description="Counterfactuals whose Φ(r') is a distribution.")
    unstated: Annotated[int, Field(ge=0)] = Field(
        description="Of those, Φ states no annotator count (the simulated world's exact Φ has none); not in "
        "phi_n or oracle_g."
    )
    phi_n: dict[NonEmpty, Annotated[int, Field(ge=0)]] = Field(
        description="Annotator count (as a string) -> counterfactuals."
    )
    phi_n_min: Count | None = None
    phi_n_median: Annotated[float, Field(ge=1)] | None = None
    phi_n_max: Count | None = None
    oracle_g: Probability | None = Field(
        description="Mean annotator-noise ceiling: the expected Track 1 G of a model that outputs the true "
        "distribution, with Φ itself as the truth (a plug-in that over-states the ceiling; toolkit.ceiling). "
        "G above it is not better than the truth. Null when no Φ states its annotators."
    )
    text_items: Annotated[int, Field(ge=0)] = Field(
        description="Counterfactuals whose Φ(r') is a text continuation: no ceiling and no annotator minimum."
    )


class PhiAnnotators(_Strict):
    """The annotators behind Φ(r'): the release's minimum and, per split, counts and the noise ceiling."""

    min_annotators: Count = Field(
        description="Every distribution Φ of the gated splits comes from at least this many annotators "
        "(trb-corpus release --min-annotators)."
    )
    gated_splits: list[NonEmpty] = Field(description="Splits the minimum applies to.")
    splits: dict[NonEmpty, PhiAnnotatorSplit] = Field(description="Each split with counterfactuals.")


class ReleaseManifest(_Strict):
    model_config = _record_config(
        "release_manifest",
        "TRB release manifest",
        "The identity and contents of one corpus release: content SHA, counts, gates, file hashes.",
    )

    format_version: Literal[1, 2] = Field(
        default=2, description="2: claims_sha256 binds every claim (releases cut since it was added); 1: a release "
        "cut before, whose claims are checked only where they can be recomputed from its rows."
    )
    content_format: Literal[1, 2] = Field(
        default=1, description="The definition release_sha follows (schemas.release_format): 2, every column's "
        "canonical byte streams over the rows in key order (releases cut since it was added); 1 (or absent), a "
        "canonical-JSON digest per row."
    )
    release_sha: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")] = Field(
        description="sha256 over every value of every row of every config (split included), as content_format "
        "defines, independent of row order, file layout, compression and parquet writer: the release's identity."
    )
    version: Annotated[str, StringConstraints(pattern=r"^\d+\.\d+\.\d+$")]
    kind: Literal["trb", "smoke"]
    smoke_test: bool = Field(description="True for a smoke release: no TRB score may be claimed from it (spec section 6).")
    trb_version: NonEmpty
    schema_version: SchemaVersion = Field(
        default=1, description='The record schema version the release was cut with: "1.1", or 1 in releases cut '
        "before 1.1 (whose steps have no action_texts column and whose sessions have no dataset columns)."
    )
    toolkit_version: NonEmpty
    created_at: NonEmpty
    salt: NonEmpty = Field(description="Salt of the deterministic split assignment (by subject).")
    split_fractions: dict[NonEmpty, Probability]
    counts: dict[NonEmpty, dict[NonEmpty, Annotated[int, Field(ge=0)]]] = Field(
        description="config -> split -> row count."
    )
    subjects: dict[NonEmpty, Annotated[int, Field(ge=0)]] = Field(description="split -> distinct subjects.")
    synthetic_share: Probability | None = Field(
        description="Synthetic counterfactuals / all counterfactuals in the release; null when there are none."
    )
    synthetic: dict[NonEmpty, SyntheticShare] = Field(description="'overall' and each split.")
    label_source: Literal["design", "adjudicated", "mixed", "none"] = Field(
        description="Where the attribution labels scored by Track 3 come from."
    )
    excluded: dict[NonEmpty, Annotated[int, Field(ge=0)]] = Field(
        default_factory=dict, description="Rows kept out of the release, by reason."
    )
    trainer_orgs: list[NonEmpty] = Field(default_factory=list)
    pii: dict[NonEmpty, Annotated[int, Field(ge=0)]] = Field(default_factory=dict)
    gates: list[GateResult]
    agreement: dict[NonEmpty, float | None] = Field(default_factory=dict)
    phi_annotators: PhiAnnotators | None = Field(
        default=None, description="Annotators behind Φ(r') per split, the annotator minimum and the Track 1 "
        "annotator-noise ceiling; absent in releases cut before it was recorded."
    )
    files: list[FileEntry]
    parent: ParentRef | None = None
    claims_sha256: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")] | None = Field(
        default=None, description="Format 2: sha256 over 'trb-release-claims/1\\n' and every other field of this "
        "manifest as canonical JSON (schemas.release_format.claims_digest), so an edited claim is seen."
    )


class HubRecord(_Strict):
    """What `trb-corpus publish` records beside the manifest (hub.json); the content SHA does not change."""

    repo: NonEmpty
    commit: NonEmpty
    tag: NonEmpty
    release_sha: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
    published_at: NonEmpty


__all__ += ["GateResult", "FileEntry", "ParentRef", "SyntheticShare", "PhiAnnotatorSplit", "PhiAnnotators", "ReleaseManifest", "HubRecord", "SCHEMA_FILES"]

#: Every schema file in schemas/, by name, and the model it is generated from.
SCHEMA_FILES: dict[str, type[BaseModel]] = {
    **{f"{kind}.schema.json": model for kind, model in RECORD_MODELS.items()},
    "release_manifest.schema.json": ReleaseManifest,
}
