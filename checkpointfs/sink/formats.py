"""Part-file formats of the FileSink: JSON lines (plain, gzip, or zstd when ``zstandard`` is installed) and Parquet
(when ``pyarrow`` is installed). Spark reads JSON lines plain and gzipped (``.json.gz``) and Parquet."""

from __future__ import annotations

import datetime
import decimal
import importlib
import json
import zlib
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from ..contract import CancellableOutputStream

Row = Mapping[str, Any]


class Compressor(Protocol):
    """A streaming compressor (``zlib.compressobj``-like)."""

    def compress(self, data: bytes, /) -> bytes: ...
    def flush(self) -> bytes: ...


class PartWriter(Protocol):
    """Writes rows to one part file."""

    def write(self, row: Row) -> None:
        """Append ``row``."""

    def bytes_written(self) -> int:
        """Bytes handed to the store so far."""

    def close(self) -> None:
        """Finish the file and publish it."""

    def cancel(self) -> None:
        """Drop the file; nothing of it becomes visible."""


def _json_default(value: Any) -> Any:
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    raise TypeError(f"a value of type {type(value).__name__} cannot be written as JSON")


_encode_row = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=_json_default).encode


class JsonLinesWriter:
    """One JSON object per line, UTF-8, optionally compressed."""

    def __init__(self, stream: CancellableOutputStream, compressor: Compressor | None) -> None:
        self._stream = stream
        self._compressor = compressor

    def write(self, row: Row) -> None:
        """Append ``row`` as one line."""
        data = (_encode_row(row) + "\n").encode("utf-8")
        if self._compressor is not None:
            data = self._compressor.compress(data)
        if data:
            self._stream.write(data)

    def bytes_written(self) -> int:
        """Bytes handed to the store so far (compressed bytes lag behind by the compressor's buffer)."""
        return self._stream.tell()

    def close(self) -> None:
        """Flush the compressor and publish the file."""
        if self._compressor is not None:
            tail = self._compressor.flush()
            if tail:
                self._stream.write(tail)
        self._stream.close()

    def cancel(self) -> None:
        """Drop the file."""
        self._stream.cancel()


class _NonClosingFile:
    """What pyarrow writes to: passes writes to the stream, never closes it (publishing stays with the sink)."""

    closed = False

    def __init__(self, stream: CancellableOutputStream) -> None:
        self._stream = stream

    def write(self, data: bytes) -> int:
        return self._stream.write(data)

    def tell(self) -> int:
        return self._stream.tell()

    def flush(self) -> None:
        """No-op."""

    def close(self) -> None:
        """No-op."""


class ParquetWriter:
    """Parquet through pyarrow: rows are buffered into row groups of ``row_group_rows``; the schema is inferred
    from the first row group."""

    def __init__(self, stream: CancellableOutputStream, compression: str, row_group_rows: int) -> None:
        self._pa, self._pq = _pyarrow()
        self._stream = stream
        self._file = _NonClosingFile(stream)
        self._compression = compression
        self._row_group_rows = row_group_rows
        self._rows: list[Row] = []
        self._writer: Any = None

    def write(self, row: Row) -> None:
        """Buffer ``row``; write a row group when enough are buffered."""
        self._rows.append(row)
        if len(self._rows) >= self._row_group_rows:
            self._flush_rows()

    def _flush_rows(self) -> None:
        if not self._rows:
            return
        table = self._pa.Table.from_pylist(list(self._rows))
        if self._writer is None:
            self._writer = self._pq.ParquetWriter(self._file, table.schema, compression=self._compression)
        self._writer.write_table(table.cast(self._writer.schema))
        self._rows = []

    def bytes_written(self) -> int:
        """Bytes handed to the store so far (buffered rows not counted)."""
        return self._stream.tell()

    def close(self) -> None:
        """Write the remaining rows and the footer, then publish."""
        self._flush_rows()
        if self._writer is not None:
            self._writer.close()
        self._stream.close()

    def cancel(self) -> None:
        """Drop the file."""
        self._rows = []
        self._stream.cancel()


def _pyarrow() -> tuple[Any, Any]:
    try:
        return importlib.import_module("pyarrow"), importlib.import_module("pyarrow.parquet")
    except ImportError as e:
        raise ImportError("format='parquet' needs pyarrow: pip install pyarrow") from e


def _zstd_compressor() -> Compressor:
    try:
        zstandard = importlib.import_module("zstandard")
    except ImportError as e:
        raise ImportError("compression='zstd' needs the zstandard package: pip install zstandard") from e
    return zstandard.ZstdCompressor().compressobj()  # type: ignore[no-any-return]


FORMATS = ("json", "parquet")
COMPRESSIONS = (None, "gzip", "zstd")


def part_format(fmt: str, compression: str | None, row_group_rows: int = 10_000
                ) -> tuple[str, Callable[[CancellableOutputStream], PartWriter]]:
    """The file extension and writer factory for ``fmt`` (``json`` or ``parquet``) and ``compression`` (None,
    ``gzip`` or ``zstd``). Optional dependencies are checked here, so a missing one fails before any write."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")
    if compression not in COMPRESSIONS:
        raise ValueError(f"compression must be one of {COMPRESSIONS}, got {compression!r}")
    if fmt == "parquet":
        _pyarrow()
        codec = compression or "snappy"
        return f".{codec}.parquet", lambda stream: ParquetWriter(stream, codec, row_group_rows)
    if compression == "gzip":
        return ".json.gz", lambda stream: JsonLinesWriter(stream, zlib.compressobj(6, zlib.DEFLATED, 31))
    if compression == "zstd":
        _zstd_compressor()
        return ".json.zst", lambda stream: JsonLinesWriter(stream, _zstd_compressor())
    return ".json", lambda stream: JsonLinesWriter(stream, None)
