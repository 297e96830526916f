"""Issues 18 and 41, PII: recall and precision by kind, obfuscated forms, and which release files keep PII.

`PYTHONPATH=$PWD .venv/bin/python bench/hardening_pii.py [--work DIR] [--before DIR]`

Part 0 (issue 41), by kind: recall on the labelled set bench/data/pii_set.json (544 planted forms
in the national formats of 16 countries, 100 of them names with no title or cue in the naming conventions
of 25, and 32 values split across two fields; made by bench/data/make_pii_set.py) and precision on its 395
innocent strings (the example session's and a simulated corpus's strings, and traps such as "Track 2",
"Label Studio", "we met in Paris", "Δgov rose after Track 2", "Hugging Face Hub"); scored by
tests/pii_labelled.py, the same code the floors of tests/corpus/test_pii_recall.py use. With
``--before DIR`` (a checkout of an older main, e.g. `git archive 5791892`) the same set is scored
with that checkout's scanner too, in a child process, and both are printed side by side. Then the
named-entity route's cost (a child process): the model's load time and peak RSS, texts/s batched and one
at a time, and how many of a simulated corpus's strings reach the model.

Held out (issue 41): recall of addresses and names by Faker locale on two Faker draws
(bench/data/make_pii_heldout.py; ``--heldout-only`` prints just these), before and after with ``--before``.

Part 1, the scanner (:func:`corpus.pii.scan_text`). Each form is put in a sentence;
it counts as *caught* when one hit of the expected kind covers the whole planted span
(what redaction must replace), *misnamed* when a hit of another kind covers it, and
*partial* when a hit only touches it. Each trap is ordinary text from real traces; a
trap with any hit is a false positive.

Part 2, redaction coverage. For each place a curator's or a collector's text reaches a
release (a step observation, a session's collector, a transfer context's description
and collector org, a context's stimulus set, a `--trainer-org`, the curator's
`--datasheet`), a small corpus carries an e-mail there and is cut twice: without
`--redact-pii` (is it refused?) and with it (which files still hold the address?).
The check is independent of the scanner: the planted address is looked for verbatim in
every file of the release (each parquet file's strings, README.md, DATASHEET.md,
croissant.json, manifest.json).

Run it on two checkouts (PYTHONPATH pointing at each) for a before / after figure.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.append(str(ROOT / "tests"))  # pii_labelled (the scanner itself comes from PYTHONPATH)

FORMS = [
    # (name, planted text, expected kind)
    ("plain e-mail (control)", "john@example.com", "email"),
    ("john at example dot com", "john at example dot com", "email"),
    ("john[at]example[dot]com", "john[at]example[dot]com", "email"),
    ("john (at) example (dot) com", "john (at) example (dot) com", "email"),
    ("john.doe AT example DOT org", "john.doe AT example DOT org", "email"),
    ("john @ example.com", "john @ example.com", "email"),
    ("full-width @", "john\uff20example.com", "email"),
    ("zero-width space inside", "jo\u200bhn@exa\u200bmple.com", "email"),
    ("soft hyphen inside", "john\u00ad.doe@example.com", "email"),
    ("unicode local part", "jos\u00e9@example.com", "email"),
    ("IDN domain", "info@b\u00fccher.de", "email"),
    ("Cyrillic address", "\u0438\u0432\u0430\u043d@\u043f\u0440\u0438\u043c\u0435\u0440.\u0440\u0444", "email"),
    ("CJK address", "\u7528\u6237@\u4f8b\u5b50.\u5e7f\u544a", "email"),
    ("card with dots", "4111.1111.1111.1111", "card"),
    ("card in full-width digits", "\uff14\uff11\uff11\uff11 \uff11\uff11\uff11\uff11 \uff11\uff11\uff11\uff11 "
                                  "\uff11\uff11\uff11\uff11", "card"),
    ("compact IBAN", "DE89370400440532013000", "iban"),
    ("compact IBAN with letters", "GB82WEST12345698765432", "iban"),
    ("spaced IBAN", "DE89 3704 0044 0532 0130 00", "iban"),
    ("spaced IBAN with letters", "GB82 WEST 1234 5698 7654 32", "iban"),
    ("US SSN", "123-45-6789", "ssn"),
    ("phone with no-break spaces", "+1\u00a0415\u00a0555\u00a00167", "phone"),
]

TRAPS = [
    "look at the dot on the grid", "meet at 3 at the station", "the agent at C3 looks at the red dot in D4",
    "look at the dot com bubble", "stare at a dot in the corner", "at (3, 4) then at (5, 6)", "grid cell B12 at 3:44 pm",
    "it is 3:44 pm", "15:46:00", "2026-11-29T10:00:00Z", "version 1.2.3.4", "v1.2.3.4", "1.2.3.4.5",
    "release 10.0.0.1 of the tool", "ordinary numbers 123 456 789 and 1234567890", "Step 3 of 14", "2+2=4",
    "000-12-3456", "666-12-3456", "900-12-3456", "123-00-4567", "123-45-0000", "sim-123-45-6789",
    "DE89370400440532013001", "DE89 3704 0044 0532 0130 01", "ISBN 978-3-16-148410-0", "DE89 on the map",
    "x @ self.weight", "q @ k.T", "y = W @ x.to(device)", "thanks @john.doe for the fix", "see @alice.dev",
    "email me at noon", "dot dot dot at the end", "4111.1111.1111.1112", "1.2.3.4.5.6.7.8.9.10.11.12.13.14.15.16",
    "hash 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "E.164 numbers have at most 15 digits", "col 3 at row 4 dot 5",
]


def _scanner() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    from corpus.pii import scan_text

    rows = []
    for name, value, kind in FORMS:
        text = f"please write to {value} soon"
        a, b = 16, 16 + len(value)
        hits = scan_text(text)
        cover = [h for h in hits if h.start <= a and h.end >= b]
        touch = [h for h in hits if h.start < b and h.end > a]
        if any(h.kind == kind for h in cover):
            verdict = "caught"
        elif cover:
            verdict = "misnamed: " + ", ".join(h.kind for h in cover)
        elif touch:
            verdict = "partial: " + ", ".join(f"{h.kind} {h.text!r}" for h in touch)
        else:
            verdict = "missed"
        rows.append((name, verdict))
    traps = [(t, ", ".join(f"{h.kind} {h.text!r}" for h in scan_text(t))) for t in TRAPS]
    return rows, [(t, v) for t, v in traps if v]


def _by_kind() -> dict:
    import pii_labelled
    from corpus.pii import scan_record, scan_text

    r = pii_labelled.score(pii_labelled.load(), scan_text, scan_record)
    return {"kinds": r["kinds"], "n_false": len(r["false"]), "false": r["false"][:10], "n_innocent": r["n_innocent"]}


def _by_kind_before(before: Path, flag: str = "--by-kind-json") -> dict:
    env = dict(os.environ, PYTHONPATH=str(before))
    out = subprocess.run([sys.executable, __file__, flag], capture_output=True, text=True, check=True,
                         env=env, cwd=before)
    return json.loads(out.stdout)


def _print_by_kind(after: dict, before: dict | None) -> None:
    print("## recall and precision by kind (bench/data/pii_set.json)\n")
    if before:
        print("| kind | planted | recall before | recall after | precision before | precision after |\n"
              "|---|---|---|---|---|---|")
    else:
        print("| kind | planted | recall | precision |\n|---|---|---|---|")
    for kind, k in after["kinds"].items():
        if before:
            b = before["kinds"].get(kind, {"caught": 0, "recall": 0.0, "precision": 0.0})
            print(f"| {kind} | {k['n']} | {b['caught']} ({b['recall']:.0%}) | {k['caught']} ({k['recall']:.0%}) "
                  f"| {b['precision']:.2f} | {k['precision']:.2f} |")
        else:
            print(f"| {kind} | {k['n']} | {k['caught']} ({k['recall']:.0%}) | {k['precision']:.2f} |")
    n = sum(k["n"] for k in after["kinds"].values())
    caught = sum(k["caught"] for k in after["kinds"].values())
    line = f"\nall planted forms caught: {caught} / {n}"
    if before:
        line += f" (before: {sum(k['caught'] for k in before['kinds'].values())})"
    line += f"; innocent strings flagged: {after['n_false']} / {after['n_innocent']}"
    if before:
        line += f" (before: {before['n_false']})"
    print(line)
    for text, kinds in after["false"]:
        print(f"  false positive: {text!r}: {kinds}")


def _heldout() -> dict:
    """Recall by kind and by Faker locale on the held-out draws (bench/data/make_pii_heldout.py)."""
    import pii_labelled
    from corpus.pii import scan_record, scan_text

    out = {}
    for path in (pii_labelled.HELDOUT, pii_labelled.FRESH):
        data = pii_labelled.load(path)
        r = pii_labelled.score(data, scan_text, scan_record)
        out[path.name] = {"source": data["source"], "by_country": pii_labelled.by_country(data, r)}
    return out


def _print_heldout(after: dict, before: dict | None) -> None:
    print("## held out: addresses and names made by Faker in 18 locales (bench/data/pii_heldout*.json)\n")
    print("The first draw's misses were looked at to change the address rules; the fresh draw was scored only "
          "after.\n")
    for name, a in after.items():
        b = before[name] if before else None
        print(f"### {name} ({a['source']})\n")
        print("| locale | " + " | ".join(f"{k} before | {k} after" if b else k for k in a["by_country"]) + " |")
        print("|---|" + "---|" * (len(a["by_country"]) * (2 if b else 1)))
        for loc in next(iter(a["by_country"].values())):
            cells = []
            for k, v in a["by_country"].items():
                if b:
                    cells.append("{}/{}".format(*b["by_country"][k][loc]))
                cells.append("{}/{}".format(*v[loc]))
            print(f"| {loc} | " + " | ".join(cells) + " |")
        for k, v in a["by_country"].items():
            line = f"{k}: {sum(c for c, _ in v.values())} / {sum(n for _, n in v.values())}"
            if b:
                line += f" (before: {sum(c for c, _ in b['by_country'][k].values())})"
            print(line)
        print()


def _ner_cost() -> dict:
    """The named-entity route's cost, in this process (run as a child: its own peak RSS): the model's load, texts/s
    through :func:`corpus.pii.scan_text` batched (:func:`corpus.pii.prime_names` first) and one at a time, and how
    many of a simulated corpus's distinct strings are given to the model at all."""
    import resource
    import time

    import simworld
    from corpus.pii import people, prime_names, scan_text
    sys.path.append(str(ROOT / "bench" / "data"))
    from make_pii_set import CUELESS, CUELESS_SENTENCES

    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0 = time.perf_counter()
    people._model()
    load_s = time.perf_counter() - t0
    names = [n for ns in CUELESS.values() for n in ns]
    texts = [f"{s.format(n)} (note {i})" for i, (n, s) in enumerate(
        (n, s) for s in CUELESS_SENTENCES for n in names for _ in range(4))]
    t0 = time.perf_counter()
    prime_names(texts)
    found = sum(bool(scan_text(t)) for t in texts)
    batched = len(texts) / (time.perf_counter() - t0)
    single = [t + "." for t in texts[:400]]
    t0 = time.perf_counter()
    for t in single:
        scan_text(t)
    one = len(single) / (time.perf_counter() - t0)
    strings: set[str] = set()

    def walk(o):
        if isinstance(o, str):
            strings.add(o)
        elif isinstance(o, dict):
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    walk(list(simworld.simulate(n_sessions=300, seed=1)))
    return {"load_s": load_s, "rss_before_mb": rss0, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "n": len(texts), "found": found, "batched": batched, "one": one, "sim_distinct": len(strings),
            "sim_to_model": sum(people.may_name(t) for t in strings)}


def _print_ner_cost() -> None:
    out = subprocess.run([sys.executable, __file__, "--ner-cost-json"], capture_output=True, text=True, check=True)
    c = json.loads(out.stdout)
    print("## the named-entity route (spaCy en_core_web_sm 3.8.0, tok2vec + ner only)\n")
    print(f"model load {c['load_s']:.1f} s; peak RSS {c['rss_before_mb']:.0f} MB before the load, {c['rss_mb']:.0f} MB "
          f"after the runs below")
    print(f"{c['n']:,} distinct sentences holding a name: {c['batched']:,.0f} texts/s batched (nlp.pipe), "
          f"{c['one']:,.0f} texts/s one at a time; {c['found']:,} with a name found")
    print(f"a simulated corpus (300 sessions): {c['sim_to_model']} of its {c['sim_distinct']:,} distinct strings are "
          "given to the model (the rest hold no two neighbouring Capitalised words that could be a name)")


ADDRESS = "jane.roe@example.org"
COLLECTOR = "Jane Roe"
CURATOR = "Max Mustermann"


def _session(sid: str, subject: str, *, collector: str = "lab-a", context: str = "ctx-a",
             stimulus: str = "grid5", observation: str = "you are at B1") -> dict:
    return {
        "kind": "session", "session_id": sid,
        "source": {"kind": "human_session", "collector": collector, "consent_ref": "consent/2026/001",
                   "licence": "CC-BY-4.0"},
        "subject_id": subject,
        "context": {"context_id": context, "stimulus_set": stimulus, "subject_population": "adults", "language": "en"},
        "steps": [{"t": t, "observation": observation if t == 1 else f"step {t}",
                   "r": {"goal": "C3", "planned_next": "right", "caused_by_self": 0.5, "confidence": 0.6},
                   "action": "right", "action_space": ["up", "down", "left", "right", "wait"], "outcome": "moved"}
                  for t in range(3)],
    }


def _transfer(description: str = "new stimuli", org: str = "Partner Lab B") -> dict:
    return {"kind": "transfer_context", "context_id": "ctx-t", "description": description,
            "collector_org": org, "attestation_ref": "attest/partner-b/2026-11"}


def _records(where: str) -> list[dict]:
    s1 = {"observation": f"write to {ADDRESS}"} if where == "step observation" else {}
    if where == "collector's name":
        s1 = {"collector": COLLECTOR}
    if where == "session collector":
        s1 = {"collector": f"lab-a <{ADDRESS}>"}
    if where == "context stimulus set":
        s1 = {"stimulus": f"grid5 by {ADDRESS}"}
    transfer = _transfer(description=f"ask {ADDRESS}") if where == "transfer description" else (
        _transfer(org=f"Partner Lab B <{ADDRESS}>") if where == "transfer collector org" else _transfer())
    return [transfer, _session("s1", "subj-1", **s1), _session("s2", "subj-2", context="ctx-t")]


CASES = ["step observation", "session collector", "context stimulus set", "transfer description",
         "transfer collector org", "--trainer-org", "--datasheet", "collector's name", "curator's name (--datasheet)"]


def _needle(where: str) -> str:
    return COLLECTOR if where == "collector's name" else CURATOR if where.startswith("curator") else ADDRESS


def _residual_files(release: Path, needle: str = ADDRESS) -> list[str]:
    import pyarrow.parquet as pq

    out = []
    for path in sorted(p for p in release.rglob("*") if p.is_file()):
        if path.suffix == ".parquet":
            text = json.dumps(pq.read_table(path).to_pylist(), ensure_ascii=False, default=str)
        else:
            text = path.read_text(encoding="utf-8")
        if needle in text:
            out.append(path.relative_to(release).as_posix())
    return out


def _coverage(work: Path) -> list[tuple[str, str, str, int]]:
    from corpus.errors import ReleaseRefused
    from corpus.ingest import ingest
    from corpus.release import TEMPLATE, cut_release
    from corpus.store import Corpus, init_corpus

    rows = []
    for n, where in enumerate(CASES):
        c = Corpus(init_corpus(work / f"c{n}"))
        src = work / f"c{n}.jsonl"
        src.write_text("".join(json.dumps(r) + "\n" for r in _records(where)), encoding="utf-8")
        ingest(c, [src], progress=False)
        kw: dict = {"kind": "smoke", "progress": False}
        if where == "--trainer-org":
            kw["trainer_orgs"] = [f"Acme <{ADDRESS}>"]
        if where in ("--datasheet", "curator's name (--datasheet)"):
            sheet = work / f"sheet{n}.md"
            extra = f"Contact the curator: {ADDRESS}" if where == "--datasheet" else f"Curated by {CURATOR}."
            sheet.write_text(TEMPLATE.read_text(encoding="utf-8") + f"\n{extra}\n", encoding="utf-8")
            kw["datasheet"] = sheet
        try:
            cut_release(c, "0.1.0", **kw)
            refused = "no (released)"
        except ReleaseRefused as e:
            refused = "yes" if any(g.name == "pii_scan" for g in e.failed) else "refused by " + ", ".join(
                g.name for g in e.failed)
        shutil.rmtree(c.dir / "releases", ignore_errors=True)
        r = cut_release(c, "0.1.0", redact_pii=True, **kw)
        files = sorted(p for p in r.directory.rglob("*") if p.is_file())
        rows.append((where, refused, ", ".join(_residual_files(r.directory, _needle(where))) or "none", len(files)))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, help="keep the corpora here (default: a temporary directory)")
    ap.add_argument("--before", type=Path, help="an older checkout whose scanner is scored on the labelled set too")
    ap.add_argument("--by-kind-json", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--ner-cost-json", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--heldout-json", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--heldout-only", action="store_true", help="print only the held-out figures")
    args = ap.parse_args()
    if args.by_kind_json:
        print(json.dumps(_by_kind()))
        return
    if args.heldout_json:
        print(json.dumps(_heldout()))
        return
    if args.ner_cost_json:
        print(json.dumps(_ner_cost()))
        return
    _print_heldout(_heldout(), _by_kind_before(args.before, "--heldout-json") if args.before else None)
    if args.heldout_only:
        return
    _print_by_kind(_by_kind(), _by_kind_before(args.before) if args.before else None)
    print()
    _print_ner_cost()
    print()

    forms, false_pos = _scanner()
    caught = sum(v == "caught" for _, v in forms)
    print("## scanner: obfuscated forms\n\n| form | verdict |\n|---|---|")
    for name, verdict in forms:
        print(f"| {name} | {verdict} |")
    print(f"\nPII forms caught / tried: {caught} / {len(forms)}; "
          f"false positives: {len(false_pos)} of {len(TRAPS)} traps")
    for text, hits in false_pos:
        print(f"  false positive: {text!r}: {hits}")

    work = args.work or Path(tempfile.mkdtemp(prefix="hardening-pii-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        cov = _coverage(work)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print("\n## redaction coverage: an e-mail (or the collector's or curator's name) planted in one place\n")
    print("| planted in | refused without --redact-pii | files still holding it after --redact-pii |\n|---|---|---|")
    for where, refused, residual, _ in cov:
        print(f"| {where} | {refused} | {residual} |")
    leaky = sum(r != "none" for _, _, r, _ in cov)
    refused = sum(r == "yes" for _, r, _, _ in cov)
    n_files = sum(len(r.split(", ")) for _, _, r, _ in cov if r != "none")
    print(f"\ncases refused without --redact-pii: {refused} / {len(cov)}; cases with residual PII after "
          f"--redact-pii: {leaky} / {len(cov)} ({n_files} file(s) in all, of {sum(n for *_, n in cov)} written)")


if __name__ == "__main__":
    main()
