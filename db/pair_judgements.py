"""A judge model's verdicts on arena pairs (table `pair_judgements`, migration 0028): one row per (judgement set,
pair, order). A **judgement set** is what makes one judge's verdicts comparable: its spec identity
(backends.run_identity), the version of the pairwise prompt and whether it saw the item's image — its key is a
digest of the three. `swapped` 0 shows the pair's left answer first, 1 its right answer first (--both-orders asks
both: orders are rows of one set, not two sets). The verdict is stored mapped back to the pair's sides (left, right,
tie, bothbad); NULL is undecided — no readable verdict — kept with the judge's raw reply, never guessed."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

from db.catalog import now_iso
from db.workspace import Workspace

VERDICTS = ("left", "right", "tie", "bothbad")
RAW_MAX = 4000  # the judge's last reply, as stored


def set_key(judge: str, prompt_version: str, with_image: bool) -> str:
    """The judgement set's key: 16 hex digits of sha256 over (judge identity, prompt version, with image)."""
    text = json.dumps([judge, prompt_version, bool(with_image)], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class PairJudgement:
    pair_id: int
    judge_set: str
    judge: str  # the judge's spec identity (backends.run_identity)
    prompt_version: str
    with_image: bool
    swapped: bool  # True: the pair's right answer was shown first
    verdict: str | None  # left | right | tie | bothbad, on the pair's sides; None: undecided
    attempts: int
    raw: str


@dataclass(frozen=True)
class JudgeSet:
    """One judgement set of a benchmark's pairs: who, how, and what it holds."""

    key: str
    judge: str
    prompt_version: str
    with_image: bool
    judgements: int
    pairs: int
    swapped: int  # judgements made with the sides swapped
    undecided: int
    last_at: str

    def to_json(self) -> dict[str, object]:
        return {
            "set": self.key,
            "judge": self.judge,
            "prompt_version": self.prompt_version,
            "with_image": self.with_image,
            "judgements": self.judgements,
            "pairs": self.pairs,
            "swapped": self.swapped,
            "undecided": self.undecided,
            "last_at": self.last_at,
        }


_COLUMNS = "pair_id, judge_set, judge, prompt_version, with_image, swapped, verdict, attempts, raw"


def _row(r: Sequence[object]) -> PairJudgement:
    return PairJudgement(
        int(r[0]),  # type: ignore[call-overload]
        str(r[1]),
        str(r[2]),
        str(r[3]),
        bool(r[4]),
        bool(r[5]),
        None if r[6] is None else str(r[6]),
        int(r[7]),  # type: ignore[call-overload]
        str(r[8]),
    )


def judgements_of(ws: Workspace, key: str, benchmark_id: int | None = None) -> list[PairJudgement]:
    """A set's judgements (of one benchmark's pairs), by pair and order: read by the set's key (the primary key's
    prefix), so the cost follows the set, not what else is stored."""
    sql = f"SELECT {_COLUMNS} FROM pair_judgements WHERE judge_set = ?"
    args: list[object] = [key]
    if benchmark_id is not None:
        sql += " AND pair_id IN (SELECT id FROM arena_pairs WHERE benchmark_id = ?)"
        args.append(benchmark_id)
    return [_row(r) for r in ws.conn.execute(sql + " ORDER BY pair_id, swapped", args)]


def store(ws: Workspace, found: Sequence[PairJudgement]) -> None:
    """One batch in one transaction; a judgement already stored is kept (the first answer stands)."""
    now = now_iso()
    for j in found:
        if j.judge_set != set_key(j.judge, j.prompt_version, j.with_image):
            raise ValueError("a judgement stored under another set than its judge, prompt and image name")
    with ws.db.atomic():
        ws.conn.executemany(
            f"INSERT OR IGNORE INTO pair_judgements ({_COLUMNS}, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    j.pair_id,
                    j.judge_set,
                    j.judge,
                    j.prompt_version,
                    int(j.with_image),
                    int(j.swapped),
                    j.verdict,
                    j.attempts,
                    j.raw[:RAW_MAX],
                    now,
                )
                for j in found
            ],
        )


def sets_of(ws: Workspace, benchmark_id: int) -> list[JudgeSet]:
    """The judgement sets that judged some of a benchmark's pairs, the most recently added to first."""
    rows = ws.conn.execute(
        "SELECT j.judge_set, j.judge, j.prompt_version, j.with_image, count(*), count(DISTINCT j.pair_id), "
        "sum(j.swapped), sum(j.verdict IS NULL), max(j.created_at) FROM arena_pairs p "
        "JOIN pair_judgements j ON j.pair_id = p.id WHERE p.benchmark_id = ? "
        "GROUP BY j.judge_set, j.judge, j.prompt_version, j.with_image",
        (benchmark_id,),
    ).fetchall()
    found = [
        JudgeSet(str(r[0]), str(r[1]), str(r[2]), bool(r[3]), int(r[4]), int(r[5]), int(r[6]), int(r[7]), str(r[8]))
        for r in rows
    ]
    return sorted(found, key=lambda s: (s.last_at, s.key), reverse=True)
