"""Quality control: flag suspect items from stored runs, then let humans confirm or reject every flag.

Stage "text-only": runs made with the image withheld; an item answered correctly (every CircularEval pass) by more
than half of the runs that evaluated it is a "text-answerable" candidate. Stage "consensus": VLM runs; an item no
run answers correctly is a "possibly flawed" candidate. Computing a stage again replaces its flags: items selected
again keep their flag (now naming the new runs), items no longer selected are withdrawn (they leave the queue).
Decisions hang on (item, stage), not on a computation, so they survive re-runs and keep counting.

Decisions are an append-only log, each with a uuid. Per flag, each reviewer's standing decision (annotation/
standing.py: the latest not withdrawn by an undo) is their vote; a vote is an outcome (keep the item, remove it, or
correct its answer to X). A correction is a newer decision; an undo row (decision `undo`) withdraws one. The
outcome with strictly the most votes stands; a tie between the top outcomes is "disputed" and changes nothing.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any

from annotation import standing
from annotation.names import BadName, annotator_name, record_note
from annotation.standing import QC_DECISIONS
from db import catalog, runs
from db.catalog import now_iso
from db.errors import UserError
from db.workspace import Workspace, inserted_id
from evaluator.scoring.choices import answer_keys, canonical_answer

STAGES = ("text-only", "consensus")
CATEGORY = {"text-only": "text-answerable", "consensus": "possibly flawed"}
REASONS = ("text_answerable", "wrong_answer", "ambiguous", "bad_image", "other")
REASON_TEXT = {
    "text_answerable": "answerable without the image",
    "wrong_answer": "wrong answer key",
    "ambiguous": "ambiguous",
    "bad_image": "bad image",
    "other": "other",
}
DECISIONS = ("confirm", "reject")
STATUSES = ("pending", "disputed", "confirmed", "rejected")


class QCError(UserError, ValueError):
    """A QC request that cannot be honoured (wrong runs for a stage, no such flag, bad answer...)."""


@dataclass(frozen=True)
class StageResult:
    stage_run_id: int
    benchmark_id: int
    stage: str
    run_ids: tuple[int, ...]
    items_evaluated: int
    candidates: tuple[int, ...]  # item ids, in benchmark order
    added: tuple[int, ...]  # newly flagged (or flagged again after a withdrawal)
    withdrawn: tuple[int, ...]  # flagged before, not selected any more


@dataclass(frozen=True)
class Decision:
    id: int
    item_id: int
    stage: str
    annotator: str
    decision: str
    reason: str | None
    note: str | None
    old_answer: str | None
    new_answer: str | None
    created_at: str
    uuid: str = ""
    withdraws: str | None = None  # on an undo row: the uuid of the decision it withdraws

    @property
    def outcome(self) -> tuple[str, str | None]:
        """What this decision asks the curated benchmark to do: keep, remove, or correct the answer."""
        if self.decision == "reject":
            return ("keep", None)
        if self.reason == "wrong_answer":
            return ("correct", self.new_answer)
        return ("remove", None)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Resolution:
    status: str  # pending | disputed | confirmed | rejected
    action: str | None  # keep | remove | correct, when not pending/disputed
    answer: str | None  # the corrected answer when action == "correct"
    reason: str | None  # the most common reason among the votes that won (confirmed only)
    disagreement: bool  # reviewers' standing decisions differ
    votes: tuple[Decision, ...]  # each reviewer's standing decision


@dataclass(frozen=True)
class Candidate:
    flag_id: int
    item_id: int
    benchmark_id: int
    benchmark: str
    index: int | str
    position: int
    stage: str
    item_category: str | None
    question: str
    answer: str | None
    active: bool
    run_ids: tuple[int, ...]
    correct_run_ids: tuple[int, ...]
    flagged_at: str
    updated_at: str
    resolution: Resolution
    history: tuple[Decision, ...]  # the whole log of the flag, undo rows included, in time order

    @property
    def status(self) -> str:
        return self.resolution.status

    def to_json(self) -> dict[str, Any]:
        r = self.resolution
        return {
            "benchmark": self.benchmark,
            "index": self.index,
            "stage": self.stage,
            "category": CATEGORY[self.stage],
            "status": r.status,
            "active": self.active,
            "action": r.action,
            "corrected_answer": r.answer,
            "reason": r.reason,
            "disagreement": r.disagreement,
            "item_category": self.item_category,
            "question": self.question,
            "answer": self.answer,
            "runs": list(self.run_ids),
            "correct_runs": list(self.correct_run_ids),
            "flagged_at": self.flagged_at,
            "updated_at": self.updated_at,
            "decisions": [d.to_json() for d in r.votes],
            "history": [d.to_json() for d in self.history],
        }


# ---------------------------------------------------------------------------------------------------- stages
def check_stage_runs(ws: Workspace, benchmark_id: int, stage: str, run_ids: list[int]) -> list[runs.Run]:
    """The runs, or QCError saying why they cannot feed this stage."""
    if stage not in STAGES:
        raise QCError(f"unknown stage {stage!r} ({', '.join(STAGES)})")
    if not run_ids:
        raise QCError(f"the {stage} stage needs at least one run")
    if len(set(run_ids)) != len(run_ids):
        raise QCError("a run is named twice: " + ", ".join(str(r) for r, n in Counter(run_ids).items() if n > 1))
    found = []
    for run_id in run_ids:
        run = runs.get_run(ws, run_id)
        if run is None:
            raise QCError(f"no run {run_id}")
        if run.benchmark_id != benchmark_id:
            raise QCError(f"run {run_id} is a run of benchmark {run.benchmark!r}, not of this one")
        if run.strategy not in ("circular", "pope"):
            raise QCError(
                f"run {run_id} is a {run.strategy} run; QC needs CircularEval runs (vlmdesk run without "
                "--strategy vanilla)"
            )
        if run.status != "finished":
            raise QCError(
                f"run {run_id} is {run.status}, not finished (continue it with: vlmdesk run --resume {run_id})"
            )
        text_only = bool(run.config.get("text_only"))
        if stage == "text-only" and not text_only:
            raise QCError(f"run {run_id} saw the images; the text-only stage needs runs made with --text-only")
        if stage == "consensus" and text_only:
            raise QCError(f"run {run_id} was made without images; the consensus stage needs VLM runs that saw them")
        found.append(run)
    return found


def circular_correctness(ws: Workspace, run_ids: list[int]) -> dict[int, dict[int, bool]]:
    """item id -> {run id: answered correctly} for every item with an answer key that the run evaluated.

    Correct means the run result is right (evaluator/scoring/choices.py run_result): every CircularEval pass right, or
    the one pass of a yes/no item.
    """
    from db import item_query

    found: dict[int, dict[int, bool]] = defaultdict(dict)
    for item_id, by_run in item_query.run_results(ws, run_ids).items():
        for run_id, result in by_run.items():
            if result != "unscored":
                found[item_id][run_id] = result == "right"
    return found


def selected(stage: str, by_run: dict[int, bool]) -> bool:
    right = sum(by_run.values())
    if stage == "text-only":
        return 2 * right > len(by_run)  # strictly more than half
    return right == 0


def compute_stage(ws: Workspace, benchmark_id: int, stage: str, run_ids: list[int]) -> StageResult:
    """Flag the items the stage's rule selects over these runs; replaces the stage's previous flags (one
    transaction). Decisions already given stay attached to their (item, stage)."""
    check_stage_runs(ws, benchmark_id, stage, run_ids)
    correctness = circular_correctness(ws, run_ids)
    order = {i.id: i.position for i in catalog.list_items(ws, benchmark_id)}
    chosen = sorted((item for item, by_run in correctness.items() if selected(stage, by_run)), key=order.__getitem__)
    now = now_iso()
    with ws.db.atomic():
        before = {
            row[0]: bool(row[1])
            for row in ws.conn.execute(
                "SELECT item_id, active FROM qc_flags WHERE benchmark_id = ? AND stage = ?", (benchmark_id, stage)
            )
        }
        cur = ws.conn.execute(
            "INSERT INTO qc_stage_runs (benchmark_id, stage, run_ids, items_evaluated, candidates, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (benchmark_id, stage, json.dumps(run_ids), len(correctness), len(chosen), now),
        )
        stage_run_id = inserted_id(cur)
        ws.conn.executemany(
            "INSERT INTO qc_flags (benchmark_id, item_id, stage, stage_run_id, run_ids, correct_run_ids, active, "
            "flagged_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?) "
            "ON CONFLICT (item_id, stage) DO UPDATE SET stage_run_id = excluded.stage_run_id, "
            "run_ids = excluded.run_ids, correct_run_ids = excluded.correct_run_ids, active = 1, "
            "updated_at = excluded.updated_at",
            [
                (
                    benchmark_id,
                    item,
                    stage,
                    stage_run_id,
                    json.dumps(sorted(correctness[item])),
                    json.dumps(sorted(r for r, ok in correctness[item].items() if ok)),
                    now,
                    now,
                )
                for item in chosen
            ],
        )
        withdrawn = sorted(
            (item for item, active in before.items() if active and item not in set(chosen)),
            key=lambda i: order.get(i, 0),
        )
        ws.conn.executemany(
            "UPDATE qc_flags SET active = 0, updated_at = ? WHERE item_id = ? AND stage = ?",
            [(now, item, stage) for item in withdrawn],
        )
    return StageResult(
        stage_run_id,
        benchmark_id,
        stage,
        tuple(run_ids),
        len(correctness),
        tuple(chosen),
        tuple(i for i in chosen if not before.get(i)),
        tuple(withdrawn),
    )


def stage_history(ws: Workspace, benchmark_id: int) -> list[dict[str, Any]]:
    rows = ws.conn.execute(
        "SELECT id, stage, run_ids, items_evaluated, candidates, created_at FROM qc_stage_runs "
        "WHERE benchmark_id = ? ORDER BY id",
        (benchmark_id,),
    )
    return [
        {
            "id": r[0],
            "stage": r[1],
            "runs": json.loads(r[2]),
            "items_evaluated": r[3],
            "candidates": r[4],
            "created_at": r[5],
        }
        for r in rows
    ]


# -------------------------------------------------------------------------------------------------- decisions
def flag_stages(ws: Workspace, item_id: int) -> list[str]:
    """The stages in which the item has a flag (active or withdrawn)."""
    return [r[0] for r in ws.conn.execute("SELECT stage FROM qc_flags WHERE item_id = ? ORDER BY stage", (item_id,))]


def decide(
    ws: Workspace,
    item_id: int,
    stage: str,
    annotator: str,
    decision: str,
    *,
    reason: str | None = None,
    note: str | None = None,
    answer: str | None = None,
) -> Decision:
    """Append a decision on the item's flag in `stage`; committed at once. A confirmation without a reason takes
    'wrong_answer' when an answer is given, 'text_answerable' in the text-only stage, and is refused otherwise."""
    annotator = _annotator(annotator)
    try:
        note = record_note(note)
    except BadName as exc:
        raise QCError(str(exc)) from None
    if decision not in DECISIONS:
        raise QCError(f"unknown decision {decision!r} (confirm or reject)")
    if stage not in flag_stages(ws, item_id):
        raise QCError(f"the item has no {stage} flag" + _stages_hint(ws, item_id))
    item = _item(ws, item_id)
    if decision == "reject":
        if reason is not None or answer is not None:
            raise QCError("a rejection takes no reason and no answer (it says the flag is wrong)")
    else:
        if reason is None:
            reason = "wrong_answer" if answer is not None else "text_answerable" if stage == "text-only" else None
        if reason is None:
            raise QCError(f"a confirmation needs a reason ({', '.join(REASONS)})")
        if reason not in REASONS:
            raise QCError(f"unknown reason {reason!r} ({', '.join(REASONS)})")
        if reason == "wrong_answer":
            answer = _valid_answer(item, answer)
        elif answer is not None:
            raise QCError("only a wrong-answer confirmation takes a corrected answer")
    return _append(
        ws, item_id, stage, annotator, decision, reason, note, item.answer if answer is not None else None, answer, None
    )


def undo_decision(ws: Workspace, item_id: int, stage: str, annotator: str) -> Decision | None:
    """Withdraw the annotator's standing decision on the item's flag in `stage`. Returns the withdrawn one."""
    annotator = _annotator(annotator)
    found = ws.conn.execute(
        standing.standing_sql(QC_DECISIONS, _COLUMNS, "t.item_id = ? AND t.stage = ? AND t.annotator = ?"),
        (item_id, stage, annotator),
    ).fetchone()
    if found is None:
        return None
    withdrawn = Decision(*found)
    _append(ws, item_id, stage, annotator, standing.WITHDRAWAL, None, None, None, None, withdrawn.uuid)
    return withdrawn


_COLUMNS = "id, item_id, stage, annotator, decision, reason, note, old_answer, new_answer, created_at, uuid, withdraws"


def _append(
    ws: Workspace,
    item_id: int,
    stage: str,
    annotator: str,
    decision: str,
    reason: str | None,
    note: str | None,
    old_answer: str | None,
    new_answer: str | None,
    withdraws: str | None,
) -> Decision:
    created, uid = now_iso(), standing.new_uuid()
    with ws.db.atomic():
        cur = ws.conn.execute(
            f"INSERT INTO qc_decisions ({_COLUMNS.removeprefix('id, ')}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (item_id, stage, annotator, decision, reason, note, old_answer, new_answer, created, uid, withdraws),
        )
    return Decision(
        inserted_id(cur),
        item_id,
        stage,
        annotator,
        decision,
        reason,
        note,
        old_answer,
        new_answer,
        created,
        uid,
        withdraws,
    )


def _annotator(name: str) -> str:
    try:
        return annotator_name(name or "")
    except BadName as exc:
        raise QCError(f"annotator: {exc}") from None


def _stages_hint(ws: Workspace, item_id: int) -> str:
    stages = flag_stages(ws, item_id)
    return f" (it has: {', '.join(stages)})" if stages else " (it is not a QC candidate)"


def _item(ws: Workspace, item_id: int) -> catalog.Item:
    row = ws.conn.execute("SELECT benchmark_id, source_index FROM items WHERE id = ?", (item_id,)).fetchone()
    if row is None:
        raise QCError(f"no item {item_id}")
    item = catalog.item_by_index(ws, row[0], row[1])
    if item is None:  # the row read just above: gone only if deleted in between
        raise QCError(f"no item {item_id}")
    return item


def _valid_answer(item: catalog.Item, answer: str | None) -> str:
    if answer is None or not str(answer).strip():
        raise QCError("a wrong-answer confirmation needs the corrected answer (--answer)")
    typed = str(answer).strip()
    answer = canonical_answer(len(item.options), typed)
    if answer is None:
        typed = typed.upper() if item.options else typed.lower()
        raise QCError(f"answer {typed!r} is not one of {', '.join(answer_keys(len(item.options)))}")
    if answer == item.answer:
        raise QCError(f"{answer} is already the answer key")
    return answer


def history(ws: Workspace, item_id: int, stage: str | None = None) -> list[Decision]:
    """Every decision and undo on the item (in one stage), in time order."""
    sql = (
        f"SELECT {_COLUMNS} FROM qc_decisions WHERE item_id = ?"
        + (" AND stage = ?" if stage else "")
        + f" ORDER BY {standing.ORDER}"
    )
    return [Decision(*r) for r in ws.conn.execute(sql, (item_id, stage) if stage else (item_id,))]


def standing_decisions(ws: Workspace, item_id: int, stage: str) -> list[Decision]:
    """Each reviewer's standing decision on the item's flag in `stage`, in time order."""
    return [
        Decision(*r)
        for r in ws.conn.execute(
            standing.standing_sql(QC_DECISIONS, _COLUMNS, "t.item_id = ? AND t.stage = ?"), (item_id, stage)
        )
    ]


def resolve(standing_votes: list[Decision]) -> Resolution:
    """`votes`: each reviewer's standing decision on one flag (standing_decisions). Strictly the most votes wins, a
    tie at the top is disputed."""
    votes = tuple(standing_votes)
    if len({d.annotator for d in votes}) != len(votes) or any(d.decision == standing.WITHDRAWAL for d in votes):
        raise ValueError("resolve() takes one standing decision per reviewer (qc.standing_decisions)")
    if not votes:
        return Resolution("pending", None, None, None, False, ())
    tally = Counter(d.outcome for d in votes)
    ranked = tally.most_common()
    disagreement = len(tally) > 1
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return Resolution("disputed", None, None, None, disagreement, votes)
    (action, answer), _ = ranked[0]
    if action == "keep":
        return Resolution("rejected", "keep", None, None, disagreement, votes)
    reasons = Counter(d.reason for d in votes if d.outcome == (action, answer))
    return Resolution("confirmed", action, answer, reasons.most_common(1)[0][0], disagreement, votes)


# ------------------------------------------------------------------------------------------------------ queue
_STATUS_ORDER = {s: n for n, s in enumerate(STATUSES)}


def queue(
    ws: Workspace,
    *,
    benchmark_id: int | None = None,
    stage: str | None = None,
    status: str | None = None,
    include_withdrawn: bool = False,
    disagreements_only: bool = False,
) -> list[Candidate]:
    """The review queue: pending first, then disputed, confirmed, rejected; in benchmark order within each."""
    found = list(_candidates(ws, benchmark_id, stage, include_withdrawn, status, disagreements_only))
    found.sort(key=lambda c: (_STATUS_ORDER[c.status], c.benchmark_id, c.position, c.stage))
    return found


def iter_queue(
    ws: Workspace,
    *,
    benchmark_id: int | None = None,
    stage: str | None = None,
    status: str | None = None,
    include_withdrawn: bool = False,
    disagreements_only: bool = False,
) -> Iterator[Candidate]:
    """`queue`, in the same order, streamed in constant memory (a pass over the flags per status; SQLite sorts
    them): a million flags are listed as they are read."""
    for wanted in (status,) if status is not None else STATUSES:
        yield from _candidates(ws, benchmark_id, stage, include_withdrawn, wanted, disagreements_only, ordered=True)


_CHUNK = 500


def _candidates(
    ws: Workspace,
    benchmark_id: int | None,
    stage: str | None,
    include_withdrawn: bool,
    status: str | None,
    disagreements_only: bool,
    *,
    ordered: bool = False,
) -> Iterator[Candidate]:
    """The flags as candidates with their decisions, read a chunk of flags at a time."""
    sql = (
        "SELECT f.id, f.item_id, f.benchmark_id, b.name, i.source_index, i.position, f.stage, i.category, "
        "i.question, i.answer, f.active, f.run_ids, f.correct_run_ids, f.flagged_at, f.updated_at "
        "FROM qc_flags f JOIN items i ON i.id = f.item_id JOIN benchmarks b ON b.id = f.benchmark_id WHERE 1 = 1"
    )
    params: list[object] = []
    for clause, value in (("f.benchmark_id = ?", benchmark_id), ("f.stage = ?", stage)):
        if value is not None:
            sql += f" AND {clause}"
            params.append(value)
    if not include_withdrawn:
        sql += " AND f.active = 1"
    if ordered:
        sql += " ORDER BY f.benchmark_id, i.position, f.stage, f.id"
    cursor = ws.conn.execute(sql, params)
    while flags := cursor.fetchmany(_CHUNK):
        decisions: dict[tuple[int, str], list[Decision]] = defaultdict(list)
        votes: dict[tuple[int, str], list[Decision]] = defaultdict(list)
        part = sorted({f[1] for f in flags})
        among = f"t.item_id IN ({','.join('?' * len(part))})"
        for row in ws.conn.execute(
            f"SELECT {_COLUMNS} FROM qc_decisions t WHERE {among} ORDER BY {standing.ORDER}", part
        ):
            d = Decision(*row)
            decisions[(d.item_id, d.stage)].append(d)
        for row in ws.conn.execute(standing.standing_sql(QC_DECISIONS, _COLUMNS, among), part):
            d = Decision(*row)
            votes[(d.item_id, d.stage)].append(d)
        for flag_id, item_id, bid, name, index, position, fstage, category, question, answer, *rest in flags:
            active, run_ids, correct, flagged_at, updated_at = rest
            resolution = resolve(votes[(item_id, fstage)])
            if status is not None and resolution.status != status:
                continue
            if disagreements_only and not resolution.disagreement:
                continue
            yield Candidate(
                *(flag_id, item_id, bid, name, index, position, fstage, category, question, answer, bool(active)),
                *(tuple(json.loads(run_ids)), tuple(json.loads(correct)), flagged_at, updated_at, resolution),
                tuple(decisions[(item_id, fstage)]),
            )


def summary(ws: Workspace, benchmark_id: int | None = None) -> list[dict[str, Any]]:
    """Per benchmark: counts per stage, and within each stage per reason (confirmed) and per item category.
    Withdrawn flags are counted apart and nowhere else."""
    out: dict[int, dict[str, Any]] = {}
    for c in queue(ws, benchmark_id=benchmark_id, include_withdrawn=True):
        bench = out.setdefault(c.benchmark_id, {"benchmark": c.benchmark, "stages": {}})
        stage = bench["stages"].setdefault(
            c.stage,
            {
                "category": CATEGORY[c.stage],
                **_counts(),
                "withdrawn": 0,
                "disagreements": 0,
                "by_reason": {},
                "by_item_category": {},
            },
        )
        if not c.active:
            stage["withdrawn"] += 1
            continue
        _count(stage, c.status)
        stage["disagreements"] += c.resolution.disagreement
        if c.status == "confirmed":
            stage["by_reason"][c.resolution.reason] = stage["by_reason"].get(c.resolution.reason, 0) + 1
        _count(stage["by_item_category"].setdefault(c.item_category or "(none)", _counts()), c.status)
    result = []
    for bench in out.values():
        total = _counts()
        for stage in bench["stages"].values():
            for key in total:
                total[key] += stage[key]
            stage["by_item_category"] = dict(sorted(stage["by_item_category"].items()))
        bench["total"] = total
        bench["stages"] = {s: bench["stages"][s] for s in STAGES if s in bench["stages"]}
        result.append(bench)
    return result


def _counts() -> dict[str, Any]:
    return {"candidates": 0, "pending": 0, "disputed": 0, "confirmed": 0, "rejected": 0}


def _count(counts: dict[str, Any], status: str) -> None:
    counts["candidates"] += 1
    counts[status] += 1
