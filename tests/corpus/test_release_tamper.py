"""The tamper matrix of `trb-corpus verify`: every file kind and every manifest claim edited, each one caught.

Each tamper (tests/release_tampers.py) edits one copy of a release with every kind of claim
(human and simulated sessions, a transfer context, every counterfactual origin, annotator counts,
attribution labels, a redacted e-mail, a trainer organisation, a parent). A data or card edit
reseals the file list and the Croissant file's sha256s, so only the rows can tell; a manifest edit
leaves the claims digest stale, and the forged variant recomputes it too: then the claims the rows
determine are still caught, and only :data:`release_tampers.DIGEST_ONLY` pass (docs/reference/release-format.md).
"""

from __future__ import annotations

import json

import pytest

import release_tampers as rt
from content_reference import release_sha_1, release_sha_2
from corpus.errors import ExitCode, VerifyFailed
from corpus.verify import verify_release
from schemas.release_check import check_release
from schemas.release_format import CONTENT_FORMAT, claims_digest

# cuts a release per tamper (about 400 cases with test_run_tamper.py): seconds of work in all
pytestmark = pytest.mark.slow

FORGEABLE = [n for n in rt.TAMPERS if n not in rt.DIGEST_ONLY]


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return rt.build_fixture(tmp_path_factory.mktemp("fixture"))


@pytest.fixture(scope="module")
def release_1(release, tmp_path_factory):
    """The same release as the toolkit cut it before content format 2."""
    return rt.as_content_1(release, tmp_path_factory.mktemp("content-1") / "rel")


def _files(d):
    return [(p.parts[-2], p) for p in sorted(d.glob("data/*/*.parquet"))]


def test_the_untampered_release_verifies_with_every_claim_bound(release):
    check = check_release(release)
    assert check.ok, check.differences
    m = check.manifest
    assert m["format_version"] == 2 and m["claims_sha256"] == claims_digest(m)
    assert m["content_format"] == CONTENT_FORMAT == 2 and m["release_sha"] == release_sha_2(_files(release))
    # the fixture has every claim the matrix tampers with
    assert m["smoke_test"] and m["parent"] and m["trainer_orgs"] and m["pii"]["redacted"] == 1
    assert m["counts"]["sessions"].get("transfer") and m["counts"]["counterfactuals"].get("eval")
    assert {g["name"] for g in m["gates"]} >= {"pii_scan", "immutability", "min_annotators"}


@pytest.mark.parametrize("name", list(rt.TAMPERS))
def test_verify_catches_the_tamper(release, tmp_path, name):
    d = rt.apply(release, name, tmp_path / "rel")
    with pytest.raises(VerifyFailed) as e:
        verify_release(d)
    assert e.value.differences and e.value.exit_code == ExitCode.BAD_RELEASE
    assert all("\n" not in x for x in e.value.differences)  # each difference is one line


def test_a_content_1_release_still_verifies(release, release_1, cli):
    """Cut before content format 2: its manifest names no content format, its SHA is format 1's."""
    m = rt.manifest(release_1)
    assert "content_format" not in m and m["release_sha"] == release_sha_1(_files(release_1))
    assert m["release_sha"] != rt.manifest(release)["release_sha"]
    assert verify_release(release_1)["release_sha"] == m["release_sha"]
    code, out, _ = cli("verify", release_1)
    assert code == 0


@pytest.mark.parametrize("name", list(rt.TAMPERS))
def test_verify_catches_the_tamper_of_a_content_1_release(release_1, tmp_path, name):
    d = rt.apply(release_1, name, tmp_path / "rel")
    with pytest.raises(VerifyFailed) as e:
        verify_release(d)
    assert e.value.differences and e.value.exit_code == ExitCode.BAD_RELEASE


def test_a_content_format_changed_in_the_manifest_is_caught(release, release_1, tmp_path):
    """Naming the other definition recomputes the other SHA: it is not the manifest's (digest forged too)."""
    for src, fmt in ((release, 1), (release_1, 2)):
        d = rt.apply(src, "manifest: version", tmp_path / f"rel{fmt}")
        m = rt.manifest(src)
        m["content_format"] = fmt
        rt.write_manifest(d, m)
        rt.forge(d)
        assert any("release SHA recomputed" in x for x in check_release(d).differences)


@pytest.mark.parametrize("name", FORGEABLE)
def test_verify_catches_the_tamper_when_the_claims_digest_is_forged_too(release, tmp_path, name):
    """What the rows (or the card and Croissant file the file list binds) determine cannot be relabelled by
    recomputing the digest."""
    d = rt.apply(release, name, tmp_path / "rel", forged=True)
    diffs = check_release(d).differences
    assert diffs and not any("is not the digest of its claims" in x for x in diffs), diffs


@pytest.mark.parametrize("name", sorted(rt.DIGEST_ONLY))
def test_claims_only_the_digest_binds_pass_when_it_is_forged(release, tmp_path, name):
    """The boundary the docs state (docs/reference/release-format.md): these claims follow from nothing in the rows (caught above, unforged)."""
    d = rt.apply(release, name, tmp_path / "rel", forged=True)
    assert check_release(d).ok


@pytest.mark.parametrize("name, differs", [
    ("manifest: kind trb, smoke_test false", "simulated or illustrative"),
    ("manifest: a row moved between splits in counts (totals kept)", "rows, the manifest says"),
    ("manifest: synthetic share halved", "synthetic"),
    ("manifest: salt", "salt and split fractions"),
    ("manifest: trainer_orgs names the transfer collector", "trainer_orgs"),
    ("manifest: trainer_orgs names the transfer collector in look-alike letters", "trainer_orgs ('Partner"),
    ("manifest: annotator minimum raised", "min_annotators"),
    ("manifest: PII hits zeroed", "pii"),
    ("rows: eval shard renamed to a train shard (resealed, same SHA)", "of another split than the shard's"),
    ("file: a hidden shard data/counterfactuals/.extra.parquet", ".extra.parquet: not listed"),
    ("file: hub.json names another SHA", "hub.json"),
    ("file: the SMOKE TEST banner removed from the card (resealed)", "SMOKE TEST"),
    ("rows: every Φ made uniform (resealed)", "release SHA recomputed"),
])
def test_each_difference_names_what_differs(release, tmp_path, name, differs):
    d = rt.apply(release, name, tmp_path / "rel", forged=True)
    diffs = check_release(d).differences
    assert any(differs in x for x in diffs), diffs


def test_the_cli_names_each_difference_and_exits_13(release, tmp_path, cli):
    d = rt.apply(release, "manifest: kind trb, smoke_test false", tmp_path / "rel")
    code, out, err = cli("verify", d)
    assert code == ExitCode.BAD_RELEASE and out == "" and "Traceback" not in err
    lines = err.strip().splitlines()
    assert any("smoke" in x for x in lines[:-1]) and "claims_sha256" in err and lines[-1].startswith("verify ")
    assert cli("verify", release)[0] == 0


def test_the_hubs_own_files_in_a_downloaded_copy_are_not_differences(release, tmp_path):
    d = rt.apply(release, "manifest: version", tmp_path / "rel")  # any copy; undo the tamper
    (d / "manifest.json").write_bytes((release / "manifest.json").read_bytes())
    (d / ".gitattributes").write_text("*.parquet filter=lfs diff=lfs merge=lfs -text\n")
    (d / ".cache" / "huggingface" / "download").mkdir(parents=True)
    (d / ".cache" / "huggingface" / "download" / "README.md.metadata").write_text("abc\n")
    (d / "hub.json").write_text(json.dumps({"repo": "org/trb", "commit": "c0ffee", "tag": "v0.2.0",
                                            "release_sha": rt.manifest(d)["release_sha"],
                                            "published_at": "2026-12-01T00:00:00+00:00"}))
    assert check_release(d).ok
    (d / ".cache" / "other").write_text("x")
    assert check_release(d).differences == [".cache/other: not listed in the manifest"]


def test_a_format_1_manifest_verifies_on_what_its_rows_determine_with_a_note(release, tmp_path, cli):
    """A release cut before claims were bound: accepted, its row claims still checked, and a note says so."""
    d = tmp_path / "old"
    rt.apply(release, "manifest: version", d)
    m = rt.manifest(release)
    m["format_version"] = 1
    del m["claims_sha256"]
    rt.write_manifest(d, m)
    code, _, err = cli("verify", d)
    assert code == 0 and "note: manifest.json: format 1" in err
    m["smoke_test"] = False
    rt.write_manifest(d, m)
    assert any("smoke_test false" in x for x in check_release(d).differences)


# -- issue 41: the manifest read strictly, values not key order, every entry accounted for ---------------------


@pytest.mark.parametrize("name", list(rt.INNOCENT))
def test_a_good_release_still_verifies_after_an_innocent_change(release, tmp_path, cli, name):
    """Sorted keys, fractions in another order, shards that are symbolic links to the same bytes, a Hub snapshot."""
    d = rt.innocent(release, name, tmp_path / "rel")
    assert check_release(d).differences == []
    assert verify_release(d)["release_sha"] == rt.manifest(release)["release_sha"]
    code, _, err = cli("verify", d)
    assert code == 0, err


@pytest.mark.parametrize("name, where", [
    ("json: a NaN in split_fractions", "/split_fractions/dev: NaN is not a JSON number"),
    ("json: Infinity as the synthetic share", "/synthetic_share: Infinity is not a JSON number"),
    ("json: a NaN as a gate's figure", "/figure: NaN is not a JSON number"),
    ("json: Infinity as an agreement figure", "/agreement/caused_by_self: Infinity is not a JSON number"),
    ("json: a forged release_sha placed before the true one", "/release_sha: duplicate key 'release_sha'"),
    ("json: a forged eval session count placed before the true one", "/counts/sessions/eval: duplicate key 'eval'"),
    ("file: an unlisted directory named like a shard", "train-00009-of-00009.parquet: a directory not listed"),
    ("file: an unlisted FIFO named like a shard", "eval-00009-of-00009.parquet: not listed in the manifest (a FIFO)"),
    ("file: a shard a symbolic link to other content", "(the content its symbolic link resolves to"),
])
def test_a_strict_manifest_difference_names_the_file_and_where(release, tmp_path, cli, name, where):
    d = rt.apply(release, name, tmp_path / "rel")
    code, out, err = cli("verify", d)
    assert code == ExitCode.BAD_RELEASE and out == "" and "Traceback" not in err, err
    assert where in err and ("manifest.json: not strict JSON" in err) == name.startswith("json: "), err


def test_a_symbolic_link_to_nothing_or_to_a_directory_is_refused(release, tmp_path):
    d = rt.apply(release, "manifest: version", tmp_path / "rel")
    (d / "manifest.json").write_bytes((release / "manifest.json").read_bytes())
    a, b = sorted(d.glob("data/steps/*.parquet"))[:2]
    a.unlink()
    a.symlink_to(tmp_path / "gone.parquet")
    b.unlink()
    b.symlink_to(tmp_path)
    diffs = check_release(d, rows=False).differences
    assert f"data/steps/{a.name}: a symbolic link to nothing ({tmp_path / 'gone.parquet'})" in diffs, diffs
    assert f"data/steps/{b.name}: a directory (through a symbolic link), not a file" in diffs, diffs
