"""Hardening probe of the input side (issue 18): `python bench/hardening_input.py [--root DIR] [--kills 12]`.

Tries, against the toolkit at ``--root`` (default: this checkout; point it at another checkout to measure
that one), every bad input of the ingest/store/option side and prints, per case and in total:

* **bad inputs**: tried / refused (a non-zero exit, no traceback) / refused *with a location* (the
  ``FILE:LINE: /pointer`` of the fault, or the file or option at fault) / store byte-identical after;
* **kills**: ``trb-corpus ingest`` of 1,000 simulated sessions SIGKILLed at random points (seed 18): kills
  survived (the store opens and is unchanged or complete) / data lost (partial, or it does not open);
* **transfer provenance**: spellings of the trainer "Acme Labs" (and a context whose sessions it collected)
  caught / tried, by the release gate (``--trainer-org``) and by the run-time check (``trb run --split
  transfer --trained-by``), and a control that must not be caught;
* **look-alike provenance** (issue 41): spellings of "Acme Labs" with each invisible filler Unicode calls
  default-ignorable and with look-alike letters of each script (Cherokee, Armenian, Greek, Cyrillic, Latin small
  capitals, mathematical, full-width), caught / tried by the gate and the run-time check, and distinct
  organisations in other scripts that must not be caught;
* **ingest oddities** (issue 41): a number a double holds as 0 (``1e-400``), actions alike after NFKC, an
  ``r_extensions`` slot named like a core slot, in the bad-input table (refused, located, store identical).

``--only PART,...`` runs some parts: records, gzip, stores, options, importer, disk, kills, provenance,
lookalikes, oddities, parse (the CPU cost of the ingest's parser a record).

Everything runs as the user would run it: the CLI in a subprocess, real DuckDB files, a real tmpfs for the
full disk (skipped where mounting is not allowed). It asserts nothing: it prints figures.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def session(sid: str, subject: str, context: str = "ctx-a", collector: str = "lab-a") -> dict:
    steps = [{"t": t, "observation": f"step {t}", "r": {"goal": "C3", "planned_next": "right", "caused_by_self": 0.5,
                                                        "confidence": 0.6, **({"ext": {"score": 0.25}} if t == 1 else {})},
              "action": "right", "action_space": ["up", "down", "left", "right", "wait"], "outcome": f"moved {t}"}
             for t in range(3)]
    return {"kind": "session", "session_id": sid, "subject_id": subject,
            "source": {"kind": "human_session", "collector": collector, "consent_ref": "c/1", "licence": "CC-BY-4.0"},
            "context": {"context_id": context, "stimulus_set": "grid5", "subject_population": "adults",
                        "language": "en"},
            "r_extensions": {"score": {"type": "number", "description": "a reported number"}}, "steps": steps}


def counterfactual(cf: str, sid: str) -> dict:
    return {"kind": "counterfactual", "cf_id": cf, "session_id": sid, "t": 0, "r_prime": {"goal": "C3"},
            "origin": "same_session_revision", "author": {"person_id": "ann-1"},
            "phi": {"type": "distribution", "probs": {"up": 0.75, "right": 0.25}, "n": 8}}


def tc(cid: str, org: str) -> dict:
    return {"kind": "transfer_context", "context_id": cid, "description": "held out", "collector_org": org,
            "attestation_ref": f"attest/{cid}"}


class Probe:
    def __init__(self, root: Path, work: Path):
        self.root, self.work = root, work
        self.env = {**os.environ, "PYTHONPATH": str(root), "TRB_LOCK_WAIT": "5"}
        self.rows: list[dict] = []

    def run(self, *args, env=None, module="corpus.cli") -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", module, *map(str, args)], env={**self.env, **(env or {})},
                              capture_output=True, text=True, cwd=self.work)

    def py(self, code: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=self.env, capture_output=True,
                              text=True, cwd=self.work)

    def corpus(self, name: str) -> Path:
        d = self.work / name
        shutil.rmtree(d, ignore_errors=True)
        assert self.run("init", d).returncode == 0
        base = self.write(f"{name}-base.jsonl", [json.dumps(session("base", "subj-base"))])
        assert self.run("ingest", "-q", "--corpus", d, base).returncode == 0
        return d

    def fresh(self, template: Path, name: str) -> Path:
        """A copy of the corpus ``template`` for one case (so one case's outcome never shapes the next)."""
        d = self.work / "cases" / name.replace(" ", "_").replace("/", "_")
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(template, d)
        return d

    def write(self, name: str, lines: list[str | bytes]) -> Path:
        p = self.work / name
        p.write_bytes(b"".join((x if isinstance(x, bytes) else x.encode()) + b"\n" for x in lines))
        return p

    def record(self, group: str, case: str, p: subprocess.CompletedProcess, located: str | None, same: bool):
        err = p.stderr
        refused = p.returncode != 0 and "Traceback" not in err
        self.rows.append({"group": group, "case": case, "exit": p.returncode, "refused": refused,
                          "located": refused and (located is None or located in err), "same": same,
                          "line": (err.strip().splitlines() or [""])[0][:110]})


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else "-"


def dir_state(d: Path) -> tuple:
    return tuple(sorted((p.name, sha(p)) for p in d.iterdir() if p.is_file() and p.name != "corpus.lock"))


def bad_records(pr: Probe) -> None:
    template = pr.corpus("rec")
    s = json.dumps(session("s1", "subj-1"))

    def case(name: str, line: str, pointer: str, group: str = "non-finite / duplicate key") -> None:
        f = pr.write(f"{name.replace(' ', '_').replace('/', '_')}.jsonl", [line])
        d = pr.fresh(template, name)
        before = dir_state(d)
        p = pr.run("ingest", "-q", "--corpus", d, f)
        pr.record(group, name, p, f"{f}:1: {pointer}:", dir_state(d) == before)

    for tok in ("NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1" + "0" * 400):
        case(f"ext number slot = {tok[:12]}", s.replace('"score": 0.25', f'"score": {tok}'), "/steps/1/r/ext/score")
    for tok in ("NaN", "Infinity", "1e400"):
        case(f"confidence = {tok}", s.replace('"confidence": 0.6', f'"confidence": {tok}', 1), "/steps/0/r/confidence")
    cf = json.dumps(counterfactual("c1", "base"))
    case("phi probability = NaN", cf.replace('"up": 0.75', '"up": NaN'), "/phi/probs/up")
    case("duplicate top-level key", s.replace('"subject_id": "subj-1"', '"subject_id": "subj-1", "subject_id": "x"'),
         "/subject_id")
    case("duplicate nested key", s.replace('"collector": "lab-a"', '"collector": "lab-a", "collector": "lab-b"'),
         "/source/collector")
    case("duplicate ext slot", s.replace('"score": 0.25', '"score": 0.25, "score": 0.5'), "/steps/1/r/ext/score")
    case("duplicate key spelt with an escape", s.replace('"score": 0.25', '"score": 0.25, "\\u0073core": 0.5'),
         "/steps/1/r/ext/score")
    case("duplicate collector_org", json.dumps(tc("ctx-t", "Acme Labs")).replace(
        '"collector_org": "Acme Labs"', '"collector_org": "Acme Labs", "collector_org": "Other Org"'),
        "/collector_org")


def bad_gzip(pr: Probe) -> None:
    template = pr.corpus("gz")
    data = gzip.compress(b"".join(json.dumps(session(f"g{i}", f"sg{i}")).encode() + b"\n" for i in range(40)),
                         mtime=0)
    deflate = None
    for pos in range(10, len(data) - 8):
        b = bytearray(data)
        b[pos] ^= 0x55
        try:
            gzip.decompress(bytes(b))
        except zlib.error:
            deflate = bytes(b)
            break
        except (OSError, EOFError):
            continue
    crc = bytearray(data)
    crc[-6] ^= 0xFF
    for name, content in (("truncated", data[: len(data) // 2]), ("corrupt deflate (zlib.error)", deflate),
                          ("CRC mismatch", bytes(crc)), ("not gzip", b'{"kind": 1}\n')):
        f = pr.work / f"{name.split()[0]}.jsonl.gz"
        f.write_bytes(content)
        d = pr.fresh(template, f"gz-{name}")
        before = dir_state(d)
        p = pr.run("ingest", "-q", "--corpus", d, f)
        pr.record("corrupt gzip", name, p, f"{f}:", dir_state(d) == before)


def bad_stores(pr: Probe) -> None:
    good = pr.corpus("goodstore") / "corpus.duckdb"
    f = pr.write("one.jsonl", [json.dumps(session("n1", "subj-n1"))])
    for kind in ("empty", "random bytes", "text", "sqlite", "foreign duckdb", "truncated", "damaged block",
                 "newer store format"):
        d = pr.work / f"store-{kind.replace(' ', '-')}"
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir()
        db = d / "corpus.duckdb"
        if kind == "empty":
            db.write_bytes(b"")
        elif kind == "random bytes":
            db.write_bytes(random.Random(1).randbytes(65536))
        elif kind == "text":
            db.write_text("not a database\n" * 40)
        elif kind == "sqlite":
            con = sqlite3.connect(db)
            con.execute("CREATE TABLE sessions (a)")
            con.commit()
            con.close()
        elif kind == "foreign duckdb":
            assert pr.py(f"import duckdb; duckdb.connect({str(db)!r}).execute('CREATE TABLE x (a INT)')").returncode == 0
        elif kind == "truncated":
            db.write_bytes(good.read_bytes()[: good.stat().st_size // 3])
        elif kind == "damaged block":
            b = bytearray(good.read_bytes())
            for i in range(4196, 4260):
                b[i] ^= 0xA5
            db.write_bytes(bytes(b))
        else:
            shutil.copy(good, db)
            assert pr.py(f"import duckdb; duckdb.connect({str(db)!r}).execute(\"UPDATE meta SET value = '99' "
                         "WHERE key = 'store_format_version'\")").returncode == 0
        for command in ("stats", "ingest"):
            before = dir_state(d)
            p = pr.run(command, "--corpus", d, *(["-q", f] if command == "ingest" else []))
            pr.record("not a corpus store", f"{kind} ({command})", p, str(db), dir_state(d) == before)


def bad_options(pr: Probe) -> None:
    template = pr.corpus("opts")
    f = pr.write("opt.jsonl", [json.dumps(session("o1", "subj-o1"))])

    def case(name: str, *args, env=None, module="corpus.cli", located="--wait") -> None:
        d = pr.fresh(template, f"opt-{name}")
        before = dir_state(d)
        p = pr.run(*[d if a == "{d}" else a for a in args], env=env, module=module)
        pr.record("options", name, p, located, dir_state(d) == before)

    case("--max-line-bytes 0", "ingest", "-q", "--corpus", "{d}", "--max-line-bytes", "0", f, located="--max-line-bytes")
    case("--max-line-bytes -1", "ingest", "-q", "--corpus", "{d}", "--max-line-bytes", "-1", f,
         located="--max-line-bytes")
    case("ingest --wait -1", "ingest", "-q", "--corpus", "{d}", "--wait", "-1", f)
    case("ingest --wait nan", "ingest", "-q", "--corpus", "{d}", "--wait", "nan", f)
    case("stats --wait -inf", "stats", "--corpus", "{d}", "--wait", "-inf")
    items = pr.write("opt-items.jsonl", ['{"id": 1, "question": "2+2?", "options": ["4", "5"], "answer": "4"}'])
    case("import mcq --wait nan", "import", "mcq", "-q", "--corpus", "{d}", "--wait", "nan", "--dataset", "BBH",
         "--revision", "v1", "--licence", "MIT", "--citation", "x", items)
    case("trb-annotate pull --wait -1", "pull", "--corpus", "{d}", "--wait", "-1", module="annotate.cli")
    case("trb-annotate agreement --wait nan", "agreement", "--corpus", "{d}", "--wait", "nan", module="annotate.cli")
    case("TRB_LOCK_WAIT=abc", "stats", "--corpus", "{d}", env={"TRB_LOCK_WAIT": "abc"}, located="TRB_LOCK_WAIT")
    case("TRB_LOCK_WAIT=-5", "ingest", "-q", "--corpus", "{d}", f, env={"TRB_LOCK_WAIT": "-5"}, located="TRB_LOCK_WAIT")


def bad_importer(pr: Probe) -> None:
    template = pr.corpus("mcq")
    prov = ["--dataset", "BBH", "--revision", "v1", "--licence", "MIT", "--citation", "x"]
    for name, line, pointer in (
            ("mcq item id = NaN", '{"id": NaN, "question": "2+2?", "options": ["4", "5"], "answer": "4"}', "/id"),
            ("mcq duplicate answer", '{"id": 1, "question": "2+2?", "options": ["4", "5"], "answer": "4", '
                                     '"answer": "5"}', "/answer")):
        f = pr.write(f"{name.replace(' ', '_')}.jsonl", [line])
        d = pr.fresh(template, name)
        before = dir_state(d)
        p = pr.run("import", "mcq", "-q", "--corpus", d, *prov, f)
        pr.record("importer", name, p, f"{f}:1: {pointer}:", dir_state(d) == before)
    side = pr.work / "side.json"
    side.write_text('{"dataset": "BBH", "revision": Infinity, "licence": "MIT", "citation": "x"}')
    f = pr.write("item.jsonl", ['{"id": 1, "question": "2+2?", "options": ["4", "5"], "answer": "4"}'])
    d = pr.fresh(template, "sidecar")
    before = dir_state(d)
    p = pr.run("import", "mcq", "-q", "--corpus", d, "--sidecar", side, f)
    pr.record("importer", "sidecar revision = Infinity", p, f"{side}: /revision:", dir_state(d) == before)


def disk_full(pr: Probe) -> None:
    point = pr.work / "tmpfs"
    point.mkdir(exist_ok=True)
    m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(point)], capture_output=True, text=True)
    if m.returncode != 0:
        print(f"(disk full: skipped, cannot mount a tmpfs: {m.stderr.strip()})", file=sys.stderr)
        return
    try:
        d = point / "c"
        assert pr.run("init", d).returncode == 0
        f = pr.work / "sim30.jsonl.gz"
        assert pr.run("simulate", "--sessions", 30, "--seed", 2, "-o", f, "-q").returncode == 0
        before = dir_state(d)
        p = pr.run("ingest", "-q", "--corpus", d, f)
        pr.record("disk full", "ingest on a 2 MiB tmpfs", p, None, dir_state(d) == before)
    finally:
        subprocess.run(["umount", str(point)], check=False)


def kills(pr: Probe, n_kills: int, seed: int = 18) -> dict:
    f = pr.work / "kill.jsonl"
    assert pr.run("simulate", "--sessions", 1000, "--seed", 7, "-o", f, "-q").returncode == 0
    base = pr.corpus("killbase")

    def counts(d: Path):
        p = pr.run("stats", "--json", "--corpus", d)
        return json.loads(p.stdout)["records"] if p.returncode == 0 else None

    full = pr.work / "killfull"
    shutil.rmtree(full, ignore_errors=True)
    shutil.copytree(base, full)
    t0 = time.monotonic()
    assert pr.run("ingest", "-q", "--corpus", full, f).returncode == 0
    seconds = time.monotonic() - t0
    unchanged, complete = counts(base), counts(full)
    rng = random.Random(seed)
    out = {"kills": 0, "unchanged": 0, "complete": 0, "lost": 0, "finished before the kill": 0}
    # unchanged / complete / lost count the killed runs only
    for i, delay in enumerate(sorted(rng.uniform(0.1, 1.1 * seconds) for _ in range(n_kills))):
        d = pr.work / f"kill{i:02d}"
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(base, d)
        p = subprocess.Popen([sys.executable, "-m", "corpus.cli", "ingest", "-q", "--corpus", str(d), str(f)],
                             env=pr.env, stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(delay)
        killed = p.poll() is None
        if killed:
            os.killpg(p.pid, signal.SIGKILL)
            out["kills"] += 1
        else:
            out["finished before the kill"] += 1
        p.wait()
        now = counts(d)
        if killed:
            out["unchanged" if now == unchanged else "complete" if now == complete else "lost"] += 1
    return out


def oddities(pr: Probe) -> None:
    """Issue 41: what strict JSON lets through and the ingest must refuse, each with its FILE:LINE: /pointer."""
    template = pr.corpus("odd")
    s = session("s1", "subj-1")

    def case(group: str, name: str, rec: dict | str, pointer: str) -> None:
        line = rec if isinstance(rec, str) else json.dumps(rec, ensure_ascii=False)
        f = pr.write(f"odd-{re.sub(r'[^A-Za-z0-9]+', '_', name)}.jsonl", [line])
        d = pr.fresh(template, f"odd {name}")
        before = dir_state(d)
        p = pr.run("ingest", "-q", "--corpus", d, f)
        pr.record(group, name, p, f"{f}:1: {pointer}:", dir_state(d) == before)

    text = json.dumps(s)
    for tok in ("1e-400", "-2.5E-330", "1e-0400", "0." + "0" * 400 + "1"):
        case("number a double holds as 0", f"ext number slot = {tok[:12]}",
             text.replace('"score": 0.25', f'"score": {tok}'), "/steps/1/r/ext/score")
    case("number a double holds as 0", "confidence = 1e-400", text.replace('"confidence": 0.6', '"confidence": 1e-400', 1),
         "/steps/0/r/confidence")
    for name, space in (("ligature fi", ["\ufb01le", "file"]), ("full-width A", ["A", "\uff21"]),
                        ("zero-width space", ["up", "u\u200bp"]), ("Hangul filler", ["up", "u\u3164p"]),
                        ("superscript two", ["x2", "x\u00b2"])):
        rec = json.loads(text)
        rec["steps"][0].update(action_space=space, action=space[0])
        case("actions alike after NFKC", name, rec, "/steps/0/action_space/1")
    for name in ("Goal", "planned-next", "CONFIDENCE", "caused.by.self", "Ext"):
        rec = json.loads(text)
        rec["r_extensions"][name] = {"type": "string", "description": "named like a core slot"}
        case("extension slot named like a core slot", f"slot {name}", rec, f"/r_extensions/{name}")


#: Issue 41: look-alike spellings of "Acme Labs", by mechanism (context id suffix -> collector_org)
LOOKALIKES = {
    **{f"filler-{ord(c):04x}": f"Ac{c}me Labs" for c in (
        "\u3164", "\u115f", "\u1160", "\uffa0", "\u180b", "\u180c", "\u180d", "\u180e", "\u180f", "\u034f",
        "\u17b4", "\u17b5", "\U000e0041", "\U000e0001", "\U000e0fff", "\ufe0f", "\U000e0100", "\u2064",
        "\u061c", "\ufff0")},
    "filler-as-space": "Acme\u3164Labs",
    "cherokee": "\u13aa\u13df\u13b7\u13ac Labs",
    "cherokee-small": "Acme La\uab9fs",  # CHEROKEE SMALL LETTER SI (b)
    "armenian": "Acme Lab\u054f",  # ARMENIAN CAPITAL LETTER TIWN (S)
    "greek-capitals": "\u0391C\u039c\u0395 L\u0391\u0392S",
    "greek-small": "Acm\u03b5 Labs",
    "cyrillic": "\u0410\u0441m\u0435 L\u0430bs",
    "cyrillic-small-em": "Ac\u043ce Labs",
    "small-capitals": "\u1d00\u1d04\u1d0d\u1d07 \u029f\u1d00\u0299s",
    "math-bold": "\U0001d400\U0001d41c\U0001d426\U0001d41e Labs",
    "math-script": "\U0001d49c\U0001d4b8\U0001d4c2\u212f Labs",
    "fullwidth": "\uff21\uff43\uff4d\uff45 Labs",
    "tag-space": "Acme\U000e0020Labs",
}
#: distinct organisations that must not be caught (a transliteration is a different spelling, not a look-alike)
DISTINCT = {"distinct-cyrillic": "\u042f\u043d\u0434\u0435\u043a\u0441", "distinct-greek": "\u0391\u03bb\u03c6\u03b1 Labs",
            "distinct-cjk": "\u963f\u91cc\u5df4\u5df4", "distinct-latin": "Acmeson Labs",
            "distinct-armenian": "\u0531\u0580\u0574\u0565\u0576\u0561\u056f\u0561\u0576"}


def _provenance_corpus(pr: Probe, name: str, variants: dict[str, str], session_collector) -> Path:
    recs = [session("home", "subj-home"), counterfactual("home.cf", "home")]
    for i, (cid, org) in enumerate(sorted(variants.items())):
        recs.append(tc(cid, org))
        sid = f"t{i:02d}"
        recs.append(session(sid, f"subj-{cid}", cid, session_collector(cid, org)))
        recs.append(counterfactual(f"{sid}.cf", sid))
    f = pr.write(f"{name}.jsonl", [json.dumps(r, ensure_ascii=False) for r in recs])
    d = pr.work / name
    shutil.rmtree(d, ignore_errors=True)
    assert pr.run("init", d).returncode == 0
    p = pr.run("ingest", "-q", "--corpus", d, f)
    assert p.returncode == 0, p.stderr
    return d


def _gate_count(pr: Probe, corpus: Path) -> int:
    p = pr.run("release", "-q", "--corpus", corpus, "--version", "0.2.0", "--kind", "smoke",
               "--trainer-org", "Acme Labs")
    m = re.search(r"gate transfer_provenance: FAILED: (\d+) of", p.stderr)
    return int(m.group(1)) if m else 0


def _run_caught(pr: Probe, corpus: Path, ids) -> set[str]:
    assert pr.run("release", "-q", "--corpus", corpus, "--version", "0.1.0", "--kind", "smoke").returncode == 0
    q = pr.py(f"""
        from trb.provenance import check_transfer_provenance
        from trb.releases import Release
        rel = Release({str(corpus / 'releases' / '0.1.0')!r})
        try:
            check_transfer_provenance(rel, ["Acme Labs"], "probe")
            print("passed")
        except Exception as e:
            print(type(e).__name__, e)
        """)
    return {c for c in ids if f"{c} (" in q.stdout}


def lookalikes(pr: Probe) -> dict:
    """Issue 41: each look-alike spelling in its own transfer context (the sessions name a third party), and the
    distinct organisations in a corpus of their own (the gate counts how many contexts fail)."""
    d = _provenance_corpus(pr, "lookalikes", {f"ctx-{k}": v for k, v in LOOKALIKES.items()},
                           lambda cid, org: "Independent Field Lab")
    tried = [f"ctx-{k}" for k in LOOKALIKES]
    gate = _gate_count(pr, d)
    run = _run_caught(pr, d, tried)
    ctrl = _provenance_corpus(pr, "lookalikes-distinct", {f"ctx-{k}": v for k, v in DISTINCT.items()},
                              lambda cid, org: org)
    return {"tried": len(tried), "gate": gate, "run": len(run), "run_missed": sorted(set(tried) - run),
            "distinct": len(DISTINCT), "distinct_caught": _gate_count(pr, ctrl)}


def parse_cost(pr: Probe, rounds: int = 5) -> str:
    """CPU time of the ingest's parser (``parse_record_fast``) on 2,000 valid 3-step sessions, best of ``rounds``:
    what the look for numbers a double holds as 0 and for alike names costs a record that has none."""
    lines = [json.dumps(session(f"s{i}", f"subj-{i}")) for i in range(2000)]
    f = pr.write("parse-cost.jsonl", lines)
    q = pr.py(f"""
        import time
        from corpus.fast_records import parse_record_fast
        lines = open({str(f)!r}, "rb").read().splitlines()
        best = 1e9
        for _ in range({rounds}):
            t = time.process_time()
            for line in lines:
                parse_record_fast(line)
            best = min(best, time.process_time() - t)
        print(f"{{best / len(lines) * 1e6:.1f}}")
        """)
    return q.stdout.strip() or q.stderr.strip().splitlines()[-1]


def provenance(pr: Probe) -> dict:
    variants = {"ctx-suffix": "Acme Labs, Inc.", "ctx-acronym": "ACME", "ctx-double-space": "Acme  Labs",
                "ctx-nbsp": "Acme\u00a0Labs", "ctx-zwsp": "Acme\u200b Labs", "ctx-cyrillic": "\u0410cme Labs",
                "ctx-fullwidth": "\uff21\uff43\uff4d\uff45 Labs", "ctx-hyphen": "acme-labs",
                "ctx-camel": "AcmeLabs GmbH", "ctx-ltd": "ACME LABS LTD.", "ctx-person": "Jane Roe, Acme Labs",
                "ctx-sessions": "Independent Field Lab", "ctx-control": "Independent Field Lab"}
    recs = [session("home", "subj-home"), counterfactual("home.cf", "home")]
    for i, (cid, org) in enumerate(sorted(variants.items())):
        recs.append(tc(cid, org))
        sid = f"t{i:02d}"
        recs.append(session(sid, f"subj-{cid}", cid, "Jane Roe, ACME LABS" if cid == "ctx-sessions" else org))
        recs.append(counterfactual(f"{sid}.cf", sid))
    f = pr.write("prov.jsonl", [json.dumps(r, ensure_ascii=False) for r in recs])
    d = pr.work / "prov"
    shutil.rmtree(d, ignore_errors=True)
    assert pr.run("init", d).returncode == 0
    assert pr.run("ingest", "-q", "--corpus", d, f).returncode == 0
    tried = sorted(set(variants) - {"ctx-control"})
    def gate_count(corpus: Path) -> int:
        p = pr.run("release", "-q", "--corpus", corpus, "--version", "0.2.0", "--kind", "smoke",
                   "--trainer-org", "Acme Labs")
        m = re.search(r"gate transfer_provenance: FAILED: (\d+) of", p.stderr)
        return int(m.group(1)) if m else 0

    control = pr.work / "prov-control"
    shutil.rmtree(control, ignore_errors=True)
    assert pr.run("init", control).returncode == 0
    cf_ = pr.write("prov-control.jsonl", [json.dumps(r) for r in (
        session("home", "subj-home"), counterfactual("home.cf", "home"), tc("ctx-control", "Independent Field Lab"),
        session("tc", "subj-tc", "ctx-control", "Independent Field Lab"), counterfactual("tc.cf", "tc"))])
    assert pr.run("ingest", "-q", "--corpus", control, cf_).returncode == 0
    gate_control = gate_count(control) > 0
    gate_caught = gate_count(d) - int(gate_control)
    assert pr.run("release", "-q", "--corpus", d, "--version", "0.1.0", "--kind", "smoke").returncode == 0
    q = pr.py(f"""
        from trb.provenance import check_transfer_provenance
        from trb.releases import Release
        rel = Release({str(d / 'releases' / '0.1.0')!r})
        try:
            check_transfer_provenance(rel, ["Acme Labs"], "probe")
            print("passed")
        except Exception as e:
            print(type(e).__name__, e)
        """)
    run = {c for c in variants if c in q.stdout}
    return {"tried": len(tried), "gate": gate_caught, "run": len(run & set(tried)),
            "gate_control": gate_control, "run_control": "ctx-control" in run, "run_missed": sorted(set(tried) - run)}


#: the parts of the probe (--only), in the order they run; None: run and printed by main itself
PARTS = {"records": bad_records, "gzip": bad_gzip, "stores": bad_stores, "options": bad_options,
         "importer": bad_importer, "disk": disk_full, "oddities": oddities, "kills": None, "provenance": None,
         "lookalikes": None, "parse": None}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=HERE, help="The checkout whose toolkit is probed.")
    ap.add_argument("--kills", type=int, default=12)
    ap.add_argument("--work", type=Path, default=None, help="Scratch folder (default: a temporary one).")
    ap.add_argument("--cases", action="store_true", help="Print every case, not only the totals.")
    ap.add_argument("--only", default=",".join(PARTS), help=f"Parts to run, comma-separated ({', '.join(PARTS)}).")
    args = ap.parse_args()
    only = set(args.only.split(","))
    if only - set(PARTS):
        ap.error(f"--only: unknown part(s) {', '.join(sorted(only - set(PARTS)))}; the parts are {', '.join(PARTS)}")
    work = args.work or Path(tempfile.mkdtemp(prefix="trb-hardening-"))
    work.mkdir(parents=True, exist_ok=True)
    pr = Probe(args.root.resolve(), work)
    for part, step in PARTS.items():
        if step is not None and part in only:
            step(pr)
    k = kills(pr, args.kills) if "kills" in only else None
    prov = provenance(pr) if "provenance" in only else None
    look = lookalikes(pr) if "lookalikes" in only else None
    cost = parse_cost(pr) if "parse" in only else None
    if args.cases:
        print("| group | case | exit | refused | located | store identical | first line of stderr |")
        print("|---|---|---:|---|---|---|---|")
        for r in pr.rows:
            print(f"| {r['group']} | {r['case']} | {r['exit']} | {'yes' if r['refused'] else 'NO'} | "
                  f"{'yes' if r['located'] else 'NO'} | {'yes' if r['same'] else 'NO'} | "
                  f"{r['line'].replace('|', '/')} |")
        print()
    print(f"toolkit at {pr.root}")
    print("| group | tried | refused (no traceback) | refused with a location | store byte-identical |")
    print("|---|---:|---:|---:|---:|")
    groups = list(dict.fromkeys(r["group"] for r in pr.rows))
    for g in [*groups, "all"]:
        rows = [r for r in pr.rows if g in ("all", r["group"])]
        print(f"| {g} | {len(rows)} | {sum(r['refused'] for r in rows)} | {sum(r['located'] for r in rows)} | "
              f"{sum(r['same'] for r in rows)} |")
    print()
    if k is not None:
        print(f"kills: {k['kills']} SIGKILLs of an ingest of 1,000 sessions ({k['finished before the kill']} runs "
              f"finished first): survived {k['unchanged'] + k['complete']} ({k['unchanged']} unchanged, "
              f"{k['complete']} complete), data lost {k['lost']}")
    if prov is not None:
        print(f"transfer provenance vs --trainer-org/--trained-by 'Acme Labs': gate caught {prov['gate']}/"
              f"{prov['tried']}, run-time check caught {prov['run']}/{prov['tried']}; the control (another org) "
              f"refused: gate {prov['gate_control']}, run {prov['run_control']}")
        if prov["run_missed"]:
            print(f"  missed by the run-time check: {', '.join(prov['run_missed'])}")
    if look is not None:
        print(f"look-alike spellings of 'Acme Labs' (invisible fillers, look-alike letters): gate caught "
              f"{look['gate']}/{look['tried']}, run-time check caught {look['run']}/{look['tried']}; distinct "
              f"organisations caught (false alarms): {look['distinct_caught']}/{look['distinct']}")
        if look["run_missed"]:
            print(f"  missed by the run-time check: {', '.join(look['run_missed'])}")
    if cost is not None:
        print(f"parse_record_fast: {cost} µs CPU a valid 3-step session (best of 5 rounds of 2,000)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
