"""corpus.croissant: Croissant 1.1 metadata of a release, checked with the real mlcroissant.

Each test builds a small release directory (real parquet shards written with the
layout's Arrow schemas, a manifest that ``ReleaseManifest`` accepts), then reads it
back through mlcroissant from the local files; nothing is fetched from the network.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
from pathlib import Path

import mlcroissant as mlc
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpus.croissant import (
    CONFORMS_TO,
    RAI_PROPERTIES,
    build_croissant,
    croissant_data_type,
    dumps,
    validate_croissant,
)
from schemas.models import ReleaseManifest
from schemas.release_format import CONFIGS, arrow_schema, shard_name

SHA = "5f" * 32
# config -> split -> (rows, shards): sessions/train is split over two shards.
COUNTS = {
    "sessions": {"train": (5, 2), "eval": (2, 1), "transfer": (1, 1)},
    "steps": {"train": (7, 1), "eval": (3, 1)},
    "counterfactuals": {"train": (4, 1), "eval": (2, 1)},
    "attribution": {"train": (3, 1)},
    "transfer": {"transfer": (1, 1)},
}
RAI = {
    "dataCollection": "Simulated sessions from the toolkit's simulated world.",
    "dataCollectionType": "Simulated",
    "dataAnnotationProtocol": "Design labels.",
    "annotationsPerItem": 3,
    "annotatorDemographics": None,
    "dataLimitations": ["Smoke test only.", "Tiny."],
    "dataBiases": "None measured.",
    "personalSensitiveInformation": "Pseudonymous subject ids only.",
    "dataUseCases": "Smoke tests of the pipeline.",
    "dataSocialImpact": "None.",
    "dataReleaseMaintenancePlan": "New versions, never edits.",
}


def _value(typ: pa.DataType, col: str, i: int):
    """A deterministic value of an Arrow type, with nulls and empty lists mixed in."""
    if pa.types.is_list(typ):
        if i % 3 == 0:
            return None
        if i % 3 == 1:
            return []
        return [_value(typ.value_type, f"{col}{j}", i + j + 1) for j in range(2)]
    if pa.types.is_struct(typ):
        return {typ.field(k).name: _value(typ.field(k).type, typ.field(k).name, i) for k in range(typ.num_fields)}
    if pa.types.is_string(typ):
        return None if i % 4 == 3 else f"{col}-{i}"
    if pa.types.is_integer(typ):
        return i
    if pa.types.is_floating(typ):
        return round(0.1 * (i % 10), 3)
    if pa.types.is_boolean(typ):
        return i % 2 == 0
    raise AssertionError(f"no test value for {typ}")


def _rows(config: str, split: str, n: int) -> list[dict]:
    rows = []
    for i in range(n):
        row = {name: _value(typ, name, i) for name, typ, _ in CONFIGS[config]}
        row["split"] = split
        row[CONFIGS[config][0][0]] = f"{config}-{split}-{i}"  # the id column is never null
        rows.append(row)
    return rows


def make_release(root: Path, *, smoke: bool = True, counts=COUNTS) -> dict:
    """Write parquet shards under ``root`` and return a manifest that ReleaseManifest accepts."""
    files = []
    for config, per_split in counts.items():
        for split, (n, shards) in per_split.items():
            rows = _rows(config, split, n)
            for k in range(shards):
                part = rows[k * n // shards:(k + 1) * n // shards]
                path = root / shard_name(config, split, k, shards)
                path.parent.mkdir(parents=True, exist_ok=True)
                pq.write_table(pa.Table.from_pylist(part, schema=arrow_schema(config)), path)
                data = path.read_bytes()
                files.append({"path": path.relative_to(root).as_posix(), "sha256": hashlib.sha256(data).hexdigest(),
                              "bytes": len(data)})
    manifest = {
        "format_version": 1, "release_sha": SHA, "version": "0.2.0", "kind": "smoke" if smoke else "trb",
        "smoke_test": smoke, "trb_version": "0.1", "schema_version": 1, "toolkit_version": "0.1.0",
        "created_at": "2026-11-29T10:00:00+00:00", "salt": "trb-salt-1",
        "split_fractions": {"train": 0.7, "dev": 0.1, "eval": 0.2},
        "counts": {c: {s: n for s, (n, _) in per.items()} for c, per in counts.items()},
        "subjects": {"train": 3, "eval": 1, "transfer": 1},
        "synthetic_share": 0.5,
        "synthetic": {"overall": {"synthetic": 3, "human": 3, "share": 0.5, "within_cap": True},
                      "train": {"synthetic": 2, "human": 2, "share": 0.5, "within_cap": True},
                      "eval": {"synthetic": 1, "human": 1, "share": 0.5, "within_cap": True}},
        "label_source": "design",
        "pii": {"hits": 0, "redacted": 0},
        "gates": [{"name": "synthetic_cap", "passed": True, "figure": "overall: 3 synthetic / 3 human",
                   "bar": "synthetic <= 3 x human"},
                  {"name": "pii_scan", "passed": True, "figure": "0 hit(s) in every text field", "bar": "0"}],
        "agreement": {"caused_by_self_alpha": None},
        "files": files,
        "parent": None,
    }
    return ReleaseManifest.model_validate(manifest).model_dump(mode="json")


def _configs(counts=COUNTS) -> dict[str, list[str]]:
    return {c: list(per) for c, per in counts.items()}


def _build(manifest: dict, counts=COUNTS, **kw) -> dict:
    args = dict(name="trb-corpus-0.2.0", description="A test release.",
                license="https://creativecommons.org/licenses/by/4.0/", url=None, configs=_configs(counts), rai=RAI)
    args.update(kw)
    return build_croissant(manifest, **args)


@pytest.fixture
def release(tmp_path):
    root = tmp_path / "release"
    manifest = make_release(root)
    doc = _build(manifest)
    (root / "croissant.json").write_text(dumps(doc), encoding="utf-8")
    return root, manifest, doc


def _field(doc: dict, field_id: str) -> dict:
    for rs in doc["recordSet"]:
        for f in rs["field"]:
            if f["@id"] == field_id:
                return f
    raise KeyError(field_id)


def test_document_passes_mlcroissant_and_reads_every_record(release):
    root, manifest, doc = release
    assert doc["conformsTo"] == CONFORMS_TO == "http://mlcommons.org/croissant/1.1"
    assert doc["@context"]["rai"] == "http://mlcommons.org/croissant/RAI/"
    assert validate_croissant(doc) == []
    # No warnings either: the recommended properties (license, version, datePublished, citeAs) are there.
    assert validate_croissant(doc, warnings=True) == []
    # From the file: the records check reads every record set from the parquet files.
    assert validate_croissant(root / "croissant.json") == []

    dataset = mlc.Dataset(jsonld=str(root / "croissant.json"))
    assert {rs.uuid for rs in dataset.metadata.record_sets} == set(COUNTS)
    for config, per_split in manifest["counts"].items():
        seen: dict[str, int] = {}
        for record in dataset.records(config):
            split = record[f"{config}/split"].decode()
            seen[split] = seen.get(split, 0) + 1
        assert seen == per_split, config


def _text(value):
    return value.decode() if isinstance(value, bytes) else value


def test_values_and_nested_columns_read_back(release):
    root, _, doc = release
    dataset = mlc.Dataset(jsonld=str(root / "croissant.json"))
    table = pq.read_table(root / shard_name("counterfactuals", "train", 0, 1)).to_pylist()
    by_id = {r["cf_id"]: r for r in table}
    checked = 0
    for record in dataset.records("counterfactuals"):
        cf_id = record["counterfactuals/cf_id"].decode()
        if cf_id not in by_id:
            continue
        row = by_id[cf_id]
        assert record["counterfactuals/t"] == row["t"]
        assert record["counterfactuals/adversarial"] == row["adversarial"]
        if row["phi_probs"]:
            got = [(_text(d["counterfactuals/phi_probs/action"]), d["counterfactuals/phi_probs/p"])
                   for d in record["counterfactuals/phi_probs"]]
            assert got == [(d["action"], d["p"]) for d in row["phi_probs"]]
            checked += 1
    assert checked >= 1
    spaces = {(r["session_id"], r["t"]): r["action_space"]
              for r in pq.read_table(root / shard_name("steps", "train", 0, 1)).to_pylist()}
    read = {(_text(r["steps/session_id"]), r["steps/t"]): r["steps/action_space"] for r in dataset.records("steps")}
    listed = [key for key, space in spaces.items() if space]
    assert listed
    for key in listed:
        assert [_text(v) for v in read[key]] == spaces[key]


def test_fields_cover_the_layout_with_mapped_types(release):
    _, _, doc = release
    for rs in doc["recordSet"]:
        config = rs["@id"]
        assert [f["name"] for f in rs["field"]] == [name for name, _, _ in CONFIGS[config]]
        for f in rs["field"]:
            assert f.get("source", {}).get("fileSet", {}).get("@id", f"files/{config}") == f"files/{config}"
    assert _field(doc, "steps/t")["dataType"] == "sc:Integer"
    assert _field(doc, "steps/has_r")["dataType"] == "sc:Boolean"
    assert _field(doc, "steps/r_confidence")["dataType"] == "sc:Float"
    assert _field(doc, "steps/observation")["dataType"] == "sc:Text"
    action_space = _field(doc, "steps/action_space")
    assert action_space["isArray"] is True and action_space["dataType"] == "sc:Text"
    phi = _field(doc, "counterfactuals/phi_probs")
    assert phi["isArray"] is True and "dataType" not in phi
    assert [(s["name"], s["dataType"], s["source"]["transform"]["jsonPath"]) for s in phi["subField"]] == [
        ("action", "sc:Text", "action"), ("p", "sc:Float", "p")]
    assert [s["name"] for s in _field(doc, "attribution/annotations")["subField"]] == [
        "annotator_id", "role", "label", "method"]
    assert croissant_data_type(pa.int64()) == "sc:Integer"
    with pytest.raises(ValueError, match="timestamp"):
        croissant_data_type(pa.timestamp("s"))


def test_file_objects_carry_the_files_hashes(release):
    root, manifest, doc = release
    objects = [d for d in doc["distribution"] if d["@type"] == "cr:FileObject"]
    assert {o["contentUrl"] for o in objects} == {f["path"] for f in manifest["files"]}
    for o in objects:
        data = (root / o["contentUrl"]).read_bytes()
        assert o["sha256"] == hashlib.sha256(data).hexdigest()
        assert o["contentSize"] == f"{len(data)} B"
        assert o["encodingFormat"] == "application/x-parquet"
    sets = {d["@id"]: d for d in doc["distribution"] if d["@type"] == "cr:FileSet"}
    assert set(sets) == {f"files/{c}" for c in COUNTS}
    for config in COUNTS:
        matched = sorted(p.relative_to(root).as_posix() for p in root.glob(sets[f"files/{config}"]["includes"]))
        assert matched == sorted(f["path"] for f in manifest["files"] if f["path"].startswith(f"data/{config}/"))
    # Files outside data/ (README.md, manifest.json...) are not distributed as data.
    extra = copy.deepcopy(manifest)
    extra["files"].append({"path": "README.md", "sha256": "0" * 64, "bytes": 10})
    assert len([d for d in _build(extra)["distribution"] if d["@type"] == "cr:FileObject"]) == len(objects)


def test_identity_smoke_status_and_rai(tmp_path):
    smoke_manifest = make_release(tmp_path / "smoke", smoke=True)
    doc = _build(smoke_manifest)
    assert doc["version"] == "0.2.0"
    assert doc["identifier"]["value"] == SHA and SHA in doc["description"] and SHA in doc["citeAs"]
    assert doc["datePublished"] == smoke_manifest["created_at"]
    assert doc["creativeWorkStatus"] == "smoke-test" and "smoke-test" in doc["keywords"]
    assert doc["description"].startswith("SMOKE TEST") and "no TRB score" in doc["description"]
    assert "url" not in doc
    assert doc["rai:annotationsPerItem"] == "3"
    assert doc["rai:dataLimitations"] == ["Smoke test only.", "Tiny."]
    assert "rai:annotatorDemographics" not in doc

    metadata = mlc.Dataset(jsonld=doc).metadata
    assert metadata.data_collection == RAI["dataCollection"]
    assert metadata.data_limitations == ["Smoke test only.", "Tiny."]
    assert metadata.data_release_maintenance_plan == RAI["dataReleaseMaintenancePlan"]
    assert metadata.version == "0.2.0"

    trb_manifest = make_release(tmp_path / "trb", smoke=False)
    trb = _build(trb_manifest, url="https://huggingface.co/datasets/org/trb")
    assert validate_croissant(trb, warnings=True) == []
    assert trb["creativeWorkStatus"] == "release" and "smoke-test" not in trb["keywords"]
    assert "SMOKE" not in trb["description"] and trb["url"] == "https://huggingface.co/datasets/org/trb"

    with pytest.raises(ValueError, match="dataColection"):
        _build(smoke_manifest, rai={"dataColection": "typo"})
    assert set(RAI) <= set(RAI_PROPERTIES)


def test_same_manifest_gives_the_same_bytes(release):
    _, manifest, doc = release
    shuffled = copy.deepcopy(manifest)
    random.Random(7).shuffle(shuffled["files"])
    assert dumps(_build(shuffled)) == dumps(doc)
    assert dumps(_build(json.loads(json.dumps(manifest)))) == dumps(doc)


def _mutate(doc: dict, how: str) -> dict:
    bad = copy.deepcopy(doc)
    if how == "missing sha256":
        del next(d for d in bad["distribution"] if d["@type"] == "cr:FileObject")["sha256"]
    elif how == "missing includes":
        del next(d for d in bad["distribution"] if d["@type"] == "cr:FileSet")["includes"]
    elif how == "unknown file set":
        _field(bad, "steps/observation")["source"]["fileSet"]["@id"] = "files/nowhere"
    elif how == "bad data type":
        _field(bad, "steps/observation")["dataType"] = "sc:NoSuchType"
    elif how == "bad conformsTo":
        bad["conformsTo"] = "http://mlcommons.org/croissant/9.9"
    elif how == "not a dataset":
        bad["@type"] = "sc:Thing"
    return bad


@pytest.mark.parametrize("how", ["missing sha256", "missing includes", "unknown file set", "bad data type",
                                 "bad conformsTo", "not a dataset"])
def test_broken_documents_yield_problems(release, how):
    _, _, doc = release
    problems = validate_croissant(_mutate(doc, how))
    assert problems and all(isinstance(p, str) and p for p in problems)


def test_missing_source_column_is_found_by_reading_records(release):
    root, _, doc = release
    bad = copy.deepcopy(doc)
    _field(bad, "steps/observation")["source"]["extract"]["column"] = "no_such_column"
    problems = validate_croissant(bad, base_dir=root)
    assert len(problems) == 1 and problems[0].startswith("records steps:") and "no_such_column" in problems[0]
    (root / "croissant.json").write_text(dumps(bad), encoding="utf-8")
    assert any("no_such_column" in p for p in validate_croissant(root / "croissant.json"))
    assert validate_croissant(root / "nowhere.json")[0].startswith("cannot read")
    assert validate_croissant({"name": "no type, no context"})


def test_the_release_reads_records_back_from_a_sample_of_each_configs_first_shard(release, monkeypatch):
    # a release cut reads croissant.json's records back from a sample (mlcroissant reads whole files, and a shard
    # holds up to 500,000 rows): each config's first shard, cut to its first rows, same name and schema
    import pyarrow.parquet as pq

    import corpus.release as rel

    root, _, doc = release
    monkeypatch.setattr(rel, "_SAMPLE_ROWS", 2)
    with rel._croissant_sample(root) as sample:
        files = sorted(p.relative_to(sample).as_posix() for p in sample.rglob("*.parquet"))
        assert files == [sorted(p.relative_to(root).as_posix() for p in (root / "data" / c).glob("*.parquet"))[0]
                         for c in sorted(x.name for x in (root / "data").iterdir())]
        for f in files:
            whole, cut = pq.read_table(root / f), pq.read_table(sample / f)
            assert cut.schema == whole.schema and cut.to_pylist() == whole.slice(0, 2).to_pylist()
        assert validate_croissant(root / "croissant.json", base_dir=sample, max_records=2) == []
        bad = copy.deepcopy(doc)
        _field(bad, "steps/observation")["source"]["extract"]["column"] = "no_such_column"
        assert any("no_such_column" in p for p in validate_croissant(bad, base_dir=sample, max_records=2))
    assert not sample.exists()
