"""Tampers of a release directory: each edits one thing a result depends on, as a careless or malicious hand would.

Used by the tamper matrices (tests/corpus/test_release_tamper.py for ``trb-corpus verify``,
tests/trb/test_run_tamper.py for ``trb run``) and by bench/hardening_release.py, which also
runs them against an older toolkit: everything here uses only the release's files, plain
json and pyarrow, never the code under test.

A tamper that edits a data file or the card reseals the manifest's file list (new sha256 and
size), so the file check alone cannot see it: what is left to catch it is the content SHA and
the claims recomputed from the rows. A tamper of the manifest leaves its ``claims_sha256``
stale, as a careless edit would; :func:`forge` also recomputes that digest after any tamper (what
a forger who read the format would do), to show which claims the rows bind and which only the
digest does (:data:`DIGEST_ONLY`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

__all__ = ["TAMPERS", "DIGEST_ONLY", "INNOCENT", "MANIFEST_VARIANTS", "innocent", "build_fixture", "as_content_1", "apply", "forge", "manifest", "write_manifest",
           "reseal"]


# -- the fixture -----------------------------------------------------------------------------------


def build_fixture(tmp: Path) -> Path:
    """A corpus with every kind of claim a manifest makes, cut twice: ``0.2.0`` (returned) has a parent.

    Human and simulated sessions (a smoke release), a transfer context, counterfactuals of every origin
    with annotator counts, attribution items with annotations, an e-mail redacted from one observation,
    a trainer organisation and a parent release.
    """
    from corpus.ingest import ingest
    from corpus.release import cut_release
    from corpus.store import Corpus, init_corpus
    from factories import counterfactual, session, small_corpus, write_jsonl

    recs = small_corpus()
    for i in range(14):
        sid = f"h{i:02d}"
        recs.append(session(sid, subject=f"subj-h{i:02d}"))
        recs.append(counterfactual(f"{sid}.cf0", sid, 0, n=6 + i % 3))
        recs.append(counterfactual(f"{sid}.cf1", sid, 1, origin="synthetic", probs={"down": 0.6, "wait": 0.4}))
    for i in range(3):
        recs.append(session(f"sim{i}", subject=f"sim-{i}", source_kind="simulated"))
    pii = session("pii", subject="subj-pii")
    pii["steps"][1]["observation"] = "write to jane.doe@example.org for the key"
    recs.append(pii)
    c = Corpus(init_corpus(tmp / "corpus"))
    ingest(c, [write_jsonl(tmp / "a.jsonl", recs)], progress=False)
    parent = cut_release(c, "0.1.0", kind="smoke", redact_pii=True, progress=False).directory
    ingest(c, [write_jsonl(tmp / "b.jsonl", [session("late", subject="subj-late"),
                                              counterfactual("late.cf0", "late", 0)])], progress=False)
    return Path(cut_release(c, "0.2.0", kind="smoke", parent=parent, trainer_orgs=["Acme Labs"], redact_pii=True,
                            progress=False).directory)


def as_content_1(release: Path, dest: Path) -> Path:
    """A copy of ``release`` at ``dest`` as the toolkit cut releases before content format 2: its release SHA
    the format-1 one (recomputed by ``tests/content_reference.py``), no ``content_format`` in the manifest, the
    SHA restated in the card, datasheet and Croissant file, the file list and claims digest sealed again."""
    from content_reference import release_sha_1

    shutil.copytree(release, dest)
    m = manifest(dest)
    old = m["release_sha"]
    new = release_sha_1((p.parts[-2], p) for p in sorted(dest.glob("data/*/*.parquet")))
    m["release_sha"] = new
    m.pop("content_format", None)
    write_manifest(dest, m)
    for name in ("README.md", "DATASHEET.md", "croissant.json"):
        p = dest / name
        p.write_text(p.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
    reseal(dest)
    forge(dest)
    return dest


# -- helpers ---------------------------------------------------------------------------------------


def manifest(d: Path) -> dict:
    return json.loads((d / "manifest.json").read_text(encoding="utf-8"))


def write_manifest(d: Path, m: dict) -> None:
    (d / "manifest.json").write_text(json.dumps(m, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _sha256(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def reseal(d: Path, *, add_unlisted: bool = False) -> None:
    """Rewrite the manifest's file list to the files now present (sha256 and size), optionally listing new data
    files too, and the data files' sha256s in croissant.json (then its own entry); the claims digest is left."""
    m = manifest(d)
    files = [f for f in m["files"] if (d / f["path"]).is_file()]
    if add_unlisted:
        listed = {f["path"] for f in files}
        files += [{"path": p.relative_to(d).as_posix()} for p in sorted(d.glob("data/*/*.parquet"))
                  if p.relative_to(d).as_posix() not in listed]
    files = [{**f, "sha256": _sha256(d / f["path"]), "bytes": (d / f["path"]).stat().st_size} for f in files]
    croissant = d / "croissant.json"
    if croissant.is_file():
        doc = json.loads(croissant.read_text(encoding="utf-8"))
        shas = {f["path"]: f for f in files}
        changed = False
        for obj in doc.get("distribution", []):
            f = shas.get(obj.get("contentUrl"))
            if f and obj.get("sha256") != f["sha256"]:
                obj["sha256"], obj["contentSize"], changed = f["sha256"], f"{f['bytes']} B", True
        if changed:
            croissant.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            files = [{**f, "sha256": _sha256(croissant), "bytes": croissant.stat().st_size}
                     if f["path"] == "croissant.json" else f for f in files]
    m["files"] = files
    write_manifest(d, m)


def _no_repeats(pairs: list) -> dict:
    if len({k for k, _ in pairs}) != len(pairs):
        raise ValueError("a key given twice")
    return dict(pairs)


def _no_constant(token: str):
    raise ValueError(f"{token} is not a JSON number")


def forge(d: Path) -> bool:
    """Recompute the manifest's claims digest, as a forger would; False when this toolkit has none, or when the
    manifest is not JSON one value per key (rewriting it would undo a NaN or a repeated key's tamper)."""
    try:
        from schemas.release_format import claims_digest
    except ImportError:
        return False
    try:
        m = json.loads((d / "manifest.json").read_text(encoding="utf-8"), object_pairs_hook=_no_repeats,
                       parse_constant=_no_constant)
    except ValueError:
        return False
    if not isinstance(m, dict) or "claims_sha256" not in m:
        return False
    m["claims_sha256"] = claims_digest(m)
    write_manifest(d, m)
    return True


def _shards(d: Path, config: str, split: str | None = None) -> list[Path]:
    return sorted(d.glob(f"data/{config}/{split or '*'}-*.parquet"))


def _rewrite(d: Path, config: str, fn: Callable[[pa.Table], pa.Table], split: str | None = None,
             first_only: bool = False) -> None:
    """Rewrite the rows of ``config``'s shards with ``fn`` (same schema), then reseal the file list."""
    for p in _shards(d, config, split)[:1] if first_only else _shards(d, config, split):
        t = pq.read_table(p)
        pq.write_table(fn(t).cast(t.schema), p, compression="zstd")
    reseal(d)


def _set_column(t: pa.Table, name: str, values: list) -> pa.Table:
    i = t.schema.get_field_index(name)
    return t.set_column(i, t.schema.field(i), pa.array(values, t.schema.field(i).type))


def _edit_manifest(fn: Callable[[dict], None]) -> Callable[[Path], None]:
    def tamper(d: Path) -> None:
        m = manifest(d)
        fn(m)
        write_manifest(d, m)
    return tamper


def _first_split(m: dict, config: str, *, other_than: str | None = None) -> str:
    return next(s for s, n in m["counts"][config].items() if n and s != other_than)


def _gate(m: dict, name: str) -> dict:
    return next(g for g in m["gates"] if g["name"] == name)


# -- the tampers -----------------------------------------------------------------------------------


def _flip_byte(d: Path) -> None:
    p = _shards(d, "steps")[0]
    data = bytearray(p.read_bytes())
    data[len(data) // 2] ^= 0x01
    p.write_bytes(bytes(data))


def _phi_uniform(d: Path) -> None:
    def fn(t):
        probs = [[{"action": e["action"], "p": 1.0 / len(v)} for e in v] if v else v
                 for v in t.column("phi_probs").to_pylist()]
        return _set_column(t, "phi_probs", probs)
    _rewrite(d, "counterfactuals", fn)


def _confidence(d: Path) -> None:
    _rewrite(d, "steps", lambda t: _set_column(t, "r_confidence", [0.99] * t.num_rows))


def _label_flip(d: Path) -> None:
    flip = {"self": "exogenous", "exogenous": "self"}
    _rewrite(d, "attribution", lambda t: _set_column(t, "label", [flip.get(v, v) for v in t.column("label").to_pylist()]))


def _simulated_to_human(d: Path) -> None:
    _rewrite(d, "sessions", lambda t: _set_column(
        t, "source_kind", ["human_session" if v == "simulated" else v for v in t.column("source_kind").to_pylist()]))


def _drop_step_row(d: Path) -> None:
    _rewrite(d, "steps", lambda t: t.slice(1), first_only=True)


def _duplicate_cf_row(d: Path) -> None:
    _rewrite(d, "counterfactuals", lambda t: pa.concat_tables([t, t.slice(0, 1)]), first_only=True)


def _split_column(d: Path) -> None:
    """Every eval session row relabelled train, inside the eval shard (the SHA moves)."""
    _rewrite(d, "sessions", lambda t: _set_column(t, "split", ["train"] * t.num_rows), split="eval")


def _rename_eval_shard(d: Path) -> None:
    """The eval counterfactual shard renamed to a train shard name (rows untouched: same SHA)."""
    m = manifest(d)
    (p,) = _shards(d, "counterfactuals", "eval")
    q = p.with_name(p.name.replace("eval-", "train-", 1).replace("-00000-of-00001", "-00001-of-00001"))
    p.rename(q)
    for f in m["files"]:
        if f["path"] == p.relative_to(d).as_posix():
            f["path"] = q.relative_to(d).as_posix()
    write_manifest(d, m)


def _delete_shard(d: Path) -> None:
    _shards(d, "attribution")[0].unlink()


def _delete_shard_resealed(d: Path) -> None:
    _shards(d, "attribution")[0].unlink()
    reseal(d)


def _extra_shard(d: Path) -> None:
    p = _shards(d, "steps")[0]
    shutil.copy(p, p.with_name("eval-99999-of-99999.parquet"))


def _extra_shard_listed(d: Path) -> None:
    p = _shards(d, "steps", "train")[0]
    shutil.copy(p, p.with_name("train-00007-of-00009.parquet"))
    reseal(d, add_unlisted=True)


def _hidden_shard(d: Path) -> None:
    p = _shards(d, "counterfactuals")[0]
    shutil.copy(p, p.with_name(".extra.parquet"))


def _listed_outside(d: Path) -> None:
    """A shard moved out of the release, the manifest listing it by a path that climbs out of the directory."""
    m = manifest(d)
    p = _shards(d, "steps", "train")[0]
    rel = p.relative_to(d).as_posix()
    outside = d.parent / f"{d.name}-outside.parquet"
    p.rename(outside)
    next(f for f in m["files"] if f["path"] == rel)["path"] = f"data/steps/../../../{outside.name}"
    write_manifest(d, m)


def _root_dotfile(d: Path) -> None:
    (d / ".notes").write_text("not part of the release\n")


def _hub_other_sha(d: Path) -> None:
    (d / "hub.json").write_text(json.dumps({"repo": "org/name", "commit": "abc", "tag": "v0.2.0",
                                            "release_sha": "0" * 64, "published_at": "2026-01-01T00:00:00+00:00"}))


def _hub_garbage(d: Path) -> None:
    (d / "hub.json").write_text("{not json")


def _card_banner_removed(d: Path) -> None:
    p = d / "README.md"
    p.write_text(p.read_text(encoding="utf-8").replace("SMOKE TEST", "release"), encoding="utf-8")
    reseal(d)


def _card_edited(d: Path) -> None:
    p = d / "README.md"
    p.write_text(p.read_text(encoding="utf-8") + "\nEdited.\n", encoding="utf-8")


def _datasheet_edited(d: Path) -> None:
    p = d / "DATASHEET.md"
    p.write_text(p.read_text(encoding="utf-8") + "\nEdited.\n", encoding="utf-8")


def _croissant_sha(d: Path) -> None:
    p = d / "croissant.json"
    doc = json.loads(p.read_text(encoding="utf-8"))
    obj = next(o for o in doc["distribution"] if o.get("sha256"))
    obj["sha256"] = "0" * 64
    p.write_text(json.dumps(doc), encoding="utf-8")
    m = manifest(d)
    next(f for f in m["files"] if f["path"] == "croissant.json").update(sha256=_sha256(p), bytes=p.stat().st_size)
    write_manifest(d, m)


def _croissant_version(d: Path) -> None:
    p = d / "croissant.json"
    doc = json.loads(p.read_text(encoding="utf-8"))
    doc["version"] = "9.9.9"
    p.write_text(json.dumps(doc), encoding="utf-8")
    reseal(d)


def _transfer_n_sessions(d: Path) -> None:
    _rewrite(d, "transfer", lambda t: _set_column(t, "n_sessions", [v + 3 for v in t.column("n_sessions").to_pylist()]))


def _redaction_undone(d: Path) -> None:
    """A redacted observation replaced by a clean one (the rows now hold no redaction marker)."""
    def fn(t):
        obs = t.column("observation")
        return _set_column(t, "observation", pc.replace_substring(obs, "[REDACTED:email]", "the desk").to_pylist())
    _rewrite(d, "steps", fn)


def _manifest_garbage(d: Path) -> None:
    (d / "manifest.json").write_text("{\"release_sha\": ")


def _listed_file_sha(d: Path) -> None:
    m = manifest(d)
    next(f for f in m["files"] if f["path"] == "README.md")["sha256"] = "0" * 64
    write_manifest(d, m)


def _manifest_nan(d: Path) -> None:
    m = manifest(d)
    m["split_fractions"]["dev"] = float("nan")  # json writes NaN: what a careless tool re-saving it does
    write_manifest(d, m)


def _manifest_infinity(d: Path) -> None:
    m = manifest(d)
    m["synthetic_share"] = float("inf")
    write_manifest(d, m)


def _gate_figure_nan(d: Path) -> None:
    m = manifest(d)
    _gate(m, "synthetic_cap")["figure"] = float("nan")  # a field the manifest model lets be any float
    write_manifest(d, m)


def _agreement_infinity(d: Path) -> None:
    m = manifest(d)
    m["agreement"] = {**(m.get("agreement") or {}), "caused_by_self": float("inf")}
    write_manifest(d, m)


def _insert_after(text: str, *keys: str, entry: str) -> str:
    """``text`` with ``entry`` put first in the object that ``keys`` (nested, each after the one before) opens."""
    at = 0
    for key in keys:
        at = text.index(f'"{key}": {{', at) + len(f'"{key}": {{')
    return text[:at] + entry + text[at:]


def _forged_sha_first(d: Path) -> None:
    """A forged release_sha given before the true one (a reader that keeps the first value sees the forgery)."""
    p = d / "manifest.json"
    text = p.read_text(encoding="utf-8")
    p.write_text("{" + f'"release_sha": "{"f" * 64}", ' + text.lstrip()[1:], encoding="utf-8")


def _forged_count_first(d: Path) -> None:
    """A forged count of eval sessions given before the true one."""
    p = d / "manifest.json"
    n = manifest(d)["counts"]["sessions"].get("eval", 0)
    p.write_text(_insert_after(p.read_text(encoding="utf-8"), "counts", "sessions", entry=f'"eval": {n + 7}, '),
                 encoding="utf-8")


def _unlisted_directory(d: Path) -> None:
    (d / "data" / "steps" / "train-00009-of-00009.parquet").mkdir()


def _unlisted_fifo(d: Path) -> None:
    os.mkfifo(d / "data" / "steps" / "eval-00009-of-00009.parquet")


def _symlink_other_content(d: Path) -> None:
    """A shard replaced by a symbolic link to a file of other content (another shard's bytes), outside the release."""
    p, other = _shards(d, "steps")[0], _shards(d, "counterfactuals")[0]
    outside = d.parent / f"{d.name}-elsewhere.parquet"
    shutil.copy(other, outside)
    p.unlink()
    p.symlink_to(outside)


def _kind_trb(m):
    m["kind"], m["smoke_test"] = "trb", False


def _move_count(m):
    cf = m["counts"]["counterfactuals"]
    a = _first_split(m, "counterfactuals")
    b = _first_split(m, "counterfactuals", other_than=a)
    cf[a] -= 1
    cf[b] += 1


def _share(m):
    m["synthetic_share"] = round((m["synthetic_share"] or 0) / 2, 6)
    m["synthetic"]["overall"]["share"] = m["synthetic_share"]


def _synthetic_count(m):
    m["synthetic"]["overall"]["synthetic"] -= 1


def _split_share(m):
    split = next(s for s in m["synthetic"] if s != "overall")
    m["synthetic"][split]["human"] += 5


def _subjects(m):
    split = next(iter(m["subjects"]))
    m["subjects"][split] += 1


def _gate_figure(m):
    _gate(m, "synthetic_cap")["figure"] = "overall: 0 synthetic / 40 human"


def _gate_removed(m):
    m["gates"] = [g for g in m["gates"] if g["name"] != "pii_scan"]


def _gate_failed(m):
    _gate(m, "completeness")["passed"] = False


def _trainer_collector(m):
    m["trainer_orgs"] = ["Partner Lab B"]  # the transfer context's collector


def _trainer_lookalike(m):
    m["trainer_orgs"] = ["Partner\u3164Lab \u0412"]  # the collector with a Hangul filler and a Cyrillic Ve


def _trainer_cleared(m):
    m["trainer_orgs"] = []


def _pii_hits(m):
    m["pii"]["hits"] = 0


def _pii_both(m):
    m["pii"] = {"hits": 0, "redacted": 0}


def _oracle(m):
    split = next(iter(m["phi_annotators"]["splits"]))
    m["phi_annotators"]["splits"][split]["oracle_g"] = 0.99


def _phi_n(m):
    split = next(iter(m["phi_annotators"]["splits"]))
    entry = m["phi_annotators"]["splits"][split]
    entry["phi_n"] = {"50": entry["items"] - entry["unstated"]} if entry["items"] > entry["unstated"] else {"50": 1}
    entry["phi_n_min"] = entry["phi_n_max"] = 50


def _min_annotators(m):
    m["phi_annotators"]["min_annotators"] = 40


def _parent(m):
    m["parent"] = {"version": "0.0.9", "release_sha": "1" * 64}


def _no_parent(m):
    m["parent"] = None


def _excluded(m):
    m["excluded"] = {"counterfactuals_lacking_phi_kept_out_of_eval": 7}


def _drop_claims(m):
    m.pop("claims_sha256", None)


def _missing_field(m):
    del m["counts"]


#: name -> (tamper, what it edits). Every tamper is caught after this issue's fix (the matrices assert it).
TAMPERS: dict[str, tuple[Callable[[Path], None], str]] = {
    # data files, the file list resealed (only the rows can tell)
    "rows: every Φ made uniform (resealed)": (_phi_uniform, "rows"),
    "rows: every r_t confidence rewritten (resealed)": (_confidence, "rows"),
    "rows: attribution labels flipped (resealed)": (_label_flip, "rows"),
    "rows: simulated sessions relabelled human (resealed)": (_simulated_to_human, "rows"),
    "rows: a step row dropped (resealed)": (_drop_step_row, "rows"),
    "rows: a counterfactual row duplicated (resealed)": (_duplicate_cf_row, "rows"),
    "rows: eval sessions relabelled train (resealed)": (_split_column, "rows"),
    "rows: eval shard renamed to a train shard (resealed, same SHA)": (_rename_eval_shard, "rows"),
    "rows: a shard deleted (resealed)": (_delete_shard_resealed, "rows"),
    "rows: an extra shard added and listed": (_extra_shard_listed, "rows"),
    "rows: transfer n_sessions rewritten (resealed)": (_transfer_n_sessions, "rows"),
    "rows: a redaction undone (resealed)": (_redaction_undone, "rows"),
    # files, not resealed
    "file: a data byte flipped": (_flip_byte, "file"),
    "file: a shard deleted": (_delete_shard, "file"),
    "file: an unlisted shard added": (_extra_shard, "file"),
    "file: a hidden shard data/counterfactuals/.extra.parquet": (_hidden_shard, "file"),
    "file: an unlisted dot-file at the root": (_root_dotfile, "file"),
    "file: a shard listed by a path outside the release": (_listed_outside, "file"),
    "file: hub.json names another SHA": (_hub_other_sha, "file"),
    "file: hub.json not JSON": (_hub_garbage, "file"),
    "file: README.md edited": (_card_edited, "file"),
    "file: DATASHEET.md edited": (_datasheet_edited, "file"),
    "file: the SMOKE TEST banner removed from the card (resealed)": (_card_banner_removed, "file"),
    "file: croissant.json names another file sha256 (resealed)": (_croissant_sha, "file"),
    "file: croissant.json names another version (resealed)": (_croissant_version, "file"),
    "file: manifest.json not JSON": (_manifest_garbage, "file"),
    "file: a listed sha256 edited in the manifest": (_listed_file_sha, "file"),
    "file: an unlisted directory named like a shard": (_unlisted_directory, "file"),
    "file: an unlisted FIFO named like a shard": (_unlisted_fifo, "file"),
    "file: a shard a symbolic link to other content": (_symlink_other_content, "file"),
    # the manifest's JSON itself
    "json: a NaN in split_fractions": (_manifest_nan, "json"),
    "json: Infinity as the synthetic share": (_manifest_infinity, "json"),
    "json: a NaN as a gate's figure": (_gate_figure_nan, "json"),
    "json: Infinity as an agreement figure": (_agreement_infinity, "json"),
    "json: a forged release_sha placed before the true one": (_forged_sha_first, "json"),
    "json: a forged eval session count placed before the true one": (_forged_count_first, "json"),
    # manifest claims
    "manifest: kind trb, smoke_test false": (_edit_manifest(_kind_trb), "claim"),
    "manifest: smoke_test false": (_edit_manifest(lambda m: m.update(smoke_test=False)), "claim"),
    "manifest: kind trb": (_edit_manifest(lambda m: m.update(kind="trb")), "claim"),
    "manifest: release_sha replaced": (_edit_manifest(lambda m: m.update(release_sha="f" * 64)), "claim"),
    "manifest: version": (_edit_manifest(lambda m: m.update(version="0.9.0")), "claim"),
    "manifest: synthetic share halved": (_edit_manifest(_share), "claim"),
    "manifest: synthetic count": (_edit_manifest(_synthetic_count), "claim"),
    "manifest: a split's human count": (_edit_manifest(_split_share), "claim"),
    "manifest: a row moved between splits in counts (totals kept)": (_edit_manifest(_move_count), "claim"),
    "manifest: counts total": (_edit_manifest(lambda m: m["counts"]["steps"].update(
        {k: v + 1 for k, v in list(m["counts"]["steps"].items())[:1]})), "claim"),
    "manifest: subjects per split": (_edit_manifest(_subjects), "claim"),
    "manifest: label_source": (_edit_manifest(lambda m: m.update(label_source="adjudicated")), "claim"),
    "manifest: a gate figure": (_edit_manifest(_gate_figure), "claim"),
    "manifest: a gate removed": (_edit_manifest(_gate_removed), "claim"),
    "manifest: a gate marked failed": (_edit_manifest(_gate_failed), "claim"),
    "manifest: trainer_orgs names the transfer collector": (_edit_manifest(_trainer_collector), "claim"),
    "manifest: trainer_orgs names the transfer collector in look-alike letters": (_edit_manifest(_trainer_lookalike),
                                                                                  "claim"),
    "manifest: trainer_orgs cleared": (_edit_manifest(_trainer_cleared), "claim"),
    "manifest: PII hits zeroed": (_edit_manifest(_pii_hits), "claim"),
    "manifest: PII hits and redactions zeroed": (_edit_manifest(_pii_both), "claim"),
    "manifest: salt": (_edit_manifest(lambda m: m.update(salt="another-salt")), "claim"),
    "manifest: split fractions": (_edit_manifest(lambda m: m.update(
        split_fractions={"train": 0.5, "dev": 0.25, "eval": 0.25})), "claim"),
    "manifest: parent replaced": (_edit_manifest(_parent), "claim"),
    "manifest: parent removed": (_edit_manifest(_no_parent), "claim"),
    "manifest: excluded count": (_edit_manifest(_excluded), "claim"),
    "manifest: Track 1 ceiling (oracle_g)": (_edit_manifest(_oracle), "claim"),
    "manifest: annotator counts behind Φ": (_edit_manifest(_phi_n), "claim"),
    "manifest: annotator minimum raised": (_edit_manifest(_min_annotators), "claim"),
    "manifest: trb_version": (_edit_manifest(lambda m: m.update(trb_version="9.9")), "claim"),
    "manifest: toolkit_version": (_edit_manifest(lambda m: m.update(toolkit_version="9.9.9")), "claim"),
    "manifest: created_at": (_edit_manifest(lambda m: m.update(created_at="2020-01-01T00:00:00+00:00")), "claim"),
    "manifest: schema_version": (_edit_manifest(lambda m: m.update(schema_version=1)), "claim"),
    "manifest: claims digest removed": (_edit_manifest(_drop_claims), "claim"),
    "manifest: a required field removed": (_edit_manifest(_missing_field), "claim"),
}

#: Tampers caught only by the claims digest: when the forger also recomputes it (:func:`forge`), these pass; every
#: other tamper is still caught, by the files, the rows, or the card and Croissant file that the file list binds
#: (docs/reference/release-format.md: which claim is bound how).
DIGEST_ONLY = {
    "manifest: a gate figure", "manifest: trainer_orgs cleared", "manifest: PII hits and redactions zeroed",
    "manifest: parent replaced", "manifest: parent removed", "manifest: excluded count", "manifest: trb_version",
    "manifest: toolkit_version", "manifest: created_at", "manifest: schema_version",
}


# -- what must still verify ------------------------------------------------------------------------


def _sorted_keys(d: Path) -> Path:
    m = manifest(d)
    (d / "manifest.json").write_text(json.dumps(m, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return d


def _fractions_reordered(d: Path) -> Path:
    m = manifest(d)
    m["split_fractions"] = dict(reversed(list(m["split_fractions"].items())))
    write_manifest(d, m)
    return d


def _symlink_identical(d: Path) -> Path:
    """Every steps shard a symbolic link (one absolute, one relative) to a byte-identical copy outside."""
    for i, p in enumerate(_shards(d, "steps")):
        copy = d.parent / f"{d.name}-copy-{i}.parquet"
        shutil.copy(p, copy)
        p.unlink()
        p.symlink_to(copy if i % 2 == 0 else Path(os.path.relpath(copy, p.parent)))
    return d


def _hub_snapshot(d: Path) -> Path:
    """The release as the Hugging Face cache holds a download: ``datasets--org--name/snapshots/<commit>/<path>``,
    each file a relative symbolic link to ``../../blobs/<sha256>`` (directories real), plus ``refs/main`` and the
    repo's ``.gitattributes``. Built by hand: no network."""
    repo = d.parent / "hub-cache" / "datasets--org--trb"
    commit = "0123456789abcdef0123456789abcdef01234567"
    snap = repo / "snapshots" / commit
    (repo / "blobs").mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    (d / ".gitattributes").write_text("*.parquet filter=lfs diff=lfs merge=lfs -text\n")
    for p in sorted(x for x in d.rglob("*") if x.is_file()):
        rel = p.relative_to(d)
        blob = repo / "blobs" / _sha256(p)
        if not blob.exists():
            shutil.copy(p, blob)
        link = snap / rel
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    shutil.rmtree(d)
    return snap


#: name -> a change to a good release that must still verify (returns the directory to check): the release check
#: compares values, never key order, and judges a symbolic link by the content it resolves to.
INNOCENT: dict[str, Callable[[Path], Path]] = {
    "manifest re-saved with sorted keys": _sorted_keys,
    "split_fractions in another order": _fractions_reordered,
    "steps shards symbolic links to byte-identical copies": _symlink_identical,
    "a Hugging Face cache snapshot (links into ../../blobs/)": _hub_snapshot,
}

#: The manifest and entry variants of issue 41 (bench/hardening_release.py counts them apart): tampers to catch.
MANIFEST_VARIANTS = [n for n in TAMPERS if n.startswith("json: ") or n in (
    "file: an unlisted directory named like a shard", "file: an unlisted FIFO named like a shard",
    "file: a shard a symbolic link to other content")]


def innocent(release: Path, name: str, dest: Path) -> Path:
    """A copy of ``release`` at ``dest`` changed as :data:`INNOCENT` ``name`` says; the directory to check."""
    shutil.copytree(release, dest)
    return INNOCENT[name](dest)


def apply(release: Path, name: str, dest: Path, *, forged: bool = False) -> Path:
    """A copy of ``release`` at ``dest`` with tamper ``name`` applied (and the claims digest recomputed if
    ``forged``)."""
    shutil.copytree(release, dest)
    fn, _ = TAMPERS[name]
    fn(dest)
    if forged:
        forge(dest)
    return dest
