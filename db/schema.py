"""Schema migrations: the only place tables are created or changed.

Each migration is applied once, in order, inside a transaction (sqlite-utils `Migrations`). The schema version is
the number of migrations applied, mirrored in `PRAGMA user_version` so a workspace written by a newer vlmdesk is
refused instead of misread.
"""
from __future__ import annotations

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

migrations = Migrations("vlmdesk")


@migrations(name="0001_benchmarks_items_reviews")
def _m0001(db: Database) -> None:
    db.executescript(
        """
        CREATE TABLE images (
            sha256 TEXT PRIMARY KEY,
            data BLOB NOT NULL,
            mime TEXT NOT NULL,
            width INTEGER NOT NULL,
            height INTEGER NOT NULL,
            bytes INTEGER NOT NULL
        );
        CREATE TABLE benchmarks (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            kind TEXT NOT NULL CHECK (kind IN ('mcq', 'yesno')),
            format TEXT NOT NULL,
            source TEXT NOT NULL,
            source_sha256 TEXT NOT NULL UNIQUE,
            rows_read INTEGER NOT NULL,
            rows_folded INTEGER NOT NULL DEFAULT 0,
            rows_skipped INTEGER NOT NULL DEFAULT 0,
            imported_at TEXT NOT NULL,
            meta TEXT NOT NULL DEFAULT '{}'
        );
        -- source_index has no declared type on purpose: integer indexes stay integers, others stay text.
        CREATE TABLE items (
            id INTEGER PRIMARY KEY,
            benchmark_id INTEGER NOT NULL REFERENCES benchmarks(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            source_index NOT NULL,
            question TEXT NOT NULL,
            hint TEXT,
            options TEXT NOT NULL DEFAULT '[]',
            answer TEXT,
            category TEXT,
            l2_category TEXT,
            split TEXT,
            language TEXT NOT NULL DEFAULT 'en',
            image_sha256 TEXT REFERENCES images(sha256),
            circular_copies INTEGER NOT NULL DEFAULT 0,
            meta TEXT NOT NULL DEFAULT '{}',
            UNIQUE (benchmark_id, source_index)
        );
        CREATE INDEX items_benchmark_position ON items (benchmark_id, position);
        CREATE INDEX items_image ON items (image_sha256);
        CREATE TABLE reviews (
            id INTEGER PRIMARY KEY,
            item_id INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
            annotator TEXT NOT NULL,
            verdict TEXT NOT NULL,
            corrected_answer TEXT,
            note TEXT,
            seconds REAL,
            created_at TEXT NOT NULL
        );
        CREATE INDEX reviews_item ON reviews (item_id, id);
        -- The review log is evidence: a verdict is superseded by a newer row, never edited or removed.
        CREATE TRIGGER reviews_no_update BEFORE UPDATE ON reviews
            BEGIN SELECT RAISE(ABORT, 'reviews are append-only'); END;
        """
    )


def latest_version() -> int:
    return len(migrations._migrations)


def migration_names() -> list[str]:
    return [m.name for m in migrations._migrations]


@migrations(name="0002_runs_predictions")
def _m0002(db: Database) -> None:
    db.executescript(
        """
        CREATE TABLE runs (
            id INTEGER PRIMARY KEY,
            benchmark_id INTEGER NOT NULL REFERENCES benchmarks(id) ON DELETE CASCADE,
            model_spec TEXT NOT NULL,
            strategy TEXT NOT NULL,
            prompt_template TEXT NOT NULL,
            extractor TEXT NOT NULL,
            config TEXT NOT NULL DEFAULT '{}',
            config_key TEXT NOT NULL,
            versions TEXT NOT NULL DEFAULT '{}',
            git_revision TEXT,
            seed INTEGER NOT NULL DEFAULT 0,
            status TEXT NOT NULL CHECK (status IN ('running', 'finished', 'failed', 'interrupted')),
            error TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            finished_at TEXT
        );
        CREATE INDEX runs_config_key ON runs (config_key, id);
        -- One row per (run, item, pass): everything needed to review a pass without calling the model again.
        CREATE TABLE predictions (
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            item_id INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
            pass INTEGER NOT NULL,
            option_order TEXT NOT NULL,
            prompt TEXT NOT NULL,
            response TEXT NOT NULL,
            answer TEXT,
            choice TEXT,
            stage TEXT NOT NULL,
            reason TEXT,
            correct INTEGER,
            latency_ms REAL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (run_id, item_id, pass)
        );
        CREATE INDEX predictions_item ON predictions (item_id);
        """
    )
