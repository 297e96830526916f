"""Release cost: `python bench/release.py [--sessions 100000] [--repeats 3]`.

Simulates and ingests a corpus once, then cuts a smoke release of it `--repeats`
times (each in its own process, for its own peak RSS) and reports the median
seconds and peak RSS. Then it times the release SHA recomputed from the parquet
files (what `trb-corpus verify` does) against its named peer, a plain read of the
same parquet files with pyarrow (`pq.read_table`), median of the repeats, and
prints the ratio. With `--format-1` (toolkits with content format 2) it also times,
in the same run, the format-1 SHA of the same files and a whole `verify` (the full
check: files, SHA, every claim from the rows) of the release and of a copy of it
as it would have been cut with format 1.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD_RELEASE = """
import json, resource, sys, time
from corpus.release import cut_release
from corpus.store import Corpus
t0 = time.perf_counter()
r = cut_release(Corpus(sys.argv[1]), sys.argv[2], kind="smoke", out=sys.argv[3], progress=False)
dt = time.perf_counter() - t0
rows = sum(sum(v.values()) for v in r.manifest["counts"].values())
print(json.dumps({"seconds": dt, "rows": rows, "sha": r.manifest["release_sha"],
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _child(*args: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD_RELEASE, *args], capture_output=True, text=True, check=True,
                         cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--format-1", action="store_true", help="also time content format 1 and verify (see above)")
    ap.add_argument("--format-1-repeats", type=int, default=1)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    import pyarrow.parquet as pq

    from corpus.ingest import ingest
    from corpus.simulate import write_simulation
    from corpus.store import Corpus, init_corpus
    from schemas.release_format import release_sha_of_files

    work = Path(tempfile.mkdtemp(prefix="trb-bench-release-"))
    try:
        data = work / "sim.jsonl"
        write_simulation(data, n_sessions=args.sessions, seed=args.seed, progress=False)
        corpus = Corpus(init_corpus(work / "corpus"))
        t0 = time.perf_counter()
        ingest(corpus, [data], progress=False)
        ingest_s = time.perf_counter() - t0
        data.unlink()
        runs = []
        for i in range(args.repeats):
            out = work / f"release-{i}"  # a version is cut once per corpus: each repeat cuts the same content anew
            runs.append(_child(str(corpus.dir), f"0.1.{i}", str(out)))
            if i < args.repeats - 1:
                shutil.rmtree(out)
        assert len({r["sha"] for r in runs}) == 1, "the same corpus gave different SHAs"
        release_dir = work / f"release-{args.repeats - 1}"
        files = [(p.parts[-2], p) for p in sorted(release_dir.glob("data/*/*.parquet"))]
        size_mb = sum(p.stat().st_size for _, p in files) / 1e6
        sha_s, read_s = [], []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            sha, counts = release_sha_of_files(files)
            sha_s.append(time.perf_counter() - t0)
            assert sha == runs[0]["sha"]
            t0 = time.perf_counter()
            n = sum(pq.read_table(p).num_rows for _, p in files)
            read_s.append(time.perf_counter() - t0)
        rows = sum(counts.values())
        assert n == rows
        print(f"# release benchmark: {os.cpu_count()} cores, python {sys.version.split()[0]}, "
              f"{args.sessions:,} simulated sessions (ingest {ingest_s:.1f} s), median of {args.repeats}")
        print("| sessions | release rows | parquet MB | release s | release peak RSS MB | SHA from files s | "
              "SHA rows/s | peer pq.read_table s | SHA / read |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        rs, rss = statistics.median(r["seconds"] for r in runs), statistics.median(r["rss_mb"] for r in runs)
        ss, rd = statistics.median(sha_s), statistics.median(read_s)
        print(f"| {args.sessions:,} | {rows:,} | {size_mb:.0f} | {rs:.1f} | {rss:.0f} | {ss:.2f} | {rows / ss:,.0f} | "
              f"{rd:.2f} | {ss / rd:.1f}x |")
        if args.format_1:
            _format_1(release_dir, files, args.repeats, args.format_1_repeats, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _format_1(release_dir: Path, files: list, repeats: int, repeats_1: int, work: Path) -> None:
    """Format 1 against format 2 on the same files, in the same run: the SHA, and a whole verify."""
    import pyarrow.parquet as pq

    from schemas.release_check import check_release
    from schemas.release_format import claims_digest, read_manifest, release_sha_of_files
    from toolkit.hashing import sha256_file

    old = work / "release-format-1"
    shutil.copytree(release_dir, old)
    m = read_manifest(old)
    sha1_s, sha2_s, read_s = [], [], []
    for i in range(max(repeats, repeats_1)):
        if i < repeats_1:
            t0 = time.perf_counter()
            sha1 = release_sha_of_files(files, content_format=1)[0]
            sha1_s.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        release_sha_of_files(files)
        sha2_s.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        sum(pq.read_table(p).num_rows for _, p in files)
        read_s.append(time.perf_counter() - t0)
    for name in ("README.md", "DATASHEET.md", "croissant.json"):  # the SHA they restate
        p = old / name
        p.write_text(p.read_text(encoding="utf-8").replace(m["release_sha"], sha1), encoding="utf-8")
    m["release_sha"] = sha1
    del m["content_format"]
    m["files"] = [{**f, "sha256": sha256_file(old / f["path"]), "bytes": (old / f["path"]).stat().st_size}
                  for f in m["files"]]
    m["claims_sha256"] = claims_digest(m)
    (old / "manifest.json").write_text(json.dumps(m, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    verify = {1: [], 2: []}
    for i in range(max(repeats, repeats_1)):
        for fmt, d in ((1, old), (2, release_dir)):
            if fmt == 1 and i >= repeats_1:
                continue
            t0 = time.perf_counter()
            check = check_release(d)
            verify[fmt].append(time.perf_counter() - t0)
            assert check.ok, check.differences
    med = statistics.median
    rd = med(read_s)
    print(f"\n# the same files, the same run: content format 1 (median of {repeats_1}) against 2 (median of {repeats})")
    print("| content format | SHA from files s | SHA / read (peer pq.read_table s) | verify s |")
    print("|---|---:|---:|---:|")
    print(f"| 1 (before) | {med(sha1_s):.2f} | {med(sha1_s) / rd:.1f}x ({rd:.2f}) | {med(verify[1]):.1f} |")
    print(f"| 2 (after) | {med(sha2_s):.2f} | {med(sha2_s) / rd:.1f}x ({rd:.2f}) | {med(verify[2]):.1f} |")


if __name__ == "__main__":
    main()
