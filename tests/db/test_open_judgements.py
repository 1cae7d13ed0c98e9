"""Migration 0017_open_judgements: an older workspace gains the tables of the open-answer judge; the schema holds
what a verdict may be, and a run's verdicts go with its answers."""

import sqlite3

import pytest
from sqlite_utils import Database

from db import open_judgements, open_workspace, schema
from db.open_judgements import OpenJudgement


def test_an_older_workspace_gains_the_judge_tables_and_they_hold_their_rules(tmp_path):
    path = tmp_path / "old.sqlite"
    db = Database(str(path))
    schema.migrations.apply(db, stop_before="0017_open_judgements")
    db.execute(f"PRAGMA user_version = {schema.migration_names().index('0017_open_judgements')}")
    for statement in [
        "INSERT INTO benchmarks (id, name, kind, format, source, source_sha256, rows_read, imported_at) "
        "VALUES (1, 'o', 'open', 'jsonl', 'o.jsonl', 'abc', 1, '2024-01-01')",
        "INSERT INTO items (id, benchmark_id, position, source_index, question, options, meta) "
        """VALUES (1, 1, 1, 1, 'What?', '[]', '{"references": ["a cat"]}')""",
        "INSERT INTO runs (id, benchmark_id, model_spec, strategy, prompt_template, extractor, config_key, status, "
        "created_at, updated_at) VALUES (1, 1, 'baseline:first', 'open', '{}', 'rules', 'k', 'finished', '', '')",
        "INSERT INTO predictions (run_id, item_id, pass, option_order, prompt, response, stage, created_at) "
        "VALUES (1, 1, 0, '[]', 'p', 'a cat', 'none', '')",
    ]:
        db.execute(statement)
    db.conn.commit()
    db.close()
    with open_workspace(path) as ws:
        assert ws.schema_version() == schema.latest_version()
        sha = open_judgements.rubric_sha256("R")
        found = OpenJudgement(1, 1, 0, "openai:j@http://127.0.0.1:9/v1", sha, "right", "same", 1, "[Verdict] right")
        open_judgements.store_judgements(ws, [found], "R")
        assert open_judgements.judgements_of(ws, 1) == [found]
        assert open_judgements.rubric_text(ws, sha) == "R"
        with pytest.raises(ValueError, match="another rubric"):
            open_judgements.store_judgements(ws, [found], "not R")
        with pytest.raises(sqlite3.IntegrityError):  # a verdict is right, partly, wrong or NULL (undecided)
            ws.conn.execute("INSERT INTO open_judgements VALUES (1, 1, 0, 'j2', ?, 'maybe', '', 1, '', '')", (sha,))
        ws.conn.rollback()
        # The first verdict stands; deleting the run deletes its verdicts (not the rubric: others may share it).
        again = OpenJudgement(1, 1, 0, found.judge, sha, "wrong", "changed", 1, "[Verdict] wrong")
        open_judgements.store_judgements(ws, [again], "R")
        assert [j.verdict for j in open_judgements.judgements_of(ws, 1)] == ["right"]
        with ws.db.atomic():
            ws.conn.execute("DELETE FROM runs WHERE id = 1")
        assert open_judgements.judgements_of(ws, 1) == [] and open_judgements.rubric_text(ws, sha) == "R"
