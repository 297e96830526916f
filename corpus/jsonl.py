"""Reading JSONL (and .jsonl.gz) line by line with bounded memory.

Lines are read as bytes with a length cap, so one enormous line costs at most the
cap in memory and becomes a located error instead of an out-of-memory crash.
"""

from __future__ import annotations

import gzip
import io
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DEFAULT_MAX_LINE_BYTES", "Line", "read_lines", "open_text_out"]

#: The longest line accepted by default (a session of thousands of steps fits).
DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024
_SKIP_CHUNK = 1024 * 1024


@dataclass(slots=True)
class Line:
    """One line of input: its number and bytes, or why it could not be read."""

    number: int
    data: bytes | None
    error: str | None = None


def _open_bytes(path: Path) -> tuple[io.BufferedIOBase, Callable[[], int]]:
    raw = open(path, "rb")  # noqa: SIM115 - closed by the caller
    if path.suffix == ".gz":
        gz = gzip.GzipFile(fileobj=raw, mode="rb")
        return io.BufferedReader(gz, buffer_size=1 << 20), raw.tell  # progress in compressed bytes
    return io.BufferedReader(raw, buffer_size=1 << 20), raw.tell


def read_lines(
    path: Path,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    progress: Callable[[int], None] | None = None,
) -> Iterator[Line]:
    """Yield every non-blank line of ``path``, numbered from 1.

    A line longer than ``max_line_bytes`` is skipped in chunks and yielded with an
    error; so is a line that is not UTF-8. ``progress`` receives the bytes consumed
    (of the file on disk) since the last call.
    """
    f, tell = _open_bytes(path)
    last = 0
    try:
        number = 0
        while True:
            try:
                data = f.readline(max_line_bytes + 1)
            except (OSError, EOFError, gzip.BadGzipFile) as e:
                yield Line(number + 1, None, f"cannot read compressed data: {e}")
                return
            if not data:
                break
            number += 1
            if len(data) > max_line_bytes and not data.endswith(b"\n"):
                size = len(data)
                while True:
                    chunk = f.readline(_SKIP_CHUNK)
                    size += len(chunk)
                    if not chunk or chunk.endswith(b"\n"):
                        break
                yield Line(
                    number,
                    None,
                    f"line is {size:,} bytes, longer than the limit of {max_line_bytes:,} bytes "
                    "(raise it with --max-line-bytes if the record is genuine)",
                )
            elif data.strip():
                try:
                    data.decode("utf-8")
                except UnicodeDecodeError as e:
                    yield Line(number, None, f"not valid UTF-8: byte 0x{data[e.start]:02x} at column {e.start + 1}")
                else:
                    yield Line(number, data)
            if progress is not None:
                pos = tell()
                if pos != last:
                    progress(pos - last)
                    last = pos
    finally:
        f.close()


def open_text_out(path: Path, gz: bool):
    """A binary writer for ``path``, gzip-compressed when ``gz``."""
    if gz:
        return gzip.open(path, "wb", compresslevel=6)
    return open(path, "wb", buffering=1 << 20)  # noqa: SIM115


def file_size(path: Path) -> int:
    return os.stat(path).st_size
