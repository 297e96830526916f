"""Transfer provenance on real corpora and releases: the release gate (--trainer-org) and the run-time check
(trb run --split transfer --trained-by) refuse every spelling of the trainer, in a context's record and in
its sessions' collectors, by the same rule (toolkit/orgs.py)."""

from __future__ import annotations

import duckdb
import pytest

from corpus.errors import ExitCode, ReleaseRefused
from corpus.ingest import ingest
from corpus.release import cut_release
from corpus.store import Corpus, init_corpus
from factories import counterfactual, mutated, session, write_jsonl

TRAINER = "Acme Labs"

#: context id -> collector_org of its record; each but the last two is a spelling of TRAINER
HOSTILE = {
    "ctx-suffix": "Acme Labs, Inc.",
    "ctx-acronym": "ACME",
    "ctx-nbsp": "Acme\u00a0 Labs",
    "ctx-zwsp": "Acme\u200b Labs",
    "ctx-cyrillic": "\u0410cme Labs",
    "ctx-fullwidth": "\uff21\uff43\uff4d\uff45 Labs",
    "ctx-camel": "AcmeLabs GmbH",
    "ctx-hangul-filler": "Acme\u3164Labs",  # a default-ignorable letter (Lo), not a format character
    "ctx-cherokee": "\u13aa\u13df\u13b7\u13ac Labs",  # Cherokee look-alikes of A, C, M, E
    "ctx-clean": "Independent Field Lab",
    "ctx-sessions": "Independent Field Lab",  # its record names someone else; its sessions were collected by Acme
}
CAUGHT = sorted(set(HOSTILE) - {"ctx-clean"})


def _records() -> list[dict]:
    recs: list[dict] = [session("home", subject="subj-home"), counterfactual("home.cf", "home", 0)]
    for i, (cid, org) in enumerate(sorted(HOSTILE.items())):
        recs.append({"kind": "transfer_context", "context_id": cid, "description": f"held-out context {i}",
                     "collector_org": org, "attestation_ref": f"attest/{cid}"})
        collector = "Jane Roe, ACME LABS" if cid == "ctx-sessions" else org  # a session names its collector
        sid = f"t{i:02d}"
        recs.append(mutated(session(sid, subject=f"subj-{cid}", context=cid), "/source/collector", collector))
        recs.append(counterfactual(f"{sid}.cf", sid, 0))
    return recs


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Corpus:
    d = tmp_path_factory.mktemp("prov")
    c = Corpus(init_corpus(d / "corpus"))
    ingest(c, [write_jsonl(d / "recs.jsonl", _records())], progress=False)
    return c


@pytest.fixture(scope="module")
def release(corpus):
    """Cut without --trainer-org (nothing to check against), for the run-time check. The session collector "Jane Roe,
    ACME LABS" names a person: declared public, so that the rows keep what the check reads."""
    return cut_release(corpus, "0.1.0", kind="smoke", progress=False, public_fields=["collector"]).directory


def _gate(err: ReleaseRefused):
    (g,) = [g for g in err.failed if g.name == "transfer_provenance"]
    return g


def test_the_release_gate_refuses_every_spelling_of_the_trainer_and_its_sessions(corpus):
    with pytest.raises(ReleaseRefused) as e:
        cut_release(corpus, "0.2.0", kind="smoke", trainer_orgs=[TRAINER], progress=False)
    g = _gate(e.value)
    assert g.figure.startswith(f"{len(CAUGHT)} of {len(HOSTILE)} transfer context(s)")
    named = {cid for cid in HOSTILE if f"{cid} (" in g.detail}
    assert named == set(CAUGHT)
    assert "1 session(s) collected by 'Jane Roe, ACME LABS', the trainer org 'Acme Labs'" in g.detail
    assert not (corpus.dir / "releases" / "0.2.0").exists()


def test_the_gate_passes_for_another_trainer_and_compares_the_trainer_side_too(corpus):
    assert cut_release(corpus, "0.3.0", kind="smoke", trainer_orgs=["Zeta Org"], progress=False,
                       public_fields=["collector"]).created
    with pytest.raises(ReleaseRefused) as e:  # the trainer spelt with its legal form and odd spacing
        cut_release(corpus, "0.4.0", kind="smoke", trainer_orgs=["  independent  field lab ltd. "], progress=False)
    detail = _gate(e.value).detail
    assert {cid for cid in HOSTILE if f"{cid} (" in detail} == {"ctx-clean", "ctx-sessions"}


def test_the_cli_gate_is_one_refusal_with_exit_6(corpus, cli):
    code, out, err = cli("release", "--corpus", corpus.dir, "--version", "0.5.0", "--kind", "smoke",
                         "--trainer-org", "ACME LABS, INC.", "-q")
    assert code == ExitCode.GATE_FAILED and out == "" and "Traceback" not in err
    assert err.count("gate transfer_provenance: FAILED") == 1 and "ctx-cyrillic" in err


def test_the_run_time_check_refuses_the_same_contexts_and_writes_nothing(release, tmp_path):
    from trb.calibrate_transfer import StructureAgent
    from trb.provenance import TransferProvenanceError, check_transfer_provenance
    from trb.releases import Release
    from trb.run import RunSpec, run_tracks

    results = tmp_path / "r.duckdb"
    for trained_by in (TRAINER, "acme-labs llc", "\u0410CME"):
        with pytest.raises(TransferProvenanceError) as e:
            run_tracks(RunSpec(release, baseline="x", tracks=("1",), split="transfer", results=results,
                               trained_by=trained_by), StructureAgent(), progress=False)
        msg = str(e.value)
        assert f"who collected {len(CAUGHT)} of the {len(HOSTILE)} transfer context(s)" in msg
        assert {cid for cid in HOSTILE if f"{cid} (" in msg} == set(CAUGHT)
        assert "session(s) collected by 'Jane Roe, ACME LABS'" in msg
    assert not results.exists()
    rel = Release(release)
    try:
        check = check_transfer_provenance(rel, ["Zeta Org"], "agent")
        assert check["checked"] and {c["context_id"] for c in check["contexts"]} == set(HOSTILE)
        by_id = {c["context_id"]: c for c in check["contexts"]}
        assert by_id["ctx-sessions"]["session_collectors"] == ["Jane Roe, ACME LABS"]
        with pytest.raises(TransferProvenanceError, match="ctx-sessions"):
            check_transfer_provenance(rel, ["Independent Field Lab"], "agent")
    finally:
        rel.close()


def test_a_trainer_named_only_by_invisible_characters_is_no_trainer(release, tmp_path):
    from trb.calibrate_transfer import StructureAgent
    from trb.provenance import TransferProvenanceError
    from trb.run import RunSpec, run_tracks

    with pytest.raises(TransferProvenanceError, match="must record who trained the model"):
        run_tracks(RunSpec(release, baseline="x", tracks=("1",), split="transfer", results=tmp_path / "r.duckdb",
                           trained_by=["\u200b", "  "]), StructureAgent(), progress=False)


def test_the_release_rows_are_what_the_checks_read(release):
    con = duckdb.connect()
    rows = con.execute(f"SELECT context_id, collector FROM read_parquet('{release}/data/sessions/transfer-*.parquet') "
                       "ORDER BY 1").fetchall()
    assert dict(rows)["ctx-sessions"] == "Jane Roe, ACME LABS" and len(rows) == len(HOSTILE)
