"""The workspace file: pragmas, schema version and migrations, refusals, append-only reviews, image storage.

Every test opens a real SQLite file under tmp_path.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from dataclasses import fields
from pathlib import Path

import pytest
from sqlite_utils import Database

from db import SchemaError, catalog, default_workspace_path, open_workspace, schema
from db.errors import EnvironmentFault
from db.workspace import (
    APPLICATION_ID,
    BUSY_TIMEOUT_MS,
    ENV_VAR,
    DamagedWorkspace,
    ReadOnlyWorkspace,
    database_error,
)
from evaluator.formats.importers import import_benchmark
from tests.factories import mmbench_rows, png_bytes, write_tsv


def _raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(str(path))


def _add_item(ws, *, name="b", sha=None, index=1) -> int:
    """A benchmark with one item, written through the catalog functions; returns the item id."""
    with ws.db.atomic():
        bid = catalog.insert_benchmark(
            ws, name=name, kind="mcq", format="jsonl", source="x", source_sha256=name * 8, meta={}
        )
        if sha is not None:
            catalog.put_image(ws, sha256=sha, data=png_bytes(), mime="image/png", width=8, height=8)
        catalog.insert_items(ws, [(bid, 1, index, "Q?", None, '["a", "b"]', "A", None, None, None, "en", sha, 0, "{}")])
    return ws.conn.execute("SELECT id FROM items WHERE benchmark_id = ?", (bid,)).fetchone()[0]


# ------------------------------------------------------------------------------------------------ pragmas


def test_pragmas_on_a_real_file(tmp_path):
    path = tmp_path / "ws.sqlite"
    with open_workspace(path) as ws:
        assert ws.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert ws.conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert ws.conn.execute("PRAGMA busy_timeout").fetchone()[0] == BUSY_TIMEOUT_MS
        assert BUSY_TIMEOUT_MS >= 1000
    assert path.is_file()
    # WAL is a property of the file: another connection sees it too.
    with _raw(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_foreign_keys_are_enforced(tmp_path):
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        with pytest.raises(sqlite3.IntegrityError):
            with ws.db.atomic():
                catalog.insert_items(ws, [(999, 1, 1, "Q", None, "[]", None, None, None, None, "en", None, 0, "{}")])
        _add_item(ws, name="x", sha=None)
        with pytest.raises(sqlite3.IntegrityError):
            with ws.db.atomic():
                ws.conn.execute("UPDATE items SET image_sha256 = 'no-such-image'")
        assert ws.conn.execute("SELECT count(*) FROM items WHERE image_sha256 IS NOT NULL").fetchone()[0] == 0


def test_a_reader_is_not_blocked_by_an_open_write_transaction(tmp_path):
    path = tmp_path / "ws.sqlite"
    with open_workspace(path) as writer, open_workspace(path) as reader:
        _add_item(writer, name="first")
        writer.conn.execute("BEGIN IMMEDIATE")
        catalog.insert_benchmark(
            writer, name="second", kind="mcq", format="jsonl", source="x", source_sha256="s2", meta={}
        )
        # WAL: the reader sees the last committed state at once instead of waiting for the writer.
        assert [b.name for b in catalog.list_benchmarks(reader)] == ["first"]
        writer.conn.commit()
        assert [b.name for b in catalog.list_benchmarks(reader)] == ["first", "second"]


# ------------------------------------------------------------------------------------------- default path


def test_default_path_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "elsewhere.sqlite"))
    assert default_workspace_path() == tmp_path / "elsewhere.sqlite"


def test_default_path_is_the_user_data_dir_without_the_environment(monkeypatch):
    from platformdirs import user_data_path

    monkeypatch.delenv(ENV_VAR, raising=False)
    path = default_workspace_path()
    assert path.parent == user_data_path("vlmdesk", appauthor=False)
    assert path.suffix == ".sqlite"


# ------------------------------------------------------------------------------------ version, migrations


def test_schema_version_is_the_number_of_migrations(tmp_path):
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        names = schema.migration_names()
        assert len(names) >= 1 and schema.latest_version() == len(names)
        assert ws.schema_version() == len(names)
        applied = [r["name"] for r in ws.db["_sqlite_migrations"].rows_where(order_by="rowid")]
        assert applied == names
    with _raw(tmp_path / "ws.sqlite") as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(names)


def test_reopening_changes_nothing(tmp_path):
    path = tmp_path / "ws.sqlite"
    with open_workspace(path) as ws:
        _add_item(ws)
        before = list(ws.conn.execute("SELECT * FROM _sqlite_migrations"))
    with open_workspace(path) as ws:
        assert list(ws.conn.execute("SELECT * FROM _sqlite_migrations")) == before
        assert ws.conn.execute("SELECT count(*) FROM items").fetchone()[0] == 1


def test_a_newer_workspace_is_refused(tmp_path):
    path = tmp_path / "ws.sqlite"
    with open_workspace(path) as ws:
        _add_item(ws)
    newer = schema.latest_version() + 1
    with _raw(path) as conn:
        conn.execute(f"PRAGMA user_version = {newer}")
    with pytest.raises(SchemaError, match="newer"):
        open_workspace(path)
    # Refusing does not touch the file's version or data.
    with _raw(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == newer
        assert conn.execute("SELECT count(*) FROM items").fetchone()[0] == 1


def test_a_foreign_sqlite_file_is_refused(tmp_path):
    path = tmp_path / "other.sqlite"
    with _raw(path) as conn:
        conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        conn.execute("INSERT INTO notes (body) VALUES ('mine')")
    with pytest.raises(SchemaError, match="not a vlmdesk workspace"):
        open_workspace(path)
    with _raw(path) as conn:
        assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")] == ["notes"]


def test_a_file_that_is_not_sqlite_is_refused(tmp_path):
    path = tmp_path / "junk.sqlite"
    path.write_bytes(b"this is not a database, just text " * 200)
    before = path.read_bytes()
    with pytest.raises(SchemaError):
        open_workspace(path)
    assert path.read_bytes() == before


def test_missing_file_without_create_is_refused(tmp_path):
    with pytest.raises(SchemaError, match="no such workspace"):
        open_workspace(tmp_path / "absent.sqlite", create=False)
    assert not (tmp_path / "absent.sqlite").exists()


def test_an_empty_file_becomes_a_workspace(tmp_path):
    path = tmp_path / "empty.sqlite"
    path.touch()
    with open_workspace(path) as ws:
        assert ws.schema_version() == schema.latest_version()


def _old_workspace(path: Path) -> int:
    """A workspace as the previous vlmdesk left it: all migrations but the last, user_version to match."""
    names = schema.migration_names()
    db = Database(str(path))
    schema.migrations.apply(db, stop_before=names[-1])
    old = len(schema.migrations.applied(db))
    db.execute(f"PRAGMA user_version = {old}")
    db.conn.commit()
    db.close()
    return old


@pytest.mark.skipif(
    len(schema.migration_names()) < 2,
    reason="only one migration exists, so there is no older schema to upgrade from yet",
)
def test_an_older_workspace_is_upgraded_with_its_data_intact(tmp_path):
    path = tmp_path / "old.sqlite"
    old = _old_workspace(path)
    assert old == schema.latest_version() - 1
    png = png_bytes()
    sha = hashlib.sha256(png).hexdigest()
    # Data written with the oldest schema's columns only (migration 0001).
    with _raw(path) as conn:
        conn.execute(
            "INSERT INTO images (sha256, data, mime, width, height, bytes) VALUES (?, ?, 'image/png', 8, 8, ?)",
            (sha, png, len(png)),
        )
        conn.execute(
            "INSERT INTO benchmarks (id, name, kind, format, source, source_sha256, rows_read, imported_at) "
            "VALUES (1, 'old', 'mcq', 'jsonl', 'old.jsonl', 'abc', 1, '2024-01-01')"
        )
        conn.execute(
            "INSERT INTO items (id, benchmark_id, position, source_index, question, options, answer, "
            "image_sha256) VALUES (1, 1, 1, 7, 'Old question?', '[\"x\", \"y\"]', 'B', ?)",
            (sha,),
        )
        conn.execute("INSERT INTO reviews (item_id, annotator, verdict, created_at) VALUES (1, 'ann', 'ok', 'now')")
    with pytest.raises(SchemaError, match="needs upgrading"):
        open_workspace(path, upgrade=False)
    with open_workspace(path) as ws:
        assert ws.schema_version() == schema.latest_version()
        assert [m.name for m in schema.migrations.applied(ws.db)] == schema.migration_names()
        bench = catalog.benchmark_by_name(ws, "old")
        assert bench is not None and bench.questions == 1 and bench.images == 1
        (item,) = catalog.list_items(ws, bench.id)
        assert (item.index, item.question, item.options, item.answer) == (7, "Old question?", ("x", "y"), "B")
        assert catalog.image_bytes(ws, sha) == (png, "image/png")
        assert ws.conn.execute("SELECT annotator, verdict FROM reviews").fetchall() == [("ann", "ok")]


def test_upgrade_false_refuses_an_older_workspace(tmp_path):
    # Version 0 (a fresh file) is "older" than any release; without upgrade it is refused and left empty.
    path = tmp_path / "ws.sqlite"
    Database(str(path)).close()
    path.touch()
    with pytest.raises(SchemaError, match="needs upgrading"):
        open_workspace(path, upgrade=False)


# ---------------------------------------------------------------------------------------- reviews, images


def test_reviews_are_append_only(tmp_path):
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        item_id = _add_item(ws)
        with ws.db.atomic():
            for verdict in ("ok", "ambiguous"):
                ws.conn.execute(
                    "INSERT INTO reviews (item_id, annotator, verdict, created_at) VALUES (?, 'a', ?, ?)",
                    (item_id, verdict, catalog.now_iso()),
                )
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            ws.conn.execute("UPDATE reviews SET verdict = 'ok' WHERE verdict = 'ambiguous'")
        ws.conn.rollback()
        assert [r[0] for r in ws.conn.execute("SELECT verdict FROM reviews ORDER BY id")] == ["ok", "ambiguous"]


def _two_tsvs_sharing_images(tmp_path):
    rows = list(mmbench_rows(5, seed=3))
    a = write_tsv(tmp_path / "first.tsv", rows)
    # Same images, different questions (so a different file and a different benchmark).
    b = write_tsv(tmp_path / "second.tsv", [dict(r, question=r["question"] + " (again)") for r in rows])
    return a, b


def test_images_are_stored_once_across_benchmarks(tmp_path):
    a, b = _two_tsvs_sharing_images(tmp_path)
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        first = import_benchmark(ws, a)
        second = import_benchmark(ws, b)
        assert first.images == first.images_new == 5
        assert second.images == 5 and second.images_new == 0
        assert ws.conn.execute("SELECT count(*) FROM images").fetchone()[0] == 5
        shas = {i.image_sha256 for bench in catalog.list_benchmarks(ws) for i in catalog.list_items(ws, bench.id)}
        assert len(shas) == 5
        # Content addressing: the key is the SHA-256 of the stored bytes.
        for sha, data in ws.conn.execute("SELECT sha256, data FROM images"):
            assert hashlib.sha256(data).hexdigest() == sha


def test_listing_queries_never_carry_image_bytes(tmp_path):
    a, _ = _two_tsvs_sharing_images(tmp_path)
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        import_benchmark(ws, a)
        statements: list[str] = []
        ws.conn.set_trace_callback(statements.append)
        try:
            benches = catalog.list_benchmarks(ws)
            items = catalog.list_items(ws, benches[0].id)
            one = catalog.item_by_index(ws, benches[0].id, 0)
        finally:
            ws.conn.set_trace_callback(None)
    assert len(items) == 5 and one is not None
    assert statements, "the trace callback saw no SQL"
    for sql in statements:
        # No listing reads the images table, and none selects a `data` column (the only BLOB).
        assert not re.search(r"\b(from|join)\s+images\b", sql, re.IGNORECASE), sql
        assert not re.search(r"\bdata\b", sql, re.IGNORECASE), sql

    def values(obj):
        for f in fields(obj):
            v = getattr(obj, f.name)
            yield from (v.values() if isinstance(v, dict) else v if isinstance(v, tuple) else [v])

    for obj in [*benches, *items, one]:
        assert not any(isinstance(v, (bytes, bytearray, memoryview)) for v in values(obj)), obj
        assert all(len(str(v)) < 1000 for v in values(obj)), "a base64 image leaked into a listed row"


def test_a_migration_failing_half_way_leaves_nothing_behind(tmp_path):
    from db.schema import _script

    ws = open_workspace(tmp_path / "half.sqlite")
    try:
        with pytest.raises(sqlite3.OperationalError):
            with ws.db.atomic():
                _script(ws.db, "CREATE TABLE first_half (x INTEGER);\nCREATE TABLE broken (;\n")
        assert "first_half" not in ws.db.table_names()
    finally:
        ws.close()


def test_a_foreign_file_with_a_migrations_table_is_refused(tmp_path):
    path = tmp_path / "other-app.sqlite"
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE _sqlite_migrations (id INTEGER PRIMARY KEY, migration_set TEXT, name TEXT, applied_at TEXT)"
    )
    conn.execute("INSERT INTO _sqlite_migrations (migration_set, name, applied_at) VALUES ('other', 'm1', 'now')")
    conn.commit()
    conn.close()
    with pytest.raises(SchemaError, match="not a vlmdesk workspace"):
        open_workspace(path)


# ----------------------------------------------------------------- identity: refusing before any write


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _companions(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir() if p.name.startswith(path.name) and p != path)


def _workspace_with_item(path: Path) -> Path:
    with open_workspace(path) as ws:
        _add_item(ws, sha=hashlib.sha256(png_bytes()).hexdigest())
    assert _companions(path) == []  # closing the last connection checkpoints and removes -wal/-shm
    return path


def test_a_new_workspace_carries_the_vlmdesk_application_id(tmp_path):
    path = _workspace_with_item(tmp_path / "ws.sqlite")
    assert path.read_bytes()[68:72] == b"VLMD"
    with _raw(path) as conn:
        assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID == int.from_bytes(b"VLMD", "big")
    assert "0008_workspace_identity" in schema.migration_names()


@pytest.mark.parametrize("journal", ["delete", "wal"])
def test_a_foreign_sqlite_file_keeps_every_byte(tmp_path, journal):
    path = tmp_path / "other.sqlite"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA journal_mode = {journal}")
    conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    conn.execute("INSERT INTO notes (body) VALUES ('mine')")
    conn.commit()
    conn.close()
    before = _sha(path)
    with pytest.raises(SchemaError, match="not a vlmdesk workspace.*notes"):
        open_workspace(path)
    assert _sha(path) == before and _companions(path) == []


def test_another_applications_file_is_refused_from_its_header(tmp_path):
    path = tmp_path / "other.sqlite"
    with _raw(path) as conn:
        conn.execute("PRAGMA application_id = 1234")
        conn.execute("CREATE TABLE _sqlite_migrations (migration_set TEXT, name TEXT)")
        conn.execute("INSERT INTO _sqlite_migrations VALUES ('vlmdesk', '0001')")  # even if it looks like ours
    conn.close()
    before = _sha(path)
    with pytest.raises(SchemaError, match="another application"):
        open_workspace(path)
    assert _sha(path) == before and _companions(path) == []


def test_a_non_sqlite_file_keeps_every_byte(tmp_path):
    path = tmp_path / "notes.sqlite"
    path.write_bytes(b"SQLite is mentioned, but this is a text file\n" * 100)
    before = _sha(path)
    with pytest.raises(SchemaError, match="not a SQLite database"):
        open_workspace(path)
    assert _sha(path) == before and _companions(path) == []


def test_a_newer_workspace_keeps_every_byte(tmp_path):
    path = _workspace_with_item(tmp_path / "ws.sqlite")
    with _raw(path) as conn:
        conn.execute(f"PRAGMA user_version = {schema.latest_version() + 1}")
    conn.close()
    before = _sha(path)
    for read_only in (False, True):
        with pytest.raises(SchemaError, match="newer than this vlmdesk"):
            open_workspace(path, read_only=read_only)
    assert _sha(path) == before and _companions(path) == []


def test_a_workspace_from_before_the_identity_is_upgraded(tmp_path):
    # The previous release's files: our migrations table, application_id 0.
    path = tmp_path / "old.sqlite"
    db = Database(str(path))
    schema.migrations.apply(db, stop_before="0008_workspace_identity")
    db.execute(f"PRAGMA user_version = {len(schema.migrations.applied(db))}")
    db.conn.commit()
    db.close()
    assert path.read_bytes()[68:72] == b"\0\0\0\0"
    with open_workspace(path) as ws:
        assert ws.schema_version() == schema.latest_version()
    assert path.read_bytes()[68:72] == b"VLMD"


# --------------------------------------------------------------------------------------------- damage


def test_a_truncated_workspace_is_refused_naming_the_way_out(tmp_path):
    path = _workspace_with_item(tmp_path / "ws.sqlite")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    before = _sha(path)
    with pytest.raises(DamagedWorkspace) as caught:
        open_workspace(path)
    message = str(caught.value)
    assert str(path) in message and "truncated" in message and "\n" not in message
    assert "vlmdesk check" in message and ".recover" in message
    assert _sha(path) == before and _companions(path) == []


def test_a_sqlite_file_cut_inside_its_header_is_damaged_not_foreign(tmp_path):
    path = _workspace_with_item(tmp_path / "ws.sqlite")
    path.write_bytes(path.read_bytes()[:40])
    with pytest.raises(DamagedWorkspace, match="truncated to 40 bytes"):
        open_workspace(path)


def _table_root_page(path: Path, table: str) -> tuple[int, int]:
    with _raw(path) as conn:
        root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    return root, page_size


def garble_page(path: Path, table: str) -> None:
    """Overwrite the first bytes of a table's root page with garbage, as a failing disk would."""
    root, page_size = _table_root_page(path, table)
    with open(path, "r+b") as f:
        f.seek((root - 1) * page_size)
        f.write(bytes(range(7, 250)))


def test_a_damaged_page_is_worded_as_damage(tmp_path):
    path = _workspace_with_item(tmp_path / "ws.sqlite")
    garble_page(path, "items")
    with open_workspace(path) as ws:
        with pytest.raises(sqlite3.DatabaseError) as caught:
            ws.conn.execute("SELECT question FROM items").fetchall()
    error = database_error(path, caught.value)
    assert isinstance(error, DamagedWorkspace)
    assert str(path) in str(error) and ".recover" in str(error) and "vlmdesk check" in str(error)


# ------------------------------------------------------------------------------------------- read-only


def test_read_only_opening_reads_and_refuses_writes(tmp_path):
    path = _workspace_with_item(tmp_path / "ws.sqlite")
    before = _sha(path)
    with open_workspace(path, read_only=True) as ws:
        assert ws.read_only
        # Reads work, through a mode=ro connection that SQLite itself keeps from writing.
        assert [b.name for b in catalog.list_benchmarks(ws)] == ["b"]
        with pytest.raises(sqlite3.OperationalError) as caught:
            with ws.db.atomic():
                catalog.insert_benchmark(
                    ws, name="new", kind="mcq", format="jsonl", source="x", source_sha256="n" * 8, meta={}
                )
    error = database_error(path, caught.value)
    assert isinstance(error, ReadOnlyWorkspace) and str(error) == f"{path}: workspace is read-only"
    assert _sha(path) == before


def test_read_only_opening_never_upgrades(tmp_path):
    path = tmp_path / "old.sqlite"
    _old_workspace(path)
    before = _sha(path)
    with pytest.raises(SchemaError, match="needs upgrading.*read-only"):
        open_workspace(path, read_only=True)
    with pytest.raises(SchemaError, match="no such workspace"):
        open_workspace(tmp_path / "absent.sqlite", read_only=True)
    assert _sha(path) == before and not (tmp_path / "absent.sqlite").exists()


# ------------------------------------------------------------------------------------------ disk faults


def test_a_full_disk_is_a_full_disk_not_a_foreign_file(tmp_path):
    path = _workspace_with_item(tmp_path / "ws.sqlite")
    with open_workspace(path) as ws:
        # SQLite's own page limit raises the very error a full disk does (SQLITE_FULL).
        pages = ws.conn.execute("PRAGMA page_count").fetchone()[0]
        ws.conn.execute(f"PRAGMA max_page_count = {pages}")
        with pytest.raises(sqlite3.OperationalError) as caught:
            with ws.db.atomic():
                catalog.put_image(ws, sha256="f" * 64, data=bytes(200_000), mime="image/png", width=8, height=8)
    error = database_error(path, caught.value)
    assert isinstance(error, EnvironmentFault)
    assert "disk is full" in str(error) and "not a" not in str(error)
    with open_workspace(path) as ws:  # the failed transaction left nothing behind
        assert ws.conn.execute("SELECT count(*) FROM images").fetchone()[0] == 1


def test_sqlite_errors_that_are_not_about_the_file_are_not_worded_as_such(tmp_path):
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        with pytest.raises(sqlite3.OperationalError) as caught:
            ws.conn.execute("SELECT * FROM no_such_table")
    assert database_error(ws.path, caught.value) is None  # a bug: reported as an internal error


# ------------------------------------------------------------- damaged, not foreign; nothing created beside a file


def zero_page_after_header(path: Path, name: str) -> None:
    """Zero a b-tree page (a table's or an index's root) after its 8-byte page header: its cells point nowhere, and
    SQLite reads the page as empty instead of failing."""
    root, page_size = _table_root_page(path, name)
    with open(path, "r+b") as f:
        f.seek((root - 1) * page_size + 8)
        f.write(bytes(page_size - 8))


@pytest.mark.parametrize("marked", [True, False], ids=["application-id", "before-0008"])
def test_a_workspace_whose_migration_record_is_unreadable_is_damaged_not_foreign(tmp_path, marked):
    path = _workspace_with_item(tmp_path / "ws.sqlite")
    if not marked:  # a workspace from before the identity: only its tables say it is ours
        with _raw(path) as conn:
            conn.execute("PRAGMA application_id = 0")
        conn.close()
    zero_page_after_header(path, "idx__sqlite_migrations_migration_set_name")
    before = _sha(path)
    with pytest.raises(DamagedWorkspace) as caught:
        open_workspace(path)
    message = str(caught.value)
    assert "not a vlmdesk workspace" not in message and "damaged" in message
    assert "vlmdesk check" in message and ".recover" in message
    with pytest.raises(DamagedWorkspace, match="its record of migrations cannot be read"):
        open_workspace(path, read_only=True)
    assert _sha(path) == before and _companions(path) == []


def _foreign_wal_file_without_shm(folder: Path) -> Path:
    """A foreign SQLite file in WAL mode whose tables are still only in its -wal (its -shm lost, as when the two
    files are copied without it)."""
    src = folder / "src"
    src.mkdir()
    conn = sqlite3.connect(src / "f.sqlite")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("CREATE TABLE notes (x)")
    conn.execute("INSERT INTO notes VALUES ('kept')")
    conn.commit()
    path = folder / "f.sqlite"
    for suffix in ("", "-wal"):  # copied while the writer still holds it open: no checkpoint has run
        path.with_name(path.name + suffix).write_bytes((src / f"f.sqlite{suffix}").read_bytes())
    conn.close()
    assert _companions(path) == ["f.sqlite-wal"] and Path(f"{path}-wal").stat().st_size > 0
    return path


def test_a_foreign_wal_file_without_its_shm_is_refused_creating_nothing(tmp_path):
    path = _foreign_wal_file_without_shm(tmp_path)
    before = {p.name: _sha(p) for p in tmp_path.iterdir() if p.is_file()}
    with pytest.raises(SchemaError, match=r"not a vlmdesk workspace \(tables: notes\)"):
        open_workspace(path)
    assert {p.name: _sha(p) for p in tmp_path.iterdir() if p.is_file()} == before


def test_read_only_opening_creates_no_companion_files(tmp_path):
    path = _workspace_with_item(tmp_path / "ws.sqlite")
    before = _sha(path)
    with open_workspace(path, read_only=True) as ws:
        assert ws.read_only and ws.conn.execute("SELECT count(*) FROM items").fetchone()[0] == 1
        assert _companions(path) == []
    assert _companions(path) == [] and _sha(path) == before


PROBED = ["benchmarks", "items", "runs", "predictions", "reviews", "items_benchmark_position"]


@pytest.mark.parametrize("name", PROBED)
def test_probe_finds_a_damaged_page_the_views_would_read(tmp_path, name):
    from vlmdesk.cli import main
    from vlmdesk.demo import ensure_demo

    path = tmp_path / "ws.sqlite"
    with open_workspace(path) as ws:
        ensure_demo(ws)
    assert main(["--workspace", str(path), "run", "--bench", "demo", "--model", "baseline:first"]) == 0
    with open_workspace(path) as ws:
        ws.conn.execute(
            "INSERT INTO reviews (item_id, annotator, verdict, created_at) SELECT min(id), 'ann', 'ok', 'x' FROM items"
        )
        ws.conn.commit()
    with open_workspace(path, probe=True) as ws:  # a healthy workspace passes
        assert not ws.read_only
    garble_page(path, name)
    with open_workspace(path) as ws:  # opening alone reads no table: the damage is not seen yet
        pass
    before = _sha(path)
    with pytest.raises(DamagedWorkspace, match="vlmdesk check"):
        open_workspace(path, probe=True)
    with pytest.raises(DamagedWorkspace, match="vlmdesk check"):
        open_workspace(path, probe=True, read_only=True)
    assert _sha(path) == before


# --------------------------------------------------------------------------------- locks of a process's connections


_OTHER_PROCESS_READS_AND_CLOSES = (
    "import sqlite3, sys\n"
    "c = sqlite3.connect(sys.argv[1]); c.execute('SELECT count(*) FROM benchmarks').fetchone(); c.close()\n"
)


def test_opening_a_workspace_again_keeps_the_locks_of_the_open_one(tmp_path):
    """POSIX locks belong to the process: a raw open+close of the file (the header check) would drop those of the
    connection already open here, and another process closing last would delete the -wal it writes into, losing its
    later commits (found by walking the app: File › New, then back to the same workspace)."""
    import subprocess
    import sys

    from evaluator.formats.outfiles import OutputRefused, check_output

    path = tmp_path / "ws.sqlite"
    first = open_workspace(path)
    first.conn.execute("INSERT INTO models (name, spec, created_at) VALUES ('m', 'baseline:first', 'now')")
    first.conn.commit()
    again = open_workspace(path)  # e.g. the app switching back to the file, or a second view of it
    again.close()
    with pytest.raises(OutputRefused):  # an export aimed at the open workspace is refused without opening it raw
        check_output(path)
    subprocess.run([sys.executable, "-c", _OTHER_PROCESS_READS_AND_CLOSES, str(path)], check=True, timeout=60)
    assert Path(f"{path}-wal").exists(), "another process deleted the -wal of an open workspace"
    first.conn.execute("INSERT INTO models (name, spec, created_at) VALUES ('n', 'baseline:first', 'now')")
    first.conn.commit()
    first.close()
    with open_workspace(path) as ws:
        assert [r[0] for r in ws.conn.execute("SELECT name FROM models ORDER BY name")] == ["m", "n"]
