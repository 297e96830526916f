"""`trb run` refuses a release whose rows or manifest do not match, and checks each release in full once.

The same tamper matrix as `trb-corpus verify` (tests/release_tampers.py), through the engine's own
check (``schemas.release_check``, ``trb.verified``; the engine imports no ``corpus`` module): every
tamper is refused before any score is written, with one line and exit 13 at the command line. The
full check runs once per release directory; a tamper made after it, even one that puts the mtime
back, is caught on the next open.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest

import release_tampers as rt
from toolkit.errors import ExitCode
from trb.errors import ReleaseError
from trb.releases import Release
from trb.run import RunSpec, run_tracks
from trb.verified import cache_dir

# cuts a release per tamper (about 400 cases with test_run_tamper.py): seconds of work in all
pytestmark = pytest.mark.slow

FORGEABLE = [n for n in rt.TAMPERS if n not in rt.DIGEST_ONLY]


class Adapter:
    """The docs' example adapter (docs/examples/adapter): weight 3 on r'.planned_next."""

    tier = "proxy"
    capabilities = ()

    def spec(self) -> dict:
        return {"kind": "tamper-test"}

    def emit_r(self, context) -> dict:
        return {"planned_next": context.action_space[0] if context.action_space else None, "caused_by_self": 0.7}

    def act(self, context, r_override=None) -> dict:
        r = r_override or self.emit_r(context)
        w = {a: 3.0 if a == r.get("planned_next") else 1.0 for a in context.action_space}
        return {a: v / sum(w.values()) for a, v in w.items()}


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return rt.build_fixture(tmp_path_factory.mktemp("fixture"))


def _refused(d, results) -> ReleaseError:
    with pytest.raises(ReleaseError) as e:
        run_tracks(RunSpec(d, baseline="probe", results=results, tracks=("1", "3")), Adapter(), progress=False)
    assert not results.exists(), "a refused run wrote a results store"
    assert "\n" not in e.value.message
    return e.value


def test_the_untampered_release_runs_and_the_run_records_how_it_was_checked(release, tmp_path):
    run = run_tracks(RunSpec(release, baseline="probe", results=tmp_path / "r.duckdb", tracks=("1",)),
                     Adapter(), progress=False)
    check = json.loads(run["timings"])["release_check"]
    assert check["checked"] in ("full", "cached") and check["claims_bound"] is True
    assert len(check["manifest_sha256"]) == 64 and run["smoke_test"] is True and run["release_kind"] == "smoke"


@pytest.mark.parametrize("name", list(rt.TAMPERS))
def test_trb_run_refuses_the_tamper(release, tmp_path, name):
    d = rt.apply(release, name, tmp_path / "rel")
    _refused(d, tmp_path / "r.duckdb")


@pytest.fixture(scope="module")
def release_1(release, tmp_path_factory):
    """The same release as the toolkit cut it before content format 2 (content/1 SHA, no content_format)."""
    return rt.as_content_1(release, tmp_path_factory.mktemp("content-1") / "rel")


def test_a_content_1_release_still_runs(release_1, tmp_path):
    assert "content_format" not in rt.manifest(release_1)
    run = run_tracks(RunSpec(release_1, baseline="probe", results=tmp_path / "r.duckdb", tracks=("1",)),
                     Adapter(), progress=False)
    assert run["release_sha"] == rt.manifest(release_1)["release_sha"]


@pytest.mark.parametrize("name", list(rt.TAMPERS))
def test_trb_run_refuses_the_tamper_of_a_content_1_release(release_1, tmp_path, name):
    d = rt.apply(release_1, name, tmp_path / "rel")
    _refused(d, tmp_path / "r.duckdb")


@pytest.mark.parametrize("name", FORGEABLE)
def test_trb_run_refuses_the_tamper_when_the_claims_digest_is_forged_too(release, tmp_path, name):
    d = rt.apply(release, name, tmp_path / "rel", forged=True)
    _refused(d, tmp_path / "r.duckdb")


def _refused_in_one_line(d, tmp_path, capsys, says: str) -> None:
    """`trb run` on release ``d``: exit 13, one line saying ``says``, no traceback, no results store made."""
    from trb.cli import main

    code = main(["run", "--release", str(d), "--adapter", "native", "--model", str(d), "--baseline", "x",
                 "--results", str(tmp_path / "r.duckdb")])
    err = capsys.readouterr().err
    assert code == ExitCode.BAD_RELEASE, err
    assert says in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r.duckdb").exists()


@pytest.mark.parametrize("name, says", [
    ("manifest: kind trb, smoke_test false", "differ from its manifest"),
    ("rows: every Φ made uniform (resealed)", "release SHA recomputed from the parquet rows"),
    ("file: a hidden shard data/counterfactuals/.extra.parquet", "not listed in the manifest"),
])
def test_the_cli_refuses_with_one_line_and_exit_13(release, tmp_path, capsys, name, says):
    _refused_in_one_line(rt.apply(release, name, tmp_path / "rel", forged=True), tmp_path, capsys, says)


@pytest.mark.parametrize("name", list(rt.INNOCENT))
def test_trb_run_scores_a_good_release_after_an_innocent_change(release, tmp_path, name):
    """Sorted keys, fractions in another order, shards that are symbolic links to the same bytes, a Hub snapshot."""
    d = rt.innocent(release, name, tmp_path / "rel")
    run = run_tracks(RunSpec(d, baseline="probe", results=tmp_path / "r.duckdb", tracks=("1",)), Adapter(),
                     progress=False)
    assert run["release_sha"] == rt.manifest(release)["release_sha"]


@pytest.mark.parametrize("name, says", [
    ("json: a NaN in split_fractions", "/split_fractions/dev: NaN is not a JSON number"),
    ("json: a forged release_sha placed before the true one", "/release_sha: duplicate key"),
    ("file: an unlisted FIFO named like a shard", "not listed in the manifest (a FIFO)"),
])
def test_the_cli_refuses_a_loose_manifest_with_one_line_and_exit_13(release, tmp_path, capsys, name, says):
    _refused_in_one_line(rt.apply(release, name, tmp_path / "rel"), tmp_path, capsys, says)


# -- the full check once per release directory --------------------------------------------------------


def _copy(release, dest):
    shutil.copytree(release, dest)
    return dest


def _open(d) -> str:
    rel = Release(d)
    try:
        return rel.check.how
    finally:
        rel.close()


def test_a_release_is_checked_in_full_once_then_from_its_fingerprint(release, tmp_path):
    d = _copy(release, tmp_path / "rel")
    assert _open(d) == "full"
    assert _open(d) == "cached" and _open(d) == "cached"
    entry = json.loads((cache_dir() / "verified" / f"{rt.manifest(d)['release_sha']}.json").read_text())
    assert str(d.resolve()) in entry["directories"]
    other = _copy(d, tmp_path / "copy")  # another directory of the same release: checked once more
    assert _open(other) == "full" and _open(other) == "cached" and _open(d) == "cached"


def test_a_tamper_after_the_check_is_caught_even_with_the_size_and_mtime_put_back(release, tmp_path):
    """One byte of a shard flipped in place, its mtime restored, the manifest untouched: only the ctime (which no
    user call sets back) moved, and that is enough for the full check to run again and refuse."""
    d = _copy(release, tmp_path / "rel")
    assert _open(d) == "full" and _open(d) == "cached"
    (shard,) = d.glob("data/counterfactuals/eval-*.parquet")
    before = shard.stat()
    with open(shard, "r+b") as f:
        f.seek(before.st_size // 2)
        byte = f.read(1)
        f.seek(before.st_size // 2)
        f.write(bytes([byte[0] ^ 0x01]))
    os.utime(shard, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = shard.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    with pytest.raises(ReleaseError) as e:
        Release(d)
    assert f"data/counterfactuals/{shard.name}: sha256" in e.value.message


def test_a_manifest_edit_after_the_check_is_caught(release, tmp_path):
    d = _copy(release, tmp_path / "rel")
    assert _open(d) == "full"
    m = rt.manifest(d)
    m["kind"], m["smoke_test"] = "trb", False
    st = (d / "manifest.json").stat()
    rt.write_manifest(d, m)
    os.utime(d / "manifest.json", ns=(st.st_atime_ns, st.st_mtime_ns))
    with pytest.raises(ReleaseError):
        Release(d)


def test_an_unwritable_cache_costs_a_full_check_not_an_error(release, tmp_path, monkeypatch):
    blocked = tmp_path / "cache-file"
    blocked.write_text("not a directory")
    monkeypatch.setenv("TRB_CACHE", str(blocked))
    d = _copy(release, tmp_path / "rel")
    assert _open(d) == "full" and _open(d) == "full"


def test_a_blob_changed_behind_a_hub_snapshots_link_after_the_check_is_caught(release, tmp_path):
    """The fingerprint of a symbolic link covers what it resolves to: the snapshot's links are untouched."""
    d = rt.innocent(release, "a Hugging Face cache snapshot (links into ../../blobs/)", tmp_path / "rel")
    assert _open(d) == "full" and _open(d) == "cached"
    (shard,) = d.glob("data/counterfactuals/eval-*.parquet")
    blob = shard.resolve()
    data = bytearray(blob.read_bytes())
    data[len(data) // 2] ^= 0x01
    blob.write_bytes(bytes(data))
    with pytest.raises(ReleaseError) as e:
        Release(d)
    assert f"data/counterfactuals/{shard.name}: sha256" in e.value.message
