"""`vlmdesk check [--repair] [--json]` on real workspace files: healthy, a broken search index, orphan images, damaged
pages, a truncated file, an older schema, a foreign file."""

from __future__ import annotations

import json
import sqlite3

import pytest

from db import catalog, item_query, open_workspace, schema
from db.check import CHECKS, check_workspace
from tests.db.test_workspace import garble_page
from tests.factories import mmbench_rows, write_tsv
from tests.test_errors import demo_path, one_line_error, sha, vlmdesk  # noqa: F401 (demo_path is a fixture)


def check(path, *args):
    proc = vlmdesk("--workspace", str(path), "check", *args)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def check_json(path, *args) -> tuple[int, dict]:
    proc = check(path, "--json", *args)
    return proc.returncode, json.loads(proc.stdout)


def by_name(report: dict) -> dict:
    return {c["name"]: c for c in report["checks"]}


def _break_search_index(path) -> int:
    """An index entry for an item that does not exist, and a real item's text missing from the index (its id)."""
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO item_search (rowid, question, hint, options) VALUES (999999, 'ghost', NULL, '[]')")
        row = conn.execute(
            "SELECT id, question, hint, options FROM items WHERE question LIKE '%cat%' LIMIT 1"
        ).fetchone()
        conn.execute(
            "INSERT INTO item_search (item_search, rowid, question, hint, options) VALUES ('delete', ?, ?, ?, ?)", row
        )
    conn.close()
    return row[0]


def _add_orphan_images(path, n=2) -> None:
    with sqlite3.connect(path) as conn:
        for i in range(n):
            conn.execute(
                "INSERT INTO images (sha256, data, mime, width, height, bytes) VALUES (?, ?, 'image/png', 1, 1, ?)",
                (f"{i:064x}", bytes(1000), 1000),
            )
    conn.close()


def test_a_healthy_workspace_passes_and_is_not_written(demo_path):
    before = sha(demo_path)
    code, report = check_json(demo_path)
    assert code == 0 and report["healthy"] is True and report["read_only"] is False
    assert [c["name"] for c in report["checks"]] == [c.name for c in CHECKS]
    assert all(c["ok"] and not c["problems"] for c in report["checks"])
    proc = check(demo_path)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("healthy")
    assert sha(demo_path) == before


def test_a_broken_search_index_and_orphan_images_are_found_and_repaired(demo_path):
    with open_workspace(demo_path) as ws:
        images_before = ws.conn.execute("SELECT count(*) FROM images").fetchone()[0]
    lost = _break_search_index(demo_path)
    _add_orphan_images(demo_path, 2)
    with open_workspace(demo_path) as ws:
        bench = catalog.benchmark_by_name(ws, "demo")
        items_before = ws.conn.execute("SELECT count(*) FROM items").fetchone()[0]
        assert lost not in {r.id for r in item_query.item_page(ws, bench.id, item_query.ItemFilter(text="cat"))}
    before = sha(demo_path)

    code, report = check_json(demo_path)
    checks = by_name(report)
    assert code == 1 and report["healthy"] is False
    assert not checks["search_index"]["ok"] and "does not match" in checks["search_index"]["problems"][0]
    assert checks["orphan_images"]["problems"] == ["2 image(s) (0.0 MB) used by no item"]
    assert checks["integrity"]["ok"] and checks["foreign_keys"]["ok"] and checks["schema"]["ok"]
    assert sha(demo_path) == before  # looking wrote nothing

    proc = check(demo_path, "--repair")
    assert proc.returncode == 0, proc.stdout
    assert "repaired: rebuilt the search index over 86 items" in proc.stdout
    assert "repaired: deleted 2 image(s) used by no item" in proc.stdout
    assert proc.stdout.strip().endswith("healthy")

    code, report = check_json(demo_path)
    assert code == 0 and report["healthy"]
    with open_workspace(demo_path) as ws:
        assert ws.conn.execute("SELECT count(*) FROM images").fetchone()[0] == images_before
        assert ws.conn.execute("SELECT count(*) FROM items").fetchone()[0] == items_before
        # Search finds again the item whose text had gone missing from the index.
        assert lost in {r.id for r in item_query.item_page(ws, bench.id, item_query.ItemFilter(text="cat"))}


def test_a_damaged_page_is_reported_and_never_written_by_repair(demo_path):
    garble_page(demo_path, "items")
    before = sha(demo_path)
    code, report = check_json(demo_path)
    integrity = by_name(report)["integrity"]
    assert code == 1 and not integrity["ok"]
    assert any(".recover" in p for p in integrity["problems"])
    proc = check(demo_path, "--repair")
    assert proc.returncode == 1
    assert "not repaired: the file is damaged; recover it first" in proc.stdout
    assert sha(demo_path) == before


def test_a_truncated_file_is_reported(demo_path):
    demo_path.write_bytes(demo_path.read_bytes()[: demo_path.stat().st_size // 2])
    before = sha(demo_path)
    code, report = check_json(demo_path, "--repair")
    integrity = by_name(report)["integrity"]
    assert code == 1 and integrity["problems"][0].startswith("the file is damaged: truncated:")
    assert sha(demo_path) == before


def test_an_older_schema_is_reported_then_upgraded_by_repair(tmp_path):
    from sqlite_utils import Database

    path = tmp_path / "old.sqlite"
    db = Database(str(path))
    schema.migrations.apply(db, stop_before="0008_workspace_identity")
    old = len(schema.migrations.applied(db))
    db.execute(f"PRAGMA user_version = {old}")
    db.conn.commit()
    db.close()
    before = sha(path)
    code, report = check_json(path)
    assert code == 1 and by_name(report)["schema"]["problems"][0].startswith(f"schema version {old};")
    assert sha(path) == before  # reported, not upgraded
    code, report = check_json(path, "--repair")
    assert code == 0 and by_name(report)["schema"]["repaired"] == [
        f"upgraded the schema from version {old} to {schema.latest_version()}"
    ]
    assert path.read_bytes()[68:72] == b"VLMD"


@pytest.mark.parametrize("repair", [[], ["--repair"]])
def test_a_foreign_file_is_refused_untouched(tmp_path, repair):
    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE notes (x)")
    conn.close()
    before = sha(path)
    proc = check(path, *repair)
    assert proc.returncode == 2 and "not a vlmdesk workspace" in one_line_error(proc)
    assert sha(path) == before and sorted(p.name for p in tmp_path.iterdir()) == ["other.sqlite"]


def test_repair_and_read_only_do_not_mix(demo_path):
    proc = vlmdesk("--workspace", str(demo_path), "--read-only", "check", "--repair")
    assert proc.returncode == 2 and "--read-only" in one_line_error(proc)


def test_checks_are_named_entries_each_with_an_optional_repair(demo_path):
    # Adding a check is one entry: the runner reports it by name and calls its repair only when it found problems.
    import db.check as check_module

    calls = []
    extra = check_module.Check(
        "always_one",
        "a check that finds one problem",
        lambda ws: ["one"] if not calls else [],
        lambda ws: calls.append("repaired") or "fixed it",
    )
    original = check_module.CHECKS
    check_module.CHECKS = (*original, extra)
    try:
        report = check_workspace(demo_path, repair=True)
    finally:
        check_module.CHECKS = original
    result = {r.name: r for r in report.results}["always_one"]
    assert calls == ["repaired"] and result.repaired == ["fixed it"] and result.ok and report.healthy


def test_references_to_missing_rows_are_reported_and_kept(demo_path):
    with sqlite3.connect(demo_path) as conn:  # foreign keys are off on a plain connection, as in a foreign tool
        conn.execute("INSERT INTO reviews (item_id, annotator, verdict, created_at) VALUES (987654, 'ann', 'ok', 'x')")
    conn.close()
    code, report = check_json(demo_path, "--repair")
    assert code == 1
    assert by_name(report)["foreign_keys"]["problems"] == ["reviews row 1 refers to a missing row of items"]
    with sqlite3.connect(demo_path) as conn:  # nothing a person made is deleted
        assert conn.execute("SELECT count(*) FROM reviews WHERE item_id = 987654").fetchone()[0] == 1
    conn.close()


def test_a_running_run_whose_process_is_gone_is_marked_interrupted(demo_path):
    with sqlite3.connect(demo_path) as conn:  # as a SIGKILLed run leaves it: running, owned by a dead pid
        conn.execute(
            "UPDATE runs SET status = 'running', owner_host = 'elsewhere', owner_pid = 1, owner_token = 't', "
            "owner_since = '2020-01-01T00:00:00+00:00', heartbeat_at = '2020-01-01T00:00:00+00:00'"
        )
    conn.close()
    code, report = check_json(demo_path)
    assert code == 1 and by_name(report)["dead_runs"]["problems"] == [
        "run 1 (baseline:first) is stored as running, but its process is gone"
    ]
    code, report = check_json(demo_path, "--repair")
    assert code == 0 and by_name(report)["dead_runs"]["repaired"] == ["marked 1 run(s) interrupted: 1"]
    with sqlite3.connect(demo_path) as conn:
        assert conn.execute("SELECT status FROM runs").fetchone()[0] == "interrupted"
    conn.close()


# ------------------------------------------------------------------------------ a broken or missing search index


def _search_schema(path) -> dict:
    names = [name for _, name in schema.search_index_objects()]
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            f"SELECT name, type, sql FROM sqlite_master WHERE name IN ({','.join('?' * len(names))})", names
        ).fetchall()
    conn.close()
    return {name: (kind, sql) for name, kind, sql in rows}


def _search(path, text: str) -> list[int]:
    with open_workspace(path) as ws:
        bench = catalog.benchmark_by_name(ws, "demo")
        return [r.id for r in item_query.item_page(ws, bench.id, item_query.ItemFilter(text=text))]


BREAK_SEARCH = {
    "data emptied": "DELETE FROM item_search_data",
    "config emptied": "DELETE FROM item_search_config",
    "table dropped": "DROP TABLE item_search",
    "trigger dropped": "DROP TRIGGER item_search_ai",
    "view dropped": "DROP VIEW item_search_texts",
}


@pytest.mark.parametrize("how", sorted(BREAK_SEARCH))
def test_a_broken_or_missing_search_index_is_found_and_rebuilt_from_its_one_definition(demo_path, tmp_path, how):
    fresh = _search_schema(demo_path)
    assert {kind for kind, _ in fresh.values()} == {"view", "table", "trigger"} and len(fresh) == 6
    found_before = _search(demo_path, "cat")
    assert found_before
    with sqlite3.connect(demo_path) as conn:
        conn.execute(BREAK_SEARCH[how])
    conn.close()
    code, report = check_json(demo_path)
    assert code == 1 and not by_name(report)["search_index"]["ok"], report
    # An import on the broken file is one line that names the way out (not an internal error).
    tsv = write_tsv(tmp_path / "new.tsv", list(mmbench_rows(3, seed=5)))
    proc = vlmdesk("--workspace", str(demo_path), "import", str(tsv))
    if proc.returncode != 0:
        assert proc.returncode == 2 and "vlmdesk check" in one_line_error(proc), proc.stderr

    proc = check(demo_path, "--repair")
    assert proc.returncode == 0, proc.stdout
    assert "repaired: rebuilt the search index over" in proc.stdout and "failed" not in proc.stdout
    assert _search_schema(demo_path) == fresh  # the same view, table and triggers as a new workspace's
    proc = vlmdesk("--workspace", str(demo_path), "import", str(tsv), "--name", "after-repair")
    assert proc.returncode == 0, proc.stderr
    assert _search(demo_path, "cat") == found_before
    with open_workspace(demo_path) as ws:
        assert (
            ws.conn.execute("SELECT count(*) FROM item_search").fetchone()[0]
            == ws.conn.execute("SELECT count(*) FROM items").fetchone()[0]
        )
    code, report = check_json(demo_path)
    assert code == 0 and report["healthy"], report


def test_rescoring_a_run_whose_items_are_gone_is_one_line_naming_check(demo_path):
    with sqlite3.connect(demo_path) as conn:  # written by another tool with foreign keys off
        gone = conn.execute("SELECT DISTINCT item_id FROM predictions WHERE run_id = 1 LIMIT 2").fetchall()
        conn.executemany("DELETE FROM items WHERE id = ?", gone)
    conn.close()
    code, report = check_json(demo_path)
    assert code == 1 and any("predictions row" in p for p in by_name(report)["foreign_keys"]["problems"])
    proc = vlmdesk("--workspace", str(demo_path), "rescore", "1", "--extractor", "rules")
    line = one_line_error(proc)
    assert proc.returncode == 2 and "2 item(s)" in line and "vlmdesk check" in line, line


def test_every_problem_line_of_a_damaged_file_is_indented_under_its_check(demo_path):
    from tests.db.test_workspace import zero_page_after_header

    zero_page_after_header(demo_path, "idx__sqlite_migrations_migration_set_name")
    proc = check(demo_path)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("workspace ") and "found problems" in lines[-1]
    body = lines[1:-1]
    assert any("*** in database main ***" in line for line in body)
    assert all(line.startswith("  ") for line in body), proc.stdout
    code, report = check_json(demo_path)
    assert all("\n" not in p for c in report["checks"] for p in c["problems"])
    assert "*** in database main ***" in by_name(report)["integrity"]["problems"]


def test_a_workspace_from_before_run_owners_with_runs_is_checked_then_upgraded(demo_path):
    with sqlite3.connect(demo_path) as conn:  # as a workspace made before migration 0009_run_owner
        for column in ("owner_host", "owner_pid", "owner_token", "owner_since", "heartbeat_at"):
            conn.execute(f"ALTER TABLE runs DROP COLUMN {column}")
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = '0009_run_owner'")
        conn.execute(f"PRAGMA user_version = {schema.latest_version() - 1}")
    conn.close()
    before = sha(demo_path)
    code, report = check_json(demo_path)
    checks = by_name(report)
    assert code == 1 and not checks["schema"]["ok"] and checks["dead_runs"]["ok"], report
    assert "runs whose process is gone not checked: the schema is not this vlmdesk's" in report["notes"]
    assert sha(demo_path) == before
    code, report = check_json(demo_path, "--repair")
    assert code == 0 and report["healthy"] and not report["notes"], report
