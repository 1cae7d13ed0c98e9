"""Hugging Face parquet benchmarks: lmms-lab's MMBench and POPE layouts, and the generic shape.

- MMBench (`lmms-lab/MMBench`): `index, question, hint, A … D, answer, category, image {bytes, path}, source,
  L2-category, comment, split`; circular copies (index + k·1,000,000) are folded as in the TSV.
- POPE (`lmms-lab/POPE`, the Full config's per-setting splits): `question_id, question, answer (yes/no),
  image_source, image {bytes}, category (the setting)`; one setting per benchmark.
- VQA and captions (lmms-lab's textvqa, DocVQA / InfographicVQA, VQAv2, OK-VQA, ChartQA, COCO-Caption2017): open
  questions — `question`, `image`, the reference answers as `answers` (texts, or VQAv2's {answer, …} records) or
  `answer` (a text or a list), the index as `index`, `question_id` or `questionId`, else the row's place in the
  split counted from 0 (lmms-eval's doc_id, so its samples find their items).
- Generic: a column per field as in vlmdesk's JSONL — `index, question, options (a list) or A, B, …, answer (a
  letter or a 0-based index), image (bytes, or {bytes, path}), hint, category, l2_category, split`.

Files are read with pyarrow one record batch at a time (a row group is the most held), so memory stays flat
whatever the file's size. Several shards of one split import as one benchmark: a folder of `.parquet` files, or one
shard named like `dev-00000-of-00003.parquet`, which brings its siblings. A row's place in errors is
`SHARD:ROW` (rows counted from 1 in that shard). Every other column is kept in the item's meta, so a curated export
writes the layout back (`write_parquet`).
"""

from __future__ import annotations

import io
import math
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, BinaryIO

from db.catalog import Benchmark, Item
from db.errors import MissingExtra
from db.workspace import Workspace
from evaluator.formats.importers import tsv
from evaluator.formats.importers.common import (
    MAX_SOURCE_BYTES,
    ImageRef,
    InputError,
    ReadLimits,
    Refused,
    SourceRow,
    blank,
    check_texts,
    normalise_index,
    open_regular,
    reference_answers,
    several_images,
    sha256_bytes,
)
from evaluator.scoring.choices import LETTERS, MAX_OPTIONS, YES_NO

_SHARD = re.compile(r"^(?P<split>.+)-(?P<n>\d{5})-of-(?P<total>\d{5})$")
MAX_SHARDS = 10_000
MAX_ROW_GROUP_BYTES = 2**30  # Hugging Face writes image datasets in row groups of 100 rows: a few MB
BATCH_ROWS = 64  # rows decoded at once: 64 MMBench rows with their images are a few MB
MAGIC = b"PAR1"
# The TSV importer's known columns (one home), with the parquet layouts' own: an options list and POPE's id.
_KNOWN = (tsv.KNOWN - {"image_path"}) | {"options", "question_id", "images"}


# ------------------------------------------------------------------------------------------------ shards


@dataclass(frozen=True)
class Shard:
    path: Path
    offset: int  # where it starts in the concatenation
    size: int


class ShardStream(io.RawIOBase):
    """The shards of one split read as one stream (what the importer hashes, and measures its progress by)."""

    def __init__(self, shards: list[Path]):
        super().__init__()
        self.shards: list[Shard] = []
        offset = 0
        for path in shards:
            size = os.stat(path).st_size
            self.shards.append(Shard(path, offset, size))
            offset += size
        self.size = offset
        self._pos = 0
        self._open: tuple[int, BinaryIO] | None = None

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._pos, 2: self.size}[whence]
        self._pos = max(0, min(self.size, base + offset))
        return self._pos

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        for n, shard in enumerate(self.shards):
            if shard.offset <= self._pos < shard.offset + shard.size:
                f = self.shard_file(n)
                f.seek(self._pos - shard.offset)
                got = f.readinto(view[: min(len(view), shard.offset + shard.size - self._pos)])  # type: ignore[attr-defined]
                self._pos += got
                return int(got)
        return 0

    def readline(self, size: int | None = -1) -> bytes:
        """A line in chunks (RawIOBase's reads a byte at a time, and a binary file's first "line" is long)."""
        limit = -1 if size is None else size
        out = bytearray()
        while limit < 0 or len(out) < limit:
            chunk = self.read(65536 if limit < 0 else min(65536, limit - len(out)))
            if not chunk:
                break
            newline = chunk.find(b"\n")
            if newline >= 0:
                out += chunk[: newline + 1]
                self.seek(self._pos - (len(chunk) - newline - 1))
                break
            out += chunk
        return bytes(out)

    def shard_file(self, n: int) -> BinaryIO:
        if self._open is None or self._open[0] != n:
            self._close_shard()
            self._open = (n, _open_shard(self.shards[n].path))
        return self._open[1]

    def _close_shard(self) -> None:
        if self._open is not None:
            self._open[1].close()
            self._open = None

    def close(self) -> None:
        self._close_shard()
        super().close()


def is_sharded(path: Path) -> bool:
    """Whether the path names several shards: a folder holding .parquet files, or one shard of
    `NAME-00000-of-00003.parquet`. (Any other folder is refused as a source, like any non-regular file.)"""
    if path.suffix.lower() == ".parquet" and _SHARD.match(path.stem) is not None and not path.is_dir():
        return True
    try:
        return path.is_dir() and any(p.suffix.lower() == ".parquet" for p in path.iterdir())
    except OSError:
        return False


def shard_paths(path: Path) -> list[Path]:
    """The shards of one split, in order. InputError when they are missing or of several splits."""
    if path.is_dir():
        found = sorted(p for p in path.iterdir() if p.suffix.lower() == ".parquet")
        if not found:
            raise InputError(path, 0, "path", "a folder without .parquet files")
        splits = sorted({m.group("split") if (m := _SHARD.match(p.stem)) else p.stem for p in found})
        if len(splits) > 1:
            shown = ", ".join(splits[:5]) + (", …" if len(splits) > 5 else "")
            raise InputError(path, 0, "path", f"shards of several splits ({shown}): import one split's shards")
        numbered = [m for p in found if (m := _SHARD.match(p.stem))]
        if numbered:  # a folder of NAME-0000i-of-0000N shards must hold all N of them, like a named shard
            expected = shard_paths(found[0])
            if [p.name for p in expected] != [p.name for p in found]:
                raise InputError(path, 0, "path", "the .parquet files are not one set of NAME-0000i-of-0000N shards")
            return expected
    else:
        match = _SHARD.match(path.stem)
        assert match is not None  # is_sharded said so
        total = int(match.group("total"))
        if total > MAX_SHARDS:
            raise InputError(path, 0, "path", f"{total} shards; at most {MAX_SHARDS}")
        found = [path.with_name(f"{match.group('split')}-{n:05d}-of-{total:05d}{path.suffix}") for n in range(total)]
        missing = [p.name for p in found if not p.exists()]
        if missing:
            raise InputError(path, 0, "path", f"shard {missing[0]} of this split is missing ({len(missing)} missing)")
    if len(found) > MAX_SHARDS:
        raise InputError(path, 0, "path", f"{len(found)} shards; at most {MAX_SHARDS}")
    for p in found:
        _open_shard(p).close()  # every shard a regular file within the size limit, before anything is read
    return found


def open_shards(path: Path) -> ShardStream:
    return ShardStream(shard_paths(path))


def _open_shard(path: Path) -> BinaryIO:
    try:
        return open_regular(path, MAX_SOURCE_BYTES, "limit for a benchmark file")
    except Refused as exc:
        raise InputError(path, 0, "path", str(exc).removeprefix(f"{path} ")) from None
    except OSError as exc:
        raise InputError(path, 0, "path", f"cannot read ({exc.strerror or exc})") from None


def sniff(record: object, first: str, head: str) -> bool:
    return first.startswith(MAGIC.decode())


def require_pyarrow(path: Path) -> None:
    """MissingExtra (one line, exit 2) where pyarrow is not installed: the standalone annotator app leaves it out
    (128 MB; docs/adr/0043), and a parquet file is then refused in words, not with a traceback."""
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise MissingExtra(
            f"{path}: reading or writing parquet needs pyarrow, which this install leaves out (the standalone app "
            "does): pip install pyarrow, or use a pip-installed vlmdesk"
        ) from None


def refine(path: Path, raw: BinaryIO) -> str | None:
    """For columns without options (the first shard's): pope-parquet when they are POPE's (question_id and a text
    answer), else vqa-parquet (open questions: reference answers as `answers`, or `answer` as a list or one text)."""
    require_pyarrow(path)
    import pyarrow as pa

    schema = _schema(path, raw)
    raw.seek(0)
    names = set(schema.names)
    if "A" in names or "options" in names:
        return None
    answer = schema.field("answer").type if "answer" in names else None
    if "question_id" in names and "answers" not in names and answer is not None and pa.types.is_string(answer):
        return "pope-parquet"
    return "vqa-parquet"


def _schema(path: Path, raw: BinaryIO) -> Any:
    require_pyarrow(path)
    import pyarrow.parquet as pq

    f = raw.shard_file(0) if isinstance(raw, ShardStream) else raw
    try:
        return pq.ParquetFile(f).schema_arrow
    except Exception as exc:  # pyarrow raises ArrowInvalid / OSError for anything that is not parquet
        raise InputError(path, 0, "path", f"not a readable parquet file ({str(exc)[:100]})") from None


# ------------------------------------------------------------------------------------------------ reading


def _batches(path: Path, raw: BinaryIO, limits: ReadLimits) -> Iterator[tuple[Path, int, dict[str, Any]]]:
    """(shard, row number in it, row as a dict) for every row, a record batch at a time; `raw` is moved along so the
    importer's progress (raw.tell()) follows the reading. Text is bounded twice: a row group's text pages by what its
    rows may hold before the group is decoded, each value's length before it becomes Python text."""
    require_pyarrow(path)
    import pyarrow.parquet as pq

    shards = raw.shards if isinstance(raw, ShardStream) else [Shard(path, 0, 0)]
    for n, shard in enumerate(shards):
        f = raw.shard_file(n) if isinstance(raw, ShardStream) else raw
        f.seek(0)
        try:
            metadata = pq.ParquetFile(f).metadata
            groups = [metadata.row_group(g) for g in range(metadata.num_row_groups)]
            per_row = _per_row_caps(metadata.schema, limits)
            leaves = sorted(
                {groups[0].column(c).path_in_schema for c in range(groups[0].num_columns)} if groups else ()
            )
            f.seek(0)
            # No pre-buffering, a 1 MB read buffer and one thread: reading a batch holds that batch and no read-ahead
            # (the defaults read whole row groups ahead, several at once: twice the memory for a 4,400-row MMBench).
            # Every text or bytes column is read as a dictionary, so a value repeated through a dictionary page stays
            # one value until its row is read (_decoded_bytes counts what it expands to).
            parquet = pq.ParquetFile(f, pre_buffer=False, buffer_size=1 << 20, read_dictionary=leaves)
        except Exception as exc:  # ArrowInvalid, OSError: not parquet, or a damaged footer
            raise InputError(shard.path, 0, "path", f"not a readable parquet file ({str(exc)[:100]})") from None
        first = 1
        for g, group in enumerate(groups):  # pyarrow decodes a row group's column chunk whole (2.3x its size)
            if group.total_byte_size > MAX_ROW_GROUP_BYTES:
                what = f"row group {g} unpacks to {group.total_byte_size / 2**20:,.0f} MB"
                limit = f"at most {MAX_ROW_GROUP_BYTES // 2**20} MB (write it with smaller row groups)"
                raise InputError(shard.path, first, "row_group", f"{what}; {limit}")
            for c, cap in per_row.items():  # the pages' own sizes, before anything is decompressed
                chunk = group.column(c)
                if chunk.total_uncompressed_size > group.num_rows * cap + _PAGE_SLACK_BYTES:
                    name = chunk.path_in_schema.split(".")[0]
                    raise InputError(
                        shard.path,
                        first,
                        name,
                        f"row group {g}: column {name!r} unpacks to {chunk.total_uncompressed_size / 2**20:,.1f} MB "
                        f"for {group.num_rows} rows; at most {cap / 2**20:g} MB a row (a compression bomb?)",
                    )
            first += group.num_rows
        row = 0
        for g, group in enumerate(groups):
            caps = _decoded_limits(group)
            decoded: dict[str, int] = {}
            batches = parquet.iter_batches(batch_size=BATCH_ROWS, row_groups=[g], use_threads=False)
            while True:
                try:
                    batch = next(batches)
                except StopIteration:
                    break
                except Exception as exc:  # a damaged page
                    raise InputError(
                        shard.path, row + 1, "row", f"unreadable parquet data ({str(exc)[:100]})"
                    ) from None
                for name, column in zip(batch.schema.names, batch.columns, strict=True):
                    decoded[name] = decoded.get(name, 0) + _decoded_bytes(column)
                    cap = caps.get(name, DECODED_FLOOR_BYTES)
                    if decoded[name] > cap:
                        raise InputError(
                            shard.path,
                            row + 1,
                            name,
                            f"row group {g}: column {name!r} decodes to more than {cap / 2**20:,.0f} MB (its pages "
                            f"hold {_stored(group, name) / 2**20:,.1f} MB: a value repeated through a dictionary?)",
                        )
                    at, length = _longest(column, binary=name not in IMAGE_COLUMNS)
                    if length > MAX_TEXT_BYTES:
                        raise InputError(
                            shard.path, row + 1 + at, name, f"a text of {length:,} bytes; at most {MAX_TEXT_BYTES:,}"
                        )
                for record in batch.to_pylist():
                    row += 1
                    yield shard.path, row, record
                if isinstance(raw, ShardStream):
                    raw.seek(shard.offset + min(shard.size, f.tell()))


# What a column of one row group may decode to: its stored size times this, at least the floor, at most the row-group
# cap. A dictionary page lets one stored value stand for every row (an 8 MB text x 500 rows from 8 MB of pages).
DECODED_PER_STORED = 16
DECODED_FLOOR_BYTES = 64 * 2**20


# One text of a row (a question, a hint, an answer, a meta column's value; an image's path). A TSV cell of text costs
# its size on disk; a parquet page compresses a repeated text a thousandfold (a 62 KB file held 30 answers of 60 MB).
MAX_TEXT_BYTES = 2**20
# Their bytes are bounded by --max-image-mb instead; a list of an item's images (HF datasets' Sequence(Image): a list
# of {bytes, path} structs) by ReadLimits.max_item_bytes together.
IMAGE_COLUMNS = ("image", "images")
_PAGE_SLACK_BYTES = 2**16  # a column chunk's page headers, levels and dictionary page beside its values


def _per_row_caps(schema: Any, limits: ReadLimits) -> dict[int, int]:
    """What one row may hold in each text or bytes leaf column (by the leaf's number): an image's bytes the image
    limit, any other value MAX_TEXT_BYTES (and 4 bytes of length). Numbers are bounded by the row count."""
    caps = {}
    for c in range(len(schema)):
        leaf = schema.column(c)
        if leaf.physical_type not in ("BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"):
            continue
        parts = leaf.path.split(".")
        image = parts[0] in IMAGE_COLUMNS and leaf.logical_type.type != "STRING"
        several = "list" in parts[1:-1] or "element" in parts[1:-1]
        one_image = limits.max_item_bytes + 4 * limits.max_item_images if several else limits.max_image_bytes
        caps[c] = (one_image if image else MAX_TEXT_BYTES) + 4
    return caps


def _longest(array: Any, *, binary: bool) -> tuple[int, int]:
    """(row, length) of the longest text value in an Arrow array, bytes values too when `binary`, nested ones
    included (a dictionary's values at its indices); (0, 0) when there is none. Nothing becomes a Python value."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = array.type
    if len(array) == 0:
        return 0, 0
    if pa.types.is_dictionary(kind):  # only text and bytes leaves are read as dictionaries (read_dictionary)
        wanted = _is_text(kind.value_type) or (binary and _is_bytes(kind.value_type))
        return _argmax(pc.binary_length(array.dictionary).take(array.indices)) if wanted else (0, 0)
    if pa.types.is_struct(kind):
        found = [_longest(child, binary=binary) for child in array.flatten()]
        return max(found, key=lambda one: one[1], default=(0, 0))
    if pa.types.is_map(kind):  # a list of {key, value} records
        array = pa.ListArray.from_arrays(array.offsets, array.values)
        kind = array.type
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        at, length = _longest(array.flatten(), binary=binary)
        return (int(pc.list_parent_indices(array)[at].as_py()) if length else 0), length
    if _is_text(kind) or (binary and _is_bytes(kind)):
        return _argmax(pc.binary_length(array))
    return 0, 0


def _argmax(lengths: Any) -> tuple[int, int]:
    import pyarrow.compute as pc

    longest = pc.max(lengths).as_py()
    return (int(pc.index(lengths, longest).as_py()), int(longest)) if longest else (0, 0)


def _is_text(kind: Any) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind))


def _stored(group: Any, name: str) -> int:
    """The uncompressed size of a top-level column's pages in a row group (all its leaves)."""
    chunks = (group.column(c) for c in range(group.num_columns))
    return sum(c.total_uncompressed_size for c in chunks if c.path_in_schema.split(".")[0] == name)


def _decoded_limits(group: Any) -> dict[str, int]:
    names = {group.column(c).path_in_schema.split(".")[0] for c in range(group.num_columns)}
    return {
        name: min(MAX_ROW_GROUP_BYTES, max(DECODED_FLOOR_BYTES, DECODED_PER_STORED * _stored(group, name)))
        for name in names
    }


def _decoded_bytes(array: Any) -> int:
    """The bytes an Arrow array holds once every dictionary value is expanded into its rows, computed without
    expanding anything (a dictionary's value lengths, taken at its indices)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = array.type
    if pa.types.is_dictionary(kind):
        lengths = pc.binary_length(array.dictionary) if _is_bytes(kind.value_type) else None
        if lengths is None:
            return int(array.indices.nbytes) + _decoded_bytes(array.dictionary)
        return int(pc.sum(lengths.take(array.indices)).as_py() or 0) + 4 * len(array)
    if pa.types.is_struct(kind):
        return sum(_decoded_bytes(child) for child in array.flatten())
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return _decoded_bytes(array.flatten()) + 4 * len(array)
    if pa.types.is_map(kind):
        return _decoded_bytes(array.keys) + _decoded_bytes(array.items) + 4 * len(array)
    return int(array.nbytes)


def _is_bytes(kind: Any) -> bool:
    import pyarrow as pa

    return bool(
        pa.types.is_string(kind)
        or pa.types.is_binary(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_large_binary(kind)
    )


def _text(value: object) -> str | None:
    """A cell as text; None for a missing value (null, NaN, '', 'nan')."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = value if isinstance(value, str) else str(value)
    return None if blank(text) else text.strip()


def _image(value: object, limits: ReadLimits, err: Any) -> ImageRef | None:
    data = value.get("bytes") if isinstance(value, dict) else value
    if data is None:
        return None
    if not isinstance(data, (bytes, bytearray)):
        raise err("image", f"expected image bytes (or {{bytes, path}}), got {type(data).__name__}")
    if len(data) > limits.max_image_bytes:
        raise err(
            "image", f"{len(data) // 2**20} MB, over the --max-image-mb limit of {limits.max_image_bytes // 2**20}"
        )
    return ImageRef("bytes", bytes(data))


def _images(record: dict[str, Any], limits: ReadLimits, err: Any) -> tuple[ImageRef | None, tuple[ImageRef, ...]]:
    """(first, the rest) of a row's images: `images`, or an `image` that is a list, holds several in order."""
    column = "images" if record.get("images") is not None else "image"
    value = record.get(column)
    if not isinstance(value, list):
        if column == "images":
            raise err("images", f"expected a list of images, got {type(value).__name__}")
        return _image(value, limits, err), ()
    if len(value) > limits.max_item_images:
        raise err(column, f"{len(value)} images; at most {limits.max_item_images} an item")

    def element(n: int) -> Any:
        return lambda field, what: err(column, f"element {n}: {what}")

    refs = [_image(v, limits, element(n)) for n, v in enumerate(value, start=1)]
    if any(r is None for r in refs):
        raise err(column, f"element {next(n for n, r in enumerate(refs, start=1) if r is None)} holds no image")
    return several_images([r for r in refs if r is not None], column, err, limits)


class _SharedImages:
    """Parquet repeats an image's bytes in every row that shows it (MMBench's circular copies, POPE's six questions
    per image); a repeat becomes a reference to the first row that had them (the TSV's convention), so the importer
    holds each image once instead of once per row."""

    def __init__(self) -> None:
        self.first: dict[str, int | str] = {}  # sha256 -> index of the first row with these bytes
        self.seen: set[int | str] = set()

    def shared(self, row: SourceRow) -> SourceRow:
        fresh = row.index not in self.seen  # a repeated index is the importer's error; never a reference target
        self.seen.add(row.index)
        if row.image is None or row.image.kind != "bytes" or row.more_images:  # several: each stored once by hash
            return row
        assert isinstance(row.image.value, bytes)
        sha = sha256_bytes(row.image.value)
        if sha in self.first:
            return replace(row, image=ImageRef("row", self.first[sha]))
        if fresh:
            self.first[sha] = row.index
        return row


def read_parquet(
    path: Path, raw: BinaryIO, *, images_dir: Path | None = None, limits: ReadLimits = ReadLimits()
) -> Iterator[SourceRow | InputError]:
    """MMBench or generic multiple-choice rows."""
    images = _SharedImages()
    for shard, line, record in _batches(path, raw, limits):
        try:
            yield images.shared(_mcq_row(shard, line, record, limits))
        except InputError as exc:
            index = record.get("index")
            exc.index = index if isinstance(index, (int, str)) and not isinstance(index, bool) else None
            yield exc


def _mcq_row(shard: Path, line: int, record: dict[str, Any], limits: ReadLimits) -> SourceRow:
    def err(field: str, what: str) -> InputError:
        return InputError(shard, line, field, what)

    check_texts({k: v for k, v in record.items() if k not in IMAGE_COLUMNS}, "row", err)
    listed = record.get("options")
    _check_scalars(record, (*_TEXT_FIELDS, *([] if isinstance(listed, list) else LETTERS[:MAX_OPTIONS])), err)
    if isinstance(listed, list):
        for option in listed:
            _check_scalars({"options": option}, ["options"], err)
    index = _index(record, "index", line, err)
    question = _text(record.get("question"))
    if question is None:
        raise err("question", "empty")
    options: list[str] = []
    if isinstance(record.get("options"), list):
        options = [t for t in (_text(o) for o in record["options"]) if t is not None]
        option_cols: list[str] = []
    else:
        option_cols = [c for c in LETTERS[:MAX_OPTIONS] if c in record]
        for letter in option_cols:
            text = _text(record[letter])
            if text is None:
                continue
            if len(options) != LETTERS.index(letter):
                raise err(letter, f"option {letter} is filled but option {LETTERS[len(options)]} is empty")
            options.append(text)
    if len(options) < 2:
        raise err("options" if not option_cols else "A", f"needs at least two options, found {len(options)}")
    if len(options) > MAX_OPTIONS:
        raise err("options", f"{len(options)} options; at most {MAX_OPTIONS} (A-Y)")
    answer = _answer(record.get("answer"), len(options), err)
    extra = {k: v for k, v in record.items() if k not in _KNOWN and k not in option_cols and k != "L2-category"}
    meta = {k: _text(v) for k, v in extra.items() if _text(v) is not None}
    first, more = _images(record, limits, err)
    return SourceRow(
        line=line,
        index=index,
        question=question,
        options=tuple(options),
        answer=answer,
        image=first,
        more_images=more,
        hint=_text(record.get("hint")),
        category=_text(record.get("category")),
        l2_category=_text(record.get("L2-category", record.get("l2-category", record.get("l2_category")))),
        split=_text(record.get("split")),
        meta=meta,
    )


_TEXT_FIELDS = ("question", "hint", "category", "split", "answer", "L2-category", "l2-category", "l2_category")


def _check_scalars(record: dict[str, Any], names: Iterable[str], err: Any) -> None:
    """A text column holds text or a number: a list or struct there is another layout, never text to str()."""
    for name in names:
        value = record.get(name)
        if isinstance(value, (dict, list, tuple, bytes, bytearray)):
            kind = {dict: "struct", bytes: "binary", bytearray: "binary"}.get(type(value), "list")
            raise err(name, f"expected text, got a {kind}")


def _index(record: dict[str, Any], name: str, line: int, err: Any) -> int | str:
    value = record.get(name, line)
    try:
        return normalise_index(value)
    except (ValueError, TypeError) as exc:
        raise err(name, f"not a valid index: {str(value)[:60]!r} ({exc})") from None


def _answer(value: object, n: int, err: Any) -> str | None:
    if value is None or (isinstance(value, str) and blank(value)):
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        if not 0 <= value < n:
            raise err("answer", f"index {value} is not one of the {n} options (0-based)")
        return LETTERS[value]
    text = str(value).strip().upper()
    if text not in LETTERS[:n]:
        raise err("answer", f"{str(value)[:40]!r} is not one of the options {', '.join(LETTERS[:n])}")
    return text


def read_pope_parquet(
    path: Path, raw: BinaryIO, *, images_dir: Path | None = None, limits: ReadLimits = ReadLimits()
) -> Iterator[SourceRow | InputError]:
    """lmms-lab's POPE rows: one setting (category) per file, since a benchmark's POPE metrics are per setting."""
    setting, images = None, _SharedImages()
    for shard, line, record in _batches(path, raw, limits):
        category = _text(record.get("category"))
        if setting is None:
            setting = category
        elif category != setting:
            raise InputError(
                shard,
                line,
                "category",
                f"{category!r} after {setting!r}: one POPE setting per benchmark (import the Full config's "
                "per-setting splits, e.g. Full/adversarial-*.parquet)",
            )
        try:
            yield images.shared(_pope_row(shard, line, record, limits))
        except InputError as exc:
            yield exc


def _pope_row(shard: Path, line: int, record: dict[str, Any], limits: ReadLimits) -> SourceRow:
    def err(field: str, what: str) -> InputError:
        return InputError(shard, line, field, what)

    check_texts({k: v for k, v in record.items() if k not in IMAGE_COLUMNS}, "row", err)
    _check_scalars(record, ("question", "answer", "category"), err)
    index = _index(record, "question_id", line, err)
    question = _text(record.get("question"))
    if question is None:
        raise err("question", "empty")
    answer = (_text(record.get("answer")) or "").lower() or None
    if answer is not None and answer not in YES_NO:
        raise err("answer", f"{answer[:40]!r} is not yes or no (if this is an open VQA file: --format vqa-parquet)")
    meta = {k: _text(v) for k, v in record.items() if k not in _KNOWN and _text(v) is not None}
    return SourceRow(
        line=line,
        index=index,
        question=question,
        options=(),
        answer=answer,
        image=_image(record.get("image"), limits, err),
        category=_text(record.get("category")),
        meta=meta,
    )


# Where an open row names its item; a row naming none is its place in the split (lmms-eval's doc_id).
_OPEN_INDEX = ("index", "question_id", "questionId")
_OPEN_KNOWN = {*_OPEN_INDEX, "question", "answers", "answer", *IMAGE_COLUMNS, "hint", "category", "split"}


def read_vqa_parquet(
    path: Path, raw: BinaryIO, *, images_dir: Path | None = None, limits: ReadLimits = ReadLimits()
) -> Iterator[SourceRow | InputError]:
    """lmms-lab's VQA and caption rows as open questions with their reference answers. Other columns that hold one
    value are kept in the item's meta; lists and records there (TextVQA's OCR tokens) are left out."""
    images = _SharedImages()
    for position, (shard, line, record) in enumerate(_batches(path, raw, limits)):
        try:
            yield images.shared(_open_row(shard, line, record, position, limits))
        except InputError as exc:
            key = next((k for k in _OPEN_INDEX if record.get(k) is not None), None)
            exc.index = position if key is None else _index_or_none(record[key])
            yield exc


def _index_or_none(value: object) -> int | str | None:
    try:
        return normalise_index(value)
    except (ValueError, TypeError):
        return None


def _open_row(shard: Path, line: int, record: dict[str, Any], position: int, limits: ReadLimits) -> SourceRow:
    def err(field: str, what: str) -> InputError:
        return InputError(shard, line, field, what)

    check_texts({k: v for k, v in record.items() if k not in IMAGE_COLUMNS}, "row", err)
    _check_scalars(record, ("question", "hint", "category", "split"), err)
    key = next((k for k in _OPEN_INDEX if record.get(k) is not None), None)
    index = position if key is None else _index(record, key, line, err)
    question = _text(record.get("question"))
    if question is None:
        raise err("question", "empty")
    meta: dict[str, Any] = {
        k: _text(v)
        for k, v in record.items()
        if k not in _OPEN_KNOWN and not isinstance(v, (dict, list, bytes, bytearray)) and _text(v) is not None
    }
    field = "answers" if record.get("answers") is not None else "answer"
    value = record.get(field)
    references = [] if value is None else reference_answers(_answer_texts(value), field, err)
    if references:
        meta["references"] = references
    first, more = _images(record, limits, err)
    return SourceRow(
        line=line,
        index=index,
        question=question,
        options=(),
        answer=None,
        image=first,
        more_images=more,
        hint=_text(record.get("hint")),
        category=_text(record.get("category")),
        split=_text(record.get("split")),
        meta=meta,
    )


def _answer_texts(value: object) -> object:
    """An answer cell as reference_answers reads it: one text or a list of them, VQAv2's records {answer, …} taken
    at their answer; anything else is left for reference_answers to refuse."""
    if not isinstance(value, list):
        return value
    return [one["answer"] if isinstance(one, dict) and "answer" in one else one for one in value]


# ------------------------------------------------------------------------------------------------ writing

_WRITE_ROWS = 256  # rows per row group: what a reader holds at once


def write_parquet(ws: Workspace, bench: Benchmark, items: list[Item], path: Path) -> tuple[int, int]:
    """The benchmark in lmms-lab's layout (MMBench's, circular copies re-expanded, or POPE's), images inline."""
    require_pyarrow(path)
    import pyarrow as pa
    import pyarrow.parquet as pq

    from evaluator.formats.exporters import _copies, _extra, _image
    from evaluator.formats.outfiles import AtomicOutput

    pope = bench.kind == "yesno"
    n_options = max((len(i.options) for i in items), default=2)
    extras = list(dict.fromkeys(k for i in items for k in _extra(i) if k != "image_source"))
    image_type = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    if pope:
        names = ["question_id", "question", "answer", "image_source", "image", "category", *extras]
    else:
        names = ["index", "question", "hint", *LETTERS[:n_options], "answer", "category", "image"]
        names += [*extras, "L2-category", "split"]
    index_type = pa.int64() if all(isinstance(i.index, int) for i in items) else pa.string()
    schema = pa.schema(
        [
            (n, index_type if n in ("index", "question_id") else image_type if n == "image" else pa.string())
            for n in names
        ]
    )

    def rows() -> Iterator[dict[str, Any]]:
        for item in items:
            yield _record(item, item.index, item.options, item.answer)
        if not pope:
            copies = sorted(
                (
                    (k, pos, item, index, shown, answer)
                    for pos, item in enumerate(items)
                    for k, index, shown, answer in _copies(item)
                ),
                key=lambda c: (c[0], c[1]),
            )
            for _, _, item, index, shown, answer in copies:
                yield _record(item, index, shown, answer)

    images: set[str] = set()

    def _record(item: Item, index: int | str, options: tuple[str, ...], answer: str | None) -> dict[str, Any]:
        image = None
        if item.image_sha256:
            images.add(item.image_sha256)
            image = {"bytes": _image(ws, item.image_sha256)[0], "path": None}
        values = {
            "index": index,
            "question_id": index if index_type == pa.int64() else str(index),
            "question": item.question,
            "hint": item.hint,
            "answer": answer,
            "category": item.category,
            "L2-category": item.l2_category,
            "split": item.split,
            "image": image,
            **_extra(item),
            **dict(zip(LETTERS, options)),
        }
        if index_type == pa.string():
            values["index"] = str(index)
        return {n: values.get(n) for n in names}

    path.parent.mkdir(parents=True, exist_ok=True)
    out = AtomicOutput(path, binary=True)
    handle = out.open()
    ok, count = False, 0
    try:
        with pq.ParquetWriter(handle, schema) as writer:
            chunk: list[dict[str, Any]] = []
            for record in rows():
                chunk.append(record)
                count += 1
                if len(chunk) == _WRITE_ROWS:
                    writer.write_table(pa.Table.from_pylist(chunk, schema=schema))
                    chunk = []
            if chunk or count == 0:
                writer.write_table(pa.Table.from_pylist(chunk, schema=schema))
        ok = True
    finally:
        out.close(ok)
    return count, len(images)
