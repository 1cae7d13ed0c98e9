"""Import one benchmark file into a workspace, as one transaction: all good rows, or nothing."""
from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from db import catalog
from db.workspace import Workspace
from evaluator.language import language_of
from evaluator.importers.common import (
    CIRCULAR_STRIDE, LETTERS, InputError, SourceRow, check_image, sha256_bytes, sha256_file,
)
from evaluator.importers.jsonl import pope_setting_from_name, read_jsonl, read_pope
from evaluator.importers.tsv import read_tsv

FORMATS = {"mmbench-tsv": ("mcq", read_tsv), "jsonl": ("mcq", read_jsonl), "pope": ("yesno", read_pope)}
_BATCH = 500


@dataclass
class ImportReport:
    name: str
    kind: str
    format: str
    already_imported: bool = False
    rows_read: int = 0
    questions: int = 0
    rows_folded: int = 0
    images: int = 0
    images_new: int = 0
    skipped: list[InputError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"name": self.name, "kind": self.kind, "format": self.format, "already_imported": self.already_imported,
                "rows_read": self.rows_read, "questions": self.questions, "rows_folded": self.rows_folded,
                "images": self.images, "images_new": self.images_new, "rows_skipped": len(self.skipped),
                "skipped": [str(e) for e in self.skipped], "warnings": self.warnings}


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "benchmark"


def detect_format(path: Path) -> str:
    """By extension, then by the fields of the first record."""
    if path.suffix.lower() in (".tsv", ".tab"):
        return "mmbench-tsv"
    with open(path, "rb") as f:
        first = f.readline().decode("utf-8", "replace")
        head = first + f.read(4096).decode("utf-8", "replace")
    try:
        record = json.loads(first)
    except json.JSONDecodeError:
        record = None
    if isinstance(record, dict):
        if {"question_id", "label"} <= record.keys():
            return "pope"
        if {"question", "options"} <= record.keys():
            return "jsonl"
    elif '"question_id"' in head and '"label"' in head:  # a pretty-printed JSON array
        return "pope"
    if "\t" in first:
        return "mmbench-tsv"
    raise InputError(path, 1, "format", "cannot tell the format; pass --format mmbench-tsv|pope|jsonl")


def import_benchmark(ws: Workspace, path: str | Path, *, fmt: str | None = None, name: str | None = None,
                     images_dir: str | Path | None = None, setting: str | None = None, skip_bad: bool = False,
                     progress: bool | None = None) -> ImportReport:
    """Raises InputError on the first bad row (unless skip_bad) with the workspace unchanged."""
    path = Path(path)
    if not path.is_file():
        raise InputError(path, 0, "path", "no such file")
    images_dir = Path(images_dir) if images_dir else None
    if images_dir is not None and not images_dir.is_dir():
        raise InputError(images_dir, 0, "--images", "no such directory")
    fmt = fmt or detect_format(path)
    if fmt not in FORMATS:
        raise InputError(path, 0, "format", f"unknown format {fmt!r} (mmbench-tsv, pope, jsonl)")
    kind, reader = FORMATS[fmt]
    source_sha = sha256_file(path)

    existing = catalog.benchmark_by_source(ws, source_sha)
    if existing is not None:
        return ImportReport(name=existing.name, kind=existing.kind, format=existing.format, already_imported=True,
                            rows_read=existing.rows_read, questions=existing.questions,
                            rows_folded=existing.rows_folded, images=existing.images)
    name = name or slug(path.stem)
    if catalog.benchmark_by_name(ws, name) is not None:
        raise InputError(path, 0, "--name", f"a different benchmark is already named {name!r}; choose another --name")
    meta: dict = {"source_file": path.name}
    if fmt == "pope":
        meta["setting"] = setting or pope_setting_from_name(path)
    report = ImportReport(name=name, kind=kind, format=fmt)
    if fmt == "pope" and images_dir is None:
        report.warnings.append("no --images given: questions are imported without images (runs will need them)")

    with ws.db.atomic(), open(path, "rb") as raw, tqdm(
        total=path.stat().st_size, unit="B", unit_scale=True, desc=f"importing {name}", file=sys.stderr,
        disable=(None if progress else True), leave=False,
    ) as bar:
        bench_id = catalog.insert_benchmark(ws, name=name, kind=kind, format=fmt, source=str(path.resolve()),
                                            source_sha256=source_sha, meta=meta)
        _Loader(ws, path, bench_id, report, skip_bad, fmt).load(reader(path, raw, images_dir=images_dir), raw, bar)
        catalog.finish_benchmark(ws, bench_id, rows_read=report.rows_read, rows_folded=report.rows_folded,
                                 rows_skipped=len(report.skipped))
    return report


class _Loader:
    """Checks rows against each other (duplicates, image references, circular copies) and writes them in batches."""

    def __init__(self, ws: Workspace, path: Path, bench_id: int, report: ImportReport, skip_bad: bool, fmt: str):
        self.ws, self.path, self.bench_id, self.report, self.skip_bad = ws, path, bench_id, report, skip_bad
        self.fold_copies = fmt == "mmbench-tsv"
        self.first_line: dict = {}  # index -> line of its first appearance
        self.row_image: dict = {}  # index -> sha256 of the row's image (the target of image references)
        self.dropped: set = set()  # indexes of skipped rows: references to them and their copies are skipped too
        self.shas: set[str] = set()
        self.pending: list[tuple] = []
        self.deferred: list[SourceRow] = []  # rows whose image refers to a row not seen yet
        self.copies: list[tuple[SourceRow, str | None]] = []  # possible circular copies, checked at the end
        self.position = 0

    def load(self, rows, raw, bar) -> None:
        for row in rows:
            self.report.rows_read += 1
            if isinstance(row, InputError):
                if row.index is not None:
                    self.dropped.add(row.index)
                self._bad(row)
            elif row.index in self.first_line:
                # The duplicate is dropped; the row that came first stays.
                self._bad(InputError(self.path, row.line, "index",
                                     f"duplicate index {row.index!r} (first at line {self.first_line[row.index]})"))
            else:
                self.first_line[row.index] = row.line
                if row.image is not None and row.image.kind == "row" and row.image.value not in self.row_image:
                    self.deferred.append(row)
                else:
                    self._guard(row, self._place)
            bar.update(raw.tell() - bar.n)
        for row in self.deferred:
            self._guard(row, self._place)
        self._flush()
        for row, sha in self.copies:
            self._guard(row, lambda r, sha=sha: self._fold_or_insert(r, sha))
        self._flush()
        self.report.images = len(self.shas)

    def _guard(self, row: SourceRow, step) -> None:
        try:
            step(row)
        except InputError as exc:
            self.dropped.add(row.index)
            self._bad(exc)

    def _bad(self, exc: InputError) -> None:
        if not self.skip_bad:
            raise exc
        self.report.skipped.append(exc)

    def _place(self, row: SourceRow) -> None:
        sha = self._image_sha(row)
        self.row_image[row.index] = sha
        if self.fold_copies and isinstance(row.index, int) and row.index >= CIRCULAR_STRIDE:
            self.copies.append((row, sha))
        else:
            self._queue(row, sha)

    def _image_sha(self, row: SourceRow) -> str | None:
        ref = row.image
        if ref is None:
            return None
        err = lambda what: InputError(self.path, row.line, "image", what)  # noqa: E731
        if ref.kind == "row":
            if ref.value in self.dropped:
                raise err(f"refers to row {ref.value}, which was skipped")
            if ref.value not in self.row_image:
                raise err(f"refers to row {ref.value}, which is not in the file")
            return self.row_image[ref.value]
        if ref.kind == "path":
            try:
                data = Path(ref.value).read_bytes()
            except (OSError, ValueError) as exc:  # ValueError: a NUL character in the path
                raise err(f"cannot read {ref.value} ({getattr(exc, 'strerror', None) or exc})") from None
        else:
            data = ref.value
        return self._store(data, err)

    def _store(self, data: bytes, err) -> str:
        sha = sha256_bytes(data)
        # An image already in the workspace was checked when it was stored.
        if sha not in self.shas and not catalog.has_image(self.ws, sha):
            try:
                mime, width, height = check_image(data)
            except ValueError as exc:
                raise err(str(exc)) from None
            catalog.put_image(self.ws, sha256=sha, data=data, mime=mime, width=width, height=height)
            self.report.images_new += 1
        self.shas.add(sha)
        return sha

    def _queue(self, row: SourceRow, sha: str | None) -> None:
        self.position += 1
        self.pending.append((
            self.bench_id, self.position, row.index, row.question, row.hint,
            json.dumps(list(row.options), ensure_ascii=False), row.answer, row.category, row.l2_category, row.split,
            language_of(" ".join([row.question, row.hint or "", *row.options])), sha, 0,
            json.dumps(row.meta, ensure_ascii=False, default=str),
        ))
        self.report.questions += 1
        if len(self.pending) >= _BATCH:
            self._flush()

    def _flush(self) -> None:
        if self.pending:
            catalog.insert_items(self.ws, self.pending)
            self.pending = []

    def _fold_or_insert(self, row: SourceRow, sha: str | None) -> None:
        base_index = row.index % CIRCULAR_STRIDE
        if base_index in self.dropped:
            raise InputError(self.path, row.line, "index", f"circular copy of row {base_index}, which was skipped")
        original = catalog.item_by_index(self.ws, self.bench_id, base_index)
        if original is None:
            # Not a copy after all: a benchmark whose indexes are simply large.
            self._queue(row, sha)
            return
        try:
            shift = copy_shift(original, row, sha)
        except _NotACopy as exc:
            raise InputError(self.path, row.line, exc.field, f"circular copy of row {base_index}: {exc.what}") from None
        catalog.add_circular_copy(self.ws, original.id, row.index, shift)
        self.report.rows_folded += 1


class _NotACopy(Exception):
    def __init__(self, field: str, what: str):
        super().__init__(what)
        self.field, self.what = field, what


def copy_shift(original: catalog.Item, copy: SourceRow, copy_sha: str | None) -> int:
    """The rotation k (the copy shows original option (i + k) mod N as option i, 0 < k < N) that makes `copy` a
    circular copy of `original`; raises _NotACopy(field, reason) when it is none.

    The shift is recorded per copy, so exports reproduce the source's rows whichever direction it rotated in.
    """
    if copy.question.strip() != original.question.strip():
        raise _NotACopy("question", "the question text differs")
    if (copy.hint or "") != (original.hint or ""):
        raise _NotACopy("hint", "the hint differs (it is part of the prompt)")
    n = len(original.options)
    if len(copy.options) != n:
        raise _NotACopy("A", f"has {len(copy.options)} options, the original {n}")
    if (copy.answer is None) != (original.answer is None):
        raise _NotACopy("answer", "one has an answer and the other not")
    if copy_sha != original.image_sha256:
        raise _NotACopy("image", "a different image than the original's")
    rotations = [k for k in range(n) if tuple(original.options[(i + k) % n] for i in range(n)) == copy.options]
    if not rotations:
        raise _NotACopy("A", "its options are not a rotation of the original's")
    if copy.answer is not None:
        # With repeated option texts several rotations may match; the answer key tells them apart.
        a_copy, a_orig = LETTERS.index(copy.answer), LETTERS.index(original.answer)
        rotations = [k for k in rotations if (a_copy + k) % n == a_orig]
        if not rotations:
            meant = copy.options[a_copy]
            raise _NotACopy("answer", f"{copy.answer} ({meant!r}) is not the original answer {original.answer} rotated")
    used = dict(zip(original.meta.get("copy_shifts", []), original.meta.get("copies", [])))
    free = [k for k in rotations if k != 0 and k not in used]
    if not free:
        k = rotations[0]
        raise _NotACopy("A", "its options are in the original's order, not rotated" if k == 0
                        else f"repeats the rotation of row {used[k]}")
    return free[0]
