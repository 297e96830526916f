"""Releases: every gate refuses with its figure and writes nothing; the SHA is the content; verify catches edits."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from corpus.errors import ExitCode, ReleaseRefused, UsageError, VerifyFailed
from corpus.ingest import ingest
from corpus.release import TEMPLATE, cut_release, list_releases
from corpus.store import Corpus, init_corpus
from corpus.verify import verify_release
from factories import annotation, counterfactual, mutated, session, small_corpus, transfer_context, write_jsonl
from tests_paths import EXAMPLE_7F3A
from toolkit.ceiling import oracle_g

# cuts many releases, one or more per test
pytestmark = pytest.mark.slow


def _corpus(tmp_path: Path, records: list, name: str = "corpus") -> Corpus:
    c = Corpus(init_corpus(tmp_path / name))
    ingest(c, [write_jsonl(tmp_path / f"{name}.jsonl", records)], progress=False)
    return c


def _many_sessions(n: int = 30) -> list:
    """n human sessions of n different subjects, each with one human and one synthetic counterfactual."""
    recs = []
    for i in range(n):
        sid = f"s{i:03d}"
        recs.append(session(sid, subject=f"subj-{i:03d}"))
        recs.append(counterfactual(f"{sid}.cf0", sid, 0))
        recs.append(counterfactual(f"{sid}.cf1", sid, 1, origin="synthetic", probs={"down": 1.0}))
    return recs


def _refused(c: Corpus, *args, **kw) -> ReleaseRefused:
    with pytest.raises(ReleaseRefused) as e:
        cut_release(c, *args, progress=False, **kw)
    assert not (c.dir / "releases" / args[0]).exists(), "a refused release wrote its directory"
    assert not list((c.dir / "releases").glob(".*")) if (c.dir / "releases").exists() else True
    return e.value


def test_smoke_release_of_a_small_corpus_writes_the_hf_layout(tmp_path):
    c = _corpus(tmp_path, small_corpus())
    r = cut_release(c, "0.1.0", kind="smoke", progress=False)
    d = r.directory
    assert r.created and d == c.dir / "releases" / "0.1.0"
    for name in ("README.md", "DATASHEET.md", "croissant.json", "manifest.json"):
        assert (d / name).is_file()
    m = r.manifest
    assert m["smoke_test"] is True and m["kind"] == "smoke" and len(m["release_sha"]) == 64
    assert {g["name"] for g in m["gates"]} == {"release_kind", "synthetic_cap", "transfer_provenance",
                                               "split_discipline", "completeness", "min_annotators", "pii_scan",
                                               "immutability"}
    assert all(g["passed"] for g in m["gates"])
    # s2 is in the declared transfer context ctx-t: its rows are in the transfer split
    assert m["counts"]["sessions"].get("transfer") == 1 and m["counts"]["transfer"] == {"transfer": 1}
    assert (d / "data" / "sessions" / "transfer-00000-of-00001.parquet").is_file()
    assert "SMOKE TEST" in (d / "README.md").read_text()
    assert "{{" not in (d / "DATASHEET.md").read_text()
    assert verify_release(d)["release_sha"] == m["release_sha"]


def test_release_kind_trb_refuses_simulated_data(tmp_path):
    recs = [session("a", source_kind="simulated"), session("b", subject="x")]
    err = _refused(_corpus(tmp_path, recs), "1.0.0", kind="trb")
    assert [g.name for g in err.failed] == ["release_kind", "completeness"]  # and the datasheet is not curated
    g = err.failed[0]
    assert g.figure == "1 simulated/illustrative session(s)" and g.detail == "first offending sessions: a"


def test_a_gate_counts_every_offender_and_names_the_first_ten_in_order(tmp_path):
    # the gate counts in the database and fetches only the ten it names (a release of a million simulated
    # sessions must not hold every id): the count, the order and the "more" are the user's view of it
    recs = [session(f"sim{i:03d}", source_kind="simulated", subject=f"u{i}") for i in (12, 3, 7, 0, 9, 1, 11, 5, 2, 8,
                                                                                        4, 10, 6)]
    recs += [session("human", subject="x")]
    err = _refused(_corpus(tmp_path, recs), "1.0.0", kind="trb")
    g = err.failed[0]
    assert g.name == "release_kind" and g.figure == "13 simulated/illustrative session(s)"
    assert g.detail == ("first offending sessions: " + ", ".join(f"sim{i:03d}" for i in range(10)) + " (and 3 more)")


def test_gate_synthetic_cap_names_the_figure_and_the_sessions(tmp_path):
    recs = _many_sessions(10)
    recs += [counterfactual(f"s003.syn{i}", "s003", 2, origin="synthetic", probs={"up": 1.0}) for i in range(30)]
    err = _refused(_corpus(tmp_path, recs), "0.1.0", kind="smoke")
    (g,) = err.failed
    assert g.name == "synthetic_cap"
    assert "overall: 40 synthetic / 10 human" in g.figure
    assert "first offending sessions: s003" in g.detail


def test_only_a_smoke_release_may_waive_the_synthetic_cap_and_every_record_says_it_was(tmp_path, cli):
    from schemas.release_format import WAIVED, claims_digest, waived_gates
    from trb.releases import Release

    recs = _many_sessions(10)
    recs += [counterfactual(f"s003.syn{i}", "s003", 2, origin="synthetic", probs={"up": 1.0}) for i in range(30)]
    c = _corpus(tmp_path, recs)
    with pytest.raises(UsageError, match="only for a smoke release"):
        cut_release(c, "0.1.0", kind="trb", waive_synthetic_cap=True, progress=False)
    assert not (c.dir / "releases" / "0.1.0").exists()
    code, _, err = cli("release", "--corpus", c.dir, "--version", "0.1.0", "--kind", "trb", "--waive-synthetic-cap", "-q")
    assert code == ExitCode.USAGE and "only for a smoke release" in err
    code, out, err = cli("release", "--corpus", c.dir, "--version", "0.1.0", "--kind", "smoke", "--waive-synthetic-cap", "-q")
    assert code == 0, err
    assert "gate synthetic_cap: waived: overall: 40 synthetic / 10 human" in err and "SMOKE TEST" in err
    d = c.dir / "releases" / "0.1.0"
    m = verify_release(d)  # the rows are over the cap, and the manifest says the gate was waived: consistent
    (g,) = [g for g in m["gates"] if g["name"] == "synthetic_cap"]
    assert g["passed"] and g["bar"].startswith(WAIVED) and "not held" in g["bar"] and "3 x human" in g["bar"]
    assert waived_gates(m) == {"synthetic_cap"} and m["smoke_test"]
    assert "| synthetic_cap | waived |" in (d / "README.md").read_text(encoding="utf-8")
    Release(d).close()  # the engine opens it (its own check of the rows against the manifest)
    # a waiver claimed for a trb release is caught, even with the claims digest made to match
    edited = tmp_path / "edited"
    shutil.copytree(d, edited)
    m2 = json.loads((edited / "manifest.json").read_text())
    m2["kind"], m2["smoke_test"] = "trb", False
    m2["claims_sha256"] = claims_digest(m2)
    (edited / "manifest.json").write_text(json.dumps(m2))
    with pytest.raises(VerifyFailed) as e:
        verify_release(edited)
    assert any("waived in a trb release" in x for x in e.value.differences)
    assert any("synthetic above 3 x human in overall" in x for x in e.value.differences)


def test_gate_transfer_provenance_refuses_a_trainer_org(tmp_path):
    c = _corpus(tmp_path, small_corpus())
    err = _refused(c, "0.1.0", kind="smoke", trainer_orgs=["partner lab b"])
    (g,) = err.failed
    assert g.name == "transfer_provenance" and g.figure.startswith("1 of 1 transfer context(s)")
    assert "ctx-t" in g.detail
    assert cut_release(c, "0.1.0", kind="smoke", trainer_orgs=["Other Lab"], progress=False).created


def test_gate_split_discipline_refuses_a_subject_in_two_splits(tmp_path):
    recs = [transfer_context("ctx-t"), session("a", subject="shared"),
            session("b", subject="shared", context="ctx-t")]
    err = _refused(_corpus(tmp_path, recs), "0.1.0", kind="smoke")
    (g,) = err.failed
    assert g.name == "split_discipline" and g.figure.startswith("1 subject(s)")
    assert "shared" in g.detail and "transfer" in g.detail


def test_parent_keeps_held_out_sessions_held_out(tmp_path):
    recs = _many_sessions(30)
    c = _corpus(tmp_path, recs)
    p = cut_release(c, "0.1.0", kind="smoke", progress=False).directory
    parent_eval = [r["session_id"] for r in pq.read_table(p / "data" / "sessions").to_pylist() if r["split"] == "eval"]
    assert parent_eval, "the fixture needs an eval subject"
    # a new release with another salt would reshuffle subjects; the parent pins its eval subjects
    child = cut_release(c, "0.2.0", kind="smoke", parent=p, salt="another-salt", progress=False)
    now = {r["session_id"]: r["split"] for r in pq.read_table(child.directory / "data" / "sessions").to_pylist()}
    assert all(now[s] == "eval" for s in parent_eval)
    parent_sha = json.loads((p / "manifest.json").read_text())["release_sha"]
    assert child.manifest["parent"] == {"version": "0.1.0", "release_sha": parent_sha}
    # declaring an eval session's context a transfer context would move it: refused
    moved_ctx = "ctx-a"
    more = Corpus(c.dir)
    ingest(more, [write_jsonl(tmp_path / "t.jsonl", [transfer_context(moved_ctx)])], progress=False)
    err = _refused(more, "0.3.0", kind="smoke", parent=p)
    assert any(g.name == "split_discipline" and "left their split" in (g.detail or "") for g in err.failed)


def test_gate_completeness_keeps_phi_less_counterfactuals_out_of_eval(tmp_path):
    recs = _many_sessions(30)
    recs += [mutated(counterfactual(f"s{i:03d}.nophi", f"s{i:03d}", 2), "phi", None) for i in range(30)]
    c = _corpus(tmp_path, recs)
    m = cut_release(c, "0.1.0", kind="smoke", progress=False).manifest
    kept_out = m["excluded"]["counterfactuals_lacking_phi_kept_out_of_eval"]
    eval_subjects = m["subjects"].get("eval", 0)
    assert kept_out == eval_subjects > 0  # one Φ-less counterfactual per (single-session) eval subject
    rows = pq.read_table(c.dir / "releases" / "0.1.0" / "data" / "counterfactuals").to_pylist()
    assert not [r for r in rows if r["split"] == "eval" and r["phi_type"] is None]
    assert [r for r in rows if r["split"] == "train" and r["phi_type"] is None]


def _few_annotators() -> list:
    """30 single-session subjects, each with a human Φ from 3 annotators and a synthetic one from 12."""
    recs = []
    for i in range(30):
        sid = f"s{i:03d}"
        recs.append(session(sid, subject=f"subj-{i:03d}"))
        recs.append(counterfactual(f"{sid}.cf0", sid, 0, n=3))
        recs.append(counterfactual(f"{sid}.cf1", sid, 1, origin="synthetic", probs={"down": 1.0}, n=12))
    return recs


def test_gate_min_annotators_refuses_few_annotators_in_eval_only_and_names_the_option(tmp_path):
    c = _corpus(tmp_path, _few_annotators())
    err = _refused(c, "0.1.0", kind="smoke")
    [g] = err.failed
    assert g.name == "min_annotators" and "--min-annotators" in g.detail and "--min-annotators 5" in g.bar
    # only eval (and transfer) counterfactuals are gated: train and dev ones from 3 annotators are not named
    r = cut_release(c, "0.1.0", kind="smoke", progress=False, min_annotators=3)
    m = r.manifest
    eval_ids = {x["cf_id"] for x in pq.read_table(r.directory / "data" / "counterfactuals").to_pylist()
                if x["split"] == "eval" and x["cf_id"].endswith(".cf0")}
    assert eval_ids and g.figure.startswith(f"{len(eval_ids)} of {2 * len(eval_ids)} eval/transfer distribution")
    named = [part.split(" ")[0] for part in g.detail.splitlines()[0].split(": ", 1)[1].split(", ")]
    assert set(named) <= eval_ids and all(f"{cf} (n=3)" in g.detail for cf in named[:3])
    assert [x for x in m["gates"] if x["name"] == "min_annotators"][0]["passed"]
    pa = m["phi_annotators"]
    assert pa["min_annotators"] == 3 and pa["gated_splits"] == ["eval", "transfer"]
    ev = pa["splits"]["eval"]
    k = len(eval_ids)
    assert (ev["items"], ev["unstated"], ev["phi_n"], ev["text_items"]) == (2 * k, 0, {"3": k, "12": k}, 0)
    assert (ev["phi_n_min"], ev["phi_n_median"], ev["phi_n_max"]) == (3, 7.5, 12)
    assert ev["oracle_g"] == pytest.approx((oracle_g({"up": 0.75, "right": 0.25}, 3) + 1.0) / 2, abs=1e-6)
    assert pa["splits"]["train"]["phi_n"]["3"] > 0
    card = (r.directory / "README.md").read_text()
    assert "## Annotators behind Φ(r') and the Track 1 ceiling" in card and "--min-annotators 3" in card
    assert "below the toolkit's default of 5" in card and "G above this is not better than the truth" in card
    assert f"| eval | {2 * k} | 3 / 7.5 / 12 | 0 | {ev['oracle_g']:.4f} | 0 |" in card
    assert "--min-annotators 3" in (r.directory / "DATASHEET.md").read_text()  # the gate table
    assert "annotator-noise ceiling" in json.loads((r.directory / "croissant.json").read_text())["rai:dataLimitations"]
    assert verify_release(r.directory)["phi_annotators"] == pa


def test_gate_min_annotators_refuses_a_phi_that_states_no_annotators_unless_simulated(tmp_path):
    recs = _many_sessions(30)
    recs += [mutated(counterfactual(f"s{i:03d}.nocount", f"s{i:03d}", 2), "phi/n", None) for i in range(30)]
    err = _refused(_corpus(tmp_path, recs), "0.1.0", kind="smoke")
    [g] = err.failed
    assert g.name == "min_annotators" and "stating no annotator count" in g.figure and ".nocount (n=none)" in g.detail
    sim = [mutated(r, "source/kind", "simulated") if r["kind"] == "session" else r for r in recs]
    m = cut_release(_corpus(tmp_path, sim, "sim"), "0.1.0", kind="smoke", progress=False).manifest
    ev = m["phi_annotators"]["splits"]["eval"]
    assert ev["unstated"] == ev["items"] // 3 > 0 and ev["phi_n"] == {"8": 2 * ev["unstated"]}


def test_min_annotators_must_be_a_positive_int(tmp_path):
    c = _corpus(tmp_path, small_corpus())
    for bad in (0, -2, 2.5, True):
        with pytest.raises(UsageError):
            cut_release(c, "0.1.0", kind="smoke", progress=False, min_annotators=bad)


def test_gate_completeness_trb_needs_a_curated_datasheet_and_eval_labels(tmp_path, cli):
    recs = _many_sessions(30)
    c = _corpus(tmp_path, recs)
    err = _refused(c, "1.0.0", kind="trb")
    assert [g.name for g in err.failed] == ["completeness"] and "[curator: ...] prompt" in err.failed[0].detail
    # the headline leads with the check that failed, not the counts that pass (Φ and labels are complete here)
    code, _, err = cli("release", "--corpus", c.dir, "--version", "1.0.0", "--kind", "trb", "-q")
    head = err.splitlines()[0]
    assert code == ExitCode.GATE_FAILED and head.startswith("gate completeness: FAILED: the datasheet still has ")
    assert "without Φ" not in head and "without a label" not in head
    assert "--datasheet FILE" in err and "1 gate(s) failed (completeness); nothing was written" in err
    curated = tmp_path / "DATASHEET.md"
    curated.write_text(TEMPLATE.read_text(encoding="utf-8").replace("[curator:", "(answered:"))
    r = cut_release(c, "1.0.0", kind="trb", datasheet=curated, progress=False)
    assert r.manifest["smoke_test"] is False and "SMOKE TEST" not in (r.directory / "README.md").read_text()


def test_a_datasheet_that_is_not_a_template_is_refused_before_anything_is_written(tmp_path):
    """The library refuses what the CLI refuses: a binary file or a template with an unknown placeholder is a
    UsageError naming the file, and no release directory is made."""
    c = _corpus(tmp_path, small_corpus())
    binary, stray = tmp_path / "binary.md", tmp_path / "stray.md"
    binary.write_bytes(b"# Datasheet\n\x92\x00 junk")
    stray.write_text(TEMPLATE.read_text(encoding="utf-8") + "\n{{not_a_value}}\n", encoding="utf-8")
    for sheet, why in ((binary, "not UTF-8 text"), (stray, "not a datasheet template like the packaged one")):
        with pytest.raises(UsageError) as e:
            cut_release(c, "0.1.0", kind="smoke", datasheet=sheet, progress=False)
        assert str(sheet) in str(e.value) and why in str(e.value)
        assert not (c.dir / "releases").exists()


def test_adjudicated_unsure_in_eval_is_refused(tmp_path):
    recs = _many_sessions(30)
    recs += [{"kind": "attribution", "item_id": f"s{i:03d}.attr", "session_id": f"s{i:03d}", "t": 1,
              "design_label": "self"} for i in range(30)]
    recs += [mutated(mutated(annotation(f"adj{i}", f"s{i:03d}.attr", label="unsure"), "role", "adjudicator"),
                     "method", "majority") for i in range(30)]
    err = _refused(_corpus(tmp_path, recs), "0.1.0", kind="smoke")
    assert [g.name for g in err.failed] == ["completeness"] and "without a label" in err.failed[0].detail


def test_gate_pii_refuses_unless_redacted(tmp_path):
    recs = [mutated(session(), "steps/1/observation", "write to jane.doe@example.org or call +1 415 555 0100"),
            session("s2", subject="other")]
    c = _corpus(tmp_path, recs)
    err = _refused(c, "0.1.0", kind="smoke")
    (g,) = err.failed
    assert g.name == "pii_scan" and g.figure.startswith("2 hit(s)")
    assert "steps s1 observation: email" in g.detail and "jane.doe@example.org" not in g.detail
    r = cut_release(c, "0.1.0", kind="smoke", redact_pii=True, progress=False)
    obs = [row["observation"] for row in pq.read_table(r.directory / "data" / "steps").to_pylist()
           if row["session_id"] == "s1" and row["t"] == 1]
    assert obs == ["write to [REDACTED:email] or call [REDACTED:phone]"]
    assert r.manifest["pii"] == {"hits": 2, "redacted": 2, "rows": 2, "documents": 0}


def test_immutability_same_content_is_a_noop_different_content_is_refused(tmp_path):
    c = _corpus(tmp_path, small_corpus())
    first = cut_release(c, "0.1.0", kind="smoke", progress=False)
    again = cut_release(c, "0.1.0", kind="smoke", progress=False)
    assert again.created is False and again.manifest["release_sha"] == first.manifest["release_sha"]
    ingest(c, [write_jsonl(tmp_path / "more.jsonl", [session("s9", subject="new")])], progress=False)
    err = _refused_existing(c)
    (g,) = err.failed
    assert g.name == "immutability" and first.manifest["release_sha"] in g.figure
    assert json.loads((first.directory / "manifest.json").read_text()) == first.manifest  # untouched


def _refused_existing(c):
    with pytest.raises(ReleaseRefused) as e:
        cut_release(c, "0.1.0", kind="smoke", progress=False)
    return e.value


def test_same_content_ingested_in_another_order_has_the_same_sha(tmp_path):
    recs = small_corpus() + _many_sessions(12)
    a = _corpus(tmp_path, recs, "a")
    b = Corpus(init_corpus(tmp_path / "b"))
    half = len(recs) // 2
    ingest(b, [write_jsonl(tmp_path / "b2.jsonl", list(reversed(recs[half:]))),
               write_jsonl(tmp_path / "b1.jsonl", list(reversed(recs[:half])))], progress=False)
    sha_a = cut_release(a, "0.1.0", kind="smoke", progress=False).manifest["release_sha"]
    sha_b = cut_release(b, "0.1.0", kind="smoke", progress=False).manifest["release_sha"]
    assert sha_a == sha_b
    c = _corpus(tmp_path, [mutated(r, "steps/2/r/confidence", 0.61) if r.get("session_id") == "s005"
                           and r["kind"] == "session" else r for r in recs], "c")
    assert cut_release(c, "0.1.0", kind="smoke", progress=False).manifest["release_sha"] != sha_a


def test_verify_catches_a_flipped_byte_and_an_edited_manifest(tmp_path, cli):
    c = _corpus(tmp_path, small_corpus() + _many_sessions(5))
    d = cut_release(c, "0.1.0", kind="smoke", progress=False).directory
    assert cli("verify", d)[0] == 0
    bad = tmp_path / "bad"
    shutil.copytree(d, bad)
    shard = sorted((bad / "data" / "steps").glob("*.parquet"))[0]
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0x01
    shard.write_bytes(bytes(data))
    code, _, err = cli("verify", bad)
    assert code == ExitCode.BAD_RELEASE and f"data/steps/{shard.name}: sha256" in err
    edited = tmp_path / "edited"
    shutil.copytree(d, edited)
    m = json.loads((edited / "manifest.json").read_text())
    m["counts"]["sessions"]["train"] += 1
    (edited / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(VerifyFailed) as e:
        verify_release(edited)
    assert any("data/sessions" in x and "the manifest says" in x for x in e.value.differences)


def test_verify_recomputes_the_sha_from_rows_not_bytes(tmp_path):
    """A shard rewritten with other compression and row order still has the same content SHA."""
    from schemas.release_format import release_sha_of_files

    c = _corpus(tmp_path, _many_sessions(8))
    d = cut_release(c, "0.1.0", kind="smoke", progress=False).directory
    m = json.loads((d / "manifest.json").read_text())
    files = [(p.parts[-2], p) for p in sorted(d.glob("data/*/*.parquet"))]
    rewritten = []
    for config, p in files:
        t = pq.read_table(p)
        q = tmp_path / "rw" / config / p.name
        q.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(t.take(list(reversed(range(t.num_rows)))), q, compression="snappy")
        rewritten.append((config, q))
    assert release_sha_of_files(rewritten)[0] == m["release_sha"]


def test_smoke_releases_of_7f3a_and_a_simulated_corpus_load_with_datasets(tmp_path, cli):
    import datasets

    assert cli("simulate", "--sessions", "40", "--seed", "3", "-o", tmp_path / "sim.jsonl", "-q")[0] == 0
    for name, files in (("ex", [EXAMPLE_7F3A]), ("sim", [tmp_path / "sim.jsonl"])):
        c = Corpus(init_corpus(tmp_path / name))
        ingest(c, files, progress=False)
        r = cut_release(c, "0.1.0", kind="smoke", progress=False)
        con = duckdb.connect(str(c.db_path), read_only=True)
        for config, per_split in r.manifest["counts"].items():
            ds = datasets.load_dataset(str(r.directory), name=config, cache_dir=str(tmp_path / "hf" / name))
            assert {s: ds[s].num_rows for s in ds} == per_split, config
        n_sessions = con.execute("SELECT count(*) FROM sessions").fetchone()[0]
        n_cf = con.execute("SELECT count(*) FROM counterfactuals").fetchone()[0]
        con.close()
        assert sum(r.manifest["counts"]["sessions"].values()) == n_sessions
        kept_out = r.manifest["excluded"]["counterfactuals_lacking_phi_kept_out_of_eval"]
        assert sum(r.manifest["counts"]["counterfactuals"].values()) + kept_out == n_cf
        ds = datasets.load_dataset(str(r.directory), name="counterfactuals", cache_dir=str(tmp_path / "hf" / name))
        row = next(x for s in ds for x in ds[s] if x["phi_type"] == "distribution")
        assert abs(sum(p["p"] for p in row["phi_probs"]) - 1) < 1e-9
        if name == "sim":  # the simulated world's Φ is exact: no annotator count, passes the minimum
            assert all(v["unstated"] == v["items"] and v["oracle_g"] is None
                       for v in r.manifest["phi_annotators"]["splits"].values())


def test_releases_lists_every_release(tmp_path, cli):
    c = _corpus(tmp_path, small_corpus())
    cut_release(c, "0.1.0", kind="smoke", progress=False)
    ingest(c, [write_jsonl(tmp_path / "m.jsonl", [session("s9", subject="n")])], progress=False)
    cut_release(c, "0.2.0", kind="smoke", progress=False)
    code, out, _ = cli("releases", "--corpus", c.dir, "--json")
    rows = json.loads(out)
    assert code == 0 and [r["version"] for r in rows] == ["0.1.0", "0.2.0"]
    assert rows[1]["counts"] == json.loads((c.dir / "releases/0.2.0/manifest.json").read_text())["counts"]
    assert list_releases(c)[0]["release_sha"] == rows[0]["release_sha"]


def test_release_cli_prints_the_sha_last_and_refusals_exit_6(tmp_path, cli):
    c = _corpus(tmp_path, small_corpus())
    code, out, err = cli("release", "--corpus", c.dir, "--version", "0.1.0", "--kind", "smoke", "-q")
    assert code == 0 and out.strip().splitlines()[-1] == json.loads(
        (c.dir / "releases/0.1.0/manifest.json").read_text())["release_sha"]
    assert "SMOKE TEST" in err
    code, out, err = cli("release", "--corpus", c.dir, "--version", "0.2.0", "--kind", "smoke", "-q",
                         "--trainer-org", "Partner Lab B")
    assert code == ExitCode.GATE_FAILED and out == "" and "gate transfer_provenance: FAILED" in err
    assert cli("release", "--corpus", c.dir, "--version", "1.0", "--kind", "smoke")[0] == ExitCode.USAGE
    assert cli("release", "--corpus", c.dir, "--version", "0.2.0", "--kind", "smoke", "--min-annotators", "0"
               )[0] == ExitCode.USAGE


def test_release_cli_min_annotators_on_a_simulated_corpus_with_three_annotators(tmp_path, cli):
    assert cli("simulate", "--sessions", "40", "--seed", "3", "--annotators", "3", "-o", tmp_path / "sim.jsonl",
               "-q")[0] == 0
    c = Corpus(init_corpus(tmp_path / "c"))
    ingest(c, [tmp_path / "sim.jsonl"], progress=False)
    code, out, err = cli("release", "--corpus", c.dir, "--version", "0.1.0", "--kind", "smoke", "-q")
    assert code == ExitCode.GATE_FAILED and out == "" and "gate min_annotators: FAILED" in err
    assert "--min-annotators N" in err and "(n=3)" in err and "nothing was written" in err
    assert not (c.dir / "releases" / "0.1.0").exists()
    code, out, err = cli("release", "--corpus", c.dir, "--version", "0.1.0", "--kind", "smoke", "-q",
                         "--min-annotators", "3")
    assert code == 0, err
    m = json.loads((c.dir / "releases/0.1.0/manifest.json").read_text())
    assert m["phi_annotators"]["min_annotators"] == 3
    assert all(v["phi_n"] == {"3": v["items"]} and v["unstated"] == 0 for v in m["phi_annotators"]["splits"].values())


def test_bad_version_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError):
        cut_release(_corpus(tmp_path, small_corpus()), "v1", kind="smoke", progress=False)


def test_split_fractions_put_a_tiny_smoke_corpus_in_eval(tmp_path, cli):
    c = Corpus(init_corpus(tmp_path / "ex"))
    ingest(c, [EXAMPLE_7F3A], progress=False)
    code, out, err = cli("release", "--corpus", c.dir, "--version", "0.1.0", "--kind", "smoke", "-q",
                         "--split-fractions", "eval=1")
    assert code == 0, err
    m = json.loads((c.dir / "releases/0.1.0/manifest.json").read_text())
    assert m["split_fractions"] == {"train": 0.0, "dev": 0.0, "eval": 1.0}
    assert set(m["counts"]["counterfactuals"]) == {"eval"} and m["counts"]["sessions"] == {"eval": 2}
    # 7f3a's distributions come from 8 (made-up) annotators: the default minimum of 5 holds; its two text
    # continuations (one writer each) are not subject to it
    ev = m["phi_annotators"]["splits"]["eval"]
    assert m["phi_annotators"]["min_annotators"] == 5 and (ev["items"], ev["phi_n"], ev["text_items"]) == (
        8, {"8": 8}, 2) and 0.5 < ev["oracle_g"] < 0.95
    for bad in ("eval=0.5", "test=1", "eval=x"):
        code, _, err = cli("release", "--corpus", c.dir, "--version", "0.2.0", "--kind", "smoke", "--split-fractions", bad)
        assert code == ExitCode.USAGE and "--split-fractions" in err


def test_subject_split_is_deterministic_and_near_its_fractions():
    from corpus.splits import subject_split

    splits = [subject_split("trb-split-v1", f"subj-{i}") for i in range(20000)]
    assert splits == [subject_split("trb-split-v1", f"subj-{i}") for i in range(20000)]
    share = {s: splits.count(s) / len(splits) for s in ("train", "dev", "eval")}
    assert abs(share["train"] - 0.7) < 0.015 and abs(share["dev"] - 0.1) < 0.01 and abs(share["eval"] - 0.2) < 0.012
    assert splits != [subject_split("other-salt", f"subj-{i}") for i in range(20000)]


def test_annotators_choices_pool_with_a_records_counted_choices_but_never_with_an_exact_phi(tmp_path):
    from corpus.labels import add_annotations, make_annotation

    c = Corpus(init_corpus(tmp_path / "c"))
    own = counterfactual("s1.t0.own", "s1", 0, probs={"up": 1.0}, n=1)  # a subject's own choice (trb-collect)
    exact = counterfactual("s1.t1.exact", "s1", 1, probs={"up": 0.75, "right": 0.25}, n=None)  # a known policy
    bare = counterfactual("s1.t2.bare", "s1", 2)
    del exact["phi"]["n"]
    del bare["phi"]
    # simulated: an exact Φ without n is allowed there (the min-annotators gate exempts it)
    ingest(c, [write_jsonl(tmp_path / "in.jsonl", [session("s1", source_kind="simulated"), own, exact, bare])],
           progress=False)
    votes = {"s1.t0.own": ["down", "down", "up"], "s1.t1.exact": ["down", "down", "down"], "s1.t2.bare": ["wait"] * 3}
    add_annotations(c, [make_annotation(target_kind="counterfactual", target_id=cf, annotator_id=f"a{i}",
                                        value={"type": "action", "action": a}, created_at="2026-11-30T10:00:00Z")
                        for cf, acts in votes.items() for i, a in enumerate(acts)])
    r = cut_release(c, "0.1.0", kind="smoke", progress=False, min_annotators=1,
                    split_fractions={"train": 0.0, "dev": 0.0, "eval": 1.0})
    rows = {row["cf_id"]: row for row in pq.read_table(r.directory / "data" / "counterfactuals").to_pylist()}

    def phi(cf):
        return {p["action"]: p["p"] for p in rows[cf]["phi_probs"]}, rows[cf]["phi_n"]

    assert phi("s1.t0.own") == ({"down": 0.5, "up": 0.5}, 4)  # (1 up) + (2 down, 1 up) over 4
    assert phi("s1.t1.exact") == ({"up": 0.75, "right": 0.25}, None)  # an exact Φ is not a count: left alone
    assert phi("s1.t2.bare") == ({"wait": 1.0}, 3)
