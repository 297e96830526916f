"""corpus.card: the dataset card (README.md) and the datasheet of a release.

The card is checked with the real ``datasets`` library, offline, in a child process
whose HF_HOME and caches are in the test's tmp dir; the datasheet is filled from the
real template at the repository root.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from corpus.card import FACT_KEYS, SMOKE_BANNER, datasheet_values, fill_datasheet, placeholders, render_card
from corpus.release import TEMPLATE  # the packaged template (corpus/templates/DATASHEET.md)
from schemas.models import ReleaseManifest
from schemas.release_format import CONFIGS, arrow_schema, shard_name

SHA = "c3" * 32
# config -> split -> (rows, shards)
COUNTS = {
    "sessions": {"train": (5, 2), "dev": (1, 1), "eval": (2, 1), "transfer": (1, 1)},
    "steps": {"train": (9, 1), "dev": (2, 1), "eval": (4, 1), "transfer": (2, 1)},
    "counterfactuals": {"train": (4, 1), "eval": (3, 1)},
    "attribution": {"train": (2, 1), "eval": (1, 1)},
    "transfer": {"transfer": (1, 1)},
}
FACTS = {
    "source_kinds": {"simulated": 7, "illustrative": 2},
    "subject_count": 5,
    "collectors": [("trb-sim", 7), ("maintainers", 2)],
    "licences": [("cc-by-4.0", 6), (None, 3)],
    "consent": (2, 9),
    "contexts": [
        {"context_id": "ctx-b", "stimulus_set": "clock", "subject_population": "adults", "language": "de",
         "split": "transfer", "n_sessions": 1},
        {"context_id": "ctx-a", "stimulus_set": "arith", "subject_population": "adults", "language": "en",
         "split": "eval", "n_sessions": 2},
        {"context_id": "ctx-a", "stimulus_set": "arith", "subject_population": "adults", "language": "en",
         "split": "train", "n_sessions": 5},
    ],
    "origins": {"synthetic": 3, "same_session_revision": 3, "paired_session": 1},
    "transfer_contexts": [{"context_id": "ctx-b", "collector_org": "Other Lab", "attestation_ref": "att-1",
                           "description": "German self-reports | held out", "n_sessions": 1}],
    "label_status": {"design": 2, "adjudicated": 1},
}


def _value(typ: pa.DataType, col: str, i: int):
    if pa.types.is_list(typ):
        return None if i % 2 else [_value(typ.value_type, col, i + j) for j in range(2)]
    if pa.types.is_struct(typ):
        return {typ.field(k).name: _value(typ.field(k).type, typ.field(k).name, i) for k in range(typ.num_fields)}
    if pa.types.is_string(typ):
        return f"{col}-{i}"
    if pa.types.is_integer(typ):
        return i
    if pa.types.is_floating(typ):
        return 0.5
    if pa.types.is_boolean(typ):
        return bool(i % 2)
    raise AssertionError(f"no test value for {typ}")


def make_release(root: Path, *, smoke: bool) -> dict:
    """Parquet shards under ``root`` (layout schemas) and a manifest that ReleaseManifest accepts."""
    files = []
    for config, per_split in COUNTS.items():
        for split, (n, shards) in per_split.items():
            rows = [{**{c: _value(t, c, i) for c, t, _ in CONFIGS[config]}, "split": split} for i in range(n)]
            for k in range(shards):
                path = root / shard_name(config, split, k, shards)
                path.parent.mkdir(parents=True, exist_ok=True)
                part = rows[k * n // shards:(k + 1) * n // shards]
                pq.write_table(pa.Table.from_pylist(part, schema=arrow_schema(config)), path)
                data = path.read_bytes()
                files.append({"path": path.relative_to(root).as_posix(), "sha256": hashlib.sha256(data).hexdigest(),
                              "bytes": len(data)})
    manifest = {
        "release_sha": SHA, "version": "0.3.1", "kind": "smoke" if smoke else "trb", "smoke_test": smoke,
        "trb_version": "0.1", "schema_version": 1, "toolkit_version": "0.1.0",
        "created_at": "2026-11-29T10:00:00+00:00", "salt": "salt-x",
        "split_fractions": {"train": 0.7, "dev": 0.1, "eval": 0.2},
        "counts": {c: {s: n for s, (n, _) in per.items()} for c, per in COUNTS.items()},
        "subjects": {"transfer": 1, "train": 3, "dev": 1, "eval": 1},
        "synthetic_share": 3 / 7,
        "synthetic": {"train": {"synthetic": 2, "human": 2, "share": 0.5, "within_cap": True},
                      "overall": {"synthetic": 3, "human": 4, "share": 3 / 7, "within_cap": True},
                      "eval": {"synthetic": 1, "human": 2, "share": 1 / 3, "within_cap": True}},
        "label_source": "mixed",
        "pii": {"hits": 2, "redacted": 2},
        "gates": [
            {"name": "release_kind", "passed": True, "figure": "9 simulated/illustrative session(s)",
             "bar": "labelled as smoke" if smoke else "0 in a trb release"},
            {"name": "synthetic_cap", "passed": True, "figure": 0.75, "bar": "synthetic <= 3 x human"},
            {"name": "split_discipline", "passed": True, "figure": 0, "bar": "0 / 0 / 0",
             "detail": "line one\nline | two"},
            {"name": "pii_scan", "passed": True, "figure": "2 hit(s) in every text field (redacted)",
             "bar": "0 unredacted hits"},
        ],
        "agreement": {"caused_by_self_alpha": 0.712345678, "phi_js": None},
        "files": files,
        "parent": {"version": "0.3.0", "release_sha": "ab" * 32},
    }
    return ReleaseManifest.model_validate(manifest).model_dump(mode="json")


def _configs() -> dict[str, list[str]]:
    return {c: list(per) for c, per in COUNTS.items()}


def _card(manifest: dict, **kw) -> str:
    args = dict(pretty_name="TRB corpus release 0.3.1", license="cc-by-4.0", configs=_configs())
    args.update(kw)
    return render_card(manifest, **args)


def _front_matter(card: str) -> dict:
    assert card.startswith("---\n")
    head, _, _ = card[4:].partition("\n---\n")
    return yaml.safe_load(head)


@pytest.fixture
def smoke(tmp_path):
    root = tmp_path / "release"
    return root, make_release(root, smoke=True)


def test_front_matter_declares_every_config_and_split(smoke):
    _, manifest = smoke
    front = _front_matter(_card(manifest))
    assert front["pretty_name"] == "TRB corpus release 0.3.1"
    assert front["license"] == "cc-by-4.0"
    assert "smoke-test" in front["tags"]
    assert [c["config_name"] for c in front["configs"]] == list(COUNTS)
    for entry in front["configs"]:
        config = entry["config_name"]
        assert "default" not in entry
        assert entry["data_files"] == [{"split": s, "path": f"data/{config}/{s}-*.parquet"} for s in COUNTS[config]]
    other = _front_matter(_card(manifest, license="other"))
    assert other["license"] == "other" and other["license_name"] and other["license_link"] == "DATASHEET.md"
    with pytest.raises(ValueError, match="licence id"):
        _card(manifest, license="CC BY 4.0")


_LOAD = r"""
import json, sys
import datasets
root, names = sys.argv[1], sys.argv[2:]
out = {}
for name in names:
    ds = datasets.load_dataset(root, name=name)
    out[name] = {split: ds[split].num_rows for split in ds}
try:
    datasets.load_dataset(root)
    out["<no name>"] = "loaded"
except ValueError as exc:
    out["<no name>"] = str(exc)
print(json.dumps(out))
"""


def test_datasets_loads_every_config_and_split_offline(smoke, tmp_path):
    root, manifest = smoke
    (root / "README.md").write_text(_card(manifest), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_"))}
    env.update(HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf-home"),
               HF_DATASETS_CACHE=str(tmp_path / "hf-datasets-cache"), HF_HUB_DISABLE_TELEMETRY="1")
    proc = subprocess.run([sys.executable, "-c", _LOAD, str(root), *COUNTS], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    for config in COUNTS:
        assert loaded[config] == manifest["counts"][config], config
    # No default config: loading without name= is refused, naming the configs.
    assert "Config name is missing" in loaded["<no name>"] and "counterfactuals" in loaded["<no name>"]
    assert (tmp_path / "hf-datasets-cache").is_dir()


def test_card_body(smoke):
    _, manifest = smoke
    card = _card(manifest, gate_lines=["synthetic cap checked per split"])
    body = card.split("\n---\n", 1)[1]
    assert SHA in body and "0.3.0 (" + "ab" * 32 + ")" in body
    assert "| sessions | 5 | 1 | 2 | 1 | 9 |" in body
    assert "| counterfactuals | 4 | — | 3 | — | 7 |" in body
    assert "| overall | 3 | 4 | 0.4286 | 0.75:1 | yes |" in body
    assert "| eval | 1 | 2 | 0.3333 | 0.50:1 | yes |" in body
    assert "**mixed**" in body
    assert "| synthetic_cap | yes | 0.75 | synthetic <= 3 x human |" in body
    assert "- synthetic cap checked per split" in body
    assert 'load_dataset("ORG/NAME", name="counterfactuals", revision="<commit>")' in body
    assert 'load_dataset("path/to/releases/0.3.1", name="counterfactuals")' in body


def test_card_states_the_annotator_minimum_and_the_ceiling_only_when_the_manifest_has_them(smoke):
    _, manifest = smoke
    assert "Track 1 ceiling" not in _card(manifest)  # a release cut before phi_annotators was recorded
    split = dict(items=4, unstated=0, phi_n={"5": 3, "9": 1}, phi_n_min=5, phi_n_median=5.0, phi_n_max=9,
                 oracle_g=0.8123456, text_items=1)
    exact = dict(items=3, unstated=3, phi_n={}, phi_n_min=None, phi_n_median=None, phi_n_max=None, oracle_g=None,
                 text_items=0)
    pa_ = {"min_annotators": 5, "gated_splits": ["eval", "transfer"], "splits": {"eval": split, "train": exact}}
    body = _card({**manifest, "phi_annotators": pa_}).split("\n---\n", 1)[1]
    assert "comes from at least **5** annotator(s) (`trb-corpus release --min-annotators 5`);" in body
    assert "below the toolkit's default" not in body
    assert body.index("| train | 3 | — | 3 | — | 0 |") < body.index("| eval | 4 | 5 / 5 / 9 | 0 | 0.8123 | 1 |")
    assert "G above this is not better than the truth; G is to be read against it, not against 1." in body
    assert "only the simulated world's Φ may lack one" in body
    low = _card({**manifest, "phi_annotators": {**pa_, "min_annotators": 2}})
    assert "**below the toolkit's default of 5**" in low


def test_smoke_banner_iff_smoke_test(tmp_path):
    smoke_manifest = make_release(tmp_path / "a", smoke=True)
    trb_manifest = make_release(tmp_path / "b", smoke=False)
    assert SMOKE_BANNER in _card(smoke_manifest)
    assert "SMOKE" not in _card(trb_manifest) and "smoke-test" not in _front_matter(_card(trb_manifest))["tags"]
    assert datasheet_values(smoke_manifest, FACTS)["smoke_banner"] == SMOKE_BANNER
    assert datasheet_values(trb_manifest, FACTS)["smoke_banner"] == ""
    template = TEMPLATE.read_text(encoding="utf-8")
    assert SMOKE_BANNER in fill_datasheet(template, datasheet_values(smoke_manifest, FACTS))
    assert "SMOKE TEST" not in fill_datasheet(template, datasheet_values(trb_manifest, FACTS))


def test_card_and_datasheet_are_deterministic(smoke):
    _, manifest = smoke
    reordered = json.loads(json.dumps(manifest, sort_keys=True))
    reordered["counts"] = {c: dict(reversed(list(v.items()))) for c, v in reversed(list(manifest["counts"].items()))}
    configs = {c: list(reversed(s)) for c, s in reversed(list(_configs().items()))}
    assert _card(reordered, configs=configs) == _card(manifest)
    facts = copy.deepcopy(FACTS)
    for key in ("collectors", "licences", "contexts"):
        facts[key] = list(reversed(facts[key]))
    facts["origins"] = dict(reversed(list(facts["origins"].items())))
    assert datasheet_values(reordered, facts) == datasheet_values(manifest, FACTS)


def test_datasheet_fills_every_placeholder_of_the_template(smoke):
    _, manifest = smoke
    template = TEMPLATE.read_text(encoding="utf-8")
    values = datasheet_values(manifest, FACTS)
    assert set(values) == set(placeholders(template))
    assert len(values) == 22
    sheet = fill_datasheet(template, values)
    assert "{{" not in sheet and "}}" not in sheet
    assert sheet.count(SHA) >= 2
    assert "| ctx-a | arith | adults | en | train | 5 |" in sheet
    assert sheet.index("| ctx-a | arith | adults | en | train | 5 |") < sheet.index("| ctx-a | arith | adults | en | eval")
    assert "| none stated | 3 |" in sheet and "- maintainers: 2 session(s)" in sheet
    assert "2 of 9 sessions carry a consent reference" in sheet
    assert "0.4286 (3 synthetic : 4 human = 0.75:1; cap 3:1, within the cap)" in sheet
    assert "| ctx-b | German self-reports \\| held out | Other Lab | att-1 | 1 |" in sheet
    assert "- caused_by_self_alpha: 0.712346" in sheet and "- phi_js: n/a" in sheet
    assert "line one<br>line \\| two" in sheet
    assert "pii_scan: passed" in sheet
    assert "5 (train 3, dev 1, eval 1, transfer 1)" in sheet
    assert "0.3.0 (" + "ab" * 32 + ")" in sheet
    no_transfer = dict(FACTS, transfer_contexts=[])
    assert "no transfer split: no context with third-party provenance" in fill_datasheet(
        template, datasheet_values(manifest, no_transfer))


def test_fill_datasheet_refuses_missing_unused_and_stray_fields():
    template = "A {{alpha}} and {{beta}}; {{alpha}} again."
    assert fill_datasheet(template, {"alpha": "1", "beta": "{x}"}) == "A 1 and {x}; 1 again."
    with pytest.raises(ValueError, match="beta"):
        fill_datasheet(template, {"alpha": "1"})
    with pytest.raises(ValueError, match="gamma"):
        fill_datasheet(template, {"alpha": "1", "beta": "2", "gamma": "3"})
    with pytest.raises(ValueError, match="not strings"):
        fill_datasheet(template, {"alpha": 1, "beta": "2"})
    with pytest.raises(ValueError, match="not a"):
        fill_datasheet("{{ alpha }} {{alpha}}", {"alpha": "1"})
    with pytest.raises(ValueError, match="containing '{{': alpha"):
        fill_datasheet(template, {"alpha": "{{beta}}", "beta": "2"})
    with pytest.raises(ValueError, match="left in the filled"):
        fill_datasheet("{{alpha}}{x", {"alpha": "{"})


def test_datasheet_values_need_exactly_the_fact_keys(smoke, tmp_path):
    _, manifest = smoke
    template = TEMPLATE.read_text(encoding="utf-8")
    values = datasheet_values(manifest, FACTS)
    del values["pii_scan"]
    with pytest.raises(ValueError, match="pii_scan"):
        fill_datasheet(template, values)
    with pytest.raises(ValueError, match="label_status"):
        datasheet_values(manifest, {k: v for k, v in FACTS.items() if k != "label_status"})
    with pytest.raises(ValueError, match="extra_fact"):
        datasheet_values(manifest, dict(FACTS, extra_fact=1))
    assert set(FACT_KEYS) == set(FACTS)
