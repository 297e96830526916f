"""The release SHA: one sha256 for the content of a release, however it is stored.

Definition (format 1), so anyone can recompute it from the parquet files:

1. Every row of every config is a JSON object of its columns (the split
   included), serialised canonically: keys sorted, no whitespace, UTF-8, floats
   in their shortest round-tripping form, lists in their stored order.
2. Each row's serialisation is hashed with sha256 (32 raw bytes).
3. Per config, the row digests are sorted bytewise and hashed together:
   ``config_digest = sha256(concat(sorted(row_digests)))``.
4. ``release_sha = sha256("trb-release-content/1\\n" + "".join(f"{config}\\t{n_rows}\\t{config_digest}\\n"
   for config in sorted(configs)))``, digests in lowercase hex.

So row order, sharding, the parquet writer and compression do not change it, and
one changed value anywhere does.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["ContentDigest", "release_sha_of_files"]

_PREFIX = b"trb-release-content/1\n"


class ContentDigest:
    """Accumulates row digests per config; :meth:`hexdigest` gives the release SHA."""

    def __init__(self) -> None:
        self._rows: dict[str, bytearray] = {}

    def add_batch(self, config: str, batch: pa.RecordBatch | pa.Table) -> None:
        buf = self._rows.setdefault(config, bytearray())
        sha, dumps, opt = hashlib.sha256, orjson.dumps, orjson.OPT_SORT_KEYS
        for row in batch.to_pylist():
            buf += sha(dumps(row, option=opt)).digest()

    def config_digests(self) -> dict[str, tuple[int, str]]:
        out = {}
        for config, buf in self._rows.items():
            digests = np.sort(np.frombuffer(bytes(buf), dtype="S32")) if buf else np.array([], dtype="S32")
            out[config] = (len(digests), hashlib.sha256(digests.tobytes()).hexdigest())
        return out

    def hexdigest(self) -> str:
        h = hashlib.sha256(_PREFIX)
        for config, (n, digest) in sorted(self.config_digests().items()):
            h.update(f"{config}\t{n}\t{digest}\n".encode())
        return h.hexdigest()


def release_sha_of_files(files: Iterable[tuple[str, Path]], batch_rows: int = 65_536) -> tuple[str, dict[str, int]]:
    """The release SHA recomputed from ``(config, parquet path)`` pairs, and the row count per config."""
    digest = ContentDigest()
    counts: dict[str, int] = {}
    for config, path in files:
        pf = pq.ParquetFile(path)
        for batch in pf.iter_batches(batch_size=batch_rows):
            digest.add_batch(config, batch)
            counts[config] = counts.get(config, 0) + batch.num_rows
        counts.setdefault(config, 0)
        digest._rows.setdefault(config, bytearray())
    return digest.hexdigest(), counts
