"""Schema migrations: the only place tables are created or changed.

Each migration is applied once, in order, inside a transaction (sqlite-utils `Migrations`). The schema version is
the number of migrations applied, mirrored in `PRAGMA user_version` so a workspace written by a newer vlmdesk is
refused instead of misread.
"""

from __future__ import annotations

import re
import sqlite3

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

migrations = Migrations("vlmdesk")


def _script(db: Database, sql: str) -> None:
    """Run a migration's statements one by one inside the migration's transaction.

    (`executescript` would COMMIT first, so a migration failing half-way would leave half its tables behind.)
    """
    statement = ""
    for line in sql.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            db.execute(statement)
            statement = ""
    if statement.strip():
        raise ValueError(f"incomplete SQL statement in migration: {statement.strip()[:80]}")


@migrations(name="0001_benchmarks_items_reviews")
def _m0001(db: Database) -> None:
    _script(
        db,
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
        -- The review log is evidence: a verdict is superseded by a newer row (or withdrawn by an undo row), never edited.
        CREATE TRIGGER reviews_no_update BEFORE UPDATE ON reviews
            BEGIN SELECT RAISE(ABORT, 'reviews are append-only'); END;
        """,  # noqa: E501 (a shipped migration keeps its text)
    )


def latest_version() -> int:
    return len(migrations._migrations)


def migration_names() -> list[str]:
    return [m.name for m in migrations._migrations]


@migrations(name="0002_runs_predictions")
def _m0002(db: Database) -> None:
    _script(
        db,
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
        """,
    )


@migrations(name="0003_extraction_alignment")
def _m0003(db: Database) -> None:
    _script(
        db,
        """
        -- Cache of LLM extraction results. key = sha256 of (extractor, prompt version, question, options, response):
        -- re-scoring or re-sampling never asks the extractor model twice for the same input.
        CREATE TABLE extractions (
            key TEXT PRIMARY KEY,
            extractor TEXT NOT NULL,
            choice TEXT,
            stage TEXT NOT NULL,
            reason TEXT NOT NULL,
            raw TEXT NOT NULL DEFAULT '[]',
            attempts INTEGER NOT NULL,
            created_at TEXT NOT NULL
        );
        -- A re-scoring of a run's stored responses with another extractor (or human labels). The run's own
        -- scoring stays in predictions; re-scoring with the same name again replaces that scoring.
        CREATE TABLE scorings (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            summary TEXT NOT NULL DEFAULT '{}',
            created_at TEXT NOT NULL,
            UNIQUE (run_id, name)
        );
        CREATE TABLE scored_passes (
            scoring_id INTEGER NOT NULL REFERENCES scorings(id) ON DELETE CASCADE,
            item_id INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
            pass INTEGER NOT NULL,
            choice TEXT,
            stage TEXT NOT NULL,
            reason TEXT,
            correct INTEGER,
            PRIMARY KEY (scoring_id, item_id, pass)
        );
        CREATE TABLE adjudication_sets (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            run_ids TEXT NOT NULL,
            extractors TEXT NOT NULL,
            sample_size INTEGER NOT NULL,
            seed INTEGER NOT NULL,
            created_at TEXT NOT NULL
        );
        -- One distinct (question, options as shown, response) per set; sources lists the (run, item, pass) it
        -- came from. response_key links labels to passes of any run.
        CREATE TABLE adjudication_items (
            id INTEGER PRIMARY KEY,
            set_id INTEGER NOT NULL REFERENCES adjudication_sets(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            response_key TEXT NOT NULL,
            question TEXT NOT NULL,
            options TEXT NOT NULL,
            response TEXT NOT NULL,
            why TEXT NOT NULL CHECK (why IN ('disagree', 'undecided', 'sample')),
            sources TEXT NOT NULL,
            UNIQUE (set_id, response_key),
            UNIQUE (set_id, position)
        );
        CREATE INDEX adjudication_items_key ON adjudication_items (response_key);
        -- What each extractor said, stored when the set is built and shown to an annotator only after labelling.
        CREATE TABLE adjudication_outputs (
            item_id INTEGER NOT NULL REFERENCES adjudication_items(id) ON DELETE CASCADE,
            extractor TEXT NOT NULL,
            choice TEXT,
            stage TEXT NOT NULL,
            reason TEXT,
            PRIMARY KEY (item_id, extractor)
        );
        -- Human readings of responses; a newer label by the same annotator supersedes, nothing is edited.
        CREATE TABLE labels (
            id INTEGER PRIMARY KEY,
            item_id INTEGER NOT NULL REFERENCES adjudication_items(id) ON DELETE CASCADE,
            annotator TEXT NOT NULL,
            choice TEXT NOT NULL,
            seconds REAL,
            created_at TEXT NOT NULL
        );
        CREATE INDEX labels_item ON labels (item_id, id);
        CREATE TRIGGER labels_no_update BEFORE UPDATE ON labels
            BEGIN SELECT RAISE(ABORT, 'labels are append-only'); END;
        CREATE TABLE adjudications (
            id INTEGER PRIMARY KEY,
            item_id INTEGER NOT NULL REFERENCES adjudication_items(id) ON DELETE CASCADE,
            adjudicator TEXT NOT NULL,
            choice TEXT NOT NULL,
            note TEXT,
            created_at TEXT NOT NULL
        );
        CREATE INDEX adjudications_item ON adjudications (item_id, id);
        CREATE TRIGGER adjudications_no_update BEFORE UPDATE ON adjudications
            BEGIN SELECT RAISE(ABORT, 'adjudications are append-only'); END;
        """,
    )


@migrations(name="0004_quality_control")
def _m0004(db: Database) -> None:
    _script(
        db,
        """
        -- One row per computation of a QC stage over a set of runs: the history of which runs flagged what.
        CREATE TABLE qc_stage_runs (
            id INTEGER PRIMARY KEY,
            benchmark_id INTEGER NOT NULL REFERENCES benchmarks(id) ON DELETE CASCADE,
            stage TEXT NOT NULL CHECK (stage IN ('text-only', 'consensus')),
            run_ids TEXT NOT NULL,
            items_evaluated INTEGER NOT NULL,
            candidates INTEGER NOT NULL,
            created_at TEXT NOT NULL
        );
        -- The flag of an item in a stage. Re-running the stage updates it (active = still selected by the latest
        -- computation); decisions hang on (item, stage), so they survive re-runs.
        CREATE TABLE qc_flags (
            id INTEGER PRIMARY KEY,
            benchmark_id INTEGER NOT NULL REFERENCES benchmarks(id) ON DELETE CASCADE,
            item_id INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
            stage TEXT NOT NULL CHECK (stage IN ('text-only', 'consensus')),
            stage_run_id INTEGER NOT NULL REFERENCES qc_stage_runs(id) ON DELETE CASCADE,
            run_ids TEXT NOT NULL,
            correct_run_ids TEXT NOT NULL,
            active INTEGER NOT NULL DEFAULT 1,
            flagged_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            UNIQUE (item_id, stage)
        );
        CREATE INDEX qc_flags_benchmark ON qc_flags (benchmark_id, stage);
        CREATE TABLE qc_decisions (
            id INTEGER PRIMARY KEY,
            item_id INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
            stage TEXT NOT NULL CHECK (stage IN ('text-only', 'consensus')),
            annotator TEXT NOT NULL,
            decision TEXT NOT NULL CHECK (decision IN ('confirm', 'reject')),
            reason TEXT CHECK (reason IN ('text_answerable', 'wrong_answer', 'ambiguous', 'bad_image', 'other')),
            note TEXT,
            old_answer TEXT,
            new_answer TEXT,
            created_at TEXT NOT NULL,
            CHECK ((decision = 'confirm') = (reason IS NOT NULL)),
            CHECK ((new_answer IS NOT NULL) = (reason IS 'wrong_answer'))
        );
        CREATE INDEX qc_decisions_item ON qc_decisions (item_id, stage, id);
        -- Decisions are evidence, like reviews: a newer row supersedes, nothing is edited.
        CREATE TRIGGER qc_decisions_no_update BEFORE UPDATE ON qc_decisions
            BEGIN SELECT RAISE(ABORT, 'QC decisions are append-only'); END;
        """,
    )


@migrations(name="0005_item_search")
def _m0005(db: Database) -> None:
    # Full-text search over what an annotator reads: question, hint and option texts. An external-content FTS5
    # table (the text stays in `items` only), kept in sync by triggers; `rebuild` indexes the existing rows.
    # unicode61 with diacritics folded: "cafe" finds "café"; Chinese runs are searched by substring instead
    # (db/item_query.py), since unicode61 keeps a CJK run as one token.
    _script(
        db,
        """
        CREATE VIRTUAL TABLE item_search USING fts5(
            question, hint, options, content='items', content_rowid='id',
            tokenize='unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER item_search_ai AFTER INSERT ON items BEGIN
            INSERT INTO item_search (rowid, question, hint, options) VALUES (new.id, new.question, new.hint, new.options);
        END;
        CREATE TRIGGER item_search_ad AFTER DELETE ON items BEGIN
            INSERT INTO item_search (item_search, rowid, question, hint, options)
                VALUES ('delete', old.id, old.question, old.hint, old.options);
        END;
        CREATE TRIGGER item_search_au AFTER UPDATE OF question, hint, options ON items BEGIN
            INSERT INTO item_search (item_search, rowid, question, hint, options)
                VALUES ('delete', old.id, old.question, old.hint, old.options);
            INSERT INTO item_search (rowid, question, hint, options) VALUES (new.id, new.question, new.hint, new.options);
        END;
        INSERT INTO item_search (item_search) VALUES ('rebuild');
        """,  # noqa: E501 (a shipped migration keeps its text: SQLite stores the triggers' SQL as written)
    )


@migrations(name="0006_models")
def _m0006(db: Database) -> None:
    # Models a user keeps at hand (the desktop app's Models panel, `vlmdesk models`): a name and a model spec. A
    # spec names the environment variable that holds an API key, never the key (db/models.py refuses keys).
    _script(
        db,
        """
        CREATE TABLE models (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            spec TEXT NOT NULL,
            note TEXT,
            created_at TEXT NOT NULL
        );
        """,
    )


# A uuid4 written in SQL, so that every insert gets one even when the writer does not set it (the annotation layer
# sets its own with Python's uuid4). abs() of the remainder, not of random(): abs(-2**63) overflows.
_UUID4 = (
    "lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-' || "
    "substr('89ab', 1 + abs(random() % 4), 1) || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)))"
)
_ID_COLUMNS = f"""
            uuid TEXT NOT NULL UNIQUE DEFAULT ({_UUID4}),
            withdraws TEXT REFERENCES {{table}}(uuid) DEFERRABLE INITIALLY DEFERRED"""


def _rebuild(db: Database, table: str, body: str, checks: str, columns: str, after: str) -> None:
    """Recreate `table` with the columns of `body`, uuid and withdraws, then the table constraints `checks`, copying
    every row in id order (each gets a uuid), then run `after` (indexes, triggers). SQLite cannot change a CHECK or
    add a UNIQUE NOT NULL column in place."""
    new = f"{table}_0007"
    _script(
        db,
        f"CREATE TABLE {new} (\n{body},{_ID_COLUMNS.format(table=new)},\n{checks}\n);\n"
        f"INSERT INTO {new} ({columns}) SELECT {columns} FROM {table} ORDER BY id;\n",
    )
    if table == "reviews":
        _backfill_review_withdrawals(db, new)
    # Nothing references these tables, so dropping the old one deletes nothing else; the rename also rewrites the
    # self-reference of `withdraws`.
    _script(db, f"DROP TABLE {table};\nALTER TABLE {new} RENAME TO {table};\n{after}")


def _backfill_review_withdrawals(db: Database, table: str) -> None:
    """Undo rows written before 0007 withdrew the latest standing verdict of their (item, annotator), and said which
    in their note ("withdraws review N"). Name it by uuid now; a note that does not name a standing verdict of the
    same (item, annotator) falls back to the old rule (the latest one), so what stands does not change."""
    import re
    from collections import defaultdict

    stacks: dict[tuple[int, str], list[int]] = defaultdict(list)
    uuids: dict[int, str] = {}
    updates = []
    for rid, item_id, annotator, verdict, note, uuid in db.execute(
        f"SELECT id, item_id, annotator, verdict, note, uuid FROM {table} ORDER BY id"
    ).fetchall():
        uuids[rid] = uuid
        stack = stacks[(item_id, annotator)]
        if verdict != "undo":
            stack.append(rid)
            continue
        named = re.fullmatch(r"withdraws review (\d+)", note or "")
        target = int(named[1]) if named and int(named[1]) in stack else (stack[-1] if stack else None)
        if target is not None:
            stack.remove(target)
            updates.append((uuids[target], rid))
    for withdraws, rid in updates:
        db.execute(f"UPDATE {table} SET withdraws = ? WHERE id = ?", (withdraws, rid))


@migrations(name="0007_label_ids")
def _m0007(db: Database) -> None:
    # Every human record gets a uuid (so logs from several machines merge by identity) and a withdrawal names the
    # uuid it withdraws (docs/adr/0010). 'undo' is the withdrawal in every kind: a verdict, a label's or an
    # adjudication's choice, a QC decision. Tables stay append-only.
    _rebuild(
        db,
        "reviews",
        """
            id INTEGER PRIMARY KEY,
            item_id INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
            annotator TEXT NOT NULL,
            verdict TEXT NOT NULL,
            corrected_answer TEXT,
            note TEXT,
            seconds REAL,
            created_at TEXT NOT NULL""",
        """
            CHECK (withdraws IS NULL OR verdict = 'undo')""",
        "id, item_id, annotator, verdict, corrected_answer, note, seconds, created_at",
        """
        CREATE INDEX reviews_item ON reviews (item_id, id);
        CREATE INDEX reviews_withdraws ON reviews (withdraws);
        CREATE TRIGGER reviews_no_update BEFORE UPDATE ON reviews
            BEGIN SELECT RAISE(ABORT, 'reviews are append-only'); END;
        """,
    )
    _rebuild(
        db,
        "labels",
        """
            id INTEGER PRIMARY KEY,
            item_id INTEGER NOT NULL REFERENCES adjudication_items(id) ON DELETE CASCADE,
            annotator TEXT NOT NULL,
            choice TEXT NOT NULL,
            seconds REAL,
            created_at TEXT NOT NULL""",
        """
            CHECK ((choice = 'undo') = (withdraws IS NOT NULL))""",
        "id, item_id, annotator, choice, seconds, created_at",
        """
        CREATE INDEX labels_item ON labels (item_id, id);
        CREATE INDEX labels_withdraws ON labels (withdraws);
        CREATE TRIGGER labels_no_update BEFORE UPDATE ON labels
            BEGIN SELECT RAISE(ABORT, 'labels are append-only'); END;
        """,
    )
    _rebuild(
        db,
        "adjudications",
        """
            id INTEGER PRIMARY KEY,
            item_id INTEGER NOT NULL REFERENCES adjudication_items(id) ON DELETE CASCADE,
            adjudicator TEXT NOT NULL,
            choice TEXT NOT NULL,
            note TEXT,
            created_at TEXT NOT NULL""",
        """
            CHECK ((choice = 'undo') = (withdraws IS NOT NULL))""",
        "id, item_id, adjudicator, choice, note, created_at",
        """
        CREATE INDEX adjudications_item ON adjudications (item_id, id);
        CREATE INDEX adjudications_withdraws ON adjudications (withdraws);
        CREATE TRIGGER adjudications_no_update BEFORE UPDATE ON adjudications
            BEGIN SELECT RAISE(ABORT, 'adjudications are append-only'); END;
        """,
    )
    _rebuild(
        db,
        "qc_decisions",
        """
            id INTEGER PRIMARY KEY,
            item_id INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
            stage TEXT NOT NULL CHECK (stage IN ('text-only', 'consensus')),
            annotator TEXT NOT NULL,
            decision TEXT NOT NULL CHECK (decision IN ('confirm', 'reject', 'undo')),
            reason TEXT CHECK (reason IN ('text_answerable', 'wrong_answer', 'ambiguous', 'bad_image', 'other')),
            note TEXT,
            old_answer TEXT,
            new_answer TEXT,
            created_at TEXT NOT NULL""",
        """
            CHECK ((decision = 'confirm') = (reason IS NOT NULL)),
            CHECK ((new_answer IS NOT NULL) = (reason IS 'wrong_answer')),
            CHECK ((decision = 'undo') = (withdraws IS NOT NULL))""",
        "id, item_id, stage, annotator, decision, reason, note, old_answer, new_answer, created_at",
        """
        CREATE INDEX qc_decisions_item ON qc_decisions (item_id, stage, id);
        CREATE INDEX qc_decisions_withdraws ON qc_decisions (withdraws);
        CREATE TRIGGER qc_decisions_no_update BEFORE UPDATE ON qc_decisions
            BEGIN SELECT RAISE(ABORT, 'QC decisions are append-only'); END;
        """,
    )


@migrations(name="0008_workspace_identity")
def _m0008(db: Database) -> None:
    # Marks the file as a vlmdesk workspace in its header (bytes 68-71), so that opening can tell ours from a
    # foreign SQLite file by reading 100 bytes, before any write (db/workspace.py, docs/adr/0007).
    db.execute(f"PRAGMA application_id = {APPLICATION_ID}")


@migrations(name="0009_run_owner")
def _m0009(db: Database) -> None:
    # Who is executing a run: a process claims it (host, pid, a random token, since when) and beats a heartbeat
    # while it runs. A second process refuses a run whose owner is alive; a run whose owner is gone (dead pid on
    # this host, or a stale heartbeat) reads as interrupted (db/runs.py effective_status) and can be resumed.
    _script(
        db,
        """
        ALTER TABLE runs ADD COLUMN owner_host TEXT;
        ALTER TABLE runs ADD COLUMN owner_pid INTEGER;
        ALTER TABLE runs ADD COLUMN owner_token TEXT;
        ALTER TABLE runs ADD COLUMN owner_since TEXT;
        ALTER TABLE runs ADD COLUMN heartbeat_at TEXT;
        """,
    )


# The search index's one definition: migration 0010 creates it and `vlmdesk check --repair` re-creates it from
# here. (A later migration that changes it must drop and call this again.)
_SEARCH_INDEX = """
        CREATE VIEW item_search_texts (id, question, hint, options) AS
            SELECT items.id, items.question, items.hint,
                CASE WHEN json_valid(items.options) THEN (
                    WITH RECURSIVE k(n) AS (
                        SELECT 0 UNION ALL SELECT n + 1 FROM k WHERE n + 1 < json_array_length(items.options))
                    SELECT group_concat(json_extract(items.options, '$[' || n || ']'), char(10)) FROM k)
                ELSE items.options END
            FROM items;
        CREATE VIRTUAL TABLE item_search USING fts5(
            question, hint, options, content='item_search_texts', content_rowid='id',
            tokenize='unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER item_search_ai AFTER INSERT ON items BEGIN
            INSERT INTO item_search (rowid, question, hint, options)
                SELECT id, question, hint, options FROM item_search_texts WHERE id = new.id;
        END;
        CREATE TRIGGER item_search_bd BEFORE DELETE ON items BEGIN
            INSERT INTO item_search (item_search, rowid, question, hint, options)
                SELECT 'delete', id, question, hint, options FROM item_search_texts WHERE id = old.id;
        END;
        CREATE TRIGGER item_search_bu BEFORE UPDATE OF id, question, hint, options ON items BEGIN
            INSERT INTO item_search (item_search, rowid, question, hint, options)
                SELECT 'delete', id, question, hint, options FROM item_search_texts WHERE id = old.id;
        END;
        CREATE TRIGGER item_search_au AFTER UPDATE OF id, question, hint, options ON items BEGIN
            INSERT INTO item_search (rowid, question, hint, options)
                SELECT id, question, hint, options FROM item_search_texts WHERE id = new.id;
        END;
"""


def search_index_objects() -> list[tuple[str, str]]:
    """(type, name) of every schema object of the search index: its view, FTS table and triggers."""
    kinds = {"VIEW": "view", "VIRTUAL TABLE": "table", "TRIGGER": "trigger"}
    return [(kinds[k], name) for k, name in re.findall(r"CREATE (VIEW|VIRTUAL TABLE|TRIGGER) (\w+)", _SEARCH_INDEX)]


def create_search_index(db: Database) -> None:
    """Create the search index's view, FTS table and triggers (none may exist yet) and fill the index."""
    _script(db, _SEARCH_INDEX)
    db.execute("INSERT INTO item_search (item_search) VALUES ('rebuild')")


@migrations(name="0010_search_texts")
def _m0010(db: Database) -> None:
    # Search over the texts an annotator reads, not over the JSON that stores the options: 0005 indexed the
    # options' JSON, so the substring search for `"`, `,` or `[` matched every item, and escapes ("\n") glued
    # words together. The view item_search_texts is the one place that says what is searched (question, hint,
    # the option texts one per line); the FTS table reads it as its external content, so 'rebuild' and
    # 'integrity-check' compare the index with the items themselves, and the substring search reads it too.
    # FTS5 reads its content without virtual tables (json_each), hence the recursive CTE over the array.
    # Triggers read the view before a delete or update (the old texts, as indexed) and after an insert or update.
    _script(
        db,
        """
        DROP TRIGGER IF EXISTS item_search_ai;
        DROP TRIGGER IF EXISTS item_search_ad;
        DROP TRIGGER IF EXISTS item_search_au;
        DROP TABLE IF EXISTS item_search;
        """,
    )
    create_search_index(db)


@migrations(name="0011_option_scores")
def _m0011(db: Database) -> None:
    # Per-option scores of a pass as numbers (a JSON list of floats, one per option or candidate shown, in shown
    # order; NULL for generated passes): calibration (ECE) reads them; before, they survived only as rounded text in
    # a reason. Judgements: a judge model's 0-10 score of a pass's language (ChEF's language performance), one row
    # per (run, item, pass, judge spec) so re-running asks nothing twice; score NULL = no parseable judgement after
    # the bounded retries (missing, never invented).
    _script(
        db,
        """
        ALTER TABLE predictions ADD COLUMN scores TEXT CHECK (scores IS NULL OR json_valid(scores));
        CREATE TABLE judgements (
            run_id INTEGER NOT NULL,
            item_id INTEGER NOT NULL,
            pass INTEGER NOT NULL,
            judge TEXT NOT NULL,
            score REAL CHECK (score IS NULL OR (score >= 0 AND score <= 10)),
            attempts INTEGER NOT NULL CHECK (attempts >= 1),
            raw TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (run_id, item_id, pass, judge),
            FOREIGN KEY (run_id, item_id, pass) REFERENCES predictions (run_id, item_id, pass) ON DELETE CASCADE
        );
        """,
    )


_OLD_KINDS = "CHECK (kind IN ('mcq', 'yesno'))"
_NEW_KINDS = "CHECK (kind IN ('mcq', 'yesno', 'open'))"


def _widen_benchmark_kinds(db: Database) -> None:
    """Let benchmarks.kind be 'open': SQLite cannot change a CHECK in place, so the table is rebuilt (SQLite's
    12-step procedure, foreign keys off: items, runs and QC rows point at benchmarks and would cascade away with a
    DROP). The stored CREATE text is reused, so every column a migration before this one added is kept."""
    (sql,) = db.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'benchmarks'").fetchone()
    if _NEW_KINDS in sql:  # a re-run after a crash between the commit and the record of this migration
        return
    if _OLD_KINDS not in sql:
        raise ValueError("benchmarks.kind has an unexpected CHECK; cannot add 'open'")
    extras = [
        r[0]
        for r in db.execute("SELECT sql FROM sqlite_master WHERE tbl_name = 'benchmarks' AND type != 'table'")
        if r[0]
    ]
    rebuilt = sql.replace(_OLD_KINDS, _NEW_KINDS).replace("CREATE TABLE benchmarks", "CREATE TABLE benchmarks_0012", 1)
    db.execute(rebuilt)
    db.execute("INSERT INTO benchmarks_0012 SELECT * FROM benchmarks ORDER BY id")
    db.execute("DROP TABLE benchmarks")
    db.execute("ALTER TABLE benchmarks_0012 RENAME TO benchmarks")
    for statement in extras:
        db.execute(statement)


@migrations(name="0012_arena", transactional=False)
def _m0012(db: Database) -> None:
    # Open benchmarks (a question and an image, no options; runs generate free answers) and the arena: pairs of two
    # runs' answers to one item, shown left and right, and votes on them — human records, append-only with a uuid
    # and withdrawals like reviews (annotation/arena.py, docs/adr/0019).
    # Not one sqlite-utils transaction: foreign keys can only be switched off outside a transaction, so this
    # migration runs its own and checks the keys before committing.
    conn = db.conn
    if conn.in_transaction:
        raise RuntimeError("migration 0012 must start outside a transaction")
    conn.execute("PRAGMA foreign_keys = OFF")
    try:
        with db.atomic():
            _widen_benchmark_kinds(db)
            _script(
                db,
                f"""
                CREATE TABLE IF NOT EXISTS arena_pairs (
                    id INTEGER PRIMARY KEY,
                    uuid TEXT NOT NULL UNIQUE,
                    benchmark_id INTEGER NOT NULL REFERENCES benchmarks(id) ON DELETE CASCADE,
                    item_id INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
                    left_run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
                    right_run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
                    position INTEGER NOT NULL,
                    seed INTEGER NOT NULL,
                    created_at TEXT NOT NULL,
                    CHECK (left_run_id != right_run_id),
                    UNIQUE (benchmark_id, position)
                );
                CREATE INDEX IF NOT EXISTS arena_pairs_item ON arena_pairs (item_id);
                CREATE TABLE IF NOT EXISTS arena_votes (
                    id INTEGER PRIMARY KEY,
                    pair_id INTEGER NOT NULL REFERENCES arena_pairs(id) ON DELETE CASCADE,
                    annotator TEXT NOT NULL,
                    vote TEXT NOT NULL CHECK (vote IN ('left', 'right', 'tie', 'bothbad', 'undo')),
                    note TEXT,
                    seconds REAL,
                    created_at TEXT NOT NULL,{_ID_COLUMNS.format(table="arena_votes")},
                    CHECK ((vote = 'undo') = (withdraws IS NOT NULL))
                );
                CREATE INDEX IF NOT EXISTS arena_votes_pair ON arena_votes (pair_id, id);
                CREATE INDEX IF NOT EXISTS arena_votes_withdraws ON arena_votes (withdraws);
                CREATE TRIGGER IF NOT EXISTS arena_votes_no_update BEFORE UPDATE ON arena_votes
                    BEGIN SELECT RAISE(ABORT, 'arena votes are append-only'); END;
                -- A pair's runs cascade to it; a pair people voted on must not go with them (no vote is ever lost).
                CREATE TRIGGER IF NOT EXISTS arena_pairs_keep_votes BEFORE DELETE ON arena_pairs
                    WHEN EXISTS (SELECT 1 FROM arena_votes WHERE pair_id = OLD.id)
                    BEGIN SELECT RAISE(ABORT, 'people voted on this arena pair: its votes are kept'); END;
                """,
            )
            broken = db.execute("PRAGMA foreign_key_check").fetchone()
            if broken is not None:
                raise ValueError(f"migration 0012 would break a foreign key: {tuple(broken)}")
    finally:
        conn.execute("PRAGMA foreign_keys = ON")


@migrations(name="0013_pass_turns")
def _m0013(db: Database) -> None:
    # A multi-turn pass (LVLM-eHub's multi-turn reasoning, evaluator/engine/multiturn.py) is a dialogue: an asking LLM's
    # sub-questions, the model's answers and the LLM's reasoning. Every turn is kept with the pass, in the same row,
    # so a pass is stored whole or not at all: a JSON list of {"role": "asker"|"model", "text": ...}; NULL for an
    # ordinary one-prompt pass.
    _script(
        db,
        """
        ALTER TABLE predictions ADD COLUMN turns TEXT CHECK (turns IS NULL OR json_valid(turns));
        """,
    )


@migrations(name="0014_guidelines")
def _m0014(db: Database) -> None:
    # Annotation guidelines per benchmark, versioned: a change is a new version (the old text stays, so a verdict
    # can be read against the guideline it was given under: reviews.guideline_version). Saved filters: named
    # Browse/Review views of a workspace, shared by everyone who opens it.
    _script(
        db,
        """
        CREATE TABLE guidelines (
            id INTEGER PRIMARY KEY,
            benchmark_id INTEGER NOT NULL REFERENCES benchmarks(id) ON DELETE CASCADE,
            version INTEGER NOT NULL CHECK (version >= 1),
            markdown TEXT NOT NULL,
            author TEXT NOT NULL,
            created_at TEXT NOT NULL,
            UNIQUE (benchmark_id, version)
        );
        CREATE TRIGGER guidelines_no_update BEFORE UPDATE ON guidelines
            BEGIN SELECT RAISE(ABORT, 'guidelines are versioned: a change is a new version'); END;
        ALTER TABLE reviews ADD COLUMN guideline_version INTEGER;
        CREATE TABLE saved_filters (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            filters TEXT NOT NULL CHECK (json_valid(filters) AND json_type(filters) = 'object'),
            author TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        """,
    )


# PRAGMA application_id of every vlmdesk workspace: "VLMD" as a big-endian 32-bit integer.
APPLICATION_ID = int.from_bytes(b"VLMD", "big")


# The standing rule of verdicts (annotation/standing.py) in SQL, for one pair (item, annotator): its standing
# verdict is re-derived from the pair's own log rows (an index range of the item), never from the benchmark. A second
# copy of the rule, held to annotation/standing.py by tests/db/test_counts.py.
def _restand(item: str, annotator: str) -> str:
    return f"""
            DELETE FROM review_standing WHERE item_id = {item} AND annotator = {annotator};
            INSERT INTO review_standing (item_id, annotator, benchmark_id, review_id, verdict, corrected_answer,
                    created_at)
                SELECT t.item_id, t.annotator, i.benchmark_id, t.id, t.verdict, t.corrected_answer, t.created_at
                FROM reviews t JOIN items i ON i.id = t.item_id
                WHERE t.item_id = {item} AND t.annotator = {annotator} AND t.verdict != 'undo'
                    AND NOT EXISTS (SELECT 1 FROM reviews w WHERE w.withdraws = t.uuid)
                ORDER BY t.created_at DESC, t.id DESC LIMIT 1;"""


# A verdict or undo re-derives its own pair, and an undo the pair of the verdict it names (the same one, unless a
# merged log says otherwise); a deleted row (its item deleted, or a repair) likewise.
_TARGET = "(SELECT {col} FROM reviews WHERE uuid = {row}.withdraws)"
_ON_INSERT = _restand("NEW.item_id", "NEW.annotator") + _restand(
    _TARGET.format(col="item_id", row="NEW"), _TARGET.format(col="annotator", row="NEW")
)
_ON_DELETE = _restand("OLD.item_id", "OLD.annotator") + _restand(
    _TARGET.format(col="item_id", row="OLD"), _TARGET.format(col="annotator", row="OLD")
)


def _reconflict(row: str) -> str:
    return f"""
            DELETE FROM review_conflicts WHERE item_id = {row}.item_id;
            INSERT INTO review_conflicts (item_id, benchmark_id) SELECT {row}.item_id, {row}.benchmark_id
                WHERE EXISTS (SELECT 1 FROM items WHERE id = {row}.item_id) AND (SELECT count(DISTINCT
                    json_array(verdict, corrected_answer)) FROM review_standing
                    WHERE item_id = {row}.item_id AND verdict != 'skip') > 1;"""


@migrations(name="0015_counts")
def _m0015(db: Database) -> None:
    # A keypress must not cost the size of the benchmark (issue 27, docs/adr/0028). The standing verdict per (item,
    # annotator) is kept in review_standing, beside the item's benchmark, by triggers on the review log: whatever
    # writes a review (the app, sync imports, deletions cascading from items) keeps it in the same transaction.
    # Counts of items per benchmark, and of items with a standing verdict (by anyone, by each annotator), are kept
    # by triggers too, so progress is a primary-key read. Everything here is derived: `vlmdesk check --repair`
    # can rebuild it (rebuild_counts).
    _script(
        db,
        f"""
        CREATE TABLE review_standing (
            item_id INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
            annotator TEXT NOT NULL,
            benchmark_id INTEGER NOT NULL,
            review_id INTEGER NOT NULL,
            verdict TEXT NOT NULL,
            corrected_answer TEXT,
            created_at TEXT NOT NULL,
            PRIMARY KEY (item_id, annotator)
        ) WITHOUT ROWID;
        CREATE INDEX review_standing_mine ON review_standing (benchmark_id, annotator, created_at, review_id);
        CREATE INDEX review_standing_benchmark ON review_standing (benchmark_id, item_id);
        -- The blind rule asks per item whether some adjudication set carries its question.
        CREATE INDEX adjudication_items_question ON adjudication_items (question);
        -- Items whose standing verdicts disagree (skips are no opinion: annotation/browse.py ReviewStatus.conflict,
        -- the rule this copies; tests/db/test_counts.py holds them together).
        CREATE TABLE review_conflicts (
            item_id INTEGER PRIMARY KEY REFERENCES items(id) ON DELETE CASCADE,
            benchmark_id INTEGER NOT NULL
        );
        CREATE INDEX review_conflicts_benchmark ON review_conflicts (benchmark_id, item_id);
        CREATE TABLE benchmark_counts (
            benchmark_id INTEGER PRIMARY KEY REFERENCES benchmarks(id) ON DELETE CASCADE,
            items INTEGER NOT NULL DEFAULT 0,
            images INTEGER NOT NULL DEFAULT 0,
            reviewed INTEGER NOT NULL DEFAULT 0
        );
        CREATE TABLE annotator_counts (
            benchmark_id INTEGER NOT NULL REFERENCES benchmarks(id) ON DELETE CASCADE,
            annotator TEXT NOT NULL,
            reviewed INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (benchmark_id, annotator)
        ) WITHOUT ROWID;
        -- An item's image counts once per benchmark: the first item showing it adds it, the last one removes it.
        CREATE TRIGGER items_count_ai AFTER INSERT ON items BEGIN
            INSERT INTO benchmark_counts (benchmark_id, items, images)
                VALUES (NEW.benchmark_id, 1, NEW.image_sha256 IS NOT NULL)
                ON CONFLICT (benchmark_id) DO UPDATE SET items = items + 1, images = images + (
                    NEW.image_sha256 IS NOT NULL AND NOT EXISTS (SELECT 1 FROM items o WHERE
                        o.image_sha256 = NEW.image_sha256 AND o.benchmark_id = NEW.benchmark_id AND o.id != NEW.id));
        END;
        CREATE TRIGGER items_count_ad AFTER DELETE ON items BEGIN
            UPDATE benchmark_counts SET items = items - 1, images = images - (
                    OLD.image_sha256 IS NOT NULL AND NOT EXISTS (SELECT 1 FROM items o WHERE
                        o.image_sha256 = OLD.image_sha256 AND o.benchmark_id = OLD.benchmark_id))
                WHERE benchmark_id = OLD.benchmark_id;
        END;
        -- The counts follow an item's benchmark, which therefore never changes (nothing moves items).
        CREATE TRIGGER items_stay BEFORE UPDATE OF benchmark_id ON items
            BEGIN SELECT RAISE(ABORT, 'an item stays in its benchmark'); END;
        CREATE TRIGGER reviews_standing_ai AFTER INSERT ON reviews BEGIN{_ON_INSERT}
        END;
        CREATE TRIGGER reviews_standing_ad AFTER DELETE ON reviews BEGIN{_ON_DELETE}
        END;
        CREATE TRIGGER review_standing_ai AFTER INSERT ON review_standing BEGIN
            INSERT INTO annotator_counts (benchmark_id, annotator, reviewed) VALUES (NEW.benchmark_id, NEW.annotator, 1)
                ON CONFLICT (benchmark_id, annotator) DO UPDATE SET reviewed = reviewed + 1;
            UPDATE benchmark_counts SET reviewed = reviewed + 1 WHERE benchmark_id = NEW.benchmark_id
                AND NOT EXISTS (SELECT 1 FROM review_standing s WHERE s.item_id = NEW.item_id
                    AND s.annotator != NEW.annotator);{_reconflict("NEW")}
        END;
        CREATE TRIGGER review_standing_ad AFTER DELETE ON review_standing BEGIN
            UPDATE annotator_counts SET reviewed = reviewed - 1
                WHERE benchmark_id = OLD.benchmark_id AND annotator = OLD.annotator;
            UPDATE benchmark_counts SET reviewed = reviewed - 1 WHERE benchmark_id = OLD.benchmark_id
                AND NOT EXISTS (SELECT 1 FROM review_standing s WHERE s.item_id = OLD.item_id);{_reconflict("OLD")}
        END;
        """,
    )
    rebuild_counts(db)


def rebuild_counts(db: Database) -> None:
    """Derive review_standing and the counts afresh from the items and the review log (migration 0015; repair)."""
    _script(
        db,
        """
        DELETE FROM review_standing;
        DELETE FROM review_conflicts;
        DELETE FROM benchmark_counts;
        DELETE FROM annotator_counts;
        INSERT INTO benchmark_counts (benchmark_id, items, images) SELECT b.id,
            (SELECT count(*) FROM items i WHERE i.benchmark_id = b.id),
            (SELECT count(DISTINCT image_sha256) FROM items i WHERE i.benchmark_id = b.id) FROM benchmarks b;
        INSERT INTO review_standing (item_id, annotator, benchmark_id, review_id, verdict, corrected_answer, created_at)
            SELECT item_id, annotator, benchmark_id, id, verdict, corrected_answer, created_at FROM (
                SELECT t.*, i.benchmark_id, row_number() OVER (PARTITION BY t.item_id, t.annotator
                    ORDER BY t.created_at DESC, t.id DESC) AS standing_rank
                FROM reviews t JOIN items i ON i.id = t.item_id
                WHERE t.verdict != 'undo' AND NOT EXISTS (SELECT 1 FROM reviews w WHERE w.withdraws = t.uuid))
            WHERE standing_rank = 1;
        """,
    )
    if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'item_images'").fetchone():  # migration 0025 on
        db.execute(
            "UPDATE benchmark_counts SET images = (SELECT count(*) FROM (SELECT i.image_sha256 AS sha FROM items i "
            "WHERE i.benchmark_id = benchmark_counts.benchmark_id AND i.image_sha256 IS NOT NULL UNION "
            "SELECT x.sha256 FROM item_images x JOIN items i ON i.id = x.item_id "
            "WHERE i.benchmark_id = benchmark_counts.benchmark_id))"
        )


def _token_count(column: str) -> str:
    """Migration 0016's rule for a token count: NULL or a whole number 0..2^40 (db/runs.py TOKENS_MAX, checked there
    before writing; the number is written out because a released migration never changes)."""
    return f"{column} IS NULL OR (typeof({column}) = 'integer' AND {column} BETWEEN 0 AND 1099511627776)"


@migrations(name="0016_pass_tokens")
def _m0016(db: Database) -> None:
    # The tokens a server said a pass cost (an OpenAI-compatible response's `usage`), when it said so: prompt and
    # completion tokens, NULL for local models, servers that do not say, and every pass stored before. Whole numbers
    # 0..2^40 only (the CHECK compares the type, so a text or a real cannot pass for a count).
    _script(
        db,
        f"""
        ALTER TABLE predictions ADD COLUMN prompt_tokens INTEGER CHECK ({_token_count("prompt_tokens")});
        ALTER TABLE predictions ADD COLUMN completion_tokens INTEGER CHECK ({_token_count("completion_tokens")});
        """,
    )


@migrations(name="0017_open_judgements")
def _m0017(db: Database) -> None:
    # An LLM judge's verdicts on open answers (evaluator/scoring/open_judge.py, docs/adr/0035): right / partly / wrong
    # with
    # the judge's reason, one row per (run, item, pass, judge spec identity, rubric), so asking again asks nothing
    # and another rubric asks anew. verdict NULL = undecided (no readable verdict after the bounded retries: never
    # guessed); raw is the judge's last reply, redacted at the door. The rubric texts, by their sha256, are stored
    # once each: a judgement set names the rubric it was asked with.
    _script(
        db,
        """
        CREATE TABLE judge_rubrics (
            sha256 TEXT PRIMARY KEY CHECK (length(sha256) = 64),
            text TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE TABLE open_judgements (
            run_id INTEGER NOT NULL,
            item_id INTEGER NOT NULL,
            pass INTEGER NOT NULL,
            judge TEXT NOT NULL,
            rubric_sha256 TEXT NOT NULL REFERENCES judge_rubrics (sha256),
            verdict TEXT CHECK (verdict IS NULL OR verdict IN ('right', 'partly', 'wrong')),
            reason TEXT NOT NULL,
            attempts INTEGER NOT NULL CHECK (attempts >= 1),
            raw TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (run_id, item_id, pass, judge, rubric_sha256),
            FOREIGN KEY (run_id, item_id, pass) REFERENCES predictions (run_id, item_id, pass) ON DELETE CASCADE
        );
        """,
    )


@migrations(name="0018_open_verdicts")
def _m0018(db: Database) -> None:
    # People's verdicts on a run's open answer to an item (right / partly / wrong), the human side of "which open
    # metric to trust" (annotation/open_verdicts.py, docs/adr/0036): human records like every other — append-only,
    # a uuid each, an undo names the uuid it withdraws. `answer_key` is the sha256 of the answer judged, so a verdict
    # merges into another copy by what was judged, never by a local run id. role 'adjudication': the final word on a
    # (run, item) whose annotators disagree. A run people judged is not deleted with their verdicts (trigger).
    _script(
        db,
        f"""
        CREATE TABLE open_verdicts (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES runs(id),
            item_id INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
            answer_key TEXT NOT NULL CHECK (length(answer_key) = 64),
            role TEXT NOT NULL CHECK (role IN ('verdict', 'adjudication')),
            annotator TEXT NOT NULL,
            verdict TEXT NOT NULL CHECK (verdict IN ('right', 'partly', 'wrong', 'undo')),
            note TEXT,
            seconds REAL,
            created_at TEXT NOT NULL,{_ID_COLUMNS.format(table="open_verdicts")},
            CHECK ((verdict = 'undo') = (withdraws IS NOT NULL))
        );
        CREATE INDEX open_verdicts_answer ON open_verdicts (run_id, item_id, id);
        CREATE INDEX open_verdicts_withdraws ON open_verdicts (withdraws);
        CREATE TRIGGER open_verdicts_no_update BEFORE UPDATE ON open_verdicts
            BEGIN SELECT RAISE(ABORT, 'open verdicts are append-only'); END;
        CREATE TRIGGER runs_keep_open_verdicts BEFORE DELETE ON runs
            WHEN EXISTS (SELECT 1 FROM open_verdicts WHERE run_id = OLD.id)
            BEGIN SELECT RAISE(ABORT, 'people judged this run''s answers: their verdicts are kept'); END;
        """,
    )


FACETS = ("category", "l2_category", "split")
"""The item columns Browse filters on (db/item_query.py), each indexed by migration 0019."""


@migrations(name="0019_item_facets")
def _m0019(db: Database) -> None:
    # Browse's facets at a million items (issue 27, docs/adr/0044): the distinct values of a benchmark are read by
    # skipping through these indexes (a seek per value, not a scan of the items), and a facet filter lists and
    # counts its items from the index in file order. The expression is the one the filters compare.
    for column in FACETS:
        db.execute(f"CREATE INDEX items_{column} ON items (benchmark_id, coalesce({column}, ''), position)")
    # The search asks which items' texts the index cannot fold (a Python rule, db/item_query.py) once per version of
    # a benchmark's texts, not after every write: an edit or a removal bumps the version, an insertion the item count.
    _script(
        db,
        """
        ALTER TABLE benchmark_counts ADD COLUMN texts_version INTEGER NOT NULL DEFAULT 0;
        CREATE TRIGGER items_texts_au AFTER UPDATE OF question, hint, options ON items BEGIN
            UPDATE benchmark_counts SET texts_version = texts_version + 1 WHERE benchmark_id = NEW.benchmark_id;
        END;
        CREATE TRIGGER items_texts_ad AFTER DELETE ON items BEGIN
            UPDATE benchmark_counts SET texts_version = texts_version + 1 WHERE benchmark_id = OLD.benchmark_id;
        END;
        """,
    )
    # Migration 0015's count triggers ask whether another item of the benchmark shows the image. With the facet
    # indexes beside it the planner would answer by walking the benchmark (benchmark_id first in every facet index):
    # one walk per inserted item, quadratic for an import. "+" keeps it on the image's index, as before.
    _script(
        db,
        """
        DROP TRIGGER items_count_ai;
        DROP TRIGGER items_count_ad;
        CREATE TRIGGER items_count_ai AFTER INSERT ON items BEGIN
            INSERT INTO benchmark_counts (benchmark_id, items, images)
                VALUES (NEW.benchmark_id, 1, NEW.image_sha256 IS NOT NULL)
                ON CONFLICT (benchmark_id) DO UPDATE SET items = items + 1, images = images + (
                    NEW.image_sha256 IS NOT NULL AND NOT EXISTS (SELECT 1 FROM items o WHERE
                        o.image_sha256 = NEW.image_sha256 AND +o.benchmark_id = NEW.benchmark_id AND o.id != NEW.id));
        END;
        CREATE TRIGGER items_count_ad AFTER DELETE ON items BEGIN
            UPDATE benchmark_counts SET items = items - 1, images = images - (
                    OLD.image_sha256 IS NOT NULL AND NOT EXISTS (SELECT 1 FROM items o WHERE
                        o.image_sha256 = OLD.image_sha256 AND +o.benchmark_id = OLD.benchmark_id))
                WHERE benchmark_id = OLD.benchmark_id;
        END;
        """,
    )


# The run result of one item in one run (db/item_query.py RUN_RESULTS; evaluator/scoring/choices.py run_result is the
# rule, tests/db/test_run_result_sql.py holds the two together): from its stored passes `p`, the run `r` (CircularEval
# needs every rotation right) and the item `i`. Written out here because a released migration never changes.
RUN_RESULT_SQL = (
    "CASE WHEN sum(p.correct = 0) > 0 THEN 'wrong' WHEN sum(p.correct IS NULL) > 0 THEN 'unscored' "
    "WHEN sum(p.correct = 1) >= (CASE WHEN r.strategy = 'circular' THEN json_array_length(i.options) ELSE 1 END) "
    "THEN 'right' ELSE 'pending' END"
)
_RUN_RESULT_ROWS = (
    "INSERT INTO run_item_results (run_id, item_id, position, result) "
    f"SELECT p.run_id, p.item_id, i.position, {RUN_RESULT_SQL} FROM predictions p JOIN items i ON i.id = p.item_id "
    "JOIN runs r ON r.id = p.run_id"
)


def _rerun_result(run: str, item: str) -> str:
    """Statements (for a trigger) that derive the kept result of (run, item) afresh from its passes."""
    return (
        f"DELETE FROM run_item_results WHERE run_id = {run} AND item_id = {item};\n"
        f"{_RUN_RESULT_ROWS} WHERE p.run_id = {run} AND p.item_id = {item} GROUP BY p.run_id, p.item_id;"
    )


@migrations(name="0020_run_results")
def _m0020(db: Database) -> None:
    # Browse's run-result filter at a million items (issue 27, docs/adr/0044): the result of every (run, item) with a
    # stored pass is kept beside it by triggers, in the transaction of the write, with the item's position, so a
    # filter counts an index range and lists in file order from the index whatever the result's frequency.
    # Everything here is derived (rebuild_run_results).
    _script(
        db,
        f"""
        CREATE TABLE run_item_results (
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            item_id INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            result TEXT NOT NULL CHECK (result IN ('right', 'wrong', 'pending', 'unscored')),
            PRIMARY KEY (run_id, item_id)
        ) WITHOUT ROWID;
        CREATE INDEX run_item_results_listing ON run_item_results (run_id, result, position, item_id);
        CREATE INDEX run_item_results_item ON run_item_results (item_id);  -- an item's removal cascades by it
        -- A run's stored passes, which every listing of runs shows (and the window reads each second a run writes).
        CREATE TABLE run_counts (
            run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
            passes INTEGER NOT NULL DEFAULT 0
        );
        INSERT INTO run_counts (run_id, passes) SELECT run_id, count(*) FROM predictions GROUP BY run_id;
        CREATE TRIGGER predictions_result_ai AFTER INSERT ON predictions BEGIN
            {_rerun_result("NEW.run_id", "NEW.item_id")}
            INSERT INTO run_counts (run_id, passes) VALUES (NEW.run_id, 1)
                ON CONFLICT (run_id) DO UPDATE SET passes = passes + 1;
        END;
        CREATE TRIGGER predictions_result_au AFTER UPDATE ON predictions BEGIN
            {_rerun_result("OLD.run_id", "OLD.item_id")}
            {_rerun_result("NEW.run_id", "NEW.item_id")}
        END;
        CREATE TRIGGER predictions_result_ad AFTER DELETE ON predictions BEGIN
            {_rerun_result("OLD.run_id", "OLD.item_id")}
            UPDATE run_counts SET passes = passes - 1 WHERE run_id = OLD.run_id;
        END;
        CREATE TRIGGER items_result_au AFTER UPDATE OF position, options ON items BEGIN
            DELETE FROM run_item_results WHERE item_id = NEW.id;
            {_RUN_RESULT_ROWS} WHERE p.item_id = NEW.id GROUP BY p.run_id, p.item_id;
        END;
        CREATE TRIGGER runs_result_au AFTER UPDATE OF strategy ON runs BEGIN
            DELETE FROM run_item_results WHERE run_id = NEW.id;
            {_RUN_RESULT_ROWS} WHERE p.run_id = NEW.id GROUP BY p.run_id, p.item_id;
        END;
        """,
    )
    rebuild_run_results(db)
    # The arena's queue offers every item's first pair, then every item's second pair…: a pair's rank among its
    # item's pairs (by position) is kept beside it, so the next pair left for a voter is an index walk from the pair
    # just voted on, never a read of the whole queue (annotation/arena.py next_left).
    _script(
        db,
        f"""
        ALTER TABLE arena_pairs ADD COLUMN item_rank INTEGER NOT NULL DEFAULT 0;
        {_RERANK} WHERE 1 = 1;
        CREATE INDEX arena_pairs_queue ON arena_pairs (benchmark_id, item_rank, position);
        ALTER TABLE benchmark_counts ADD COLUMN arena_pairs INTEGER NOT NULL DEFAULT 0;
        UPDATE benchmark_counts SET arena_pairs =
            (SELECT count(*) FROM arena_pairs p WHERE p.benchmark_id = benchmark_counts.benchmark_id);
        CREATE TRIGGER arena_pairs_rank_ai AFTER INSERT ON arena_pairs BEGIN
            {_RERANK} WHERE item_id = NEW.item_id;
            UPDATE benchmark_counts SET arena_pairs = arena_pairs + 1 WHERE benchmark_id = NEW.benchmark_id;
        END;
        CREATE TRIGGER arena_pairs_rank_ad AFTER DELETE ON arena_pairs BEGIN
            {_RERANK} WHERE item_id = OLD.item_id;
            UPDATE benchmark_counts SET arena_pairs = arena_pairs - 1 WHERE benchmark_id = OLD.benchmark_id;
        END;
        """,
    )


_RERANK = (
    "UPDATE arena_pairs SET item_rank = (SELECT count(*) FROM arena_pairs o WHERE o.item_id = arena_pairs.item_id "
    "AND o.position < arena_pairs.position)"
)


def rebuild_run_results(db: Database) -> None:
    """Derive run_item_results afresh from the stored passes (migration 0020; repair)."""
    db.execute("DELETE FROM run_item_results")
    db.execute(f"{_RUN_RESULT_ROWS} GROUP BY p.run_id, p.item_id")


# --- migration 0021: a run's summary figures kept as passes are stored (issue 34) ------------------------------

NO_GROUP = "(none)"
"""The group of an item without a value (or an empty one) at a level: evaluator/analysis/report.py NONE."""


def _group(column: str) -> str:
    return f"CASE WHEN coalesce({column}, '') = '' THEN '{NO_GROUP}' ELSE {column} END"


def pope_official_sql(response: str) -> str:
    """SQL reading a response as POPE's official script does (evaluator/scoring/pope.py parse_official is the rule;
    tests/db/test_kept_figures.py holds the two together): the first sentence, commas dropped, and "no" when one of
    the words between single spaces is exactly No, no or not."""
    dot = f"instr({response}, '.')"
    first = f"CASE WHEN {dot} > 0 THEN substr({response}, 1, {dot} - 1) ELSE {response} END"
    words = f"(' ' || replace({first}, ',', '') || ' ')"
    no = " OR ".join(f"instr({words}, ' {word} ')" for word in ("No", "no", "not"))
    return f"CASE WHEN {no} THEN 'no' ELSE 'yes' END"


def _original_option(p: str) -> str:
    """The original option pass `p`'s reading chose (evaluator/scoring/choices.py original_option): NULL for undecided,
    Z, or a letter the pass did not show."""
    return (
        f"CASE WHEN {p}.choice IS NULL OR {p}.choice = 'Z' OR length({p}.choice) != 1 THEN NULL "
        f"WHEN unicode({p}.choice) - 65 BETWEEN 0 AND json_array_length({p}.option_order) - 1 "
        f"THEN json_extract({p}.option_order, '$[' || (unicode({p}.choice) - 65) || ']') END"
    )


# A report counts the items of the run's benchmark, and an open run's figures are not sums (means over answers).
_COUNTED = "i.benchmark_id = r.benchmark_id AND r.strategy != 'open'"
_KEYED = f"{_COUNTED} AND i.answer IS NOT NULL"
# What a (run, item) takes from its run `r` and item `i`: the right passes its result needs, and the passes at which a
# CircularEval item is complete (NULL where the run's figures do not count it circularly).
_NEEDED = "CASE WHEN r.strategy = 'circular' THEN json_array_length(i.options) ELSE 1 END"
_ROTATIONS = (
    "CASE WHEN r.strategy = 'circular' AND i.answer IS NOT NULL AND i.benchmark_id = r.benchmark_id "
    "THEN json_array_length(i.options) END"
)
_LEVELS = {"l2": "l2_category", "category": "category", "split": "split"}


def _flag(condition: str) -> str:
    """1 where `condition` holds, else 0. As a value, SQLite evaluates every operand of AND and OR; as a CASE's
    condition it stops at the first that decides (most of the work of a stored pass is these)."""
    return f"CASE WHEN {condition} THEN 1 ELSE 0 END"


def _pass0_figures(p: str, asked: str) -> dict[str, str]:
    """What the pair's pass 0 `p` adds (`asked`: whether there is one): VanillaEval and POPE read pass 0 only."""
    pope = f"r.strategy = 'pope' AND {asked} AND {_KEYED}"
    return {
        "vanilla": _flag(f"{asked} AND {p}.correct IS 1 AND r.strategy != 'pope' AND {_KEYED}"),
        "undecided_vanilla": _flag(f"{asked} AND {p}.choice IS NULL AND {_COUNTED}"),
        "pope_label": f"CASE WHEN {pope} THEN i.answer END",
        "official": f"CASE WHEN {pope} THEN CASE WHEN {p}.stage = 'likelihood' THEN coalesce({p}.choice, 'unknown') "
        f"ELSE {pope_official_sql(f'{p}.response')} END END",
        "strict": f"CASE WHEN {pope} THEN CASE WHEN {p}.choice IN ('yes', 'no') THEN {p}.choice ELSE 'unknown' END END",
    }


# run_item_figures, per (run, item) with a stored pass: its run result (run_item_results follows it), what it takes
# from its run and item, its groups, what its pass 0 adds, and whether a CircularEval item was asked every rotation
# (complete) and chose one original option in all (consistent). Where rotations is set, its result says whether it
# is right under CircularEval or still pending.
_PAIR_COLUMNS = {
    "result": "TEXT NOT NULL",
    "needed": "INTEGER NOT NULL",
    "rotations": "INTEGER",
    **{level: "TEXT NOT NULL" for level in _LEVELS},
    **{name: "INTEGER NOT NULL" for name in ("vanilla", "undecided_vanilla")},
    **{name: "TEXT" for name in ("pope_label", "official", "strict")},
    **{name: "INTEGER NOT NULL" for name in ("complete", "consistent")},
}


def _agreed(option: str) -> str:
    """Whether every pass chose one original option (`option` of each; a pair has a pass)."""
    return f"count({option}) = count(*) AND min({option}) = max({option})"


def _recounted(where: str) -> str:
    """A query of the run_item_figures rows of the pairs whose passes `p` `where` selects, counted from all their
    passes (the pair's run `r`, item `i` and pass 0 `p0`)."""
    original = _original_option("p")
    complete = f"count(*) IS ({_ROTATIONS})"
    values = {
        "result": RUN_RESULT_SQL,
        "needed": _NEEDED,
        "rotations": _ROTATIONS,
        **{level: _group(f"i.{column}") for level, column in _LEVELS.items()},
        **_pass0_figures("p0", "p0.pass IS NOT NULL"),
        "complete": _flag(complete),
        "consistent": _flag(f"{complete} AND {_agreed(original)}"),
    }
    return (
        f"SELECT p.run_id, p.item_id, {', '.join(f'{v} AS {c}' for c, v in values.items())} "
        "FROM predictions p JOIN items i ON i.id = p.item_id JOIN runs r ON r.id = p.run_id "
        "LEFT JOIN predictions p0 ON p0.run_id = p.run_id AND p0.item_id = p.item_id AND p0.pass = 0 "
        f"WHERE {where} GROUP BY p.run_id, p.item_id"
    )


def _refigure(where: str) -> str:
    """A statement deriving afresh the figure rows of the pairs whose passes `where` selects; a row whose figures did
    not change is left alone."""
    columns = ", ".join(_PAIR_COLUMNS)
    return (
        f"INSERT INTO run_item_figures (run_id, item_id, {columns}) {_recounted(where)} "
        f"ON CONFLICT (run_id, item_id) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in _PAIR_COLUMNS)} "
        f"WHERE ({columns}) IS NOT ({', '.join(f'excluded.{c}' for c in _PAIR_COLUMNS)});"
    )


def _refigure_pair(run: str, item: str, when: str = "1") -> str:
    """Statements (for a trigger) deriving the pair (run, item) afresh, `when` that holds: its row goes with its last
    pass (or with its item or run)."""
    passes = f"p.run_id = {run} AND p.item_id = {item}"
    return (
        f"DELETE FROM run_item_figures WHERE {when} AND run_id = {run} AND item_id = {item} AND NOT EXISTS (SELECT 1 "
        f"FROM predictions p JOIN items i ON i.id = p.item_id JOIN runs r ON r.id = p.run_id WHERE {passes});\n"
        f"{_refigure(f'{when} AND {passes}')}"
    )


# A stored pass is what a run writes a million times, so it costs a few index seeks and writes nothing else when it
# changes no figure (most passes of a CircularEval item). The pair's first pass makes its row from the pass, the
# item and the run. A later pass can change only the result (a wrong or unscored pass; the last right rotation), and
# complete and consistent when its passes reach the rotations (or pass them): those are counted on the pair's passes
# (the primary key's range), and the row is written only when they change. A pass 0 after others (VanillaEval and
# POPE read it) is rare and derives its pair afresh (_FIRST_PASS's conflict). Each says what _recounted says of the
# pair's passes; _LATER_PASS may see a pass twice (its result is the same).
def _result_after(result: str, rights: str, needed: str, passes: str = "1") -> str:
    """The run result once pass NEW joins passes whose result is `result` (NEW's among them: `passes`, those right
    `rights`): RUN_RESULT_SQL one pass at a time — a wrong pass decides, then an unscored one, a right result stays
    right, and right passes are counted only when there are enough passes."""
    return (
        f"CASE WHEN {result} = 'wrong' OR NEW.correct IS 0 THEN 'wrong' "
        f"WHEN {result} = 'unscored' OR NEW.correct IS NULL THEN 'unscored' "
        f"WHEN {result} = 'right' OR ({passes} >= {needed} AND {rights} >= {needed}) THEN 'right' ELSE 'pending' END"
    )


_PAIR_ROW = "SELECT 1 FROM run_item_figures f WHERE f.run_id = NEW.run_id AND f.item_id = NEW.item_id"
_FIRST_PASS = (
    f"INSERT INTO run_item_figures (run_id, item_id, {', '.join(_PAIR_COLUMNS)}) SELECT NEW.run_id, NEW.item_id, "
    + ", ".join(
        (
            _result_after("''", "(NEW.correct IS 1)", _NEEDED),
            _NEEDED,
            _ROTATIONS,
            *(_group(f"i.{column}") for column in _LEVELS.values()),
            *_pass0_figures("NEW", "NEW.pass = 0").values(),
            _flag(f"({_ROTATIONS}) IS 1"),
            _flag(f"({_ROTATIONS}) IS 1 AND ({_original_option('NEW')}) IS NOT NULL"),
        )
    )
    + " FROM items i, runs r WHERE i.id = NEW.item_id AND r.id = NEW.run_id "
    f"ON CONFLICT DO UPDATE SET ({', '.join(_PAIR_COLUMNS)}) = (SELECT {', '.join(_PAIR_COLUMNS)} FROM "
    f"({_recounted('p.run_id = NEW.run_id AND p.item_id = NEW.item_id')}));"
)
# Every pass chose NEW's original option (NEW is one of them).
_SAME_OPTION = (
    f"({_original_option('NEW')}) IS NOT NULL AND NOT EXISTS (SELECT 1 FROM predictions q WHERE q.run_id = NEW.run_id "
    f"AND q.item_id = NEW.item_id AND q.pass != NEW.pass "
    f"AND ({_original_option('q')}) IS NOT ({_original_option('NEW')}))"
)
_LATER_RESULT = _result_after(
    "result",
    "(SELECT count(*) FROM predictions q WHERE q.run_id = NEW.run_id AND q.item_id = NEW.item_id AND q.correct = 1)",
    "needed",
    "c.passes",
)
_LATER_PASS = (
    f"UPDATE run_item_figures SET result = {_LATER_RESULT}, complete = {_flag('c.passes IS rotations')}, "
    f"consistent = {_flag(f'c.passes IS rotations AND {_SAME_OPTION}')} FROM (SELECT count(*) AS passes "
    "FROM predictions q WHERE q.run_id = NEW.run_id AND q.item_id = NEW.item_id) c "
    "WHERE run_id = NEW.run_id AND item_id = NEW.item_id "
    f"AND ((rotations IS NOT NULL AND c.passes - rotations IN (0, 1)) OR result IS NOT {_LATER_RESULT});"
)


# What a figure row f adds to its run's sums, kept per combination of its groups (run_group_figures: a report sums a
# run's few combinations, and a pass whose figures change writes one row), and to its run's POPE tables (run_figures).
_GROUP_SUMS = {
    "vanilla": "{f}.vanilla",
    "circular": _flag("{f}.rotations IS NOT NULL AND {f}.result = 'right'"),
    "unasked": _flag("{f}.rotations IS NOT NULL AND {f}.result = 'pending'"),
    "undecided_vanilla": "{f}.undecided_vanilla",
    "complete": "{f}.complete",
    "consistent": "{f}.consistent",
}
_POPE_SUMS = {
    "pope_answered": "{f}.pope_label IS NOT NULL",
    "pope_labelled_yes": "{f}.pope_label IS 'yes'",
    **{
        f"{parser}_{name}": _flag(f"{{f}}.pope_label IS '{label}' AND {{f}}.{parser} IS '{reading}'")
        for parser in ("official", "strict")
        for name, label, reading in (("tp", "yes", "yes"), ("fp", "no", "yes"), ("tn", "no", "no"), ("fn", "yes", "no"))
    },
    **{
        f"{parser}_unknown": _flag(f"{{f}}.pope_label IS NOT NULL AND {{f}}.{parser} IS 'unknown'")
        for parser in ("official", "strict")
    },
}


def _combination(row: str) -> str:
    return " AND ".join(f"{level} = {row}.{level}" for level in ("run_id", *_LEVELS))


# Whether figure row f adds anything to its group sums (consistent is never without complete).
_ADDS = (
    "({f}.vanilla OR {f}.undecided_vanilla OR {f}.complete "
    "OR ({f}.rotations IS NOT NULL AND {f}.result IN ('right', 'pending')))"
)


def _group_sums(row: str, sign: str) -> str:
    """A statement adding (+) or taking (-) figure row `row`'s part of its group combination's sums."""
    parts = [expr.format(f=row) for expr in _GROUP_SUMS.values()]
    if sign == "+":
        return _group_upsert(row, parts, _ADDS.format(f=row))
    terms = ", ".join(f"{name} = {name} - {part}" for name, part in zip(_GROUP_SUMS, parts, strict=True))
    return f"UPDATE run_group_figures SET {terms} WHERE {_ADDS.format(f=row)} AND {_combination(row)};"


def _group_upsert(row: str, parts: list[str], when: str) -> str:
    return (
        f"INSERT INTO run_group_figures (run_id, {', '.join(_LEVELS)}, {', '.join(_GROUP_SUMS)}) "
        f"SELECT {row}.run_id, {', '.join(f'{row}.{level}' for level in _LEVELS)}, {', '.join(parts)} WHERE {when} "
        f"ON CONFLICT DO UPDATE SET {', '.join(f'{name} = {name} + excluded.{name}' for name in _GROUP_SUMS)};"
    )


_GROUPS_STAY = (
    f"({', '.join(f'OLD.{level}' for level in _LEVELS)}) IS ({', '.join(f'NEW.{level}' for level in _LEVELS)})"
)


def _group_sums_changed() -> str:
    """Statements adding what a figure row adds to its group combination's sums less what it added, when its groups
    stay (run_item_figures_groups_au moves it otherwise): where it added something its combination has a row."""
    parts = [f"{expr.format(f='NEW')} - {expr.format(f='OLD')}" for expr in _GROUP_SUMS.values()]
    terms = ", ".join(f"{name} = {name} + {part}" for name, part in zip(_GROUP_SUMS, parts, strict=True))
    added, adds = _ADDS.format(f="OLD"), _ADDS.format(f="NEW")
    return (
        f"UPDATE run_group_figures SET {terms} WHERE {_GROUPS_STAY} AND {added} AND {_combination('NEW')};\n"
        f"{_group_upsert('NEW', parts, f'{_GROUPS_STAY} AND NOT {added} AND {adds}')}"
    )


def _pope_sums(old: str | None, new: str | None) -> str:
    """A statement taking row `old`'s part of its run's POPE sums and adding row `new`'s."""
    terms = ", ".join(
        f"{name} = {name}" + "".join(f" {sign} ({expr.format(f=row)})" for sign, row in (("-", old), ("+", new)) if row)
        for name, expr in _POPE_SUMS.items()
    )
    return f"UPDATE run_figures SET {terms} WHERE run_id = {new or old}.run_id;"


# What one pass says whatever its item (n: a row of predictions), kept beside its run's count of passes in run_counts
# (one write a pass): read as undecided, and the tokens its server said (db/runs.py token_usage). A stored count is
# an integer in 0..2^40 or NULL (migration 0016's CHECK), so NULL is the only count not counted.
_PASS_SUMS = {
    "undecided": "{n}.choice IS NULL",
    "token_passes": _flag("{n}.prompt_tokens IS NOT NULL OR {n}.completion_tokens IS NOT NULL"),
    "prompt_passes": "{n}.prompt_tokens IS NOT NULL",
    "prompt_tokens": "coalesce({n}.prompt_tokens, 0)",
    "completion_passes": "{n}.completion_tokens IS NOT NULL",
    "completion_tokens": "coalesce({n}.completion_tokens, 0)",
}


def _pass_sums(row: str, sign: str, passes: str = "") -> str:
    """A statement adding (+) or taking (-) pass `row`'s part of its run's pass sums (and `passes` to its count)."""
    terms = ", ".join(f"{name} = {name} {sign} ({expr.format(n=row)})" for name, expr in _PASS_SUMS.items())
    return f"UPDATE run_counts SET {passes}{terms} WHERE run_id = {row}.run_id;"


def _group_counts(row: str, sign: str) -> str:
    """Statements adding (+) or taking (-) a keyed item's groups to its benchmark's counts."""
    if sign == "+":
        values = ", ".join(
            f"({row}.benchmark_id, '{level}', {_group(f'{row}.{column}')}, 1)" for level, column in _LEVELS.items()
        )
        return (
            f"INSERT INTO benchmark_groups (benchmark_id, level, name, answered) SELECT * FROM (VALUES {values}) "
            f"WHERE {row}.answer IS NOT NULL "
            "ON CONFLICT (benchmark_id, level, name) DO UPDATE SET answered = answered + 1;"
        )
    return "\n".join(
        f"UPDATE benchmark_groups SET answered = answered - 1 WHERE {row}.answer IS NOT NULL AND "
        f"benchmark_id = {row}.benchmark_id AND level = '{level}' AND name = {_group(f'{row}.{column}')};"
        for level, column in _LEVELS.items()
    )


@migrations(name="0021_run_figures")
def _m0021(db: Database) -> None:
    # A run's report and the runs list at a million passes (issue 34): the figures of a run's own scoring are sums over
    # its items and passes, kept beside them by triggers in the transaction of the write, so a report reads a few rows
    # whatever the run's size. run_item_figures holds each (run, item)'s figures; run_group_figures (per combination
    # of groups) and run_figures (POPE) are their sums, run_counts (migration 0020's count of passes) also sums what
    # each pass says, and benchmark_groups counts each group's keyed items (the questions a group's fractions divide
    # by, asked or not). Everything here is derived (rebuild_run_figures).
    #
    # Migration 0020's triggers deleted a pair's run_item_results row and derived it again from all its passes on
    # every stored pass; they are replaced here so that run_item_results follows run_item_figures, and a stored pass
    # writes its pair's rows only when a figure changes (twice per CircularEval item: its first pass, its last).
    pair_columns = ", ".join(f"{name} {kind}" for name, kind in _PAIR_COLUMNS.items())
    pass_columns = "\n".join(
        f"ALTER TABLE run_counts ADD COLUMN {name} INTEGER NOT NULL DEFAULT 0;" for name in _PASS_SUMS
    )
    _script(
        db,
        f"""
        DROP TRIGGER predictions_result_ai;
        DROP TRIGGER predictions_result_au;
        DROP TRIGGER predictions_result_ad;
        DROP TRIGGER items_result_au;
        DROP TRIGGER runs_result_au;
        {pass_columns}
        CREATE TABLE run_item_figures (
            run_id INTEGER NOT NULL,
            item_id INTEGER NOT NULL,
            {pair_columns},
            PRIMARY KEY (run_id, item_id)
        ) WITHOUT ROWID;
        CREATE TABLE run_group_figures (
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            {", ".join(f"{level} TEXT NOT NULL" for level in _LEVELS)},
            {", ".join(f"{name} INTEGER NOT NULL DEFAULT 0" for name in _GROUP_SUMS)},
            PRIMARY KEY (run_id, {", ".join(_LEVELS)})
        ) WITHOUT ROWID;
        CREATE TABLE run_figures (
            run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
            {", ".join(f"{name} INTEGER NOT NULL DEFAULT 0" for name in _POPE_SUMS)}
        );
        CREATE TABLE benchmark_groups (
            benchmark_id INTEGER NOT NULL REFERENCES benchmarks(id) ON DELETE CASCADE,
            level TEXT NOT NULL,
            name TEXT NOT NULL,
            answered INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (benchmark_id, level, name)
        ) WITHOUT ROWID;
        -- Every run has its row of counts from its start (0020 made it with the first pass), so a pass updates it.
        CREATE TRIGGER runs_figures_ai AFTER INSERT ON runs BEGIN
            INSERT INTO run_figures (run_id) VALUES (NEW.id);
            INSERT INTO run_counts (run_id) VALUES (NEW.id);
        END;
        CREATE TRIGGER runs_result_au AFTER UPDATE OF strategy, benchmark_id ON runs BEGIN
            {_refigure("p.run_id = NEW.id")}
        END;
        CREATE TRIGGER predictions_result_ai AFTER INSERT ON predictions BEGIN
            {_pass_sums("NEW", "+", "passes = passes + 1, ")}
        END;
        -- A pair's first pass, or a pass 0 (a row already there is derived afresh); any other pass. Both give the
        -- same figures in either order; SQLite runs the one created last first, so a first pass skips the other.
        CREATE TRIGGER predictions_first_ai AFTER INSERT ON predictions WHEN NEW.pass = 0 OR NOT EXISTS ({_PAIR_ROW})
                BEGIN
            {_FIRST_PASS}
        END;
        CREATE TRIGGER predictions_later_ai AFTER INSERT ON predictions WHEN NEW.pass != 0
                BEGIN
            {_LATER_PASS}
        END;
        CREATE TRIGGER predictions_result_au AFTER UPDATE ON predictions BEGIN
            {_refigure_pair("OLD.run_id", "OLD.item_id", "(OLD.run_id, OLD.item_id) IS NOT (NEW.run_id, NEW.item_id)")}
            {_refigure_pair("NEW.run_id", "NEW.item_id")}
            {_pass_sums("OLD", "-")}
            {_pass_sums("NEW", "+")}
        END;
        CREATE TRIGGER predictions_result_ad AFTER DELETE ON predictions BEGIN
            {_refigure_pair("OLD.run_id", "OLD.item_id")}
            {_pass_sums("OLD", "-", "passes = passes - 1, ")}
        END;
        CREATE TRIGGER items_result_au AFTER UPDATE OF position, options ON items BEGIN
            UPDATE run_item_results SET position = NEW.position WHERE item_id = NEW.id AND position IS NOT NEW.position;
            {_refigure("p.item_id = NEW.id")}
        END;
        CREATE TRIGGER run_item_figures_ai AFTER INSERT ON run_item_figures BEGIN
            INSERT INTO run_item_results (run_id, item_id, position, result)
                SELECT NEW.run_id, NEW.item_id, i.position, NEW.result FROM items i WHERE i.id = NEW.item_id;
            {_group_sums("NEW", "+")}
        END;
        CREATE TRIGGER run_item_figures_pope_ai AFTER INSERT ON run_item_figures WHEN NEW.pope_label IS NOT NULL BEGIN
            {_pope_sums(None, "NEW")}
        END;
        -- Both writers of a figure row write it only when it changed; the rare changes of its groups and POPE readings
        -- have their own triggers, which a stored pass (it sets neither) never considers.
        CREATE TRIGGER run_item_figures_au AFTER UPDATE ON run_item_figures BEGIN
            UPDATE run_item_results SET result = NEW.result
                WHERE OLD.result IS NOT NEW.result AND run_id = NEW.run_id AND item_id = NEW.item_id;
            {_group_sums_changed()}
        END;
        CREATE TRIGGER run_item_figures_groups_au AFTER UPDATE OF {", ".join(_LEVELS)} ON run_item_figures
                WHEN NOT {_GROUPS_STAY} BEGIN
            {_group_sums("OLD", "-")}
            {_group_sums("NEW", "+")}
        END;
        CREATE TRIGGER run_item_figures_pope_au AFTER UPDATE OF pope_label, official, strict ON run_item_figures
                WHEN (OLD.pope_label, OLD.official, OLD.strict) IS NOT (NEW.pope_label, NEW.official, NEW.strict) BEGIN
            {_pope_sums("OLD", "NEW")}
        END;
        CREATE TRIGGER run_item_figures_ad AFTER DELETE ON run_item_figures BEGIN
            DELETE FROM run_item_results WHERE run_id = OLD.run_id AND item_id = OLD.item_id;
            {_group_sums("OLD", "-")}
        END;
        CREATE TRIGGER run_item_figures_pope_ad AFTER DELETE ON run_item_figures WHEN OLD.pope_label IS NOT NULL BEGIN
            {_pope_sums("OLD", None)}
        END;
        CREATE TRIGGER items_groups_ai AFTER INSERT ON items WHEN NEW.answer IS NOT NULL BEGIN
            {_group_counts("NEW", "+")}
        END;
        CREATE TRIGGER items_groups_ad AFTER DELETE ON items WHEN OLD.answer IS NOT NULL BEGIN
            {_group_counts("OLD", "-")}
        END;
        CREATE TRIGGER items_groups_au AFTER UPDATE OF answer, category, l2_category, split ON items BEGIN
            {_group_counts("OLD", "-")}
            {_group_counts("NEW", "+")}
            {_refigure("p.item_id = NEW.id")}
        END;
        """,
    )
    rebuild_run_figures(db)


def rebuild_run_figures(db: Database) -> None:
    """Derive the kept figures, run_item_results and run_counts afresh from the runs, items and passes (migration
    0021; repair)."""
    sums = ", ".join(f"sum({expr.format(n='p')}) AS {name}" for name, expr in _PASS_SUMS.items())
    _script(
        db,
        f"""
        DELETE FROM run_group_figures;
        DELETE FROM run_figures;
        DELETE FROM run_item_figures;
        DELETE FROM run_item_results;
        DELETE FROM run_counts;
        DELETE FROM benchmark_groups;
        INSERT INTO run_figures (run_id) SELECT id FROM runs;
        INSERT INTO run_counts (run_id, passes, {", ".join(_PASS_SUMS)})
            SELECT r.id, {", ".join(f"coalesce(s.{name}, 0)" for name in ("passes", *_PASS_SUMS))} FROM runs r
            LEFT JOIN (SELECT p.run_id, count(*) AS passes, {sums} FROM predictions p GROUP BY p.run_id) s
            ON s.run_id = r.id;
        {_refigure("1")}
        """,
    )
    for level, column in _LEVELS.items():
        db.execute(
            f"INSERT INTO benchmark_groups (benchmark_id, level, name, answered) SELECT benchmark_id, '{level}', "
            f"{_group(column)} AS name, count(*) FROM items WHERE answer IS NOT NULL GROUP BY benchmark_id, name"
        )
    if any(row[1] == "finish_reason" for row in db.execute("PRAGMA table_info(predictions)").fetchall()):
        rebuild_thought_counts(db)  # run_counts' rows were made afresh (a repair after migration 0024)


def _stand(row: str) -> str:
    """Statements (for a trigger) that set the standing verdict of {row}'s (item, annotator) to the latest of its live
    records: one seek to the end of the pair's range in review_live."""
    pair = f"item_id = {row}.item_id AND annotator = {row}.annotator"
    return f"""
            DELETE FROM review_standing WHERE {pair};
            INSERT INTO review_standing (item_id, annotator, benchmark_id, review_id, verdict, corrected_answer,
                    created_at)
                SELECT t.item_id, t.annotator, i.benchmark_id, t.id, t.verdict, t.corrected_answer, t.created_at
                FROM (SELECT review_id FROM review_live WHERE {pair} ORDER BY created_at DESC, review_id DESC LIMIT 1) l
                JOIN reviews t ON t.id = l.review_id JOIN items i ON i.id = t.item_id;"""


_LATEST_LIVE = (
    "(SELECT l.review_id FROM review_live l WHERE l.item_id = {row}.item_id AND l.annotator = {row}.annotator "
    "ORDER BY l.created_at DESC, l.review_id DESC LIMIT 1)"
)


@migrations(name="0022_review_live")
def _m0022(db: Database) -> None:
    # Merges stay linear (issue 40): 0015 re-derived a pair's standing verdict on every review written by reading
    # every review of its item (reviews_item is (item_id, id)) and sorting the pair's, so a merge of N verdicts on an
    # item holding M cost N·M. Now the live records (verdicts no withdrawal names: annotation/standing.py `live`) are
    # kept by (item, annotator, time), and what stands is the last of its pair's: a verdict joins (unless an undo
    # merged earlier names it), an undo takes its target out, and the standing verdict is set again only when the
    # pair's last live record changed. Each is a few seeks, whatever the item, the pair or their withdrawals hold.
    # Derived like review_standing: filled here from the log by the same rule.
    _script(
        db,
        f"""
        CREATE TABLE review_live (
            item_id INTEGER NOT NULL,
            annotator TEXT NOT NULL,
            created_at TEXT NOT NULL,
            review_id INTEGER NOT NULL,
            PRIMARY KEY (item_id, annotator, created_at, review_id)
        ) WITHOUT ROWID;
        INSERT INTO review_live (item_id, annotator, created_at, review_id)
            SELECT t.item_id, t.annotator, t.created_at, t.id FROM reviews t
            WHERE t.verdict != 'undo' AND NOT EXISTS (SELECT 1 FROM reviews w WHERE w.withdraws = t.uuid);
        DROP TRIGGER reviews_standing_ai;
        DROP TRIGGER reviews_standing_ad;
        CREATE TRIGGER reviews_live_ai AFTER INSERT ON reviews BEGIN
            INSERT INTO review_live (item_id, annotator, created_at, review_id)
                SELECT NEW.item_id, NEW.annotator, NEW.created_at, NEW.id
                WHERE NEW.verdict != 'undo' AND NOT EXISTS (SELECT 1 FROM reviews w WHERE w.withdraws = NEW.uuid);
            -- "=" seeks the whole key; "IN" would be planned on item_id alone (a walk of the item's records).
            DELETE FROM review_live WHERE (item_id, annotator, created_at, review_id) =
                (SELECT item_id, annotator, created_at, id FROM reviews WHERE uuid = NEW.withdraws);
        END;
        -- A deleted row (its item deleted, or a repair) leaves; a deleted undo gives its target back, unless another
        -- withdrawal names it too.
        CREATE TRIGGER reviews_live_ad AFTER DELETE ON reviews BEGIN
            DELETE FROM review_live WHERE item_id = OLD.item_id AND annotator = OLD.annotator
                AND created_at = OLD.created_at AND review_id = OLD.id;
            INSERT OR IGNORE INTO review_live (item_id, annotator, created_at, review_id)
                SELECT t.item_id, t.annotator, t.created_at, t.id FROM reviews t
                WHERE t.uuid = OLD.withdraws AND t.verdict != 'undo'
                    AND NOT EXISTS (SELECT 1 FROM reviews w WHERE w.withdraws = t.uuid);
        END;
        CREATE TRIGGER review_live_ai AFTER INSERT ON review_live
            WHEN NEW.review_id = {_LATEST_LIVE.format(row="NEW")} BEGIN{_stand("NEW")}
        END;
        CREATE TRIGGER review_live_ad AFTER DELETE ON review_live
            WHEN EXISTS (SELECT 1 FROM review_standing s WHERE s.item_id = OLD.item_id AND s.annotator = OLD.annotator
                AND s.review_id = OLD.review_id) BEGIN{_stand("OLD")}
        END;
        """,
    )


# The verdicts that fit an item of each kind (annotation/item_kinds.py VERDICTS_BY_KIND), written out: a released
# migration never changes. tests/annotation/test_item_kinds.py holds the trigger to item_kinds.corrected_answer.
_VERDICT_DOOR = """
        CREATE TRIGGER reviews_fit_the_item BEFORE INSERT ON reviews WHEN NEW.verdict != 'undo' BEGIN
            SELECT RAISE(ABORT, 'reviews: unknown verdict (ok, wrong_answer, incomplete, ambiguous, text_answerable, bad_image, skip or undo)')
                WHERE NEW.verdict NOT IN
                    ('ok', 'wrong_answer', 'incomplete', 'ambiguous', 'text_answerable', 'bad_image', 'skip');
            SELECT RAISE(ABORT, 'reviews: an incomplete verdict fits only an open item')
                FROM items i JOIN benchmarks b ON b.id = i.benchmark_id
                WHERE NEW.verdict = 'incomplete' AND i.id = NEW.item_id AND b.kind != 'open';
            SELECT RAISE(ABORT, 'reviews: a wrong_answer on a yes/no item needs corrected_answer yes or no')
                FROM items i JOIN benchmarks b ON b.id = i.benchmark_id
                WHERE NEW.verdict = 'wrong_answer' AND i.id = NEW.item_id AND b.kind = 'yesno'
                    AND coalesce(NEW.corrected_answer IN ('yes', 'no'), 0) = 0;
            SELECT RAISE(ABORT, 'reviews: a wrong_answer on a multiple-choice item needs the letter of one of its options')
                FROM items i JOIN benchmarks b ON b.id = i.benchmark_id
                WHERE NEW.verdict = 'wrong_answer' AND i.id = NEW.item_id AND b.kind = 'mcq'
                    AND coalesce(length(NEW.corrected_answer) = 1 AND NEW.corrected_answer GLOB '[A-Z]'
                        AND unicode(NEW.corrected_answer) - 64 <= json_array_length(i.options), 0) = 0;
            SELECT RAISE(ABORT, 'reviews: a wrong_answer on an open item needs the right answer as corrected_answer')
                FROM items i JOIN benchmarks b ON b.id = i.benchmark_id
                WHERE NEW.verdict = 'wrong_answer' AND i.id = NEW.item_id AND b.kind = 'open'
                    AND trim(coalesce(NEW.corrected_answer, ''), ' ' || char(9, 10, 11, 12, 13)) = '';
        END;"""  # noqa: E501 (a message is one line)


@migrations(name="0023_verdicts_that_fit")
def _m0023(db: Database) -> None:
    # Issue 35: an open item could be given "wrong key → yes". A verdict must fit its item's kind at the door, for
    # every writer (the app, a merge, an older vlmdesk, another tool): the trigger refuses a verdict unknown or
    # foreign to the item's kind, and a wrong key whose corrected answer the kind does not admit. Undo rows always
    # pass (they withdraw; what they name is checked by the foreign key). Rows stored before are kept as they are:
    # the log is evidence, never rewritten.
    # A skip is no verdict: the kept progress counts (benchmark_counts.reviewed, annotator_counts.reviewed; read
    # only by annotation/reviews.py progress) now count items with a standing verdict other than a skip. Each
    # trigger still reads only the item's own standing rows (a primary-key range); the counts are derived afresh.
    _script(
        db,
        f"""{_VERDICT_DOOR}
        DROP TRIGGER review_standing_ai;
        DROP TRIGGER review_standing_ad;
        CREATE TRIGGER review_standing_ai AFTER INSERT ON review_standing BEGIN
            INSERT INTO annotator_counts (benchmark_id, annotator, reviewed)
                VALUES (NEW.benchmark_id, NEW.annotator, NEW.verdict != 'skip')
                ON CONFLICT (benchmark_id, annotator) DO UPDATE SET reviewed = reviewed + excluded.reviewed;
            UPDATE benchmark_counts SET reviewed = reviewed + 1 WHERE benchmark_id = NEW.benchmark_id
                AND NEW.verdict != 'skip' AND NOT EXISTS (SELECT 1 FROM review_standing s
                    WHERE s.item_id = NEW.item_id AND s.annotator != NEW.annotator AND s.verdict != 'skip');{_reconflict("NEW")}
        END;
        CREATE TRIGGER review_standing_ad AFTER DELETE ON review_standing BEGIN
            UPDATE annotator_counts SET reviewed = reviewed - 1
                WHERE benchmark_id = OLD.benchmark_id AND annotator = OLD.annotator AND OLD.verdict != 'skip';
            UPDATE benchmark_counts SET reviewed = reviewed - 1 WHERE benchmark_id = OLD.benchmark_id
                AND OLD.verdict != 'skip' AND NOT EXISTS (SELECT 1 FROM review_standing s
                    WHERE s.item_id = OLD.item_id AND s.verdict != 'skip');{_reconflict("OLD")}
        END;
        UPDATE annotator_counts SET reviewed = (SELECT count(*) FROM review_standing s
            WHERE s.benchmark_id = annotator_counts.benchmark_id AND s.annotator = annotator_counts.annotator
                AND s.verdict != 'skip');
        UPDATE benchmark_counts SET reviewed = (SELECT count(DISTINCT s.item_id) FROM review_standing s
            WHERE s.benchmark_id = benchmark_counts.benchmark_id AND s.verdict != 'skip');
        """,  # noqa: E501 (the statements read as written)
    )


# What a run's passes say about thinking and cut-off answers (migration 0024), kept in run_counts beside the token
# sums: passes the token budget ended (finish_reason 'length'), those of them cut inside the thought (stage
# 'truncated': no answer at all) and those scored wrong, and the reasoning tokens servers said the passes spent.
_THOUGHT_SUMS = {
    "truncated": "{n}.finish_reason IS 'length'",
    "truncated_thought": "{n}.stage IS 'truncated'",
    "truncated_wrong": "{n}.finish_reason IS 'length' AND {n}.correct IS 0",
    "reasoning_passes": "{n}.reasoning_tokens IS NOT NULL",
    "reasoning_tokens": "coalesce({n}.reasoning_tokens, 0)",
}


def _thought_sums(row: str, sign: str) -> str:
    terms = ", ".join(f"{name} = {name} {sign} ({expr.format(n=row)})" for name, expr in _THOUGHT_SUMS.items())
    return f"UPDATE run_counts SET {terms} WHERE run_id = {row}.run_id;"


def rebuild_thought_counts(db: Database) -> None:
    """Derive run_counts' thought sums afresh from the passes (migration 0024; repair, after rebuild_run_figures)."""
    for name, expr in _THOUGHT_SUMS.items():
        db.execute(
            f"UPDATE run_counts SET {name} = coalesce((SELECT sum({expr.format(n='p')}) FROM predictions p "
            "WHERE p.run_id = run_counts.run_id), 0)"
        )


@migrations(name="0024_thoughts")
def _m0024(db: Database) -> None:
    # Issue 36: thinking models. A pass stores its thought apart from its answer (extractors, judges, metrics and blind
    # views read `response`, the answer only), why generation stopped (`finish_reason`: 'length' when the token budget
    # ended it) and the reasoning tokens a server said it spent. Passes stored before have NULLs: nothing was split.
    # The sums a report shows are kept in run_counts by triggers of their own (the figures' triggers are untouched).
    columns = "\n".join(
        f"ALTER TABLE run_counts ADD COLUMN {name} INTEGER NOT NULL DEFAULT 0;" for name in _THOUGHT_SUMS
    )
    _script(
        db,
        f"""
        ALTER TABLE predictions ADD COLUMN thought TEXT;
        ALTER TABLE predictions ADD COLUMN finish_reason TEXT
            CHECK (finish_reason IS NULL OR (typeof(finish_reason) = 'text' AND length(finish_reason) <= 40));
        ALTER TABLE predictions ADD COLUMN reasoning_tokens INTEGER CHECK ({_token_count("reasoning_tokens")});
        {columns}
        CREATE TRIGGER predictions_thought_ai AFTER INSERT ON predictions
                WHEN NEW.finish_reason IS 'length' OR NEW.reasoning_tokens IS NOT NULL BEGIN
            {_thought_sums("NEW", "+")}
        END;
        CREATE TRIGGER predictions_thought_au AFTER UPDATE OF run_id, stage, correct, finish_reason, reasoning_tokens
                ON predictions BEGIN
            {_thought_sums("OLD", "-")}
            {_thought_sums("NEW", "+")}
        END;
        CREATE TRIGGER predictions_thought_ad AFTER DELETE ON predictions
                WHEN OLD.finish_reason IS 'length' OR OLD.reasoning_tokens IS NOT NULL BEGIN
            {_thought_sums("OLD", "-")}
        END;
        """,
    )


# Whether an item's later image shows `sha` in benchmark `bench` (beside the one the statement is about: `other`).
_LATER_SHOWN = (
    "SELECT 1 FROM item_images x JOIN items o ON o.id = x.item_id WHERE x.sha256 = {sha} "
    "AND +o.benchmark_id = {bench} AND {other}"
)


@migrations(name="0025_item_images")
def _m0025(db: Database) -> None:
    # Issue 37: an item may hold several images (MMMU, MathVista, HallusionBench…). The first stays where every item's
    # image is (items.image_sha256), so older workspaces and files read unchanged; the others are rows here, in order
    # (ord 1, 2, …), each an image stored once by content hash like any other.
    _script(
        db,
        f"""
        CREATE TABLE item_images (
            item_id INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
            ord INTEGER NOT NULL CHECK (typeof(ord) = 'integer' AND ord >= 1),
            sha256 TEXT NOT NULL REFERENCES images(sha256),
            PRIMARY KEY (item_id, ord)
        ) WITHOUT ROWID;
        CREATE INDEX item_images_image ON item_images (sha256);
        -- A benchmark's count of images (migration 0015) is of its distinct images, first or later ones: an image
        -- counts once it is shown by an item of the benchmark either way, and stops when none shows it. An item's
        -- later images are deleted before the item itself (BEFORE DELETE), while its benchmark can still be read;
        -- each test stays on the image's own indexes ("+" keeps the planner off the benchmark's facet indexes).
        DROP TRIGGER items_count_ai;
        DROP TRIGGER items_count_ad;
        CREATE TRIGGER items_count_ai AFTER INSERT ON items BEGIN
            INSERT INTO benchmark_counts (benchmark_id, items, images)
                VALUES (NEW.benchmark_id, 1, NEW.image_sha256 IS NOT NULL)
                ON CONFLICT (benchmark_id) DO UPDATE SET items = items + 1, images = images + (
                    NEW.image_sha256 IS NOT NULL
                    AND NOT EXISTS (SELECT 1 FROM items o WHERE
                        o.image_sha256 = NEW.image_sha256 AND +o.benchmark_id = NEW.benchmark_id AND o.id != NEW.id)
                    AND NOT EXISTS ({
            _LATER_SHOWN.format(sha="NEW.image_sha256", bench="NEW.benchmark_id", other="1")
        }));
        END;
        CREATE TRIGGER items_images_bd BEFORE DELETE ON items BEGIN
            DELETE FROM item_images WHERE item_id = OLD.id;
        END;
        CREATE TRIGGER items_count_ad AFTER DELETE ON items BEGIN
            UPDATE benchmark_counts SET items = items - 1, images = images - (
                    OLD.image_sha256 IS NOT NULL
                    AND NOT EXISTS (SELECT 1 FROM items o WHERE
                        o.image_sha256 = OLD.image_sha256 AND +o.benchmark_id = OLD.benchmark_id)
                    AND NOT EXISTS ({_LATER_SHOWN.format(sha="OLD.image_sha256", bench="OLD.benchmark_id", other="1")}))
                WHERE benchmark_id = OLD.benchmark_id;
        END;
        CREATE TRIGGER item_images_count_ai AFTER INSERT ON item_images BEGIN
            UPDATE benchmark_counts SET images = images + 1
                WHERE benchmark_id = (SELECT benchmark_id FROM items WHERE id = NEW.item_id)
                AND NOT EXISTS (SELECT 1 FROM items o WHERE o.image_sha256 = NEW.sha256
                    AND +o.benchmark_id = benchmark_counts.benchmark_id)
                AND NOT EXISTS ({
            _LATER_SHOWN.format(
                sha="NEW.sha256",
                bench="benchmark_counts.benchmark_id",
                other="(x.item_id, x.ord) != (NEW.item_id, NEW.ord)",
            )
        });
        END;
        CREATE TRIGGER item_images_count_ad AFTER DELETE ON item_images BEGIN
            UPDATE benchmark_counts SET images = images - 1
                WHERE benchmark_id = (SELECT benchmark_id FROM items WHERE id = OLD.item_id)
                AND NOT EXISTS (SELECT 1 FROM items o WHERE o.image_sha256 = OLD.sha256
                    AND +o.benchmark_id = benchmark_counts.benchmark_id)
                AND NOT EXISTS ({
            _LATER_SHOWN.format(sha="OLD.sha256", bench="benchmark_counts.benchmark_id", other="1")
        });
        END;
        """,
    )


@migrations(name="0026_sample_groups")
def _m0026(db: Database) -> None:
    # Issue 38: `run --samples K` stores K runs, a sample group; sample s >= 1 names its group by `sample_of` in its
    # config (sample 0's config key; not part of its own identity). A group's runs are found by this index, O(K) seeks
    # whatever else is stored; partial, so plain runs cost it nothing. A damaged config (a file written by other tools)
    # must stay storable and readable: the expression reads valid JSON only (db.runs.SAMPLE_OF_SQL is the same text).
    sample_of = "(CASE WHEN json_valid(config) THEN json_extract(config, '$.sample_of') END)"
    _script(db, f"CREATE INDEX runs_sample_of ON runs {sample_of} WHERE {sample_of} IS NOT NULL;")


@migrations(name="0027_team_plans")
def _m0027(db: Database) -> None:
    # Issue 39: an assignment plan says who judges which items of a benchmark (annotation/team_plans.py). A plan is
    # made whole and never changed; a newer plan for the benchmark supersedes it (the standing plan: the latest by
    # created_at, then id). Its uuid names it on every copy, so a plan merges like verdicts (annotation/sync.py).
    # Gold items carry the key the lead confirmed. "My next item" is one seek of team_plan_assignments' primary key
    # (plan, annotator, position); where an item sits in my queue, one seek of its unique (plan, item, annotator).
    _script(
        db,
        """
        CREATE TABLE team_plans (
            id INTEGER PRIMARY KEY,
            uuid TEXT NOT NULL UNIQUE,
            benchmark_id INTEGER NOT NULL REFERENCES benchmarks(id) ON DELETE CASCADE,
            annotators TEXT NOT NULL CHECK (json_valid(annotators) AND json_type(annotators) = 'array'),
            overlap INTEGER NOT NULL CHECK (overlap >= 1),
            seed INTEGER NOT NULL,
            gold_from TEXT NOT NULL CHECK (gold_from IN ('none', 'qc', 'file')),
            author TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE INDEX team_plans_standing ON team_plans (benchmark_id, created_at, id);
        CREATE TABLE team_plan_gold (
            plan_id INTEGER NOT NULL REFERENCES team_plans(id) ON DELETE CASCADE,
            item_id INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
            answer TEXT NOT NULL,
            PRIMARY KEY (plan_id, item_id)
        ) WITHOUT ROWID;
        CREATE TABLE team_plan_assignments (
            plan_id INTEGER NOT NULL REFERENCES team_plans(id) ON DELETE CASCADE,
            annotator TEXT NOT NULL,
            position INTEGER NOT NULL CHECK (position >= 0),
            item_id INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
            PRIMARY KEY (plan_id, annotator, position),
            UNIQUE (plan_id, item_id, annotator)
        ) WITHOUT ROWID;
        CREATE INDEX team_plan_assignments_item ON team_plan_assignments (item_id);
        CREATE TRIGGER team_plans_no_update BEFORE UPDATE ON team_plans
            BEGIN SELECT RAISE(ABORT, 'assignment plans are append-only: a new plan supersedes'); END;
        CREATE TRIGGER team_plan_gold_no_update BEFORE UPDATE ON team_plan_gold
            BEGIN SELECT RAISE(ABORT, 'assignment plans are append-only: a new plan supersedes'); END;
        CREATE TRIGGER team_plan_assignments_no_update BEFORE UPDATE ON team_plan_assignments
            BEGIN SELECT RAISE(ABORT, 'assignment plans are append-only: a new plan supersedes'); END;
        """,
    )


@migrations(name="0028_pair_judgements")
def _m0028(db: Database) -> None:
    # Issue 39: a judge model's verdict on an arena pair (annotation/pair_judge.py): one row per (pair, judgement
    # set, order). A set is a judge's spec identity + the prompt's version + whether it saw the image (`judge_set`,
    # a digest of the three, kept beside them); `swapped` 1: the pair's right answer was shown first (--both-orders).
    # verdict NULL = undecided (no readable verdict: never guessed), else mapped back to the pair's sides; raw is the
    # judge's last reply, redacted at the door and bounded. Asking again asks only the (pair, order)s not stored.
    _script(
        db,
        """
        CREATE TABLE pair_judgements (
            pair_id INTEGER NOT NULL REFERENCES arena_pairs (id) ON DELETE CASCADE,
            judge_set TEXT NOT NULL,
            judge TEXT NOT NULL,
            prompt_version TEXT NOT NULL,
            with_image INTEGER NOT NULL CHECK (with_image IN (0, 1)),
            swapped INTEGER NOT NULL CHECK (swapped IN (0, 1)),
            verdict TEXT CHECK (verdict IS NULL OR verdict IN ('left', 'right', 'tie', 'bothbad')),
            attempts INTEGER NOT NULL CHECK (attempts >= 1),
            raw TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (judge_set, pair_id, swapped)
        );
        CREATE INDEX pair_judgements_pair ON pair_judgements (pair_id);
        """,
    )


@migrations(name="0029_team_folder")
def _m0029(db: Database) -> None:
    # Issue 39: a team folder (annotation/team_sync.py). Per folder: this copy's journal there (named by a uuid made at
    # the first sync, made anew when the journal is found written by another copy of this workspace), how far it is
    # written and what it should end with (length and sha256 of its tail: a crash or a stranger's append is noticed),
    # an append under way (JSON, so a kill -9 between the append and the commit is resolved at the next sync), and
    # per table the last row id journaled (rows after it are the new ones: one range seek). team_received: rows
    # imported through a folder, never journaled back to it. team_peers: how far each other journal was read, under
    # the identity its header line gave. team_waiting: the lines of undos whose target has not come yet.
    _script(
        db,
        """
        CREATE TABLE team_folders (
            id INTEGER PRIMARY KEY,
            folder TEXT NOT NULL UNIQUE,
            journal TEXT NOT NULL UNIQUE,
            journal_bytes INTEGER NOT NULL DEFAULT 0 CHECK (journal_bytes >= 0),
            journal_tail TEXT,
            appending TEXT CHECK (appending IS NULL OR json_valid(appending)),
            marks TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(marks)),
            created_at TEXT NOT NULL,
            synced_at TEXT
        );
        CREATE TABLE team_received (
            tbl TEXT NOT NULL,
            row_id INTEGER NOT NULL,
            folder_id INTEGER NOT NULL REFERENCES team_folders(id) ON DELETE CASCADE,
            PRIMARY KEY (tbl, row_id, folder_id)
        ) WITHOUT ROWID;
        CREATE TABLE team_peers (
            folder_id INTEGER NOT NULL REFERENCES team_folders(id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            journal TEXT NOT NULL,
            label TEXT NOT NULL,
            offset INTEGER NOT NULL CHECK (offset >= 0),
            lines INTEGER NOT NULL CHECK (lines >= 0),
            PRIMARY KEY (folder_id, name)
        ) WITHOUT ROWID;
        CREATE TABLE team_waiting (
            folder_id INTEGER NOT NULL REFERENCES team_folders(id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            line INTEGER NOT NULL,
            text TEXT NOT NULL,
            PRIMARY KEY (folder_id, name, line)
        ) WITHOUT ROWID;
        """,
    )
