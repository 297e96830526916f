"""Reading JSONL (and .jsonl.gz) in blocks of whole lines with bounded memory.

Blocks are plain bytes, cheap to hand to a parsing process; line numbers travel
with them. A line longer than the cap is skipped as it is read, so one enormous
line costs at most the cap in memory and becomes a located error instead of an
out-of-memory crash.
"""

from __future__ import annotations

import gzip
import io
import os
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DEFAULT_MAX_LINE_BYTES", "BLOCK_BYTES", "Block", "read_blocks", "open_text_out", "file_size"]

#: The longest line accepted by default (a session of thousands of steps fits).
DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024


#: How much of a file is read (and handed to a parser) at a time.
BLOCK_BYTES = 1024 * 1024


@dataclass(slots=True)
class Block:
    """Whole lines of a file starting at line ``first``, or one line that could not be read (``error``)."""

    first: int
    data: bytes
    error: str | None = None
    #: where ``data`` starts in the (uncompressed) file, in bytes
    start: int = 0

    def lines(self, max_line_bytes: int) -> Iterator[tuple[int, bytes | None, str | None]]:
        """``(number, bytes, None)`` for every non-blank line, ``(number, None, error)`` for an unreadable one."""
        if self.error is not None:
            yield self.first, None, self.error
            return
        number = self.first
        try:  # a block of valid UTF-8 has only valid lines (a newline byte is never inside a character's bytes)
            self.data.decode("utf-8")
            utf8 = True
        except UnicodeDecodeError:
            utf8 = False
        for raw in self.data.split(b"\n"):
            if raw.strip():
                if len(raw) > max_line_bytes:
                    yield number, None, _too_long(len(raw), max_line_bytes)
                elif utf8:
                    yield number, raw, None
                else:
                    try:
                        raw.decode("utf-8")
                    except UnicodeDecodeError as e:
                        yield number, None, f"not valid UTF-8: byte 0x{raw[e.start]:02x} at column {e.start + 1}"
                    else:
                        yield number, raw, None
            number += 1


def _too_long(size: int, limit: int) -> str:
    return (f"line is {size:,} bytes, longer than the limit of {limit:,} bytes "
            "(raise it with --max-line-bytes if the record is genuine)")


def _open_bytes(path: Path) -> tuple[io.BufferedIOBase, Callable[[], int]]:
    raw = open(path, "rb")  # noqa: SIM115 - closed by the caller
    if path.suffix == ".gz":
        return gzip.GzipFile(fileobj=raw, mode="rb"), raw.tell  # progress in compressed bytes
    return raw, raw.tell


def read_blocks(
    path: Path,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    progress: Callable[[int], None] | None = None,
    block_bytes: int = BLOCK_BYTES,
) -> Iterator[Block]:
    """Yield ``path`` (JSONL, or gzip-compressed when it ends in .gz) as blocks of whole lines.

    Memory is bounded by ``block_bytes + max_line_bytes``: a line longer than
    ``max_line_bytes`` is skipped as it is read and yielded as an error block.
    ``progress`` receives the bytes consumed (of the file on disk) since its last call.
    """
    try:
        f, tell = _open_bytes(path)
    except OSError as e:
        yield Block(1, b"", f"cannot open the file: {e.strerror or e}")
        return
    last_pos = 0
    line = 1
    carry = b""
    skipping = 0  # > 0 while inside an over-long line: the bytes seen of it so far
    offset = 0  # bytes of the (uncompressed) file read so far
    try:
        while True:
            chunk_start = offset
            try:
                chunk = f.read(block_bytes)
            except (OSError, EOFError, zlib.error) as e:  # BadGzipFile is an OSError; a corrupt stream, zlib.error
                what = "compressed data (a corrupt or truncated gzip file)" if path.suffix == ".gz" else "the file"
                yield Block(line, b"", f"cannot read {what} from this line on: {e}")
                return
            if progress is not None:
                pos = tell()
                progress(pos - last_pos)
                last_pos = pos
            if not chunk:
                break
            offset += len(chunk)
            if skipping:
                nl = chunk.find(b"\n")
                if nl < 0:
                    skipping += len(chunk)
                    continue
                yield Block(line, b"", _too_long(skipping + nl, max_line_bytes))
                line += 1
                skipping = 0
                chunk = chunk[nl + 1:]
                chunk_start += nl + 1
            data_start = chunk_start - len(carry)
            data = carry + chunk
            cut = data.rfind(b"\n")
            if cut < 0:
                carry = b""
                if len(data) > max_line_bytes:
                    skipping = len(data)
                else:
                    carry = data
                continue
            whole, carry = data[: cut + 1], data[cut + 1:]
            yield Block(line, whole, start=data_start)
            line += whole.count(b"\n")
            if len(carry) > max_line_bytes:
                skipping, carry = len(carry), b""
        if skipping:
            yield Block(line, b"", _too_long(skipping, max_line_bytes))
        elif carry:
            yield Block(line, carry, start=offset - len(carry))
    finally:
        f.close()


def open_text_out(path: Path, gz: bool):
    """A binary writer for ``path``, gzip-compressed when ``gz``."""
    if gz:
        return gzip.open(path, "wb", compresslevel=6)
    return open(path, "wb", buffering=1 << 20)  # noqa: SIM115


def file_size(path: Path) -> int:
    return os.stat(path).st_size
