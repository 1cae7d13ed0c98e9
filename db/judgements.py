"""A judge model's 0-10 scores of a pass's language (table `judgements`, migration 0011): one row per (run, item,
pass, judge spec), so a judge is never asked twice about the same pass. A NULL score is a judgement that could not
be read after the bounded retries: missing, never invented."""

from __future__ import annotations

from dataclasses import dataclass

from db.catalog import now_iso
from db.workspace import Workspace


@dataclass(frozen=True)
class Judgement:
    run_id: int
    item_id: int
    pass_: int
    judge: str
    score: float | None
    attempts: int
    raw: str  # the judge's last reply (cut at 4,000 characters)


RAW_MAX = 4000


def judgements_of(ws: Workspace, run_id: int, judge: str | None = None) -> list[Judgement]:
    """A run's stored judgements (of one judge spec, or of all), by item and pass."""
    sql = "SELECT run_id, item_id, pass, judge, score, attempts, raw FROM judgements WHERE run_id = ?"
    args: list[object] = [run_id]
    if judge is not None:
        sql += " AND judge = ?"
        args.append(judge)
    rows = ws.conn.execute(sql + " ORDER BY judge, item_id, pass", args).fetchall()
    return [Judgement(r[0], r[1], r[2], r[3], None if r[4] is None else float(r[4]), r[5], r[6]) for r in rows]


def store_judgements(ws: Workspace, found: list[Judgement]) -> None:
    """One batch, one transaction; a judgement already stored is kept (the first answer stands)."""
    now = now_iso()
    with ws.db.atomic():
        ws.conn.executemany(
            "INSERT OR IGNORE INTO judgements (run_id, item_id, pass, judge, score, attempts, raw, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [(j.run_id, j.item_id, j.pass_, j.judge, j.score, j.attempts, j.raw[:RAW_MAX], now) for j in found],
        )


def judged_runs(ws: Workspace) -> dict[int, tuple[str, ...]]:
    """run id -> the judge specs that scored some of its passes."""
    out: dict[int, list[str]] = {}
    for run_id, judge in ws.conn.execute("SELECT DISTINCT run_id, judge FROM judgements ORDER BY run_id, judge"):
        out.setdefault(run_id, []).append(judge)
    return {k: tuple(v) for k, v in out.items()}
