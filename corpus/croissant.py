"""Croissant 1.1 metadata (with the RAI vocabulary) for a release directory.

:func:`build_croissant` turns a release manifest into ``croissant.json``;
:func:`validate_croissant` runs mlcroissant over a document and returns its errors.

The document describes the release directory of :mod:`schemas.release_format`:

``distribution``
    one ``cr:FileObject`` per parquet file listed in ``manifest["files"]`` under
    ``data/`` (``@id`` and ``contentUrl`` = the relative path, ``sha256`` and
    ``contentSize`` from the manifest), then one ``cr:FileSet`` per config,
    ``@id`` ``files/<config>``, including ``data/<config>/*.parquet`` relative to
    the directory that holds ``croissant.json``. The record sets read from the file
    sets (a config has any number of shards); the file objects carry the hashes.
``recordSet``
    one per config in ``configs``, ``@id`` = the config name, with one ``cr:Field``
    per column of ``schemas.release_format.CONFIGS[config]``, ``@id`` ``<config>/<column>``,
    extracting that column from the config's file set. ``key`` is the config's row
    identity (``KEYS``). Types, from the Arrow type of the column:

    ============================  ==============================================
    Arrow                         Croissant
    ============================  ==============================================
    string / large_string         ``sc:Text``
    int8..int64, uint8..uint64    ``sc:Integer``
    float16/32/64                 ``sc:Float``
    bool                          ``sc:Boolean``
    list<primitive>               ``isArray: true``, ``arrayShape: "-1"``, the
                                  element's dataType (e.g. ``steps/action_space``)
    list<struct<primitive...>>    ``isArray: true``, ``arrayShape: "-1"``, no
                                  dataType of its own, one ``subField`` per struct
                                  member, ``<config>/<column>/<member>``, each
                                  extracting the list column with ``transform:
                                  {jsonPath: <member>}``: mlcroissant yields a list
                                  of ``{member: value}`` dicts (e.g.
                                  ``counterfactuals/phi_probs``,
                                  ``attribution/annotations``)
    struct<primitive...>          no dataType, one ``subField`` per member as above
    ============================  ==============================================

    Any other Arrow type raises ``ValueError`` so a layout change cannot silently
    produce wrong metadata.

Identity and status
    ``version`` is ``manifest["version"]``; the content SHA is ``identifier`` (a
    ``sc:PropertyValue`` with ``propertyID`` ``"trb-release-sha256"``); the smoke
    status is ``creativeWorkStatus`` (``"smoke-test"`` or ``"release"``, schema.org's
    life-cycle property of a CreativeWork) and the keyword ``smoke-test``; both are
    also stated in ``description``. ``datePublished`` is ``manifest["created_at"]``
    when it is an ISO 8601 date-time (never the clock), so two identical releases
    give identical bytes (:func:`dumps`). ``citeAs`` is a BibTeX ``@misc`` entry
    built from the name, version, SHA and url.

Validation (:func:`validate_croissant`)
    mlcroissant's own check (``mlcroissant.Dataset``) is static: JSON-LD expansion
    (done by rdflib on the inline ``@context``; nothing is fetched), the
    ``conformsTo`` version, mandatory properties (``@id`` everywhere, ``contentUrl``,
    ``encodingFormat`` and ``sha256``/``md5`` on file objects, ``includes`` and
    ``encodingFormat`` on file sets), references between nodes (a field's source must
    name an existing file object, file set or field), data types, ``arrayShape``,
    dates and JSONPaths. It does not open the data files, so a source column that is
    missing from the parquet files passes it. With ``base_dir`` (or a path to the
    document, whose folder is used) :func:`validate_croissant` also reads every
    record set through mlcroissant from the local files, which catches missing
    columns and values that do not cast to the declared type.
"""

from __future__ import annotations

import json
import math
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from schemas.release_format import CONFIG_DESCRIPTIONS, CONFIGS, SPLITS
from toolkit import strict_json

__all__ = ["CONFORMS_TO", "CONTEXT", "RAI_PROPERTIES", "KEYS", "build_croissant", "validate_croissant", "dumps",
           "croissant_data_type"]

CONFORMS_TO = "http://mlcommons.org/croissant/1.1"
PARQUET = "application/x-parquet"

#: The standard Croissant 1.1 ``@context`` (as mlcroissant 1.1 writes it), ``rai`` prefix included.
CONTEXT: dict[str, Any] = {
    "@language": "en",
    "@vocab": "https://schema.org/",
    "arrayShape": "cr:arrayShape",
    "citeAs": "cr:citeAs",
    "column": "cr:column",
    "conformsTo": "dct:conformsTo",
    "containedIn": "cr:containedIn",
    "cr": "http://mlcommons.org/croissant/",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/",
    "description": {"@container": "@language"},
    "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract",
    "field": "cr:field",
    "fileProperty": "cr:fileProperty",
    "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet",
    "format": "cr:format",
    "includes": "cr:includes",
    "isArray": "cr:isArray",
    "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath",
    "key": "cr:key",
    "md5": "cr:md5",
    "name": {"@container": "@language"},
    "parentField": "cr:parentField",
    "path": "cr:path",
    "recordSet": "cr:recordSet",
    "references": "cr:references",
    "regex": "cr:regex",
    "repeated": "cr:repeated",
    "replace": "cr:replace",
    "samplingRate": "cr:samplingRate",
    "sc": "https://schema.org/",
    "separator": "cr:separator",
    "source": "cr:source",
    "subField": "cr:subField",
    "transform": "cr:transform",
}

#: RAI properties accepted in ``rai`` (keys are the property names without the ``rai:`` prefix),
#: each mapped to whether it takes a single text (True) or a list of texts (False). A list given
#: for a single-valued property is joined with blank lines; a number is written as text.
RAI_PROPERTIES: dict[str, bool] = {
    "dataCollection": True,
    "dataCollectionType": False,
    "dataCollectionMissingData": True,
    "dataCollectionRawData": True,
    "dataImputationProtocol": True,
    "dataPreprocessingProtocol": False,
    "dataAnnotationProtocol": False,
    "dataAnnotationPlatform": False,
    "dataAnnotationAnalysis": False,
    "annotationsPerItem": True,
    "annotatorDemographics": False,
    "machineAnnotationTools": False,
    "dataLimitations": False,
    "dataBiases": False,
    "personalSensitiveInformation": False,
    "dataUseCases": False,
    "dataSocialImpact": True,
    "dataReleaseMaintenancePlan": True,
}

#: config -> the columns that identify a row (the record set's ``key``).
KEYS: dict[str, tuple[str, ...]] = {
    "sessions": ("session_id",),
    "steps": ("session_id", "t"),
    "counterfactuals": ("cf_id",),
    "attribution": ("item_id",),
    "transfer": ("context_id",),
}

_SMOKE_SENTENCE = ("SMOKE TEST: this release contains simulated or illustrative data; it is for smoke tests of the "
                   "pipeline only and no TRB score may be claimed from it (TRB spec section 6).")


def croissant_data_type(typ: pa.DataType) -> str:
    """The Croissant dataType of a primitive Arrow type (``ValueError`` for any other)."""
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return "sc:Text"
    if pa.types.is_integer(typ):
        return "sc:Integer"
    if pa.types.is_floating(typ):
        return "sc:Float"
    if pa.types.is_boolean(typ):
        return "sc:Boolean"
    raise ValueError(f"no Croissant dataType for Arrow type {typ}")


def _source(file_set: str, column: str, json_path: str | None = None) -> dict[str, Any]:
    src: dict[str, Any] = {"fileSet": {"@id": file_set}, "extract": {"column": column}}
    if json_path is not None:
        src["transform"] = {"jsonPath": json_path}
    return src


def _struct_subfields(config: str, column: str, typ: pa.StructType, file_set: str) -> list[dict[str, Any]]:
    subs = []
    for i in range(typ.num_fields):
        member = typ.field(i)
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", member.name):
            raise ValueError(f"struct member {member.name!r} of {config}.{column} is not a plain JSONPath name")
        subs.append({
            "@type": "cr:Field",
            "@id": f"{config}/{column}/{member.name}",
            "name": member.name,
            "description": f"Member {member.name!r} of each element of {column}.",
            "dataType": croissant_data_type(member.type),
            "source": _source(file_set, column, member.name),
        })
    return subs


def _field(config: str, column: str, typ: pa.DataType, description: str, file_set: str) -> dict[str, Any]:
    field: dict[str, Any] = {"@type": "cr:Field", "@id": f"{config}/{column}", "name": column,
                             "description": description}
    if pa.types.is_list(typ) or pa.types.is_large_list(typ):
        value = typ.value_type
        field["isArray"] = True
        field["arrayShape"] = "-1"
        if pa.types.is_struct(value):
            members = ", ".join(f"{value.field(i).name}: {value.field(i).type}" for i in range(value.num_fields))
            field["description"] = f"{description} A list of {{{members}}} records."
            field["subField"] = _struct_subfields(config, column, value, file_set)
        else:
            field["dataType"] = croissant_data_type(value)
            field["source"] = _source(file_set, column)
    elif pa.types.is_struct(typ):
        field["subField"] = _struct_subfields(config, column, typ, file_set)
    else:
        field["dataType"] = croissant_data_type(typ)
        field["source"] = _source(file_set, column)
    return field


def _date(created_at: Any) -> str | None:
    if not isinstance(created_at, str):
        return None
    try:
        datetime.fromisoformat(created_at)
    except ValueError:
        return None
    return created_at


def _rai_values(rai: dict[str, object]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in sorted(rai):
        value = rai[key]
        name = key.removeprefix("rai:")
        if name not in RAI_PROPERTIES:
            raise ValueError(f"unknown RAI property {key!r}; known: {', '.join(sorted(RAI_PROPERTIES))}")
        if value is None:
            continue
        single = RAI_PROPERTIES[name]
        items = list(value) if isinstance(value, (list, tuple)) else [value]
        texts = []
        for item in items:
            if isinstance(item, bool) or not isinstance(item, (str, int, float)):
                raise ValueError(f"RAI property {name!r}: expected text, got {item!r}")
            if isinstance(item, float) and not math.isfinite(item):
                raise ValueError(f"RAI property {name!r}: {item!r} is not a number")
            texts.append(str(item))
        texts = [t for t in texts if t.strip()]
        if not texts:
            continue
        out[f"rai:{name}"] = "\n\n".join(texts) if single else (texts[0] if len(texts) == 1 else texts)
    return out


def _bibtex(name: str, version: str, sha: str, url: str | None, smoke: bool) -> str:
    key = re.sub(r"[^A-Za-z0-9]+", "_", name if version in name else f"{name}_{version}").strip("_").lower()
    note = f"Release {version}, content SHA-256 {sha}" + ("; smoke test, no TRB score may be claimed" if smoke else "")
    lines = [f"@misc{{{key},", f"  title = {{{{{name}}}}},", f"  note = {{{note}}},"]
    if url:
        lines.append(f"  howpublished = {{\\url{{{url}}}}},")
    lines.append(f"  version = {{{version}}}")
    lines.append("}")
    return "\n".join(lines)


def build_croissant(manifest: dict, *, name: str, description: str, license: str, url: str | None,
                    configs: dict[str, list[str]], rai: dict[str, object]) -> dict:
    """The Croissant 1.1 JSON-LD document of a release (see the module docstring).

    ``manifest`` is a release manifest (``schemas.models.ReleaseManifest`` as a dict);
    ``configs`` maps each config present to its splits (only the configs named get a
    file set and a record set, in ``schemas.release_format.CONFIGS`` order); ``rai`` maps RAI
    property names (``RAI_PROPERTIES``; with or without the ``rai:`` prefix) to a text,
    a number or a list of texts, ``None`` to leave it out. ``license`` is written as
    given (an SPDX URL or id). ``url`` is left out when ``None``. The result is a
    plain dict; write it with :func:`dumps` for stable bytes.
    """
    unknown = sorted(set(configs) - set(CONFIGS))
    if unknown:
        raise ValueError(f"unknown configs: {unknown}")
    sha = manifest["release_sha"]
    version = manifest["version"]
    smoke = bool(manifest["smoke_test"])

    head = [_SMOKE_SENTENCE] if smoke else []
    identity = (f"Release {version} of the corpus, content SHA-256 {sha}; TRB spec v{manifest['trb_version']}, "
                f"record schema v{manifest['schema_version']}, kind {manifest['kind']}"
                f"{', smoke test' if smoke else ''}.")
    full_description = "\n\n".join(head + [description.strip(), identity])

    distribution: list[dict[str, Any]] = []
    for entry in sorted(manifest["files"], key=lambda f: f["path"]):
        path = entry["path"]
        if not path.startswith("data/") or not path.endswith(".parquet"):
            continue
        distribution.append({
            "@type": "cr:FileObject",
            "@id": path,
            "name": path,
            "contentUrl": path,
            "encodingFormat": PARQUET,
            "contentSize": f"{int(entry['bytes'])} B",
            "sha256": entry["sha256"],
        })
    record_sets: list[dict[str, Any]] = []
    for config in CONFIGS:
        if config not in configs:
            continue
        given = set(configs[config])
        splits = [s for s in SPLITS if s in given] + sorted(given - set(SPLITS))
        file_set = f"files/{config}"
        distribution.append({
            "@type": "cr:FileSet",
            "@id": file_set,
            "name": file_set,
            "description": f"Parquet shards of the {config} config (data/{config}/<split>-NNNNN-of-NNNNN.parquet).",
            "encodingFormat": PARQUET,
            "includes": f"data/{config}/*.parquet",
        })
        fields = [_field(config, col, typ, desc, file_set) for col, typ, desc in CONFIGS[config]]
        split_list = ", ".join(splits) if splits else "none"
        record_sets.append({
            "@type": "cr:RecordSet",
            "@id": config,
            "name": config,
            "description": f"{CONFIG_DESCRIPTIONS[config]} Splits present (column split): {split_list}.",
            "key": [{"@id": f"{config}/{col}"} for col in KEYS[config]] if len(KEYS[config]) > 1
            else {"@id": f"{config}/{KEYS[config][0]}"},
            "field": fields,
        })

    keywords = ["TRB", "Trace AI Reflection Benchmark", "agent traces", "counterfactuals", "self-attribution",
                "evaluation"]
    if smoke:
        keywords.append("smoke-test")
    doc: dict[str, Any] = {
        "@context": dict(CONTEXT),
        "@type": "sc:Dataset",
        "conformsTo": CONFORMS_TO,
        "name": name,
        "description": full_description,
        "license": license,
        "version": version,
        "identifier": {"@type": "sc:PropertyValue", "propertyID": "trb-release-sha256", "value": sha},
        "creativeWorkStatus": "smoke-test" if smoke else "release",
        "keywords": keywords,
        "citeAs": _bibtex(name, version, sha, url, smoke),
    }
    if url:
        doc["url"] = url
    published = _date(manifest.get("created_at"))
    if published:
        doc["datePublished"] = published
    doc.update(_rai_values(rai))
    doc["distribution"] = distribution
    doc["recordSet"] = record_sets
    return doc


def dumps(doc: dict) -> str:
    """Stable serialization of a document (what ``croissant.json`` holds)."""
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _report_errors(report: str) -> list[str]:
    """The error lines of an mlcroissant ``Issues.report()`` string (warnings dropped)."""
    errors: list[str] = []
    section = None
    for line in report.splitlines():
        if line.startswith("Found the following"):
            section = "error" if "error(s)" in line else "warning"
            continue
        text = line.strip()
        if text.startswith("-  "):
            text = text[3:]
        if section == "error" and text:
            errors.append(text)
        elif section is None and text:
            errors.append(text)
    return errors


def validate_croissant(doc_or_path: dict | str | Path, *, base_dir: str | Path | None = None,
                       read_records: bool | None = None, max_records: int | None = None,
                       warnings: bool = False) -> list[str]:
    """Problems mlcroissant finds in a Croissant document; an empty list means valid.

    ``doc_or_path`` is the document (a dict) or the path of a ``croissant.json``.
    mlcroissant's static validation always runs (no network: the ``@context`` is
    inline and nothing is downloaded). The records check then reads every record set
    through mlcroissant from the parquet files under ``base_dir`` (default: the
    document's folder when a path is given), at most ``max_records`` records per
    record set when given; it runs when ``read_records`` is true, or by default
    whenever such a folder is known. With ``warnings``, mlcroissant's warnings (e.g. a
    recommended property missing) are returned too, prefixed ``"warning: "``.

    A problem is a string: mlcroissant's error message (``[node path] message``), or
    ``"records <record set>: <exception> <- <cause> ..."``. Never raises for an invalid
    document.
    """
    import mlcroissant as mlc

    if isinstance(doc_or_path, dict):
        doc = doc_or_path
        folder = Path(base_dir) if base_dir is not None else None
    else:
        path = Path(doc_or_path)
        try:
            doc = strict_json.loads(path.read_bytes())
        except (OSError, ValueError) as exc:  # StrictJSONError (a ValueError) names the JSON pointer
            return [f"cannot read {path}: {exc}"]
        folder = Path(base_dir) if base_dir is not None else path.parent
    if not isinstance(doc, dict):
        return ["the document is not a JSON object"]
    if read_records is None:
        read_records = folder is not None
    if read_records and folder is None:
        return ["read_records needs base_dir (or a path to the document)"]

    ctx = mlc.Context()
    if folder is not None:
        from etils import epath  # mlcroissant's path type (walk() on Python 3.11)

        ctx.folder = epath.Path(folder)
    try:
        # A deep copy through JSON: mlcroissant adds "@base" to the document's @context in place.
        metadata = mlc.Metadata.from_json(ctx=ctx, json_=json.loads(json.dumps(doc)))
        dataset = mlc.Dataset.from_metadata(metadata)
    except mlc.ValidationError as exc:
        found = sorted(ctx.issues.errors) or _report_errors(str(exc)) or [str(exc)]
        if warnings:
            found += [f"warning: {w}" for w in sorted(ctx.issues.warnings)]
        return found
    except Exception as exc:  # malformed JSON-LD that mlcroissant does not turn into a ValidationError
        return [f"{type(exc).__name__}: {exc}"]
    problems = sorted(ctx.issues.errors)
    if warnings:
        problems += [f"warning: {w}" for w in sorted(ctx.issues.warnings)]
    if ctx.issues.errors or not read_records:
        return problems
    for record_set in metadata.record_sets:
        try:
            for n, _ in enumerate(dataset.records(record_set.uuid), start=1):
                if max_records is not None and n >= max_records:
                    break
        except Exception as exc:
            problems.append(f"records {record_set.uuid}: {_exception_text(exc)}")
    return problems


def _exception_text(exc: BaseException) -> str:
    """The exception and its causes, innermost last (mlcroissant wraps the real cause)."""
    parts, seen = [], set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        text = str(exc).strip().splitlines()
        parts.append(f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": "))
        exc = exc.__cause__ or exc.__context__
    return " <- ".join(parts)
