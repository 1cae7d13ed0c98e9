"""People's verdicts on open answers: is a run's free answer to an item right, partly right or wrong?

The human side of "which open metric to trust" (docs/adr/0036). An annotator walks the answers of chosen runs to an
open benchmark, one (run, item) at a time, and sees the question, the image, the reference answers and the answer —
never the model, a metric's score or anyone else's verdict; the scores and the model of an answer are shown only
after the annotator's own verdict on it is committed (`reveal`).

Verdicts are human records like every other (annotation/standing.py): appended with a uuid, committed at once, a
correction is a newer verdict, an undo is a row naming the uuid it withdraws. A record holds the sha256 of the
answer judged (`answer_key`), so a copy of the workspace merges it by what was judged (annotation/sync.py).

The human label of a (run, item) — what the metrics are held against: the newest standing adjudication, else the
majority of the annotators' standing verdicts; a tie has none (it awaits adjudication and is left out, counted).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal, get_args

from annotation import standing
from annotation.arena import arena_runs
from annotation.names import annotator_name, record_note
from annotation.standing import OPEN_VERDICTS
from db import catalog, runs
from db.catalog import now_iso
from db.errors import InvalidInput, NotFound, UserError
from db.runs import answer_key
from db.workspace import Workspace, inserted_id

Verdict = Literal["right", "partly", "wrong"]
VERDICTS: tuple[Verdict, ...] = get_args(Verdict)
"""In key order: 1 right, 2 partly, 3 wrong."""
Role = Literal["verdict", "adjudication"]
ROLES: tuple[Role, ...] = get_args(Role)
UNDO: Final = standing.WITHDRAWAL
Unit = tuple[int, int]
"""(run id, item id): one answer."""

_COLUMNS = "id, run_id, item_id, answer_key, role, annotator, verdict, note, seconds, created_at, uuid, withdraws"


class NotJudgedYet(UserError):
    """Scores and the model of an answer are shown to an annotator only after their own verdict on it stands."""


@dataclass(frozen=True)
class OpenVerdict:
    id: int
    run_id: int
    item_id: int
    answer_key: str
    role: Role
    annotator: str
    verdict: Verdict | Literal["undo"]
    note: str | None
    seconds: float | None
    created_at: str
    uuid: str
    withdraws: str | None


@dataclass(frozen=True)
class Task:
    """What an annotator sees of one answer: never the model, a score or another annotator's verdict."""

    run_id: int
    item: catalog.Item
    answer: str
    done: int  # answers of the chosen runs this annotator has judged
    total: int

    @property
    def unit(self) -> Unit:
        return self.run_id, self.item.id


@dataclass(frozen=True)
class HumanLabel:
    verdict: Verdict | None  # None: a tie awaiting adjudication
    source: Literal["adjudicated", "majority", "tie"]


# ------------------------------------------------------------------------------------------------- the answers
def judgeable_runs(ws: Workspace, benchmark_id: int | None = None) -> list[runs.Run]:
    """The runs whose answers can be judged: every run on an open benchmark (the arena's rule, one home)."""
    return arena_runs(ws, benchmark_id)


def chosen_runs(ws: Workspace, bench: catalog.Benchmark, run_ids: Sequence[int]) -> list[int]:
    """The run ids, checked: each exists and is a run on this open benchmark."""
    if bench.kind != "open":
        raise InvalidInput(f"benchmark {bench.name!r} is {bench.kind}; verdicts judge answers to open questions")
    if not run_ids:
        raise InvalidInput("choose at least one run")
    eligible = {r.id for r in judgeable_runs(ws, bench.id)}
    for run_id in run_ids:
        if run_id not in eligible:
            run = runs.get_run(ws, run_id)
            raise (
                NotFound(f"no run {run_id}")
                if run is None
                else InvalidInput(f"run {run_id} is on benchmark {run.benchmark!r}, not {bench.name!r}")
            )
    return list(dict.fromkeys(run_ids))


def _units(ws: Workspace, run_ids: Sequence[int]) -> list[Unit]:
    """The answers (pass 0) of the runs, by (run, item) only: the queue never reads the answers' texts."""
    rows = ws.conn.execute(
        "SELECT run_id, item_id FROM predictions WHERE pass = 0 AND run_id IN (SELECT value FROM json_each(?))",
        (json.dumps(list(run_ids)),),
    )
    return [(r, i) for r, i in rows]


def _answer(ws: Workspace, unit: Unit) -> str | None:
    row = ws.conn.execute(
        "SELECT response FROM predictions WHERE run_id = ? AND item_id = ? AND pass = 0", unit
    ).fetchone()
    return None if row is None else str(row[0])


def _order(unit: Unit) -> str:
    # Answers are shown in an order that mixes runs and items (a fixed hash, so every session shows the same
    # order): a run's answers do not come one after another, so its style cannot be learnt from its neighbours.
    return hashlib.sha256(f"{unit[0]}/{unit[1]}".encode()).hexdigest()


def queue(ws: Workspace, run_ids: Sequence[int]) -> list[Unit]:
    """Every answer (pass 0) of the runs, in the order they are shown."""
    return sorted(_units(ws, run_ids), key=_order)


def left_for(ws: Workspace, run_ids: Sequence[int], annotator: str, everything: list[Unit] | None = None) -> list[Unit]:
    """The answers of the runs (of `everything`, their queue, when the caller has it) this annotator has no standing
    verdict on, in the order they are shown."""
    judged = set(standing_verdicts(ws, run_ids, annotator=annotator))
    return [u for u in (queue(ws, run_ids) if everything is None else everything) if u not in judged]


def next_task(
    ws: Workspace, run_ids: Sequence[int], annotator: str, *, after_item: int | None = None, skip: Sequence[Unit] = ()
) -> Task | None:
    """The next answer to judge (skipped ones last); never another answer to the item just judged while answers to
    other items are left — the two answers would be compared, not judged each against the references."""
    annotator = annotator_name(annotator)
    everything = queue(ws, run_ids)
    left = left_for(ws, run_ids, annotator, everything)
    ahead = [u for u in left if u not in skip] + [u for u in left if u in skip]
    unit = next((u for u in ahead if u[1] != after_item), ahead[0] if ahead else None)
    if unit is None:
        return None
    return _task(ws, unit, len(everything) - len(left), len(everything))


def task(ws: Workspace, run_ids: Sequence[int], unit: Unit, annotator: str) -> Task:
    """One answer as an annotator sees it (to show again a judged one, e.g. after an undo)."""
    everything = queue(ws, run_ids)
    left = left_for(ws, run_ids, annotator_name(annotator), everything)
    return _task(ws, unit, len(everything) - len(left), len(everything))


def _task(ws: Workspace, unit: Unit, done: int, total: int) -> Task:
    row = ws.conn.execute(f"SELECT {catalog.ITEM_COLUMNS} FROM items WHERE id = ?", (unit[1],)).fetchone()
    answer = _answer(ws, unit)
    if row is None or answer is None:
        raise NotFound(f"run {unit[0]} has no answer to item {unit[1]}")
    return Task(unit[0], catalog.with_images(ws, [catalog.item_from_row(row)])[0], answer, done, total)


# ------------------------------------------------------------------------------------------------ the records
def add_verdict(
    ws: Workspace,
    run_id: int,
    item_id: int,
    annotator: str,
    verdict: str,
    *,
    note: str | None = None,
    seconds: float | None = None,
    role: Role = "verdict",
) -> OpenVerdict:
    """Commit a verdict (or, role 'adjudication', the final word) on a run's answer to an item. Giving one again is
    a correction: the newest stands, both stay in the log."""
    if verdict not in VERDICTS:
        raise InvalidInput(f"unknown verdict {verdict!r} (one of {', '.join(VERDICTS)})")
    if role not in ROLES:
        raise InvalidInput(f"unknown role {role!r} (one of {', '.join(ROLES)})")
    answer = _answer(ws, (run_id, item_id))
    if answer is None:
        raise NotFound(f"run {run_id} has no answer to item {item_id}")
    return _append(
        ws, run_id, item_id, answer_key(answer), role, annotator_name(annotator), verdict, record_note(note), seconds
    )


def undo_verdict(
    ws: Workspace, run_id: int, item_id: int, annotator: str, *, role: Role = "verdict"
) -> OpenVerdict | None:
    """Withdraw the annotator's standing verdict on the answer (it is left for them again); returns the withdrawn."""
    annotator = annotator_name(annotator)
    found = ws.conn.execute(
        standing.standing_sql(
            OPEN_VERDICTS, _COLUMNS, "t.run_id = ? AND t.item_id = ? AND t.annotator = ? AND t.role = ?"
        ),
        (run_id, item_id, annotator, role),
    ).fetchone()
    if found is None:
        return None
    withdrawn = OpenVerdict(*found)
    _append(ws, run_id, item_id, withdrawn.answer_key, role, annotator, UNDO, None, None, withdrawn.uuid)
    return withdrawn


def _append(
    ws: Workspace,
    run_id: int,
    item_id: int,
    key: str,
    role: Role,
    annotator: str,
    verdict: str,
    note: str | None,
    seconds: float | None,
    withdraws: str | None = None,
) -> OpenVerdict:
    created, uid = now_iso(), standing.new_uuid()
    with ws.db.atomic():
        row_id = inserted_id(
            ws.conn.execute(
                "INSERT INTO open_verdicts (run_id, item_id, answer_key, role, annotator, verdict, note, seconds, "
                "created_at, uuid, withdraws) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, item_id, key, role, annotator, verdict, note, seconds, created, uid, withdraws),
            )
        )
    return OpenVerdict(row_id, run_id, item_id, key, role, annotator, verdict, note, seconds, created, uid, withdraws)  # type: ignore[arg-type]


def history(ws: Workspace, run_id: int, item_id: int, annotator: str) -> list[OpenVerdict]:
    """This annotator's verdicts and undos on an answer, in time order (never another's: the blind rule)."""
    rows = ws.conn.execute(
        f"SELECT {_COLUMNS} FROM open_verdicts WHERE run_id = ? AND item_id = ? AND annotator = ? "
        f"ORDER BY {standing.ORDER}",
        (run_id, item_id, annotator_name(annotator)),
    )
    return [OpenVerdict(*r) for r in rows]


def _in_runs(run_ids: Sequence[int]) -> tuple[str, list[object]]:
    return "t.run_id IN (SELECT value FROM json_each(?))", [json.dumps(list(run_ids))]


def standing_records(
    ws: Workspace, run_ids: Sequence[int], *, annotator: str | None = None, role: Role = "verdict"
) -> list[OpenVerdict]:
    """The record that stands per (answer, annotator), in time order."""
    where, params = _in_runs(run_ids)
    where += " AND t.role = ?"
    params.append(role)
    if annotator is not None:
        where += " AND t.annotator = ?"
        params.append(annotator_name(annotator))
    return [OpenVerdict(*r) for r in ws.conn.execute(standing.standing_sql(OPEN_VERDICTS, _COLUMNS, where), params)]


def standing_verdicts(
    ws: Workspace, run_ids: Sequence[int], *, annotator: str | None = None
) -> dict[Unit, dict[str, Verdict]]:
    """Per answer: annotator → their standing verdict."""
    out: dict[Unit, dict[str, Verdict]] = defaultdict(dict)
    for v in standing_records(ws, run_ids, annotator=annotator):  # never an undo row: standing_sql skips them
        out[(v.run_id, v.item_id)][v.annotator] = v.verdict  # type: ignore[assignment]
    return dict(out)


def latest_judged(ws: Workspace, run_ids: Sequence[int], annotator: str, *, role: Role = "verdict") -> Unit | None:
    """The answer of the annotator's newest standing verdict or adjudication (what Ctrl+Z takes back, in a new
    session too)."""
    mine = standing_records(ws, run_ids, annotator=annotator, role=role)
    return (mine[-1].run_id, mine[-1].item_id) if mine else None


def to_adjudicate(ws: Workspace, run_ids: Sequence[int]) -> list[Unit]:
    """The answers whose annotators' standing verdicts differ and that no standing adjudication settles, in the
    order they are shown."""
    settled = {(a.run_id, a.item_id) for a in standing_records(ws, run_ids, role="adjudication")}
    split = {u for u, v in standing_verdicts(ws, run_ids).items() if len(set(v.values())) > 1}
    return [u for u in queue(ws, run_ids) if u in split and u not in settled]


def verdicts_on(ws: Workspace, unit: Unit) -> list[OpenVerdict]:
    """Everyone's standing verdicts on one answer (with their notes) — for the one who adjudicates it, never for
    an annotator judging it (the blind rule)."""
    return [v for v in standing_records(ws, [unit[0]]) if v.item_id == unit[1]]


def human_labels(ws: Workspace, run_ids: Sequence[int]) -> dict[Unit, HumanLabel]:
    """Per judged answer: the newest standing adjudication, else the majority of the standing verdicts, else a tie."""
    out: dict[Unit, HumanLabel] = {
        (a.run_id, a.item_id): HumanLabel(a.verdict, "adjudicated")  # type: ignore[arg-type]
        for a in standing_records(ws, run_ids, role="adjudication")  # in time order: the newest wins
    }
    for unit, verdicts in standing_verdicts(ws, run_ids).items():
        if unit in out:
            continue
        (top, n), *others = Counter(verdicts.values()).most_common()
        out[unit] = HumanLabel(None, "tie") if others and others[0][1] == n else HumanLabel(top, "majority")
    return out


def has_verdict(ws: Workspace, run_id: int, item_id: int, annotator: str, *, role: Role = "verdict") -> bool:
    """Whether the annotator's own verdict (or adjudication) on the answer stands: what unlocks its scores and
    model."""
    return (
        ws.conn.execute(
            "SELECT 1 FROM open_verdicts t WHERE t.run_id = ? AND t.item_id = ? AND t.annotator = ? "
            f"AND t.role = ? AND {standing.live(OPEN_VERDICTS, 't')}",
            (run_id, item_id, annotator_name(annotator), role),
        ).fetchone()
        is not None
    )


def reveal_model(ws: Workspace, run_id: int, item_id: int, annotator: str, *, role: Role = "verdict") -> str:
    """The model that gave the answer — only to an annotator whose verdict (or adjudication) on it stands."""
    if not has_verdict(ws, run_id, item_id, annotator, role=role):
        raise NotJudgedYet(f"{annotator} has not judged this answer; its model is shown only after the verdict")
    run = runs.get_run(ws, run_id)
    return run.model_spec if run else "?"
