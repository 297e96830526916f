"""Release hardening probe (issues 18 and 41: a release's name binds its data; its manifest is read strictly):
`python bench/hardening_release.py`.

Tries each case and prints one table per part, tried against caught:

* **tampers** (tests/release_tampers.py, each on a fresh copy of a release with every kind of claim):
  caught by `trb-corpus verify` (``verify_release``), caught by `trb run` (``run_tracks`` refuses with
  a ReleaseError: exit 13), and still caught by both when the forger also recomputes the claims
  digest (``forged``; tests/release_tampers.py DIGEST_ONLY lists the tampers only the digest catches);
* **manifests** (issue 41; tests/release_tampers.py ``MANIFEST_VARIANTS`` and ``INNOCENT``): the manifest and
  entry variants to catch (a NaN, an Infinity, a forged ``release_sha`` or count placed before the true one, an
  unlisted directory or FIFO named like a shard, a shard linked to other content), caught by `verify` and by
  `trb run` (a crash is not a catch); and the innocent variants of a good release (sorted keys, reordered
  ``split_fractions``, shards linked to identical copies, a Hugging Face cache snapshot), where any refusal
  or crash is a false alarm;
* **kills**: SIGKILL at random delays into `trb-corpus release` and into a process recording `trb run`
  after `trb run` into one store; after each kill: no half release listed or readable, no run listed
  that is not whole, and the next command succeeds and cleans up (``survived``); ``data lost``: a
  listed release that fails verification, or a recorded run whose item scores are not all there;
* **errors**: the failures that were tracebacks (disk full on a small tmpfs, where this machine can mount
  one; two concurrent releases of one version; ``--out`` under a file and in /proc; an invalid manifest
  under ``releases/``) and the immutability of a version across ``--out``: caught = one line on stderr,
  no traceback, an exit code of the table, nothing half-written.

Run from a checkout (``PYTHONPATH`` = the checkout): the cases use only what every toolkit version has
(``cut_release``, ``verify_release``, ``run_tracks``, the CLIs), so the same script measures the code
before a fix (``PYTHONPATH=/tmp/before``) and after.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class Adapter:
    """A README-style adapter: weight 3 on r'.planned_next."""

    tier = "proxy"
    capabilities = ()

    def spec(self) -> dict:
        return {"kind": "bench-hardening", "revision": "1"}

    def emit_r(self, context) -> dict:
        return {"planned_next": context.action_space[0] if context.action_space else None, "caused_by_self": 0.7}

    def act(self, context, r_override=None) -> dict:
        r = r_override or self.emit_r(context)
        w = {a: 3.0 if a == r.get("planned_next") else 1.0 for a in context.action_space}
        return {a: v / sum(w.values()) for a, v in w.items()}


#: Subprocesses run here, not in a checkout: ``python -c`` puts the working directory first on sys.path, and the
#: code measured must be the one ``PYTHONPATH`` names.
_CWD = tempfile.gettempdir()


def _env() -> dict:
    code = os.environ.get("PYTHONPATH") or str(ROOT)
    return {**os.environ, "PYTHONPATH": code + os.pathsep + str(ROOT / "tests"), "TRB_LOCK_WAIT": "5"}


def _cli(module: str, *args: str, timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", f"from {module} import main; raise SystemExit(main())", *args],
                          capture_output=True, text=True, env=_env(), timeout=timeout, cwd=_CWD, **kw)


def _one_line(p: subprocess.CompletedProcess, codes: tuple[int, ...]) -> bool:
    err = p.stderr.strip().splitlines()
    return p.returncode in codes and "Traceback" not in p.stderr and len(err) >= 1 and len(
        [line for line in err if not line.startswith(("waiting", "corpus "))]) <= 2


# -- tampers ---------------------------------------------------------------------------------------


def tampers(work: Path) -> list[tuple[str, str, bool, bool, bool | None, bool | None]]:
    import release_tampers as rt
    from corpus.verify import verify_release
    from trb.errors import ReleaseError
    from trb.run import RunSpec, run_tracks

    release = rt.build_fixture(work / "fixture")
    has_digest = "claims_sha256" in rt.manifest(release)
    out = []
    for i, (name, (_, what)) in enumerate(rt.TAMPERS.items()):
        row = [name, what]
        for forged in (False, True):
            if forged and not has_digest:
                row += [None, None]
                continue
            d = rt.apply(release, name, work / f"t{i}-{int(forged)}", forged=forged)
            try:
                verify_release(d)
                v = False
            except Exception as e:  # noqa: BLE001 - a crash is not a clean refusal
                v = type(e).__name__ == "VerifyFailed"
            try:
                run_tracks(RunSpec(d, baseline="probe", results=work / f"r{i}-{int(forged)}.duckdb", tracks=("1",)),
                           Adapter(), progress=False)
                r = False
            except ReleaseError:
                r = True
            except Exception:  # noqa: BLE001 - scored nothing, but not refused as a bad release
                r = False
            row += [v, r]
        out.append(tuple(row))
    return out


# -- manifests (issue 41) -------------------------------------------------------------------------


def _verdicts(d: Path, results: Path) -> tuple[bool | None, bool | None]:
    """(verify refused it as a bad release, trb run refused it as one); None: crashed (neither accepted nor refused)."""
    from corpus.verify import verify_release
    from trb.errors import ReleaseError
    from trb.run import RunSpec, run_tracks

    try:
        verify_release(d)
        v = False
    except Exception as e:  # noqa: BLE001 - a crash is not a clean refusal
        v = True if type(e).__name__ == "VerifyFailed" else None
    try:
        run_tracks(RunSpec(d, baseline="probe", results=results, tracks=("1",)), Adapter(), progress=False)
        r = False
    except ReleaseError:
        r = True
    except Exception:  # noqa: BLE001 - scored nothing, but not refused as a bad release
        r = None
    return v, r


def manifests(work: Path) -> list[tuple[str, str, bool | None, bool | None]]:
    """(variant, "tamper" or "innocent", verify's verdict, trb run's verdict) for each issue-41 variant."""
    import release_tampers as rt

    release = rt.build_fixture(work / "fixture")
    out = []
    for i, name in enumerate(rt.MANIFEST_VARIANTS):
        out.append((name, "tamper", *_verdicts(rt.apply(release, name, work / f"m{i}"), work / f"m{i}.duckdb")))
    for i, name in enumerate(rt.INNOCENT):
        out.append((name, "innocent", *_verdicts(rt.innocent(release, name, work / f"i{i}"), work / f"i{i}.duckdb")))
    return out


# -- kills -----------------------------------------------------------------------------------------


def _listed_ok(corpus_dir: Path) -> tuple[bool, bool]:
    """(the listing works and shows only whole releases, no listed release is damaged)."""
    from corpus.release import list_releases
    from corpus.store import Corpus
    from corpus.verify import verify_release

    try:
        rows = list_releases(Corpus(corpus_dir))
    except Exception:  # noqa: BLE001
        return False, True
    for r in rows:
        try:
            verify_release(r["directory"])
        except Exception:  # noqa: BLE001
            return False, False
    return True, True


def release_kills(work: Path, kills: int, rng: random.Random) -> dict:
    from corpus.ingest import ingest
    from corpus.simulate import write_simulation
    from corpus.store import Corpus, init_corpus

    write_simulation(work / "sim.jsonl", n_sessions=300, seed=3, progress=False)
    c = Corpus(init_corpus(work / "kc"))
    ingest(c, [work / "sim.jsonl"], progress=False)
    t0 = time.perf_counter()
    p = _cli("corpus.cli", "release", "--corpus", str(c.dir), "--version", "0.0.1", "--kind", "smoke",
             "--out", str(work / "timing"))
    full = time.perf_counter() - t0
    assert p.returncode == 0, p.stderr
    survived = lost = stale_left = 0
    for k in range(kills):
        version = f"0.{k + 1}.0"
        proc = subprocess.Popen([sys.executable, "-c", "from corpus.cli import main; raise SystemExit(main())",
                                 "release", "--corpus", str(c.dir), "--version", version, "--kind", "smoke"],
                                env=_env(), cwd=_CWD, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.1, full * 0.98))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        listed, intact = _listed_ok(c.dir)
        again = _cli("corpus.cli", "release", "--corpus", str(c.dir), "--version", version, "--kind", "smoke")
        stale = [d for d in (c.dir / "releases").glob(".*") if d.is_dir() or d.name.endswith(".spill")]
        stale += list(c.dir.glob(".release-*.spill"))
        stale_left += bool(stale)
        ok_after, intact_after = _listed_ok(c.dir)
        lost += not (intact and intact_after) or again.returncode != 0
        survived += listed and again.returncode == 0 and ok_after and not stale
    return {"tried": kills, "survived": survived, "data lost": lost, "stale left after the next release": stale_left}


CHILD_RUNS = """
import sys
sys.path.insert(0, sys.argv[3])
from hardening_release import Adapter
from trb.run import RunSpec, run_tracks
while True:
    run_tracks(RunSpec(sys.argv[1], baseline="probe", results=sys.argv[2], tracks=("1", "3")),
               Adapter(), progress=False)
"""


def _runs_ok(results: Path) -> tuple[bool, bool, int]:
    """(every listed run is whole and the store reads, no item scores lost, runs)."""
    import duckdb

    if not results.exists():
        return True, True, 0
    try:
        from trb.results import ResultsStore

        runs = ResultsStore(results).runs()
        con = duckdb.connect(str(results), read_only=True)
        have = dict(con.execute("SELECT run_id, count(*) FROM item_scores GROUP BY 1").fetchall())
        con.close()
    except Exception:  # noqa: BLE001
        return False, True, 0
    whole = all(have.get(r["run_id"], 0) == r["n_items"] for r in runs)
    return whole, whole, len(runs)


def run_kills(work: Path, kills: int, rng: random.Random) -> dict:
    from corpus.ingest import ingest
    from corpus.release import cut_release
    from corpus.simulate import write_simulation
    from corpus.store import Corpus, init_corpus
    from trb.run import RunSpec, run_tracks

    write_simulation(work / "rsim.jsonl", n_sessions=150, seed=5, progress=False)
    c = Corpus(init_corpus(work / "rc"))
    ingest(c, [work / "rsim.jsonl"], progress=False)
    release = cut_release(c, "0.1.0", kind="smoke", progress=False).directory
    t0 = time.perf_counter()
    run_tracks(RunSpec(release, baseline="probe", results=work / "timing.duckdb", tracks=("1", "3")),
               Adapter(), progress=False)
    one = time.perf_counter() - t0
    survived = lost = 0
    for k in range(kills):
        results = work / f"results-{k % 2}.duckdb"  # alternately a new store and one with runs already
        proc = subprocess.Popen([sys.executable, "-c", CHILD_RUNS, str(release), str(results), str(ROOT / "bench")],
                                env=_env(), cwd=_CWD, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.5, 0.5 + 3 * one))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        whole, intact, n = _runs_ok(results)
        try:
            run_tracks(RunSpec(release, baseline="probe", results=results, tracks=("1",)), Adapter(), progress=False)
            again = True
        except Exception:  # noqa: BLE001
            again = False
        whole2, intact2, n2 = _runs_ok(results)
        stale = list(work.glob(".results-*.duckdb.init-*"))
        lost += not (intact and intact2)
        survived += whole and again and whole2 and n2 == n + 1 and not stale
    return {"tried": kills, "survived": survived, "data lost": lost}


# -- errors ----------------------------------------------------------------------------------------


def errors(work: Path) -> list[tuple[str, bool, str]]:
    from corpus.ingest import ingest
    from corpus.store import Corpus, init_corpus
    from factories import small_corpus, write_jsonl

    c = Corpus(init_corpus(work / "ec"))
    ingest(c, [write_jsonl(work / "e.jsonl", small_corpus())], progress=False)
    out = []

    def rel(*args, **kw):
        return _cli("corpus.cli", "release", "--corpus", str(c.dir), "--kind", "smoke", *args, **kw)

    p = rel("--version", "0.1.0")
    assert p.returncode == 0, p.stderr
    q = rel("--version", "0.1.0", "--out", str(work / "elsewhere" / "0.1.0"))
    ingest(c, [write_jsonl(work / "e2.jsonl", [dict(small_corpus()[1], session_id="s9", subject_id="new")])],
           progress=False)
    q2 = rel("--version", "0.1.0", "--out", str(work / "elsewhere2" / "0.1.0"))
    out.append(("--out elsewhere/0.1.0 of a released version, same content", q.returncode != 0 and _one_line(
        q, (6,)) and not (work / "elsewhere" / "0.1.0").exists(), f"exit {q.returncode}"))
    out.append(("--out elsewhere/0.1.0 of a released version, new content", q2.returncode != 0 and _one_line(
        q2, (6,)) and not (work / "elsewhere2" / "0.1.0").exists(), f"exit {q2.returncode}"))
    (work / "afile").write_text("x")
    p = rel("--version", "0.2.0", "--out", str(work / "afile" / "0.2.0"))
    out.append(("--out under a file", _one_line(p, (2,)), f"exit {p.returncode}"))
    p = rel("--version", "0.2.0", "--out", "/proc/trb-release/0.2.0")
    out.append(("--out in /proc", _one_line(p, (2,)), f"exit {p.returncode}"))
    bad = c.dir / "releases" / "9.9.9"
    bad.mkdir(parents=True)
    (bad / "manifest.json").write_text(json.dumps({"release_sha": "x"}))
    p = _cli("corpus.cli", "releases", "--corpus", str(c.dir))
    out.append(("an invalid manifest under releases/ (trb-corpus releases)", _one_line(p, (13,)),
                f"exit {p.returncode}"))
    shutil.rmtree(bad)
    # two concurrent releases of one version
    procs = [subprocess.Popen([sys.executable, "-c", "from corpus.cli import main; raise SystemExit(main())",
                               "release", "--corpus", str(c.dir), "--version", "0.3.0", "--kind", "smoke"],
                              env=_env(), cwd=_CWD, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    res = [(p.wait(), p.stderr.read()) for p in procs]
    codes = sorted(r[0] for r in res)
    clean = all("Traceback" not in e for _, e in res) and codes[0] == 0 and codes[1] in (0, 3, 4)
    out.append(("two concurrent releases of one version", clean, f"exits {codes}"))
    # disk full on a small tmpfs
    mnt = work / "tmpfs"
    mnt.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96k", "tmpfs", str(mnt)],
                             capture_output=True).returncode == 0
    if mounted:
        try:
            p = rel("--version", "0.4.0", "--out", str(mnt / "0.4.0"))
            left = [x.name for x in mnt.iterdir()]
            out.append(("disk full during a release (96 KiB tmpfs)", _one_line(p, (1, 2)) and not left,
                        f"exit {p.returncode}, left {left}"))
        finally:
            subprocess.run(["umount", str(mnt)], check=False)
    else:
        out.append(("disk full during a release", False, "not tried: this machine cannot mount a tmpfs"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=6)
    ap.add_argument("--seed", type=int, default=18)
    ap.add_argument("--skip", default="", help="comma-separated parts to skip: tampers,manifests,kills,errors")
    args = ap.parse_args()
    sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "bench")]
    skip = set(filter(None, args.skip.split(",")))
    work = Path(tempfile.mkdtemp(prefix="trb-bench-hardening-"))
    os.environ.setdefault("TRB_CACHE", str(work / "cache"))
    rng = random.Random(args.seed)
    try:
        if "tampers" not in skip:
            rows = tampers(work / "tampers")
            print("| tamper | edits | verify | trb run | verify, digest forged | trb run, digest forged |")
            print("|---|---|---|---|---|---|")
            mark = {True: "caught", False: "**passed**", None: "–"}
            for name, what, v, r, fv, fr in rows:
                print(f"| {name} | {what} | {mark[v]} | {mark[r]} | {mark[fv]} | {mark[fr]} |")
            n = len(rows)
            forged = [x for x in rows if x[4] is not None]
            print(f"\ntampers caught / tried: verify {sum(x[2] for x in rows)} / {n}, trb run {sum(x[3] for x in rows)}"
                  f" / {n}; with the claims digest forged too: verify {sum(x[4] for x in forged)} / "
                  f"{len(forged)}, trb run {sum(x[5] for x in forged)} / {len(forged)}\n")
        if "manifests" not in skip:
            rows = manifests(work / "manifests")
            print("| manifest variant | should be | verify | trb run |")
            print("|---|---|---|---|")
            word = {("tamper", True): "caught", ("tamper", False): "**passed**", ("innocent", False): "verified",
                    ("innocent", True): "**false alarm**"}
            for name, kind, v, r in rows:
                print(f"| {name} | {'refused' if kind == 'tamper' else 'verified'} | "
                      f"{word.get((kind, v), '**crash**')} | {word.get((kind, r), '**crash**')} |")
            bad = [x for x in rows if x[1] == "tamper"]
            good = [x for x in rows if x[1] == "innocent"]
            print(f"\nmanifest variants caught / tried: verify {sum(x[2] is True for x in bad)} / {len(bad)}, "
                  f"trb run {sum(x[3] is True for x in bad)} / {len(bad)} (crashes: verify "
                  f"{sum(x[2] is None for x in bad)}, trb run {sum(x[3] is None for x in bad)}); false alarms on good "
                  f"releases / tried: verify {sum(x[2] is not False for x in good)} / {len(good)}, trb run "
                  f"{sum(x[3] is not False for x in good)} / {len(good)}\n")
        if "kills" not in skip:
            (work / "kills").mkdir()
            r = release_kills(work / "kills", args.kills, rng)
            print(f"trb-corpus release, SIGKILL at random delays: {r}")
            (work / "runkills").mkdir()
            r = run_kills(work / "runkills", args.kills, rng)
            print(f"trb run, SIGKILL at random delays: {r}\n")
        if "errors" not in skip:
            (work / "errors").mkdir()
            rows = errors(work / "errors")
            print("| failure | one line, right exit, nothing half-written | what happened |")
            print("|---|---|---|")
            for name, ok, what in rows:
                print(f"| {name} | {'yes' if ok else '**no**'} | {what} |")
            print(f"\nerrors handled / tried: {sum(ok for _, ok, _ in rows)} / {len(rows)}")
    finally:
        subprocess.run(["umount", str(work / "errors" / "tmpfs")], capture_output=True, check=False)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
