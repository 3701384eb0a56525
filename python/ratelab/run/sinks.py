"""Streaming a run's rows to Parquet: bounded memory, and a file appears under its name only
when complete (written as ``.part``, renamed on commit, removed on abort)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

#: Rows buffered before a Parquet row group is written (bounds memory, keeps row groups large).
FLUSH_ROWS = 1 << 16


def join_chunks(chunks: list[dict[str, Any]]):
    """One Arrow table from column chunks: numpy columns become chunked Arrow columns without a
    copy (same values and types as a table per chunk, and one row group when written; a
    concatenation copied every column once more, ~1 ms per campaign run); anything else goes
    through Arrow."""
    import numpy as np
    import pyarrow as pa

    keys = list(chunks[0])
    if all(list(c) == keys and all(isinstance(v, np.ndarray) for v in c.values()) for c in chunks):
        return pa.table({k: pa.chunked_array([pa.array(c[k]) for c in chunks]) for k in keys})
    return pa.concat_tables([pa.table(c) for c in chunks])


class ParquetSink:
    """Appends column batches to a Parquet file, written under a temporary name until commit."""

    def __init__(self, path: Path, metadata: dict[str, str] | None = None):
        self.path = path
        #: Key/value pairs stored in the Parquet file's metadata (provenance).
        self.metadata = metadata
        self.tmp = path.with_name(path.name + ".part")
        self._writer = None
        self._batches: list[Any] = []
        self._rows = 0
        self._last: dict[str, Any] | None = None
        self._committed = False

    def write(self, columns: dict[str, Any]) -> None:
        self._last = columns
        n = len(next(iter(columns.values()), ()))
        if n == 0:
            return
        # The chunks are kept as given and joined once per row group (_flush): one Arrow table
        # per flush instead of one per simulated chunk (a campaign run has dozens of chunks).
        self._batches.append(columns)
        self._rows += n
        if self._rows >= FLUSH_ROWS:
            self._flush()

    def _flush(self) -> None:
        import pyarrow.parquet as pq

        if not self._batches:
            return
        table = join_chunks(self._batches)
        if self.metadata:
            table = table.replace_schema_metadata({**(table.schema.metadata or {}), **self.metadata})
        if self._writer is None:
            # No dictionary pages: the columns are floats and counters that rarely repeat; dictionary
            # encoding made series files larger and their writing ~1.8x slower (docs/scale.md).
            self._writer = pq.ParquetWriter(self.tmp, table.schema, compression="zstd", use_dictionary=False)
        self._writer.write_table(table)
        self._batches, self._rows = [], 0

    def commit(self) -> None:
        import pyarrow as pa

        self._flush()
        if self._writer is None:
            if self._last is None:
                return
            # No rows at all: still write the (empty) table so readers find the columns.
            import pyarrow.parquet as pq

            table = pa.table(self._last)
            if self.metadata:
                table = table.replace_schema_metadata(self.metadata)
            pq.write_table(table, self.tmp)
        else:
            self._writer.close()
            self._writer = None
        os.replace(self.tmp, self.path)
        self._committed = True

    def abort(self) -> None:
        """Discard the file, also when already committed (a run interrupted between the commits
        of its files must not leave one of them behind)."""
        if self._writer is not None:
            with contextlib.suppress(Exception):
                self._writer.close()
            self._writer = None
        with contextlib.suppress(FileNotFoundError):
            self.tmp.unlink()
        if self._committed:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
