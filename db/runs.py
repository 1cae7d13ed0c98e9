"""Runs and their predictions (one row per run, item and pass)."""
from __future__ import annotations

import json
from dataclasses import dataclass

from db.catalog import now_iso
from db.workspace import Workspace


@dataclass(frozen=True)
class Run:
    id: int
    benchmark_id: int
    benchmark: str
    model_spec: str
    strategy: str
    prompt_template: str
    extractor: str
    config: dict
    config_key: str
    versions: dict
    git_revision: str | None
    seed: int
    status: str
    error: str | None
    created_at: str
    updated_at: str
    finished_at: str | None
    predictions: int = 0


@dataclass(frozen=True)
class Prediction:
    run_id: int
    item_id: int
    pass_: int
    option_order: tuple[int, ...]
    prompt: str
    response: str
    answer: str | None
    choice: str | None
    stage: str
    reason: str | None
    correct: bool | None
    latency_ms: float | None

    def row(self, created_at: str) -> tuple:
        return (self.run_id, self.item_id, self.pass_, json.dumps(list(self.option_order)), self.prompt,
                self.response, self.answer, self.choice, self.stage, self.reason,
                None if self.correct is None else int(self.correct), self.latency_ms, created_at)


_RUN_SELECT = """
SELECT r.*, b.name AS benchmark, (SELECT count(*) FROM predictions p WHERE p.run_id = r.id) AS predictions
FROM runs r JOIN benchmarks b ON b.id = r.benchmark_id
"""


def _run(row: dict) -> Run:
    row = dict(row)
    row["config"] = json.loads(row["config"])
    row["versions"] = json.loads(row["versions"])
    return Run(**row)


def create_run(ws: Workspace, *, benchmark_id: int, model_spec: str, strategy: str, prompt_template: str,
               extractor: str, config: dict, config_key: str, versions: dict, git_revision: str | None,
               seed: int) -> int:
    now = now_iso()
    with ws.db.atomic():
        cur = ws.conn.execute(
            "INSERT INTO runs (benchmark_id, model_spec, strategy, prompt_template, extractor, config, config_key, "
            "versions, git_revision, seed, status, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'running', ?, ?)",
            (benchmark_id, model_spec, strategy, prompt_template, extractor, json.dumps(config, sort_keys=True),
             config_key, json.dumps(versions, sort_keys=True), git_revision, seed, now, now),
        )
    return cur.lastrowid


def get_run(ws: Workspace, run_id: int) -> Run | None:
    rows = list(ws.db.query(_RUN_SELECT + " WHERE r.id = ?", [run_id]))
    return _run(rows[0]) if rows else None


def latest_run_with_key(ws: Workspace, config_key: str) -> Run | None:
    rows = list(ws.db.query(_RUN_SELECT + " WHERE r.config_key = ? ORDER BY r.id DESC LIMIT 1", [config_key]))
    return _run(rows[0]) if rows else None


def list_runs(ws: Workspace) -> list[Run]:
    return [_run(r) for r in ws.db.query(_RUN_SELECT + " ORDER BY r.id")]


def set_status(ws: Workspace, run_id: int, status: str, *, error: str | None = None) -> None:
    now = now_iso()
    with ws.db.atomic():
        ws.conn.execute("UPDATE runs SET status = ?, error = ?, updated_at = ?, finished_at = ? WHERE id = ?",
                        (status, error, now, now if status == "finished" else None, run_id))


def add_predictions(ws: Workspace, predictions: list[Prediction]) -> None:
    """One batch, one transaction: a batch is either stored whole or (after a kill) not at all."""
    now = now_iso()
    with ws.db.atomic():
        ws.conn.executemany(
            "INSERT INTO predictions (run_id, item_id, pass, option_order, prompt, response, answer, choice, stage, "
            "reason, correct, latency_ms, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [p.row(now) for p in predictions],
        )
        if predictions:
            ws.conn.execute("UPDATE runs SET updated_at = ? WHERE id = ?", (now, predictions[0].run_id))


def predictions_of(ws: Workspace, run_id: int) -> list[Prediction]:
    rows = ws.conn.execute(
        "SELECT run_id, item_id, pass, option_order, prompt, response, answer, choice, stage, reason, correct, "
        "latency_ms FROM predictions WHERE run_id = ? ORDER BY item_id, pass", (run_id,))
    return [Prediction(r[0], r[1], r[2], tuple(json.loads(r[3])), r[4], r[5], r[6], r[7], r[8], r[9],
                       None if r[10] is None else bool(r[10]), r[11]) for r in rows]
