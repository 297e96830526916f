"""The release content SHA, format 2: the vectorised implementation against an independent reference.

``tests/content_reference.py`` is written from the definition alone, one value at a time. Both must
agree on releases with nulls, empty strings and lists, nested structs, unicode, -0.0 and NaN; the
SHA must not move when rows are reordered, files resharded or recompressed, and must move when any
single value does. Format 1 (releases cut before) is still computed as it was.
"""

from __future__ import annotations

import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from content_reference import release_sha_1, release_sha_2
from schemas.release_format import (
    CONFIGS,
    CONTENT_FORMAT,
    ContentDigest,
    arrow_schema,
    release_sha_of_files,
)


def _row(config: str, **values) -> dict:
    return {name: values.get(name) for name, _, _ in CONFIGS[config]}


def _rows() -> dict[str, list[dict]]:
    """Rows of every config, with every kind of value the definition must tell apart."""
    sessions = [
        _row("sessions", session_id="s1", split="train", source_kind="simulated", subject_id="u1", n_steps=2,
             collector="Zoë Ünïcödé 東京", r_extensions='{"mood": "ok"}'),
        _row("sessions", session_id="s2", split="eval", source_kind="human_session", subject_id="u2", n_steps=1,
             collector="", consent_ref=None, dataset_name="mmlu"),
        _row("sessions", session_id="s3", split="train", subject_id="u3", n_steps=0, collector="e\u0301"),
    ]
    steps = [
        _row("steps", session_id="s1", split="train", t=0, observation="a", has_r=True, r_confidence=-0.0,
             r_caused_by_self=0.0, action_space=["up", "down"], action_texts=None),
        _row("steps", session_id="s1", split="train", t=1, observation="", has_r=False, r_confidence=float("nan"),
             action_space=[], action_texts=["", "x"]),
        _row("steps", session_id="s2", split="eval", t=0, observation=None, has_r=None, r_confidence=1e-300,
             action_space=None, action_texts=[]),
        _row("steps", session_id="s1", split="train", t=2, observation="\U0001f600 emoji", action_space=[""],
             r_confidence=2.0 ** 0.5),
    ]
    cfs = [
        _row("counterfactuals", cf_id="c1", split="eval", session_id="s2", t=0, phi_type="distribution", phi_n=5,
             phi_probs=[{"action": "up", "p": 0.5}, {"action": None, "p": 0.5}], generator_seed=2 ** 40,
             adversarial=False, ood=None),
        _row("counterfactuals", cf_id="c2", split="train", session_id="s1", t=1, phi_type="distribution",
             phi_probs=[], generator_seed=-1, adversarial=True),
        _row("counterfactuals", cf_id="c3", split="train", session_id="s1", t=0, phi_type="text", phi_text="go",
             phi_probs=None),
        _row("counterfactuals", cf_id="c4", split="train", session_id="s1", t=0,
             phi_probs=[{"action": "up", "p": None}, None]),
    ]
    attribution = [
        _row("attribution", item_id="a1", split="train", session_id="s1", t=1, label="self",
             annotations=[{"annotator_id": "ann-1", "role": "annotator", "label": "self", "method": None},
                          {"annotator_id": "ann-2", "role": "annotator", "label": "exogenous", "method": ""}]),
        _row("attribution", item_id="a2", split="eval", session_id="s2", t=0, annotations=None, endorsed=False),
        _row("attribution", item_id="a3", split="eval", session_id="s2", t=0, annotations=[]),
    ]
    transfer = [_row("transfer", context_id="ctx-t", split="transfer", description="held out", n_sessions=0)]
    return {"sessions": sessions, "steps": steps, "counterfactuals": cfs, "attribution": attribution,
            "transfer": transfer}


def _write(d: Path, rows: dict[str, list[dict]], *, per_file: int = 1000, compression: str = "zstd",
           reverse: bool = False) -> list[tuple[str, Path]]:
    """Files of ``rows``: ``per_file`` rows a file (any split mixed in), optionally reversed first."""
    files = []
    for config, these in rows.items():
        these = list(reversed(these)) if reverse else these
        for i in range(0, len(these), per_file):
            p = d / "data" / config / f"part-{i:05d}.parquet"
            p.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.Table.from_pylist(these[i:i + per_file], schema=arrow_schema(config)), p,
                           compression=compression)
            files.append((config, p))
    return files


def _write_in_order(d: Path, rows: dict[str, list[dict]], per_file: int = 2) -> list[tuple[str, Path]]:
    """Files as a release has them: per split, rows in key order, ``per_file`` rows a shard."""
    from schemas.release_format import CONTENT_KEYS

    files = []
    for config, these in rows.items():
        keys = ("split", *CONTENT_KEYS[config])
        these = sorted(these, key=lambda r, keys=keys: tuple((0,) if r[k] is None else (1, r[k]) for k in keys))
        for i in range(0, len(these), per_file):
            part = these[i:i + per_file]
            p = d / "data" / config / f"{part[0]['split']}-{i:05d}.parquet"
            p.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.Table.from_pylist(part, schema=arrow_schema(config)), p)
            files.append((config, p))
    return files


def _both(files) -> str:
    fast = release_sha_of_files(files)[0]
    ref = release_sha_2(files)
    assert fast == ref
    return fast


def test_the_vectorised_sha_equals_the_reference_on_every_kind_of_value(tmp_path):
    assert CONTENT_FORMAT == 2
    files = _write(tmp_path, _rows())
    _both(files)


@pytest.mark.parametrize("layout", [
    {"per_file": 1, "compression": "snappy"},
    {"per_file": 2, "compression": "none", "reverse": True},
    {"per_file": 3, "compression": "gzip", "reverse": True},
])
def test_row_order_sharding_and_compression_do_not_change_it(tmp_path, layout):
    base = _both(_write(tmp_path / "a", _rows()))
    assert _both(_write(tmp_path / "b", _rows(), **layout)) == base


def test_another_writer_and_wider_stored_types_do_not_change_it(tmp_path):
    """Columns in another order, int64 for int32, large_string for string: the same values, the same SHA."""
    base = _both(_write(tmp_path / "a", _rows()))
    files = []
    for config, these in _rows().items():
        t = pa.Table.from_pylist(these, schema=arrow_schema(config))
        cols = {}
        for name in reversed(t.schema.names):
            c = t.column(name)
            if pa.types.is_int32(c.type):
                c = c.cast(pa.int64())
            elif pa.types.is_string(c.type):
                c = c.cast(pa.large_string())
            cols[name] = c
        p = tmp_path / "b" / f"{config}.parquet"
        p.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table(cols), p, compression="lz4", use_dictionary=False, row_group_size=1)
        files.append((config, p))
    assert release_sha_of_files(files)[0] == base


def _edits():
    """(name, config, row index, column, new value): each changes one value, some only in what JSON or a naive
    concatenation would not tell apart."""
    return [
        ("null string -> empty", "sessions", 1, "consent_ref", ""),
        ("empty string -> null", "sessions", 1, "collector", None),
        ("unicode NFD -> NFC", "sessions", 2, "collector", "\u00e9"),
        ("one character", "sessions", 0, "collector", "Zoë Ünïcödé 東亰"),
        ("added column set", "sessions", 0, "dataset_item", "q1"),
        ("int", "sessions", 0, "n_steps", 3),
        ("int null", "sessions", 0, "n_steps", None),
        ("-0.0 -> 0.0", "steps", 0, "r_confidence", 0.0),
        ("0.0 -> -0.0", "steps", 0, "r_caused_by_self", -0.0),
        ("NaN -> null", "steps", 1, "r_confidence", None),
        ("float last bit", "steps", 3, "r_confidence", math.nextafter(2.0 ** 0.5, 3.0)),
        ("bool flip", "steps", 0, "has_r", False),
        ("bool null", "steps", 0, "has_r", None),
        ("empty list -> null", "steps", 1, "action_space", None),
        ("null list -> empty", "steps", 2, "action_space", []),
        ("empty list -> [\"\"]", "steps", 1, "action_space", [""]),
        ("[\"\"] -> empty", "steps", 3, "action_space", []),
        ("list boundary", "steps", 0, "action_space", ["up", "down", ""]),
        ("list element", "steps", 0, "action_space", ["up", "dowm"]),
        ("list order", "steps", 0, "action_space", ["down", "up"]),
        ("string split", "steps", 0, "observation", "a "),
        ("split value", "steps", 3, "split", "dev"),
        ("key", "steps", 3, "t", 5),
        ("struct field", "counterfactuals", 0, "phi_probs", [{"action": "up", "p": 0.5}, {"action": "", "p": 0.5}]),
        ("struct -> null struct", "counterfactuals", 3, "phi_probs", [{"action": "up", "p": None}]),
        ("null struct -> struct of nulls", "counterfactuals", 3, "phi_probs",
         [{"action": "up", "p": None}, {"action": None, "p": None}]),
        ("struct p", "counterfactuals", 0, "phi_probs", [{"action": "up", "p": 0.5}, {"action": None, "p": 0.25}]),
        ("big int", "counterfactuals", 0, "generator_seed", 2 ** 40 + 1),
        ("nested string moved between fields", "attribution", 0, "annotations",
         [{"annotator_id": "ann-1", "role": "annotator", "label": "self", "method": None},
          {"annotator_id": "ann-2", "role": "annotatorexogenous", "label": "", "method": ""}]),
        ("nested null -> empty", "attribution", 0, "annotations",
         [{"annotator_id": "ann-1", "role": "annotator", "label": "self", "method": ""},
          {"annotator_id": "ann-2", "role": "annotator", "label": "exogenous", "method": ""}]),
        ("empty nested list -> null", "attribution", 2, "annotations", None),
        ("transfer int", "transfer", 0, "n_sessions", 1),
    ]


def test_every_single_changed_value_changes_it(tmp_path):
    base = _both(_write(tmp_path / "base", _rows()))
    seen = {base}
    for i, (name, config, row, column, value) in enumerate(_edits()):
        rows = _rows()
        assert rows[config][row][column] != value or (value is None) != (rows[config][row][column] is None) or \
            str(rows[config][row][column]) != str(value), name
        rows[config][row][column] = value
        sha = _both(_write(tmp_path / f"e{i}", rows))
        assert sha not in seen, name
        seen.add(sha)


def test_a_moved_row_a_dropped_row_and_a_duplicate_change_it(tmp_path):
    base = _both(_write(tmp_path / "base", _rows()))
    rows = _rows()
    rows["steps"].pop()
    dropped = _both(_write(tmp_path / "drop", rows))
    rows = _rows()
    rows["steps"].append(dict(rows["steps"][0]))
    duplicated = _both(_write(tmp_path / "dup", rows))
    rows = _rows()
    rows["sessions"].append(rows["sessions"].pop(0))  # the same rows in another order: the same SHA
    same = _both(_write(tmp_path / "moved", rows))
    assert len({base, dropped, duplicated}) == 3 and same == base


def test_rows_with_equal_keys_are_ordered_by_their_digest_whatever_their_order(tmp_path):
    """No cut release has them, but the SHA of any set of rows is defined: ties by row digest."""
    rows = _rows()
    twin = dict(rows["steps"][0], observation="twin", r_confidence=0.25)
    rows["steps"] += [twin, dict(rows["steps"][0], observation=None), dict(rows["steps"][0])]
    rows["sessions"].append(_row("sessions"))  # null split and key, twice
    rows["sessions"].append(_row("sessions", collector="nobody"))
    a = _both(_write(tmp_path / "a", rows))
    b = _both(_write(tmp_path / "b", rows, reverse=True, per_file=2))
    assert a == b


def test_a_column_the_config_does_not_declare_or_lacks_has_no_sha(tmp_path):
    files = _write(tmp_path, _rows())
    config, p = next(f for f in files if f[0] == "transfer")
    pq.write_table(pq.read_table(p).append_column("extra", pa.array(["x"])), p)
    with pytest.raises(ValueError, match="extra"):
        release_sha_of_files(files)
    pq.write_table(pq.read_table(p).drop_columns(["extra", "description"]), p)
    with pytest.raises(ValueError, match="description"):
        release_sha_of_files(files)


def test_a_missing_added_column_reads_as_null(tmp_path):
    rows = _rows()
    rows["sessions"][1]["dataset_name"] = None
    base = _both(_write(tmp_path / "a", rows))
    files = _write(tmp_path / "b", rows)
    for config, p in files:
        if config == "sessions":
            t = pq.read_table(p)
            pq.write_table(t.drop_columns([c for c in t.schema.names if c.startswith("dataset_")]), p)
    assert _both(files) == base


def test_format_1_is_computed_as_before(tmp_path):
    files = _write(tmp_path, _rows())
    assert release_sha_of_files(files, content_format=1)[0] == release_sha_1(files)
    assert release_sha_of_files(files, content_format=1)[0] != release_sha_of_files(files)[0]
    with pytest.raises(ValueError):
        ContentDigest(3)


def test_batches_out_of_order_without_their_files_are_refused():
    d = ContentDigest()
    t = pa.Table.from_pylist(_rows()["sessions"], schema=arrow_schema("sessions"))
    d.add_batch("sessions", t)  # s1 train, s2 eval: out of content order
    with pytest.raises(ValueError, match="out of content order"):
        d.hexdigest()


def test_rows_in_content_order_are_hashed_as_they_come_and_agree(tmp_path):
    """A release's shards read in path order: no file is read twice (batches without their file are accepted)."""
    rows = _rows()
    for r in rows["sessions"]:
        r["split"] = "train" if r["split"] is None else r["split"]
    base = _both(_write(tmp_path / "any", rows))
    files = _write_in_order(tmp_path / "ordered", rows)
    d = ContentDigest()
    for config, p in files:
        for batch in pq.ParquetFile(p).iter_batches(batch_size=1):
            d.add_batch(config, batch)  # no source: out of order would be refused
    assert d.hexdigest() == base == release_sha_2(files)


def test_a_cut_release_is_hashed_as_it_is_written_and_agrees_with_the_reference(tmp_path, monkeypatch):
    """DuckDB writes each split's rows in key order and the splits in content order: nothing is sorted again
    (ids in every case and punctuation), the SHA is the reference's, and verify recomputes it from the files."""
    import schemas.release_format as rf
    from corpus.ingest import ingest
    from corpus.release import cut_release
    from corpus.store import Corpus, init_corpus
    from corpus.verify import verify_release
    from factories import counterfactual, session, small_corpus, write_jsonl

    recs = small_corpus()
    for sid in ("Zed", "zed", "a.b", "a-b", "a_b", "a:b", "A9", "a10", "a9"):
        rec = session(sid, n_steps=12, subject=f"subj-{sid}")
        rec["steps"][0]["observation"] = "Zoë à 東京 \U0001f600, -0.0"
        recs += [rec, counterfactual(f"{sid}.cf", sid, 0)]
    c = Corpus(init_corpus(tmp_path / "corpus"))
    ingest(c, [write_jsonl(tmp_path / "a.jsonl", recs)], progress=False)

    def no_sort(*a, **k):
        raise AssertionError("rows sorted again")
    monkeypatch.setattr(rf, "_sorted", no_sort)
    r = cut_release(c, "0.1.0", kind="smoke", progress=False)
    files = [(p.parts[-2], p) for p in sorted(r.directory.glob("data/*/*.parquet"))]
    assert r.manifest["content_format"] == 2 and r.manifest["release_sha"] == release_sha_2(files)
    assert verify_release(r.directory)["release_sha"] == r.manifest["release_sha"]
