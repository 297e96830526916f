"""An independent reference of the release content SHA, format 2, written from its definition alone.

Plain Python, one value at a time, slow: what another implementer would write from the text in
``schemas/release_format.py`` (and docs/reference/release-format.md). It shares no code with the vectorised
implementation there; from the contract it takes only the data the definition names (the configs'
columns and types, the added columns, the key columns). ``release_sha_1`` does the same for format 1.
"""

from __future__ import annotations

import hashlib
import math
import struct
from collections.abc import Iterable
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from schemas.release_format import ADDED_COLUMNS, CONFIGS, CONTENT_KEYS

__all__ = ["release_sha_2", "release_sha_1", "read_rows"]


def read_rows(files: Iterable[tuple[str, Path]]) -> dict[str, list[dict]]:
    """config -> every row (a dict of every declared column) of its files; a missing added column is null."""
    out: dict[str, list[dict]] = {}
    for config, path in files:
        declared = [name for name, _, _ in CONFIGS[config]]
        rows = pq.read_table(path).to_pylist()
        for row in rows:
            extra = set(row) - set(declared)
            missing = [c for c in declared if c not in row and c not in ADDED_COLUMNS.get(config, ())]
            assert not extra and not missing, (extra, missing)
        out.setdefault(config, []).extend({c: row.get(c) for c in declared} for row in rows)
    return out


def _sha(b: bytes) -> bytes:
    return hashlib.sha256(b).digest()


def _i64(v: int) -> bytes:
    return struct.pack("<q", v)


def _streams(t: pa.DataType, values: list) -> list[bytes]:
    """S(T) of a column of ``values``."""
    out = [bytes(0 if v is None else 1 for v in values)]  # validity
    if pa.types.is_struct(t):
        for i in range(t.num_fields):
            f = t.field(i)
            out += _streams(f.type, [None if v is None else v[f.name] for v in values])
    elif pa.types.is_list(t):
        out.append(b"".join(_i64(0 if v is None else len(v)) for v in values))
        out += _streams(t.value_type, [e for v in values if v is not None for e in v])
    elif pa.types.is_string(t):
        encoded = [b"" if v is None else v.encode("utf-8") for v in values]
        out.append(b"".join(_i64(len(b)) for b in encoded))
        out.append(b"".join(encoded))
    elif pa.types.is_boolean(t):
        out.append(bytes(1 if v else 0 for v in values))
    elif pa.types.is_integer(t):
        out.append(b"".join(_i64(0 if v is None else v) for v in values))
    elif pa.types.is_float64(t):
        def bits(v):
            if v is None:
                return _i64(0)
            if math.isnan(v):
                return struct.pack("<Q", 0x7FF8000000000000)
            return struct.pack("<d", v)
        out.append(b"".join(bits(v) for v in values))
    else:
        raise AssertionError(f"no encoding for {t}")
    return out


def _config_digest(config: str, rows: list[dict]) -> bytes:
    h = hashlib.sha256()
    for name, typ, _ in CONFIGS[config]:
        column = _sha(b"".join(_sha(s) for s in _streams(typ, [r[name] for r in rows])))
        h.update(f"{name}\t{column.hex()}\n".encode())
    return h.digest()


def _order_key(config: str, row: dict) -> tuple:
    def one(v):
        if v is None:
            return (0,)
        return (1, v.encode("utf-8") if isinstance(v, str) else v)
    return tuple(one(row[k]) for k in ("split", *CONTENT_KEYS[config]))


def release_sha_2(files: Iterable[tuple[str, Path]]) -> str:
    rows = read_rows(files)
    h = hashlib.sha256(b"trb-release-content/2\n")
    for config in sorted(rows):
        these = rows[config]
        if not these:
            continue
        ordered = sorted(these, key=lambda r: (_order_key(config, r), _config_digest(config, [r])))
        h.update(f"{config}\t{len(ordered)}\t{_config_digest(config, ordered).hex()}\n".encode())
    return h.hexdigest()


def release_sha_1(files: Iterable[tuple[str, Path]]) -> str:
    """Content format 1 (canonical JSON per row; an added column left out while null)."""
    digests: dict[str, list[bytes]] = {}
    for config, path in files:
        rows = digests.setdefault(config, [])
        for row in pq.read_table(path).to_pylist():
            row = {k: v for k, v in row.items() if not (k in ADDED_COLUMNS.get(config, ()) and v is None)}
            rows.append(_sha(orjson.dumps(row, option=orjson.OPT_SORT_KEYS)))
    h = hashlib.sha256(b"trb-release-content/1\n")
    for config in sorted(digests):
        d = digests[config]
        h.update(f"{config}\t{len(d)}\t{hashlib.sha256(b''.join(sorted(d))).hexdigest()}\n".encode())
    return h.hexdigest()
