"""Import one benchmark file into a workspace: all good rows, or nothing.

Rows are read, checked, hashed and their images decoded with no lock held; new images are written in short
transactions, items are staged in a private temporary database, and one short transaction at the end makes the
benchmark appear with all its items. An import that fails or is interrupted deletes the images it stored.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import sqlite3
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO, cast

from db import catalog
from db.workspace import Workspace
from evaluator.formats import registry as formats
from evaluator.formats.importers.common import (
    CIRCULAR_STRIDE,
    MAX_SOURCE_BYTES,
    ImageRef,
    InputError,
    ReadLimits,
    Refused,
    SourceRow,
    check_image,
    json_loads,
    open_regular,
    read_image_file,
    sha256_bytes,
    sha256_stream,
)
from evaluator.formats.importers.jsonl import pope_setting_from_name
from evaluator.formats.importers.parquet import ShardStream, is_sharded, open_shards
from evaluator.registry import resolve
from evaluator.scoring.choices import LETTERS, displayed_answer, rotation
from evaluator.scoring.language import language_of

MAX_NAME_CHARS = 100
# A write transaction holds at most this many rows or image bytes, so other writers wait a fraction of a second.
_BATCH_ROWS = 500
_BATCH_BYTES = 16 * 2**20
_STAGE = "import_stage"
_ITEM_FIELDS = (
    "position, source_index, question, hint, options, answer, category, l2_category, split, language, "
    "image_sha256, circular_copies, meta"
)


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

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "format": self.format,
            "already_imported": self.already_imported,
            "rows_read": self.rows_read,
            "questions": self.questions,
            "rows_folded": self.rows_folded,
            "images": self.images,
            "images_new": self.images_new,
            "rows_skipped": len(self.skipped),
            "skipped": [str(e) for e in self.skipped],
            "warnings": self.warnings,
        }


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower())[:MAX_NAME_CHARS].strip("-") or "benchmark"


def benchmark_name_problem(name: str) -> str | None:
    """What is wrong with a benchmark name, or None: names are shown in one-line listings and menus, so they are
    one printable line (no control or bidirectional-override characters) of at most MAX_NAME_CHARS."""
    if not name.strip():
        return "empty"
    if len(name) > MAX_NAME_CHARS:
        return f"{len(name)} characters; at most {MAX_NAME_CHARS}"
    if name != name.strip():
        return "starts or ends with white space"
    # isprintable() is False for control characters (newlines, tabs), format characters (U+202E and the other
    # bidirectional controls, zero-width characters), line/paragraph separators and unassigned code points.
    bad = next((c for c in name if not c.isprintable()), None)
    if bad is not None:
        return f"holds the unprintable character U+{ord(bad):04X}; use one line of printable text"
    return None


def model_name_problem(name: str) -> str | None:
    """What is wrong with a model's name given as a label (an imported run's --model, an arena battle's model_a /
    model_b), or None: the benchmark-name rule, and never something that looks like an API key."""
    from evaluator.backends import BackendError
    from evaluator.backends.secrets import check_no_secret

    problem = benchmark_name_problem(name)
    if problem is None:
        try:
            check_no_secret(name)
        except BackendError as exc:  # its message never repeats the key
            return str(exc)
    return problem


def detect_format(path: Path, raw: BinaryIO | None = None) -> str:
    """By extension, then by the fields of the first record (refined by a look inside when the format has one)."""
    if raw is None:
        with _open_source(path) as f:
            return detect_format(path, f)
    found = formats.by_extension(path.suffix) or _sniff(path, raw)
    refine = formats.REGISTRY[found].refine
    if refine is not None:
        found = resolve(refine)(path, raw) or found
        raw.seek(0)
    return found


def _sniff(path: Path, raw: BinaryIO) -> str:
    first_bytes = raw.readline(ReadLimits().max_line_bytes)
    first = first_bytes.decode("utf-8", "replace")
    head = first + raw.read(4096).decode("utf-8", "replace")
    try:
        record = json_loads(first)
    except (ValueError, RecursionError):
        record = None
    found = formats.sniff(record, first, head)
    if found is None:
        raise InputError(path, 1, "format", f"cannot tell the format; pass --format {'|'.join(formats.format_names())}")
    return found


def _open_source(path: Path) -> BinaryIO:
    if is_sharded(path):  # several parquet shards of one split, read as one file
        return cast(BinaryIO, open_shards(path))
    try:
        return open_regular(path, MAX_SOURCE_BYTES, "limit for a benchmark file")
    except FileNotFoundError:
        raise InputError(path, 0, "path", "no such file") from None
    except Refused as exc:
        raise InputError(path, 0, "path", str(exc).removeprefix(f"{path} ")) from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL character in the path
        raise InputError(path, 0, "path", f"cannot read ({getattr(exc, 'strerror', None) or exc})") from None


def import_benchmark(
    ws: Workspace,
    path: str | Path,
    *,
    fmt: str | None = None,
    name: str | None = None,
    images_dir: str | Path | None = None,
    setting: str | None = None,
    skip_bad: bool = False,
    progress: bool | None = None,
    limits: ReadLimits = ReadLimits(),
    on_event: Callable[[dict[str, Any]], None] | None = None,
    groups: tuple[str, ...] = (),
) -> ImportReport:
    """Raises InputError on the first bad row (unless skip_bad) with the workspace unchanged; an interrupted import
    (KeyboardInterrupt, e.g. from SIGTERM) leaves it unchanged too. `groups`: capability groups stored with a new
    benchmark (evaluator/analysis/groups.py; the catalog's for an import by name).

    on_event receives {"event": "start" | "progress" | "done", ...} dicts as the import goes
    (docs/guide/benchmarks.md, "Long imports and progress").
    """
    path = Path(path)
    images_dir = Path(images_dir) if images_dir else None
    if images_dir is not None and not images_dir.is_dir():
        raise InputError(images_dir, 0, "--images", "no such directory")
    if fmt is not None and formats.get(fmt) is None:
        raise InputError(path, 0, "format", f"unknown format {fmt[:40]!r} ({', '.join(formats.format_names())})")
    if name is not None and (problem := benchmark_name_problem(name)):
        raise InputError(path, 0, "--name", f"{name[:40]!r}{'...' if len(name) > 40 else ''}: {problem}")
    if ws.conn.in_transaction:
        raise RuntimeError("import_benchmark writes in its own short transactions; call it outside a transaction")
    with _open_source(path) as raw:
        fmt = fmt or detect_format(path, raw)
        raw.seek(0)
        source_sha = sha256_stream(raw)
        raw.seek(0)
        entry = formats.REGISTRY[fmt]
        setting = setting or (pope_setting_from_name(path) if entry.takes_setting else None)
        if entry.selects_setting and setting is not None:  # one file, a benchmark per setting: each its own identity
            source_sha = sha256_bytes(f"{source_sha}\0setting={setting}".encode())
        existing = catalog.benchmark_by_source(ws, source_sha)
        if existing is not None:
            report = ImportReport(
                name=existing.name,
                kind=existing.kind,
                format=existing.format,
                already_imported=True,
                rows_read=existing.rows_read,
                questions=existing.questions,
                rows_folded=existing.rows_folded,
                images=existing.images,
            )
            if on_event:
                on_event({"event": "done", **report.to_json()})
            return report
        name = name or slug(path.stem)
        if catalog.benchmark_by_name(ws, name) is not None:
            raise InputError(
                path, 0, "--name", f"a different benchmark is already named {name!r}; choose another --name"
            )
        kind, reader = entry.kind, resolve(entry.read)
        if entry.selects_setting:
            reader = functools.partial(reader, setting=setting)
        meta: dict[str, Any] = {"source_file": path.name}
        if entry.takes_setting:
            meta["setting"] = setting
        if groups:
            meta["groups"] = list(groups)
        report = ImportReport(name=name, kind=kind, format=fmt)
        if entry.wants_images and images_dir is None:
            report.warnings.append("no --images given: questions are imported without images (runs will need them)")
        size = raw.size if isinstance(raw, ShardStream) else os.fstat(raw.fileno()).st_size
        emit = on_event or (lambda event: None)
        emit({"event": "start", "name": name, "format": fmt, "kind": kind, "bytes_total": size})
        with _bar(progress, size, name) as bar:
            loader = _Loader(ws, path, report, skip_bad, fmt, images_dir or path.parent, limits, raw, size, emit)
            loader.run(
                reader(path, raw, images_dir=images_dir, limits=limits),
                bar,
                dict(name=name, kind=kind, format=fmt, source=str(path.resolve()), source_sha256=source_sha, meta=meta),
            )
    emit({"event": "done", **report.to_json()})
    return report


class _NoBar:
    n = 0

    def update(self, n: int) -> None:
        pass

    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def _bar(progress: bool | None, size: int, name: str) -> Any:  # a tqdm bar, or _NoBar (tqdm is untyped)
    """A progress bar on stderr (a terminal only); tqdm is imported only then, since it costs a quarter second."""
    if not progress or not sys.stderr.isatty():
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=size, unit="B", unit_scale=True, desc=f"importing {name}", file=sys.stderr, leave=False)


class _Loader:
    """Checks rows against each other (duplicates, image references, circular copies), stores new images in short
    transactions and stages items; `run` ends with the one short transaction that adds the benchmark."""

    def __init__(
        self,
        ws: Workspace,
        path: Path,
        report: ImportReport,
        skip_bad: bool,
        fmt: str,
        root: Path,
        limits: ReadLimits,
        raw: BinaryIO,
        size: int,
        emit: Callable[[dict[str, Any]], None],
    ):
        self.ws, self.path, self.report, self.skip_bad = ws, path, report, skip_bad
        self.root, self.limits, self.raw, self.size, self.emit = root, limits, raw, size, emit
        self.fold_copies = formats.REGISTRY[fmt].fold_copies
        self.first_line: dict[int | str, int] = {}  # index -> line of its first appearance
        # index -> the sha256 of each of the row's images, in order (the target of image references: VLMEvalKit copies
        # the whole cell, a list of several included)
        self.row_image: dict[int | str, tuple[str, ...]] = {}
        self.dropped: set[int | str] = (
            set()
        )  # indexes of skipped rows: references to them and their copies are skipped too
        self.shas: set[str] = set()  # every image the benchmark's rows use (checked, stored or found stored)
        self.stored: set[str] = set()  # images this import added to the workspace: removed again if it fails
        self.pending: list[tuple[object, ...]] = []
        self.pending_more: list[tuple[int, int, str]] = []  # (position, ord, sha256): an item's second image on
        self.pending_images: list[tuple[str, bytes, str, int, int]] = []  # sha, data, mime, width, height
        self.pending_bytes = 0
        self.deferred: list[SourceRow] = []  # rows whose image refers to a row not seen yet
        self.copies: list[tuple[SourceRow, tuple[str, ...]]] = []  # possible circular copies, checked at the end
        self.position = 0

    @property
    def conn(self) -> sqlite3.Connection:
        return self.ws.conn

    def run(self, rows: Iterable[SourceRow | InputError], bar: Any, benchmark: dict[str, Any]) -> None:
        if any(row[1] == _STAGE for row in self.conn.execute("PRAGMA database_list")):
            self._detach()  # left by an earlier import on this connection whose cleanup failed (a full disk)
        self.conn.execute(f"ATTACH DATABASE '' AS {_STAGE}")  # private and temporary: gone when detached
        try:
            self.conn.execute(
                f"CREATE TABLE {_STAGE}.items (id INTEGER PRIMARY KEY, {_ITEM_FIELDS}, UNIQUE (source_index))"
            )
            # An item's images after the first, by the item's position (unique here and in the published benchmark).
            self.conn.execute(
                f"CREATE TABLE {_STAGE}.item_images (position INTEGER, ord INTEGER, sha256 TEXT, "
                "PRIMARY KEY (position, ord)) WITHOUT ROWID"
            )
            self.conn.commit()
            self._load(rows, bar)
            self._publish(self._open_kind(benchmark))
        except BaseException:
            # The cleanup must never hide why the import failed: on a full disk it fails too ("database import_stage
            # is locked" stood in for "database or disk is full"); images it could not remove are orphans, which
            # `vlmdesk check --repair` deletes.
            with contextlib.suppress(sqlite3.Error):
                self._undo()
            with contextlib.suppress(sqlite3.Error):
                self._detach()
            raise
        self._detach()

    def _detach(self) -> None:
        if self.conn.in_transaction:
            self.conn.rollback()
        self.conn.execute(f"DETACH DATABASE {_STAGE}")

    def _load(self, rows: Iterable[SourceRow | InputError], bar: Any) -> None:
        for row in rows:
            self.report.rows_read += 1
            if isinstance(row, InputError):
                if row.index is not None:
                    self.dropped.add(row.index)
                self._bad(row)
            elif row.index in self.first_line:
                # The duplicate is dropped; the row that came first stays.
                self._bad(
                    InputError(
                        self.path,
                        row.line,
                        "index",
                        f"duplicate index {row.index!r} (first at line {self.first_line[row.index]})",
                    )
                )
            else:
                self.first_line[row.index] = row.line
                if row.image is not None and row.image.kind == "row" and row.image.value not in self.row_image:
                    self.deferred.append(row)
                else:
                    self._guard(row, self._place)
            bar.update(self.raw.tell() - bar.n)
        for row in self.deferred:
            self._guard(row, self._place)
        self._flush()
        for row, sha in self.copies:
            self._guard(row, functools.partial(self._fold_or_insert, sha=sha))
        self._flush()
        # Every distinct image of the benchmark, the second image on of items included.
        self.report.images = self.conn.execute(
            f"SELECT count(*) FROM (SELECT image_sha256 FROM {_STAGE}.items WHERE image_sha256 IS NOT NULL "
            f"UNION SELECT sha256 FROM {_STAGE}.item_images)"
        ).fetchone()[0]

    def _guard(self, row: SourceRow, step: Callable[[SourceRow], None]) -> None:
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
        shas = self._image_shas(row)
        self.row_image[row.index] = shas
        if self.fold_copies and isinstance(row.index, int) and row.index >= CIRCULAR_STRIDE:
            self.copies.append((row, shas))
        else:
            self._queue(row, shas)

    def _image_shas(self, row: SourceRow) -> tuple[str, ...]:
        """The sha256 of each of the row's images, in order; each new one checked and queued to be stored once."""
        if row.image is None:
            return ()
        if row.image.kind == "row":
            return self._image_sha(row, row.image)
        refs = (row.image, *row.more_images)
        return tuple(sha for n, ref in enumerate(refs, start=1) for sha in self._image_sha(row, ref, n, len(refs)))

    def _image_sha(self, row: SourceRow, ref: ImageRef, n: int = 1, of: int = 1) -> tuple[str, ...]:
        def err(what: str) -> InputError:
            return InputError(self.path, row.line, "image", what if of == 1 else f"element {n}: {what}")

        if ref.kind == "row":
            assert isinstance(ref.value, (int, str))  # the readers make a row reference of an index
            if ref.value in self.dropped:
                raise err(f"refers to row {ref.value}, which was skipped")
            if ref.value not in self.row_image:
                raise err(f"refers to row {ref.value}, which is not in the file")
            return self.row_image[ref.value]
        if ref.kind == "path":
            assert isinstance(ref.value, (str, Path))  # the readers make a path reference of a path
            try:
                data = read_image_file(Path(ref.value), self.root, self.limits)
            except Refused as exc:
                raise err(str(exc)) from None
            except (OSError, ValueError) as exc:  # ValueError: a NUL character in the path
                raise err(f"cannot read {ref.value} ({getattr(exc, 'strerror', None) or exc})") from None
        else:
            assert isinstance(ref.value, bytes)  # the readers make a bytes reference of the decoded bytes
            data = ref.value
        return (self._check(data, err),)

    def _check(self, data: bytes, err: Callable[[str], InputError]) -> str:
        """Hash and (when the workspace does not hold it yet) decode the image; it is written with the next batch."""
        sha = sha256_bytes(data)
        # An image already in the workspace was checked when it was stored.
        if sha not in self.shas and not catalog.has_image(self.ws, sha):
            try:
                mime, width, height = check_image(data)
            except ValueError as exc:
                raise err(str(exc)) from None
            self.pending_images.append((sha, data, mime, width, height))
            self.pending_bytes += len(data)
        self.shas.add(sha)
        return sha

    def _queue(self, row: SourceRow, shas: tuple[str, ...]) -> None:
        self.position += 1
        sha = shas[0] if shas else None
        self.pending_more.extend((self.position, n, more) for n, more in enumerate(shas[1:], start=1))
        self.pending.append(
            (
                self.position,
                row.index,
                row.question,
                row.hint,
                json.dumps(list(row.options), ensure_ascii=False),
                row.answer,
                row.category,
                row.l2_category,
                row.split,
                language_of(" ".join([row.question, row.hint or "", *row.options])),
                sha,
                0,
                json.dumps(row.meta, ensure_ascii=False, default=str),
            )
        )
        self.report.questions += 1
        if len(self.pending) >= _BATCH_ROWS or self.pending_bytes >= _BATCH_BYTES:
            self._flush()

    def _progress(self) -> None:
        self.emit(
            {
                "event": "progress",
                "rows": self.report.rows_read,
                "questions": self.report.questions,
                "skipped": len(self.report.skipped),
                "images_new": self.report.images_new,
                "bytes_read": self.raw.tell(),
                "bytes_total": self.size,
            }
        )

    def _flush(self) -> None:
        if self.pending or self.pending_images:
            self._progress()
        self.conn.commit()  # staged circular-copy updates, so that the batch below starts a transaction of its own
        if self.pending_images:
            # The only writes to the workspace before the end: one short transaction per batch of new images.
            self.conn.execute("BEGIN IMMEDIATE")
            for sha, data, mime, width, height in self.pending_images:
                if catalog.put_image(self.ws, sha256=sha, data=data, mime=mime, width=width, height=height):
                    self.stored.add(sha)
                    self.report.images_new += 1
            self.conn.commit()
            self.pending_images, self.pending_bytes = [], 0
        if self.pending:
            # The staging database is private to this connection: writing it locks nobody out.
            self.conn.executemany(
                f"INSERT INTO {_STAGE}.items ({_ITEM_FIELDS}) VALUES ({', '.join('?' * 13)})", self.pending
            )
            self.conn.executemany(f"INSERT INTO {_STAGE}.item_images VALUES (?, ?, ?)", self.pending_more)
            self.conn.commit()
            self.pending, self.pending_more = [], []

    def _fold_or_insert(self, row: SourceRow, sha: tuple[str, ...]) -> None:
        base_index = row.index % CIRCULAR_STRIDE
        if base_index in self.dropped:
            raise InputError(self.path, row.line, "index", f"circular copy of row {base_index}, which was skipped")
        original = self._staged(base_index)
        if original is None:
            # Not a copy after all: a benchmark whose indexes are simply large.
            self._queue(row, sha)
            return
        try:
            shift = copy_shift(original, row, sha)
        except _NotACopy as exc:
            raise InputError(self.path, row.line, exc.field, f"circular copy of row {base_index}: {exc.what}") from None
        # Kept in step (meta.copies, meta.copy_shifts) so an export can write the source's rows again exactly.
        meta = original.meta
        meta["copies"] = [*meta.get("copies", []), row.index]
        meta["copy_shifts"] = [*meta.get("copy_shifts", []), shift]
        self.conn.execute(
            f"UPDATE {_STAGE}.items SET circular_copies = circular_copies + 1, meta = ? WHERE id = ?",
            (json.dumps(meta, ensure_ascii=False), original.id),
        )
        self.report.rows_folded += 1

    def _staged(self, index: int | str) -> catalog.Item | None:
        row = self.conn.execute(
            f"SELECT id, 0, {_ITEM_FIELDS} FROM {_STAGE}.items WHERE source_index = ?", (index,)
        ).fetchone()
        if row is None:
            return None
        more = self.conn.execute(
            f"SELECT sha256 FROM {_STAGE}.item_images WHERE position = ? ORDER BY ord", (row[2],)
        ).fetchall()
        return replace(catalog.item_from_row(row), more_images=tuple(m[0] for m in more))

    def _open_kind(self, benchmark: dict[str, Any]) -> dict[str, Any]:
        """A multiple-choice file whose questions have no options is an open benchmark (the generic JSONL without
        `options`; its reader refuses files that mix the two)."""
        if (
            benchmark["kind"] != "mcq"
            or self.conn.execute(f"SELECT 1 FROM {_STAGE}.items WHERE options != '[]' LIMIT 1").fetchone()
        ):
            return benchmark
        self.report.kind = "open"
        return {**benchmark, "kind": "open"}

    def _publish(self, benchmark: dict[str, Any]) -> None:
        """The one transaction that makes the benchmark appear: a benchmark row and a copy of the staged items."""
        self.conn.commit()  # the staged circular-copy updates
        if self.report.questions == 0:
            what = (
                f"no row could be imported ({len(self.report.skipped)} skipped)"
                if self.report.rows_read
                else "no rows: an empty file, an empty JSON array or a header without rows"
            )
            raise InputError(self.path, 0, "rows", what)
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            # Checked again under the lock: another import may have taken the name or the file meanwhile.
            if catalog.benchmark_by_source(self.ws, benchmark["source_sha256"]) is not None:
                raise InputError(self.path, 0, "path", "the same file was imported by another process meanwhile")
            if catalog.benchmark_by_name(self.ws, benchmark["name"]) is not None:
                raise InputError(
                    self.path,
                    0,
                    "--name",
                    f"a different benchmark is already named {benchmark['name']!r}; choose another --name",
                )
            bench_id = catalog.insert_benchmark(self.ws, **benchmark)
            self.conn.execute(
                f"INSERT INTO main.items (benchmark_id, {_ITEM_FIELDS}) "
                f"SELECT ?, {_ITEM_FIELDS} FROM {_STAGE}.items ORDER BY position",
                (bench_id,),
            )
            # In the same transaction: an item appears with every image or not at all.
            self.conn.execute(
                "INSERT INTO main.item_images (item_id, ord, sha256) SELECT i.id, s.ord, s.sha256 "
                f"FROM {_STAGE}.item_images s CROSS JOIN main.items i "
                "ON i.benchmark_id = ? AND i.position = s.position",
                (bench_id,),
            )
            catalog.finish_benchmark(
                self.ws,
                bench_id,
                rows_read=self.report.rows_read,
                rows_folded=self.report.rows_folded,
                rows_skipped=len(self.report.skipped),
            )
            # Images stored for rows that were skipped later (--skip-bad) would be orphans.
            self.report.images_new -= self._delete_unused(self.stored)
            self.conn.commit()
        except sqlite3.IntegrityError:
            # An image found in the workspace when it was checked has gone since: another import that stored it
            # failed and removed it, or `vlmdesk check --repair` took it for an orphan.
            raise InputError(
                self.path,
                0,
                "image",
                "an image this import uses was removed meanwhile (another import "
                "failed, or check --repair ran); import the file again",
            ) from None

    def _delete_unused(self, shas: Iterable[str]) -> int:
        """Delete those of shas that no item uses; returns how many were deleted."""
        shas, deleted = list(shas), 0
        for i in range(0, len(shas), 500):
            chunk = shas[i : i + 500]
            deleted += self.conn.execute(
                f"DELETE FROM main.images WHERE sha256 IN ({', '.join('?' * len(chunk))}) "
                "AND NOT EXISTS (SELECT 1 FROM main.items WHERE items.image_sha256 = images.sha256) "
                "AND NOT EXISTS (SELECT 1 FROM main.item_images m WHERE m.sha256 = images.sha256)",
                chunk,
            ).rowcount
        return deleted

    def _undo(self) -> None:
        """After a failure or an interruption: nothing of this import may remain, neither its staged items (the
        staging database goes with DETACH) nor the images it stored, which nothing else uses yet."""
        if self.conn.in_transaction:
            self.conn.rollback()
        shas = list(self.stored)
        for i in range(0, len(shas), _BATCH_ROWS):  # short transactions again
            self.conn.execute("BEGIN IMMEDIATE")
            self._delete_unused(shas[i : i + _BATCH_ROWS])
            self.conn.commit()


class _NotACopy(Exception):
    def __init__(self, field: str, what: str):
        super().__init__(what)
        self.field, self.what = field, what


def copy_shift(original: catalog.Item, copy: SourceRow, copy_shas: tuple[str, ...]) -> int:
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
    if copy_shas != original.images:
        raise _NotACopy("image", "a different image than the original's")
    rotations = [k for k in range(n) if tuple(original.options[j] for j in rotation(n, k)) == copy.options]
    if not rotations:
        raise _NotACopy("A", "its options are not a rotation of the original's")
    if copy.answer is not None:
        # With repeated option texts several rotations may match; the answer key tells them apart.
        rotations = [k for k in rotations if displayed_answer(original.answer, rotation(n, k)) == copy.answer]
        if not rotations:
            meant = copy.options[LETTERS.index(copy.answer)]
            raise _NotACopy("answer", f"{copy.answer} ({meant!r}) is not the original answer {original.answer} rotated")
    used = dict(zip(original.meta.get("copy_shifts", []), original.meta.get("copies", [])))
    free = [k for k in rotations if k != 0 and k not in used]
    if not free:
        k = rotations[0]
        raise _NotACopy(
            "A",
            "its options are in the original's order, not rotated"
            if k == 0
            else f"repeats the rotation of row {used[k]}",
        )
    return free[0]
