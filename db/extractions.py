"""The extraction cache and stored re-scorings of runs (tables `extractions`, `scorings`, `scored_passes`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from db.catalog import now_iso
from db.workspace import Workspace, inserted_id


@dataclass(frozen=True)
class CachedExtraction:
    key: str
    extractor: str
    choice: str | None
    stage: str
    reason: str
    raw: tuple[str, ...]  # the extractor model's replies, in order
    attempts: int


def cached(ws: Workspace, keys: list[str]) -> dict[str, CachedExtraction]:
    found: dict[str, CachedExtraction] = {}
    unique = list(dict.fromkeys(keys))
    for start in range(0, len(unique), 500):  # SQLite's bound-parameter limit
        chunk = unique[start : start + 500]
        rows = ws.conn.execute(
            f"SELECT key, extractor, choice, stage, reason, raw, attempts FROM extractions "
            f"WHERE key IN ({','.join('?' * len(chunk))})",
            chunk,
        )
        for r in rows:
            found[r[0]] = CachedExtraction(r[0], r[1], r[2], r[3], r[4], tuple(json.loads(r[5])), r[6])
    return found


def store(ws: Workspace, entries: list[CachedExtraction]) -> None:
    now = now_iso()
    with ws.db.atomic():
        ws.conn.executemany(
            "INSERT OR REPLACE INTO extractions (key, extractor, choice, stage, reason, raw, attempts, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    e.key,
                    e.extractor,
                    e.choice,
                    e.stage,
                    e.reason,
                    json.dumps(list(e.raw), ensure_ascii=False),
                    e.attempts,
                    now,
                )
                for e in entries
            ],
        )


def cache_size(ws: Workspace, extractor: str | None = None) -> int:
    if extractor is None:
        return int(ws.conn.execute("SELECT count(*) FROM extractions").fetchone()[0])
    return int(ws.conn.execute("SELECT count(*) FROM extractions WHERE extractor = ?", (extractor,)).fetchone()[0])


# --- scorings ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scoring:
    id: int
    run_id: int
    name: str
    summary: dict[str, Any]
    created_at: str


@dataclass(frozen=True)
class ScoredPass:
    item_id: int
    pass_: int
    choice: str | None
    stage: str
    reason: str | None
    correct: bool | None


def save_scoring(ws: Workspace, run_id: int, name: str, passes: list[ScoredPass], summary: dict[str, Any]) -> Scoring:
    """Store (or replace, under the same name) one scoring of a run, in one transaction."""
    now = now_iso()
    with ws.db.atomic():
        ws.conn.execute("DELETE FROM scorings WHERE run_id = ? AND name = ?", (run_id, name))
        cur = ws.conn.execute(
            "INSERT INTO scorings (run_id, name, summary, created_at) VALUES (?, ?, ?, ?)",
            (run_id, name, json.dumps(summary, sort_keys=True), now),
        )
        scoring_id = inserted_id(cur)
        ws.conn.executemany(
            "INSERT INTO scored_passes (scoring_id, item_id, pass, choice, stage, reason, correct) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    scoring_id,
                    p.item_id,
                    p.pass_,
                    p.choice,
                    p.stage,
                    p.reason,
                    None if p.correct is None else int(p.correct),
                )
                for p in passes
            ],
        )
    return Scoring(scoring_id, run_id, name, summary, now)


def scorings_of(ws: Workspace, run_id: int) -> list[Scoring]:
    rows = ws.conn.execute(
        "SELECT id, run_id, name, summary, created_at FROM scorings WHERE run_id = ? ORDER BY id", (run_id,)
    )
    return [Scoring(r[0], r[1], r[2], json.loads(r[3]), r[4]) for r in rows]


def scored_passes(ws: Workspace, scoring_id: int) -> list[ScoredPass]:
    rows = ws.conn.execute(
        "SELECT item_id, pass, choice, stage, reason, correct FROM scored_passes "
        "WHERE scoring_id = ? ORDER BY item_id, pass",
        (scoring_id,),
    )
    return [ScoredPass(r[0], r[1], r[2], r[3], r[4], None if r[5] is None else bool(r[5])) for r in rows]
