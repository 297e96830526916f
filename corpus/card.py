"""The release's dataset card (README.md) and datasheet (DATASHEET.md).

:func:`render_card` writes the Hugging Face dataset card of a release directory;
:func:`datasheet_values` computes every automatic field of the repository's
``DATASHEET.md`` template and :func:`fill_datasheet` substitutes them.

Everything here is a pure function of its arguments: the same manifest (and facts)
always give the same bytes. Nothing reads the clock, the host or the environment;
every table has a fixed row order (configs in ``schemas.release_format.CONFIGS`` order,
splits in ``schemas.release_format.SPLITS`` order, other keys sorted).

Card YAML front matter (read by ``datasets`` and the Hub)::

    pretty_name: ...
    license: cc-by-4.0            # an HF licence id; "other" adds license_name/license_link
    tags: [trb, benchmark, ..., smoke-test (smoke releases only)]
    configs:
    - config_name: sessions
      data_files:
      - split: train
        path: data/sessions/train-*.parquet
      ...

No config is marked ``default``: with several configs, ``datasets`` then refuses
``load_dataset(path)`` without ``name=`` ("Config name is missing"), so every user
names the table they load. (``default: true`` on one config would make
``load_dataset(path)`` load that config silently; a single-config release is the
default automatically.)
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from schemas.release_format import CONFIG_DESCRIPTIONS, CONFIGS, MIN_ANNOTATORS, SPLITS, waived_gates

__all__ = ["SMOKE_BANNER", "FACT_KEYS", "PLACEHOLDER", "CEILING_MEANING", "render_card", "datasheet_values",
           "fill_datasheet", "placeholders", "phi_annotators_section"]

SMOKE_BANNER = ("> **SMOKE TEST** — this release contains simulated or illustrative data. It is for smoke tests of "
                "the pipeline only; no TRB score may be claimed from it (TRB spec §6).")

#: What the annotator-noise ceiling means, said once wherever it is shown.
CEILING_MEANING = ("The ceiling is the Track 1 G that a model outputting the true action distribution can expect "
                   "when Φ(r') is the choice of `phi_n` annotators (annotator noise), with Φ itself standing in for "
                   "the unknown truth, which over-states it: G above this is not better than the truth; G is to be "
                   "read against it, not against 1.")

#: The keys ``facts`` must have (see :func:`datasheet_values`).
FACT_KEYS = ("source_kinds", "subject_count", "collectors", "licences", "consent", "contexts", "origins",
             "transfer_contexts", "label_status")

#: A template field: ``{{name}}``.
PLACEHOLDER = re.compile(r"\{\{([A-Za-z_][A-Za-z0-9_]*)\}\}")

_HF_LICENSE = re.compile(r"^[a-z0-9][a-z0-9.+\-]*$")
_CARD_TAGS = ("trb", "benchmark", "agent-traces", "counterfactuals", "self-attribution", "evaluation")
_NONE = "—"


# --------------------------------------------------------------------------- formatting helpers

def _num(value: Any) -> str:
    """A deterministic rendering of a figure: ints as is, floats to 6 significant digits."""
    if value is None:
        return _NONE
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.6g}"
    return str(value)


def _cell(value: Any, empty: str = _NONE) -> str:
    """A Markdown table cell: no pipes or newlines; ``empty`` for an empty or missing value."""
    if value is None:
        return empty
    text = _num(value)
    text = text.replace("\\", "\\\\").replace("|", "\\|")
    text = "<br>".join(part.strip() for part in text.strip().splitlines())
    return text if text else empty


def _table(header: list[str], rows: Iterable[list[Any]]) -> str:
    lines = ["| " + " | ".join(_cell(h, "") for h in header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _split_order(splits: Iterable[str]) -> list[str]:
    splits = set(splits)
    return [s for s in SPLITS if s in splits] + sorted(splits - set(SPLITS))


def _config_order(configs: Iterable[str]) -> list[str]:
    configs = set(configs)
    return [c for c in CONFIGS if c in configs] + sorted(configs - set(CONFIGS))


def _is_smoke(manifest: Mapping) -> bool:
    return bool(manifest.get("smoke_test")) or manifest.get("kind") == "smoke"


def _ratio(synthetic: int, human: int) -> str:
    if human == 0:
        return "∞:1" if synthetic else "0:1"
    return f"{synthetic / human:.2f}:1"


def _sort_key(value: Any) -> tuple:
    """Sorts None last, everything else by its text."""
    return (value is None, "" if value is None else str(value))


# --------------------------------------------------------------------------- shared tables

def counts_table(manifest: Mapping) -> str:
    """config × split → rows, with a total column, from ``manifest["counts"]``."""
    counts: Mapping[str, Mapping[str, int]] = manifest["counts"]
    if not counts:
        return "No records."
    splits = _split_order(s for per in counts.values() for s in per)
    rows = []
    for config in _config_order(counts):
        per = counts[config]
        rows.append([config] + [per.get(s, _NONE) for s in splits] + [sum(per.values())])
    return _table(["config"] + splits + ["total"], rows)


def gate_table(manifest: Mapping, *, detail: bool) -> str:
    """One row per gate of ``manifest["gates"]``, in manifest order."""
    gates = manifest["gates"]
    if not gates:
        return "No gates recorded."
    header = ["gate", "passed", "figure", "bar"] + (["detail"] if detail else [])
    rows = []
    for g in gates:
        passed = "waived" if g["name"] in waived_gates(manifest) else "yes" if g["passed"] else "**NO**"
        row = [g["name"], passed, g.get("figure"), g.get("bar")]
        if detail:
            row.append(g.get("detail"))
        rows.append(row)
    return _table(header, rows)


def synthetic_table(manifest: Mapping) -> str:
    """'overall' then each split: synthetic, human, share, ratio, within the 3:1 cap."""
    synthetic: Mapping[str, Mapping] = manifest["synthetic"]
    if not synthetic:
        return "No counterfactuals."
    keys = (["overall"] if "overall" in synthetic else []) + _split_order(k for k in synthetic if k != "overall")
    rows = []
    for key in keys:
        v = synthetic[key]
        share = v.get("share")
        rows.append([key, v["synthetic"], v["human"], _NONE if share is None else f"{share:.4f}",
                     _ratio(v["synthetic"], v["human"]), "yes" if v["within_cap"] else "**NO**"])
    return _table(["split", "synthetic", "human", "share", "synthetic:human", "within cap (≤ 3:1)"], rows)


def phi_annotators_section(manifest: Mapping) -> list[str]:
    """The card's lines on the annotators behind Φ(r'): the minimum, per-split counts and the ceiling.

    Empty for a manifest without ``phi_annotators`` (releases cut before it was recorded).
    """
    info = manifest.get("phi_annotators")
    if not info:
        return []
    m = info["min_annotators"]
    gated = " and ".join(f"`{s}`" for s in info["gated_splits"])
    below = (f" — **below the toolkit's default of {MIN_ANNOTATORS}**, chosen for this release"
             if m < MIN_ANNOTATORS else "")
    out = ["## Annotators behind Φ(r') and the Track 1 ceiling", "",
           f"Every distribution Φ(r') of {gated} comes from at least **{m}** annotator(s) "
           f"(`trb-corpus release --min-annotators {m}`){below}; text Φ(r') (one written continuation, for the "
           "log-likelihood-ratio variant) is not subject to it.", ""]
    splits = info["splits"]
    if not splits:
        return out + ["No counterfactuals carry Φ(r').", ""]

    def span(v: Mapping) -> str:
        if v["phi_n_min"] is None:
            return _NONE
        return f"{v['phi_n_min']} / {_num(v['phi_n_median'])} / {v['phi_n_max']}"

    rows = [[split, v["items"], span(v), v["unstated"],
             _NONE if v["oracle_g"] is None else f"{v['oracle_g']:.4f}", v["text_items"]]
            for split, v in ((s, splits[s]) for s in _split_order(splits))]
    out += [_table(["split", "distribution Φ", "annotators min / median / max", "no annotator count",
                    "ceiling (mean oracle G)", "text Φ"], rows), "", CEILING_MEANING, ""]
    if any(v["unstated"] for v in splits.values()):
        out += ["A Φ with no annotator count is not in the ceiling; in the gated splits only the simulated "
                "world's Φ may lack one (it is the simulated subject's exact policy: no annotator noise, so its "
                "ceiling is 1).", ""]
    return out


def _parent(manifest: Mapping) -> str:
    parent = manifest.get("parent")
    return f"{parent['version']} ({parent['release_sha']})" if parent else "none"


# --------------------------------------------------------------------------- the card

def render_card(manifest: dict, *, pretty_name: str, license: str, configs: dict[str, list[str]],
                gate_lines: list[str] | None = None, license_name: str | None = None,
                license_link: str | None = None, phi_from_annotators: int = 0) -> str:
    """README.md of a release: YAML front matter for ``datasets``/the Hub, then the card.

    ``configs`` maps each config present to its splits (the splits that have parquet
    files: each gets ``data/<config>/<split>-*.parquet``). ``license`` is a Hugging
    Face licence id (``cc-by-4.0``, ``cc0-1.0``, ``mit``, ``other``...; ``ValueError``
    if it is not one); for ``other``, ``license_name`` (default ``see-datasheet``)
    and ``license_link`` (default ``DATASHEET.md``) are added as the Hub asks.
    ``gate_lines``, when given, are printed as a list under the gate table (e.g.
    notes on a gate). The body has: the SMOKE TEST banner when
    ``manifest["smoke_test"]``, the identity table (kind, TRB spec, schema, release
    SHA, parent, toolkit), counts per config and split, the synthetic share overall
    and per split, the label source, the annotators behind Φ(r') with the Track 1
    annotator-noise ceiling (when the manifest has ``phi_annotators``), the gate
    results, the files, and how to load.
    """
    if not isinstance(license, str) or not _HF_LICENSE.match(license):
        raise ValueError(f"license {license!r} is not a Hugging Face licence id (e.g. cc-by-4.0, cc0-1.0, other)")
    unknown = sorted(set(configs) - set(CONFIGS))
    if unknown:
        raise ValueError(f"unknown configs: {unknown}")
    empty = [c for c, splits in configs.items() if not splits]
    if empty:
        raise ValueError(f"configs without any split: {empty}")
    smoke = _is_smoke(manifest)
    sha = manifest["release_sha"]
    version = manifest["version"]

    front: dict[str, Any] = {"pretty_name": pretty_name, "license": license}
    if license == "other":
        front["license_name"] = license_name or "see-datasheet"
        front["license_link"] = license_link or "DATASHEET.md"
    front["tags"] = list(_CARD_TAGS) + (["smoke-test"] if smoke else [])
    front["configs"] = [
        {"config_name": config,
         "data_files": [{"split": split, "path": f"data/{config}/{split}-*.parquet"}
                        for split in _split_order(configs[config])]}
        for config in _config_order(configs)
    ]
    yaml_text = yaml.safe_dump(front, sort_keys=False, allow_unicode=True, default_flow_style=False, width=1000)

    out: list[str] = ["---", yaml_text.rstrip("\n"), "---", "", f"# {pretty_name}", ""]
    if smoke:
        out += [SMOKE_BANNER, ""]
    out += [
        "A corpus release of the Trace AI Reflection Benchmark (TRB): agent traces with self-representation "
        "snapshots r_t, counterfactual values r' with human continuations Φ(r') (Track 1), self-attribution "
        "items (Track 3) and held-out transfer contexts (Track 6). The release is identified by its content "
        "SHA; cite it, with the TRB version, in every result.",
        "",
        _table(["", ""], [
            ["release version", version],
            ["release SHA (content identity)", f"`{sha}`"],
            ["kind", manifest["kind"] + (" (SMOKE TEST)" if smoke else "")],
            ["TRB spec version", manifest["trb_version"]],
            ["record schema version", manifest["schema_version"]],
            ["parent release", _parent(manifest)],
            ["split salt", f"`{manifest['salt']}`"],
            ["toolkit version", manifest["toolkit_version"]],
        ]),
        "",
        "## Configs and splits",
        "",
    ]
    out += [f"- `{config}`: {CONFIG_DESCRIPTIONS.get(config, '')}" for config in _config_order(configs)]
    out += [
        "",
        "Rows per config and split:",
        "",
        counts_table(manifest),
        "",
        "Splits are assigned per subject, so no subject and no session is in two splits. The `eval` split is "
        "never used to fit anything (weights, prompts, adapter settings, pass bars); `transfer` holds only "
        "contexts collected by a party that did not train the model under test.",
        "",
        "## Synthetic counterfactuals",
        "",
        "Overall synthetic share: " + (_NONE if manifest.get("synthetic_share") is None
                                        else f"{manifest['synthetic_share']:.4f}") + " (cap: 3 synthetic per human).",
        "",
        synthetic_table(manifest),
        "",
        "## Labels",
        "",
        f"Track 3 labels come from: **{manifest['label_source']}**.",
        "",
        *([f"Φ(r') of {phi_from_annotators} counterfactual(s) comes from annotators' action choices "
           "(`trb-annotate`): the share of annotators choosing each action of the step, with `phi_n` annotators; "
           "the other counterfactuals carry the Φ of their own record.", ""] if phi_from_annotators else []),
        *phi_annotators_section(manifest),
        "## Release gates",
        "",
        gate_table(manifest, detail=False),
        "",
    ]
    if gate_lines:
        out += [f"- {line}" for line in gate_lines] + [""]
    out += [
        "## Files",
        "",
        "- `data/<config>/<split>-NNNNN-of-NNNNN.parquet`: the records",
        "- `DATASHEET.md`: the datasheet (motivation, composition, collection, uses, maintenance)",
        "- `croissant.json`: Croissant 1.1 metadata with RAI fields and every data file's sha256",
        "- `manifest.json`: identity, counts, gates and the sha256 of every file",
        "",
        "## How to load",
        "",
        "From the Hub, pinned to the commit of this release (see the release's `hub.json`):",
        "",
        "```python",
        "from datasets import load_dataset",
        "",
        'ds = load_dataset("ORG/NAME", name="counterfactuals", revision="<commit>")',
        "```",
        "",
        "From a local copy of the release directory:",
        "",
        "```python",
        "from datasets import load_dataset",
        "",
        f'ds = load_dataset("path/to/releases/{version}", name="counterfactuals")',
        'print(ds["train"][0])',
        "```",
        "",
        "Every config needs `name=`: " + ", ".join(f"`{c}`" for c in _config_order(configs)) + ". "
        "The TRB eval engine reads the parquet files directly (`trb run --release <SHA> --adapter ...`); "
        "every result names the TRB version, this release SHA and the adapter tier.",
    ]
    if smoke:
        out += ["", "Any run on this release is a smoke test of the pipeline and is labelled as one in every output."]
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- the datasheet

def _check_facts(facts: Mapping) -> None:
    missing = [k for k in FACT_KEYS if k not in facts]
    extra = sorted(set(facts) - set(FACT_KEYS))
    if missing or extra:
        raise ValueError(f"facts: missing keys {missing}, unexpected keys {extra}")


def _source_kinds_table(source_kinds: Mapping) -> str:
    if not source_kinds:
        return "No sessions."
    totals = {k: (sum(v.values()) if isinstance(v, Mapping) else v) for k, v in source_kinds.items()}
    made_up = totals.get("simulated", 0) + totals.get("illustrative", 0)
    summary = (f"\n\nCollected from human subjects: **{totals.get('human_session', 0)}** session(s); model rollouts: "
               f"{totals.get('model_rollout', 0)}; items of published datasets (stimuli, no human subject): "
               f"{totals.get('published_dataset', 0)}; simulated or illustrative (smoke tests only): {made_up}.")
    if all(isinstance(v, Mapping) for v in source_kinds.values()):
        splits = _split_order(s for per in source_kinds.values() for s in per)
        rows = [[k] + [source_kinds[k].get(s, 0) for s in splits] + [sum(source_kinds[k].values())]
                for k in sorted(source_kinds)]
        return _table(["source kind"] + splits + ["total"], rows) + summary
    return _table(["source kind", "sessions"], [[k, source_kinds[k]] for k in sorted(source_kinds)]) + summary


def _subject_count(total: int, per_split: Mapping[str, int]) -> str:
    if not per_split:
        return str(total)
    parts = ", ".join(f"{s} {per_split[s]}" for s in _split_order(per_split))
    return f"{total} ({parts})"


def _collectors(collectors: Iterable) -> str:
    items = sorted(((c, n) for c, n in collectors), key=lambda cn: _sort_key(cn[0]))
    if not items:
        return "- none"
    return "\n".join(f"- {'none stated' if c is None else c}: {n} session(s)" for c, n in items)


def _licences_table(licences: Iterable) -> str:
    items = sorted(((lic, n) for lic, n in licences), key=lambda ln: _sort_key(ln[0]))
    if not items:
        return "No sessions."
    return _table(["licence", "sessions"], [["none stated" if lic is None else lic, n] for lic, n in items])


def _consent(consent: Iterable, source_kinds: Mapping) -> str:
    k, n = consent
    human = source_kinds.get("human_session", 0)
    if isinstance(human, Mapping):
        human = sum(human.values())
    return f"{k} of {n} sessions carry a consent reference ({human} human_session session(s) in this release)"


def _contexts_table(contexts: Iterable[Mapping]) -> str:
    rank = {s: i for i, s in enumerate(SPLITS)}
    rows = sorted(contexts, key=lambda c: (str(c["context_id"]), rank.get(c["split"], len(rank)), str(c["split"])))
    if not rows:
        return "No contexts."
    return _table(["context_id", "stimulus set", "subject population", "language", "split", "sessions"],
                  [[c["context_id"], c.get("stimulus_set"), c.get("subject_population"), c.get("language"),
                    c["split"], c["n_sessions"]] for c in rows])


_ORIGIN_COLUMNS = (("n", "counterfactuals"), ("adversarial", "adversarial"), ("ood", "ood"),
                   ("phi_distribution", "Φ distribution"), ("phi_text", "Φ text"), ("phi_missing", "Φ missing"))


def _origins_table(origins: Mapping) -> str:
    if not origins:
        return "No counterfactuals."
    keys = sorted(origins)
    if all(isinstance(origins[k], Mapping) for k in keys):
        cols = [(key, title) for key, title in _ORIGIN_COLUMNS if any(key in origins[k] for k in keys)]
        return _table(["origin"] + [t for _, t in cols], [[k] + [origins[k].get(c, 0) for c, _ in cols] for k in keys])
    return _table(["origin", "counterfactuals"], [[k, origins[k]] for k in keys])


def _synthetic_share(manifest: Mapping) -> str:
    overall = manifest["synthetic"].get("overall")
    if overall is None or (overall["synthetic"] + overall["human"]) == 0:
        return "no counterfactuals"
    s, h = overall["synthetic"], overall["human"]
    share = manifest.get("synthetic_share")
    if share is None:
        share = overall.get("share")
    cap = "within the cap" if overall["within_cap"] else "OVER THE CAP"
    return f"{share:.4f} ({s} synthetic : {h} human = {_ratio(s, h)}; cap 3:1, {cap})"


def _transfer_table(transfer_contexts: Iterable[Mapping]) -> str:
    rows = sorted(transfer_contexts, key=lambda c: str(c["context_id"]))
    if not rows:
        return "no transfer split: no context with third-party provenance"
    return _table(["context_id", "description", "collector organisation", "attestation reference", "sessions"],
                  [[c["context_id"], c.get("description"), c.get("collector_org"), c.get("attestation_ref"),
                    c.get("n_sessions")] for c in rows])


def _label_status_table(label_status: Mapping) -> str:
    if not label_status:
        return "No attribution items."
    return _table(["status", "items"], [[k, label_status[k]] for k in sorted(label_status, key=_sort_key)])


def _agreement(agreement: Mapping) -> str:
    if not agreement:
        return "- no agreement figures computed for this release"
    return "\n".join(f"- {name}: {'n/a' if value is None else _num(value)}" for name, value in sorted(agreement.items()))


def _pii_scan(manifest: Mapping) -> str:
    gates = [g for g in manifest["gates"] if "pii" in g["name"].lower()]
    pii = manifest.get("pii") or {}
    figures = ", ".join(f"{k} {pii[k]}" for k in sorted(pii))
    if not gates:
        return "not run: this release records no PII gate" + (f" (figures: {figures})" if figures else "")
    parts = []
    for g in gates:
        text = f"{g['name']}: {'passed' if g['passed'] else 'FAILED'}"
        if g.get("figure") is not None:
            text += f"; {_num(g['figure'])}"
        if g.get("bar") is not None:
            text += f" (bar: {_num(g['bar'])})"
        parts.append(text)
    text = "; ".join(parts)
    if figures:
        text += f". Counts: {figures}"
    return text + "."


def datasheet_values(manifest: dict, facts: dict) -> dict[str, str]:
    """A string for every automatic field of the ``DATASHEET.md`` template.

    ``manifest`` is a release manifest (``schemas.models.ReleaseManifest`` as a dict).
    ``facts`` is computed by the release tool from the released rows and has exactly
    these keys (``ValueError`` otherwise):

    - ``source_kinds``: ``{kind: n_sessions}`` (or ``{kind: {split: n_sessions}}``,
      rendered as a kind × split table);
    - ``subject_count``: ``int``, distinct subjects over the release (the per-split
      figures come from ``manifest["subjects"]``);
    - ``collectors``: ``[(collector, n_sessions)]``;
    - ``licences``: ``[(licence or None, n_sessions)]``; ``None`` is shown as
      ``none stated``;
    - ``consent``: ``(n_with_consent_ref, n_sessions)``;
    - ``contexts``: ``[dict(context_id, stimulus_set, subject_population, language,
      split, n_sessions)]``;
    - ``origins``: ``{origin: n}`` (or ``{origin: {n, adversarial, ood,
      phi_distribution, phi_text, phi_missing}}``, any subset of those columns);
    - ``transfer_contexts``: ``[dict(context_id, collector_org, attestation_ref,
      description, n_sessions)]``;
    - ``label_status``: ``{status: n}``.

    Rows are sorted (by name, ``None`` last; splits in layout order), so the input
    order does not matter.
    """
    _check_facts(facts)
    smoke = _is_smoke(manifest)
    return {
        "release_version": str(manifest["version"]),
        "release_sha": str(manifest["release_sha"]),
        "release_kind": str(manifest["kind"]),
        "trb_version": str(manifest["trb_version"]),
        "schema_version": str(manifest["schema_version"]),
        "parent_release": _parent(manifest),
        "split_salt": str(manifest["salt"]),
        "smoke_banner": SMOKE_BANNER if smoke else "",
        "counts_table": counts_table(manifest),
        "source_kinds_table": _source_kinds_table(facts["source_kinds"]),
        "subject_count": _subject_count(int(facts["subject_count"]), manifest.get("subjects") or {}),
        "collectors": _collectors(facts["collectors"]),
        "licences_table": _licences_table(facts["licences"]),
        "consent_coverage": _consent(facts["consent"], facts["source_kinds"]),
        "contexts_table": _contexts_table(facts["contexts"]),
        "counterfactual_origins_table": _origins_table(facts["origins"]),
        "synthetic_share": _synthetic_share(manifest),
        "transfer_contexts_table": _transfer_table(facts["transfer_contexts"]),
        "label_status_table": _label_status_table(facts["label_status"]),
        "agreement": _agreement(manifest.get("agreement") or {}),
        "gate_results": gate_table(manifest, detail=True),
        "pii_scan": _pii_scan(manifest),
    }


def placeholders(template: str) -> list[str]:
    """The distinct ``{{name}}`` fields of a template, in order of first appearance."""
    seen: dict[str, None] = {}
    for m in PLACEHOLDER.finditer(template):
        seen.setdefault(m.group(1), None)
    return list(seen)


def fill_datasheet(template: str, values: dict[str, str]) -> str:
    """Replace every ``{{name}}`` of ``template`` with ``values[name]``, in one pass.

    Raises ``ValueError`` naming every placeholder without a value, every value no
    placeholder uses, a ``{{`` that is not a well-formed placeholder, and a value that
    is not a string or would leave ``{{`` in the output. Replaced text is not scanned
    again, so a value cannot inject another field.
    """
    names = placeholders(template)
    problems = []
    missing = [n for n in names if n not in values]
    if missing:
        problems.append("placeholders without a value: " + ", ".join(missing))
    unused = sorted(set(values) - set(names))
    if unused:
        problems.append("values no placeholder uses: " + ", ".join(unused))
    not_str = sorted(k for k, v in values.items() if not isinstance(v, str))
    if not_str:
        problems.append("values that are not strings: " + ", ".join(not_str))
    stray = PLACEHOLDER.sub("", template).count("{{")
    if stray:
        problems.append(f"{stray} '{{{{' in the template that is not a {{{{name}}}} placeholder")
    braces = sorted(k for k, v in values.items() if isinstance(v, str) and "{{" in v)
    if braces:
        problems.append("values containing '{{': " + ", ".join(braces))
    if problems:
        raise ValueError("datasheet template: " + "; ".join(problems))
    filled = PLACEHOLDER.sub(lambda m: values[m.group(1)], template)
    if "{{" in filled:  # e.g. a value ending in "{" before a "{" of the template
        raise ValueError("datasheet template: '{{' left in the filled datasheet at offset " + str(filled.index("{{")))
    return filled


def check_datasheet_template(path, what: str = "datasheet template") -> str:
    """The text of a curator's datasheet template at ``path``, checked before a release starts: UTF-8, and filled
    by exactly the values the packaged template takes (every ``{{name}}`` known, none missing, no stray ``{{``).

    Raises:
        UsageError: it cannot be read, is not UTF-8 text, or is not a datasheet template (each problem named).
    """
    from importlib import resources

    from corpus.errors import UsageError

    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise UsageError(f"{what} {path}: cannot be read ({e.strerror})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UsageError(f"{what} {path}: not UTF-8 text (byte {e.start}); a datasheet template is a Markdown "
                         "file") from None
    packaged = (resources.files("corpus") / "templates" / "DATASHEET.md").read_text(encoding="utf-8")
    try:
        fill_datasheet(text, {name: "" for name in placeholders(packaged)})
    except ValueError as e:
        raise UsageError(f"{what} {path}: not a datasheet template like the packaged one "
                         f"({str(e).removeprefix('datasheet template: ')})") from None
    return text
