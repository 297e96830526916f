"""Redaction covers every file of a release: personal data planted anywhere it can reach one is refused or removed."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from corpus.errors import ExitCode, ReleaseRefused, UsageError
from corpus.ingest import ingest
from corpus.redaction import DocumentScan
from corpus.release import TEMPLATE, cut_release
from corpus.store import Corpus, init_corpus
from corpus.verify import verify_release
from factories import mutated, session, small_corpus, transfer_context, write_jsonl

# cuts many releases, one or more per test
pytestmark = pytest.mark.slow

ADDRESS = "jane.roe@example.org"
MASK = "j***@e***.org"


def _corpus(tmp_path: Path, records: list) -> Corpus:
    c = Corpus(init_corpus(tmp_path / "corpus"))
    ingest(c, [write_jsonl(tmp_path / "in.jsonl", records)], progress=False)
    return c


def _sheet(tmp_path: Path, extra: str) -> Path:
    p = tmp_path / "my-sheet.md"
    p.write_text(TEMPLATE.read_text(encoding="utf-8") + f"\n## Contact\n\n{extra}\n", encoding="utf-8")
    return p


def _files_holding(release: Path, needle: str) -> list[str]:
    """Every file of ``release`` whose text (a parquet file: its rows' strings) holds ``needle``."""
    out = []
    for path in sorted(p for p in release.rglob("*") if p.is_file()):
        if path.suffix == ".parquet":
            text = json.dumps(pq.read_table(path).to_pylist(), ensure_ascii=False, default=str)
        else:
            text = path.read_text(encoding="utf-8")
        if needle in text:
            out.append(path.relative_to(release).as_posix())
    return out


# (where the address is planted, how the corpus and the cut get it, the files it would reach, where the gate says it is)
def _in_s1(path: str, value: str):
    return lambda recs: [mutated(r, path, value) if r["kind"] == "session" and r["session_id"] == "s1" else r
                         for r in recs]


PLACES = {
    "session collector": (_in_s1("source/collector", f"lab-a <{ADDRESS}>"), {}, "datasheet facts collectors["),
    "context stimulus set": (_in_s1("context/stimulus_set", f"grid5 by {ADDRESS}"), {},
                             "datasheet facts contexts[ctx-a].stimulus_set"),
    "transfer description": (lambda recs: [mutated(r, "description", f"ask {ADDRESS}")
                                           if r["kind"] == "transfer_context" else r for r in recs], {},
                             "datasheet facts transfer_contexts[ctx-t].description"),
    "--trainer-org": (lambda recs: recs, {"trainer_orgs": [f"Acme <{ADDRESS}>"]}, "--trainer-org [0]"),
    "--datasheet": (lambda recs: recs, {"datasheet": "sheet"}, "my-sheet.md line "),
}


def _cut_args(tmp_path: Path, place: str) -> tuple[list, dict, str]:
    edit, kw, where = PLACES[place]
    kw = dict(kw)
    if kw.get("datasheet") == "sheet":
        kw["datasheet"] = _sheet(tmp_path, f"Questions to the curator: {ADDRESS}")
    return edit(small_corpus()), kw, where


@pytest.mark.parametrize("place", PLACES)
def test_personal_data_anywhere_is_refused_with_its_location(tmp_path, place):
    records, kw, where = _cut_args(tmp_path, place)
    c = _corpus(tmp_path, records)
    with pytest.raises(ReleaseRefused) as e:
        cut_release(c, "0.1.0", kind="smoke", progress=False, **kw)
    (g,) = e.value.failed
    assert g.name == "pii_scan" and not g.passed
    assert f"{where}" in g.detail and f"email {MASK}" in g.detail and ADDRESS not in g.detail
    assert ADDRESS not in str(e.value)
    assert not (c.dir / "releases" / "0.1.0").exists() and not list((c.dir / "releases").glob(".*"))


@pytest.mark.parametrize("place", PLACES)
def test_redact_pii_leaves_no_file_holding_it(tmp_path, place):
    records, kw, _ = _cut_args(tmp_path, place)
    c = _corpus(tmp_path, records)
    r = cut_release(c, "0.1.0", kind="smoke", progress=False, redact_pii=True, **kw)
    assert _files_holding(r.directory, ADDRESS) == []
    assert "[REDACTED:email]" in (r.directory / "DATASHEET.md").read_text(encoding="utf-8")
    pii = r.manifest["pii"]
    assert pii["documents"] >= 1 and pii["hits"] == pii["redacted"] == pii["rows"] + pii["documents"]
    gate = next(g for g in r.manifest["gates"] if g["name"] == "pii_scan")
    assert gate["passed"] and gate["figure"].endswith("(redacted)") and "in the datasheet" in gate["figure"]
    assert verify_release(r.directory)["release_sha"] == r.manifest["release_sha"]


def test_trainer_org_is_redacted_in_the_manifest_card_and_datasheet(tmp_path):
    c = _corpus(tmp_path, small_corpus())
    r = cut_release(c, "0.1.0", kind="smoke", progress=False, redact_pii=True, trainer_orgs=[f"Acme <{ADDRESS}>"])
    assert r.manifest["trainer_orgs"] == ["Acme <[REDACTED:email]>"]
    for name in ("README.md", "DATASHEET.md"):
        assert "Acme <[REDACTED:email]>" in (r.directory / name).read_text(encoding="utf-8")
    # the transfer gate still compared the org as given: ctx-t (Partner Lab B) is not Acme's
    assert next(g for g in r.manifest["gates"] if g["name"] == "transfer_provenance")["passed"]


def test_an_obfuscated_address_in_the_datasheet_is_redacted_whole(tmp_path):
    sheet = _sheet(tmp_path, "Write to jane (at) example (dot) org or DE89 3704 0044 0532 0130 00.")
    c = _corpus(tmp_path, small_corpus())
    with pytest.raises(ReleaseRefused) as e:
        cut_release(c, "0.1.0", kind="smoke", progress=False, datasheet=sheet)
    assert "my-sheet.md line" in e.value.failed[0].detail and "iban DE**" in e.value.failed[0].detail
    r = cut_release(c, "0.1.0", kind="smoke", progress=False, datasheet=sheet, redact_pii=True)
    text = (r.directory / "DATASHEET.md").read_text(encoding="utf-8")
    assert "Write to [REDACTED:email] or [REDACTED:iban]." in text
    assert r.manifest["pii"] == {"hits": 2, "redacted": 2, "rows": 0, "documents": 2}


def test_a_clean_release_counts_nothing_anywhere(tmp_path):
    r = cut_release(_corpus(tmp_path, small_corpus()), "0.1.0", kind="smoke", progress=False)
    assert r.manifest["pii"] == {"hits": 0, "redacted": 0, "rows": 0, "documents": 0}
    assert "[REDACTED" not in "".join(p.read_text(encoding="utf-8") for p in r.directory.glob("*.*")
                                      if p.suffix in (".md", ".json"))


def test_a_salt_with_personal_data_is_refused_even_with_redact(tmp_path):
    c = _corpus(tmp_path, small_corpus())
    for redact in (False, True):
        with pytest.raises(UsageError, match=r"the split salt .* holds personal data \(email s\*\*\*@e\*\*\*\.org\)"):
            cut_release(c, "0.1.0", kind="smoke", progress=False, salt=f"salt-{ADDRESS}", redact_pii=redact)
    assert not (c.dir / "releases").exists() or not any((c.dir / "releases").iterdir())


def test_cli_refuses_a_datasheet_with_an_address_in_one_report(tmp_path, cli):
    sheet = _sheet(tmp_path, f"Curator: {ADDRESS}")
    c = _corpus(tmp_path, small_corpus())
    args = ("release", "--corpus", c.dir, "-q", "--version", "0.1.0", "--kind", "smoke", "--datasheet", sheet)
    code, out, err = cli(*args)
    assert code == ExitCode.GATE_FAILED and out == ""
    assert "pii_scan" in err and "my-sheet.md line" in err and ADDRESS not in err
    code, _, err = cli(*args, "--redact-pii")
    assert code == 0, err
    assert _files_holding(c.dir / "releases" / "0.1.0", ADDRESS) == []


def test_written_files_are_scanned_and_redacted_as_a_last_check(tmp_path):
    """What reached a file without passing the input scan is still found (and redacted as JSON, not as text)."""
    (tmp_path / "README.md").write_text("---\nx: 1\n---\nmail jane (at) example (dot) org\n", encoding="utf-8")
    (tmp_path / "croissant.json").write_text(json.dumps({"a": [f"to {ADDRESS}", "ok"], "b": 1}, indent=2) + "\n",
                                             encoding="utf-8")
    manifest = {"release_sha": "0" * 64, "files": [{"path": "x"}], "trainer_orgs": [f"A <{ADDRESS}>"]}
    listed: list[str] = []
    assert DocumentScan(False, listed, 20).written(tmp_path, ("README.md", "croissant.json"), manifest) == 3
    assert listed == ["README.md line 4: email j***@e***.org", f"croissant.json a[0]: email {MASK}",
                      f"manifest.json trainer_orgs[0]: email {MASK}"]
    assert ADDRESS in (tmp_path / "croissant.json").read_text()  # not redacted unless asked
    assert DocumentScan(True, [], 20).written(tmp_path, ("README.md", "croissant.json"), manifest) == 3
    assert (tmp_path / "README.md").read_text() == "---\nx: 1\n---\nmail [REDACTED:email]\n"
    assert json.loads((tmp_path / "croissant.json").read_text()) == {"a": ["to [REDACTED:email]", "ok"], "b": 1}
    assert manifest == {"release_sha": "0" * 64, "files": [{"path": "x"}], "trainer_orgs": ["A <[REDACTED:email]>"]}


def test_a_location_never_reprints_the_value(tmp_path):
    listed: list[str] = []
    scan = DocumentScan(True, listed, 20)
    facts = {"contexts": [{"context_id": f"ctx {ADDRESS}", "n_sessions": 1}], f"key {ADDRESS}": ("x", 1)}
    out = scan.value(facts, "facts")
    assert ADDRESS not in "\n".join(listed) and scan.n == 2
    assert out == {"contexts": [{"context_id": "ctx [REDACTED:email]", "n_sessions": 1}], "key [REDACTED:email]": ("x", 1)}


def test_the_row_scan_still_names_its_rows(tmp_path):
    recs = [mutated(session(), "steps/1/observation", f"write to {ADDRESS}"), session("s2", subject="other"),
            transfer_context()]
    with pytest.raises(ReleaseRefused) as e:
        cut_release(_corpus(tmp_path, recs), "0.1.0", kind="smoke", progress=False)
    assert e.value.failed[0].figure == "1 hit(s) in every text field"
    assert "steps s1 observation: email" in e.value.failed[0].detail


def test_hits_found_only_in_the_written_files_are_refused_or_counted():
    from corpus.release import _pii_gate, _recount_pii

    hits = ["README.md line 3: email j***@e***.org"]
    manifest = {"pii": {"hits": 0, "redacted": 0, "rows": 0, "documents": 0},
                "gates": [{"name": "x"}, _pii_gate(0, 0, False, []).model_dump(mode="json")]}
    with pytest.raises(ReleaseRefused) as e:
        _recount_pii(manifest, 0, 1, False, hits)
    assert e.value.failed[0].detail == hits[0] and e.value.failed[0].figure.startswith("1 hit(s)")
    _recount_pii(manifest, 2, 1, True, hits)
    assert manifest["pii"] == {"hits": 3, "redacted": 3, "rows": 0, "documents": 1}
    assert manifest["gates"][0] == {"name": "x"} and manifest["gates"][1]["figure"] == (
        "3 hit(s) in every text field (2 in rows, 1 in the datasheet, card, Croissant or manifest) (redacted)")


def test_the_collectors_and_curators_names_are_personal_data_in_every_file(tmp_path):
    """The probe's leak: a collector named as a person stayed in the sessions parquet, DATASHEET.md and croissant.json;
    a curator who signs the datasheet is named there too. Both are names (a lab's id such as "lab-a" is not)."""
    records = _in_s1("source/collector", "Dr. Jane Roe")(small_corpus())
    sheet = _sheet(tmp_path, "This datasheet was curated by Max Mustermann.")
    c = _corpus(tmp_path, records)
    with pytest.raises(ReleaseRefused) as e:
        cut_release(c, "0.1.0", kind="smoke", progress=False, datasheet=sheet)
    detail = e.value.failed[0].detail
    assert "sessions s1 collector: name <name: 2 word(s)>" in detail and "my-sheet.md line" in detail
    assert "datasheet facts collectors[" in detail and "Jane" not in detail and "Mustermann" not in detail
    r = cut_release(c, "0.1.0", kind="smoke", progress=False, datasheet=sheet, redact_pii=True)
    for needle in ("Jane Roe", "Mustermann"):
        assert _files_holding(r.directory, needle) == []
    assert "curated by [REDACTED:name]." in (r.directory / "DATASHEET.md").read_text(encoding="utf-8")
    assert "lab-a" in json.dumps(pq.read_table(next(r.directory.glob("data/sessions/*.parquet"))).to_pylist())
    assert verify_release(r.directory)["release_sha"] == r.manifest["release_sha"]


def test_a_public_name_field_is_kept_and_other_kinds_still_scanned():
    listed: list[str] = []
    scan = DocumentScan(True, listed, 10, public=("collectors",))
    facts = {"collectors": [["Jane Roe", 2]], "note": "ask Dr. Jane Roe"}
    assert scan.value(facts, "datasheet facts") == {"collectors": [["Jane Roe", 2]], "note": "ask Dr. [REDACTED:name]"}
    scan = DocumentScan(True, [], 10)
    assert scan.value(facts, "datasheet facts")["collectors"] == [["[REDACTED:name]", 2]]


def test_cli_public_field_keeps_the_collectors_name_and_still_finds_other_kinds(tmp_path, cli):
    """``--public-field collector``: a collector who is named in public (a PI signing the corpus) is kept in the
    sessions parquet and the datasheet; an e-mail address in that same field is still personal data."""
    c = _corpus(tmp_path, _in_s1("source/collector", "Jane Roe")(small_corpus()))
    args = ("release", "--corpus", c.dir, "-q", "--version", "0.1.0", "--kind", "smoke")
    code, out, err = cli(*args)
    assert code == ExitCode.GATE_FAILED and "sessions s1 collector: name" in err and "Jane" not in err
    code, out, err = cli(*args, "--public-field", "collector", "--public-field", "curator")
    assert code == 0, err
    release = c.dir / "releases" / "0.1.0"
    holding = _files_holding(release, "Jane Roe")
    assert "DATASHEET.md" in holding and "croissant.json" in holding and any(f.startswith("data/sessions/") for f in holding)
    assert verify_release(release)["pii"]["hits"] == 0
    c2 = _corpus(tmp_path / "b", _in_s1("source/collector", f"Jane Roe <{ADDRESS}>")(small_corpus()))
    code, out, err = cli("release", "--corpus", c2.dir, "-q", "--version", "0.1.0", "--kind", "smoke",
                         "--public-field", "collector")
    assert code == ExitCode.GATE_FAILED and "sessions s1 collector: email" in err and ADDRESS not in err
    code, out, err = cli(*args[:-4], "--version", "0.2.0", "--kind", "smoke", "--public-field", "source.coll-ector")
    assert code == ExitCode.USAGE and "public field 'source.coll-ector' is not a field name" in err
