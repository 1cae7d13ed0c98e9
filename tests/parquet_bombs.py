"""Parquet files that are small on disk and huge once decoded (issue 40 §4), written with pyarrow a row group at a
time so that making one holds a row group, never the file.

`python -m tests.parquet_bombs` writes tests/data/hostile/parquet_answers_zstd_bomb.parquet: the issue's file, 30
answers of 60 MB each in row groups of 10 rows, zstd, no dictionary (62 KB; under the 1 GB row-group guard).
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

IMAGE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])


def _png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 10, 40)).save(out, "PNG")
    return out.getvalue()


def _columns(layout: str, rows: int, start: int) -> dict[str, pa.Array]:
    """Small, valid columns of one layout (vqa: lmms-lab's textvqa; mcq: MMBench; pope: POPE)."""
    ids = pa.array(range(start, start + rows), pa.int64())
    image = pa.array([{"bytes": _png(), "path": f"{i}.png"} for i in range(rows)], IMAGE)
    question = pa.array([f"what is it {i}?" for i in range(rows)])
    if layout == "vqa":
        return {"question_id": ids, "question": question, "image": image, "answers": pa.array(["a"] * rows)}
    if layout == "pope":
        return {"question_id": ids, "question": question, "answer": pa.array(["yes"] * rows),
                "category": pa.array(["random"] * rows), "image": image}  # fmt: skip
    return {"index": ids, "question": question, "hint": pa.array(["h"] * rows), "A": pa.array(["a"] * rows),
            "B": pa.array(["b"] * rows), "answer": pa.array(["A"] * rows), "image": image}  # fmt: skip


def text_bomb(path: Path, *, layout: str = "vqa", column: str = "answers", rows: int = 30, size: int = 60 * 2**20,
              row_group: int = 10) -> Path:  # fmt: skip
    """`rows` rows whose `column` holds a text of `size` bytes each, plain-encoded (no dictionary) and zstd-compressed:
    a run of one letter compresses a thousandfold, so only the pages' uncompressed size in the metadata says so."""
    writer = None
    try:
        for start in range(0, rows, row_group):
            n = min(row_group, rows - start)
            columns = _columns(layout, n, start)
            columns[column] = pa.array(["x" * size] * n)
            table = pa.table(columns)
            if writer is None:
                writer = pq.ParquetWriter(path, table.schema, compression="zstd", use_dictionary=False)
            writer.write_table(table, row_group_size=row_group)
    finally:
        if writer is not None:
            writer.close()
    return path


if __name__ == "__main__":
    target = Path(__file__).parent / "data" / "hostile" / "parquet_answers_zstd_bomb.parquet"
    text_bomb(target)
    sys.stdout.write(f"{target}: {target.stat().st_size:,} bytes\n")
