"""A run's item scores as numpy columns, read from the results store column by column as figures ask for them."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from trb.results import ResultsStore


def _columns(table: pa.Table, names: list[str]) -> dict[str, np.ndarray]:
    """Columns as numpy: strings (and nullable booleans) as object arrays with None, doubles with nan for null.

    A string column's equal values are one Python object (a million item scores name a few tracks and metrics
    and a few sessions each: one ``str`` per item would hold them many times over)."""
    return {n: _numpy(table.column(n)) for n in names}


def _numpy(column: pa.ChunkedArray) -> np.ndarray:
    if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
        return column.to_numpy(zero_copy_only=False)
    coded = pc.dictionary_encode(column).combine_chunks()
    values = np.empty(len(coded.dictionary) + 1, dtype=object)  # the last one: None, for a null
    values[:-1] = coded.dictionary.to_pylist()
    indices = pc.fill_null(coded.indices, len(coded.dictionary)).to_numpy(zero_copy_only=False)
    return values[indices]


class _ItemColumns(Mapping):
    """One track's item columns of one run, as numpy arrays (:func:`_numpy`; ``session_id`` as
    :func:`_session_codes`), each read from the store the first time a figure asks for it, and kept for the track's
    other figures.

    A figure reads two or three of a track's dozen columns: reading them all at once, as one Arrow table and then
    as numpy, held a million sessions' items twice over (Track 1's 1.46M items); now only the columns asked for are
    held, once. (Dropping the least recently read past a budget and reading them again was tried: Track 2's figures
    ask for the same columns again and again, and on 4.28M trials that read them 2.7 times as long, for no less
    memory at the peak.)"""

    def __init__(self, store: ResultsStore, run_id: str, track_id: str, names: list[str]):
        self._store, self._run_id, self._track_id, self._names = store, run_id, track_id, names
        self._read: dict[str, np.ndarray] = {}

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._names:
            raise KeyError(name)
        if name not in self._read:
            column = self._store.items(self._run_id, track=self._track_id, columns=[name]).column(0)
            self._read[name] = _session_codes(column) if name == "session_id" else _numpy(column)
        return self._read[name]

    def __contains__(self, name: object) -> bool:  # a column the track has, not read for asking
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


class _Selected(Mapping):
    """``columns`` at the rows ``mask`` selects, each column cut the first time it is asked for."""

    def __init__(self, columns: Mapping[str, np.ndarray], mask: np.ndarray):
        self._columns, self._mask = columns, mask
        self._cut: dict[str, np.ndarray] = {}

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._cut:
            self._cut[name] = self._columns[name][self._mask]
        return self._cut[name]

    def __contains__(self, name: object) -> bool:  # not cut for asking
        return name in self._columns

    def __iter__(self) -> Iterator[str]:
        return iter(self._columns)

    def __len__(self) -> int:
        return len(self._columns)


def _session_codes(column: pa.ChunkedArray) -> np.ndarray:
    """Each item's session as an int64 code, the codes numbered in the order of the ids: what a track's figures
    need of a session (to group its items, and the order the bootstrap draws them in: ``np.unique`` of the codes
    orders them as of the ids), without a Python ``str`` per session (a million sessions' ids took about 100 MB).
    Arrow orders strings by their UTF-8 bytes, which is the order of their code points, Python's order of ``str``.
    A null id stays a string column, for the statistics' own error."""
    coded = pc.dictionary_encode(column).combine_chunks()
    if coded.null_count:
        return _numpy(column)
    rank = np.empty(len(coded.dictionary), dtype=np.int64)
    rank[pc.sort_indices(coded.dictionary).to_numpy()] = np.arange(len(coded.dictionary), dtype=np.int64)
    return rank[coded.indices.to_numpy()]


def _has_values(column: np.ndarray | None) -> bool:
    if column is None or column.size == 0:
        return False
    if column.dtype == object:
        return any(v is not None for v in column)
    return bool(np.any(~np.isnan(column))) if np.issubdtype(column.dtype, np.floating) else True
