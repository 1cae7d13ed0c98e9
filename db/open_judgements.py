"""An LLM judge's verdicts on open answers (tables `open_judgements`, `judge_rubrics`, migration 0017): one row per
(run, item, pass, judge spec identity, rubric sha256), so a judge is never asked twice about the same answer under
the same rubric. A NULL verdict is undecided — no readable verdict after the bounded retries — kept with the judge's
raw reply, never guessed. Each rubric's text is stored once, by its sha256, so a judgement set names what it was
asked with."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from db.catalog import now_iso
from db.workspace import Workspace

VERDICTS = ("right", "partly", "wrong")
RAW_MAX = 4000  # the judge's last reply, as stored
REASON_MAX = 1000


def rubric_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class OpenJudgement:
    run_id: int
    item_id: int
    pass_: int
    judge: str  # the judge's spec identity (backends.run_identity)
    rubric_sha256: str
    verdict: str | None  # right | partly | wrong; None: undecided
    reason: str
    attempts: int
    raw: str


@dataclass(frozen=True)
class JudgementSet:
    """The judgements of one run by one judge under one rubric: counts per verdict (None: undecided)."""

    run_id: int
    judge: str
    rubric_sha256: str
    counts: dict[str | None, int]
    last_at: str

    @property
    def judged(self) -> int:
        return sum(self.counts.values())


def rubric_text(ws: Workspace, sha256: str) -> str | None:
    row = ws.conn.execute("SELECT text FROM judge_rubrics WHERE sha256 = ?", (sha256,)).fetchone()
    return None if row is None else str(row[0])


def judgements_of(
    ws: Workspace, run_id: int, judge: str | None = None, rubric_sha256: str | None = None
) -> list[OpenJudgement]:
    """A run's stored verdicts (of one judge and/or rubric, or of all), by judge, rubric, item and pass."""
    sql = (
        "SELECT run_id, item_id, pass, judge, rubric_sha256, verdict, reason, attempts, raw FROM open_judgements "
        "WHERE run_id = ?"
    )
    args: list[object] = [run_id]
    if judge is not None:
        sql += " AND judge = ?"
        args.append(judge)
    if rubric_sha256 is not None:
        sql += " AND rubric_sha256 = ?"
        args.append(rubric_sha256)
    rows = ws.conn.execute(sql + " ORDER BY judge, rubric_sha256, item_id, pass", args).fetchall()
    return [OpenJudgement(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8]) for r in rows]


def store_judgements(ws: Workspace, found: list[OpenJudgement], rubric: str) -> None:
    """One batch with the text of the rubric it was asked with, one transaction; a verdict already stored is kept
    (the first answer stands)."""
    now = now_iso()
    sha = rubric_sha256(rubric)
    if any(j.rubric_sha256 != sha for j in found):
        raise ValueError("judgements stored with another rubric than the one they name")
    with ws.db.atomic():
        ws.conn.execute(
            "INSERT OR IGNORE INTO judge_rubrics (sha256, text, created_at) VALUES (?, ?, ?)", (sha, rubric, now)
        )
        ws.conn.executemany(
            "INSERT OR IGNORE INTO open_judgements (run_id, item_id, pass, judge, rubric_sha256, verdict, reason, "
            "attempts, raw, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    j.run_id,
                    j.item_id,
                    j.pass_,
                    j.judge,
                    j.rubric_sha256,
                    j.verdict,
                    j.reason[:REASON_MAX],
                    j.attempts,
                    j.raw[:RAW_MAX],
                    now,
                )
                for j in found
            ],
        )


def judgement_sets(ws: Workspace, run_id: int) -> list[JudgementSet]:
    """The (judge, rubric) sets that judged some answers of the run, the most recently added to first."""
    rows = ws.conn.execute(
        "SELECT judge, rubric_sha256, verdict, count(*), max(created_at) FROM open_judgements WHERE run_id = ? "
        "GROUP BY judge, rubric_sha256, verdict",
        (run_id,),
    ).fetchall()
    sets: dict[tuple[str, str], tuple[dict[str | None, int], str]] = {}
    for judge, rubric, verdict, n, last in rows:
        counts, seen = sets.get((judge, rubric), ({}, ""))
        counts[verdict] = int(n)
        sets[(judge, rubric)] = (counts, max(seen, str(last)))
    found = [JudgementSet(run_id, j, r, c, last) for (j, r), (c, last) in sets.items()]
    return sorted(found, key=lambda s: (s.last_at, s.judge, s.rubric_sha256), reverse=True)
