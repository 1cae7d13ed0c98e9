"""Assignment plans and gold items: who judges which items of a benchmark, and items whose key the lead confirmed.

A plan names its annotators (in order), an overlap r, a seed and a set of gold items with their confirmed keys. The
rule, the same on every machine for the same inputs (`random.Random(seed)`, nothing else random):

1. The items that are not gold are shuffled (seeded). Each in turn goes to r annotators: the r with the fewest items
   so far, so every annotator's count stays within 1 of every other's; among annotators tied on that count, the one
   that has shared the fewest items with those already chosen for the item, so every pair of annotators shares items
   (agreement is measured per pair); remaining ties are broken by a seeded draw.
2. Every gold item goes to every annotator. Each annotator's gold items, in a seeded order of their own, are spread
   evenly through their queue: gold item t (of g) at position ⌊(t + ½)·L / g⌋ of a queue of L items, their other
   items in the shuffled order around them — never all at the start.

A plan is made whole and never changed (append-only, migration 0027); a newer plan for the benchmark supersedes it:
the standing plan is the latest by time, then by local insertion (annotation/standing.py's order). Its uuid names it
on every copy, so it merges like verdicts (annotation/sync.py, kind "plans").

Gold keys come from the lead's QC decisions (an item whose every active flag resolved to "keep" — the key stands — or
to "correct to X" — X is the key; annotation/qc.py) or from a gold file of index and answer. After a verdict on a gold
item the annotator learns whether it matched the key (gold_match); gold accuracy counts each person's first verdict
on a gold item (the feedback shows the key after it, so a correction made after seeing it measures nothing).
"""

from __future__ import annotations

import csv
import io
import json
import math
import random
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from annotation import agreement, item_kinds, qc, standing
from annotation.names import BadName, annotator_name
from annotation.standing import ORDER, REVIEWS
from db import catalog
from db.catalog import now_iso
from db.errors import InvalidInput
from db.workspace import Workspace, inserted_id
from evaluator.formats.importers import InputError
from evaluator.formats.importers.common import (
    DuplicateKey,
    JsonTooDeep,
    Refused,
    json_loads,
    read_regular,
    text_problem,
)
from evaluator.scoring.choices import answer_keys, canonical_answer

MAX_ANNOTATORS = 50
MAX_GOLD_FILE_BYTES = 16 * 1024 * 1024
GOLD_THRESHOLD = 0.8
"""A person whose gold accuracy (their first verdicts on gold items) is below this is flagged for the lead."""
SKIP = "skip"
GOLD_FROM = ("none", "qc", "file")


class PlanError(InvalidInput):
    """A plan that cannot be made (bad annotators, overlap, gold); one line, nothing stored."""


@dataclass(frozen=True)
class Plan:
    id: int
    uuid: str
    benchmark_id: int
    annotators: tuple[str, ...]
    overlap: int
    seed: int
    gold_from: str
    author: str
    created_at: str


@dataclass(frozen=True)
class Slot:
    """One place in an annotator's queue. `gold` is for the lead's view and the feedback after a verdict only."""

    position: int
    item_id: int
    gold: bool


# ----------------------------------------------------------------------------------------------------- the rule
def parse_annotators(text: str | Sequence[str]) -> tuple[str, ...]:
    """Names as the plan stores them (annotation/names.py), in the order given; "ana,ben,cara" or a list."""
    raw = [p for p in text.split(",")] if isinstance(text, str) else list(text)
    names: list[str] = []
    for n, part in enumerate(raw, start=1):
        try:
            name = annotator_name(part)
        except BadName as exc:
            raise PlanError(f"annotators: name {n}: {exc}") from None
        if name in names:
            raise PlanError(f"annotators: {name!r} is named twice")
        names.append(name)
    if not names:
        raise PlanError("annotators: name at least one annotator")
    if len(names) > MAX_ANNOTATORS:
        raise PlanError(f"annotators: {len(names)} named; at most {MAX_ANNOTATORS}")
    return tuple(names)


def build(
    items: Sequence[int], annotators: Sequence[str], overlap: int, gold: Iterable[int], seed: int
) -> dict[str, list[Slot]]:
    """Each annotator's queue under the module's rule. `items`: every item id of the benchmark in benchmark order;
    `gold`: those of them that are gold."""
    k = len(annotators)
    if not 1 <= overlap <= k:
        raise PlanError(f"overlap: {overlap} is not within 1..{k} (the number of annotators)")
    gold_set = set(gold)
    rng = random.Random(seed)
    regular = [i for i in items if i not in gold_set]
    rng.shuffle(regular)
    load = [0] * k
    shared = [[0] * k for _ in range(k)]
    mine: list[list[int]] = [[] for _ in range(k)]
    for item in regular:
        draw = [rng.random() for _ in range(k)]
        chosen: list[int] = []
        for _ in range(overlap):
            free = [a for a in range(k) if a not in chosen]
            fewest = min(load[a] for a in free)
            pick = min(
                (a for a in free if load[a] == fewest), key=lambda a: (sum(shared[a][c] for c in chosen), draw[a])
            )
            chosen.append(pick)
        for a in chosen:
            load[a] += 1
            mine[a].append(item)
            for c in chosen:
                if c != a:
                    shared[a][c] += 1
    gold_items = [i for i in items if i in gold_set]
    queues: dict[str, list[Slot]] = {}
    for a, name in enumerate(annotators):
        golds = list(gold_items)
        rng.shuffle(golds)
        length = len(mine[a]) + len(golds)
        at = {math.floor((t + 0.5) * length / len(golds)): g for t, g in enumerate(golds)} if golds else {}
        rest = iter(mine[a])
        queues[name] = [Slot(p, at[p], True) if p in at else Slot(p, next(rest), False) for p in range(length)]
    return queues


def draw_gold(confirmed: Mapping[int, str], n: int, seed: int, *, bench: str) -> dict[int, str]:
    """n gold items drawn (seeded) from the items whose key the lead confirmed; refused when there are fewer."""
    if n > len(confirmed):
        raise PlanError(
            f"--gold {n}: only {len(confirmed)} item(s) of {bench} have a key the lead confirmed; confirm keys in "
            "Quality control (a QC flag rejected keeps the key, `vlmdesk qc decide BENCH INDEX --reject`; a confirmed "
            "wrong_answer corrects it), or give the keys in a file (--gold-file)"
        )
    chosen = random.Random(f"gold\0{seed}").sample(sorted(confirmed), n)
    return {i: confirmed[i] for i in sorted(chosen)}


# -------------------------------------------------------------------------------------------------- gold keys
def confirmed_keys(ws: Workspace, benchmark_id: int) -> dict[int, str]:
    """Item id → key, for the items whose key the lead confirmed in quality control: every active flag of the item
    resolved, each to keep the item (its key stands) or to correct the key — all to the same key. An item with a flag
    pending, disputed or resolved to remove it has no confirmed key."""
    keys: dict[int, str] = {}
    unsettled: set[int] = set()
    for c in qc.iter_queue(ws, benchmark_id=benchmark_id):
        r = c.resolution
        key = c.answer if r.status == "rejected" else r.answer if r.action == "correct" else None
        if key is None or keys.get(c.item_id, key) != key:
            unsettled.add(c.item_id)
            continue
        keys[c.item_id] = key
    return {i: k for i, k in keys.items() if i not in unsettled}


def read_gold_file(ws: Workspace, bench: catalog.Benchmark, path: str | Path) -> dict[int, str]:
    """Item id → key from a gold file: JSON Lines of {"index": …, "answer": …}, or CSV with the columns index,answer
    (a .csv file). Read within bounds, checked whole; a bad line is `FILE:LINE: field: what` (InputError)."""
    path = Path(path)
    try:
        data = read_regular(path, MAX_GOLD_FILE_BYTES, "limit of a gold file")
    except Refused as exc:
        raise InputError(path, 0, "file", str(exc).removeprefix(f"{path} ")) from None
    except OSError as exc:
        raise InputError(path, 0, "file", exc.strerror or str(exc)) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(path, 0, "file", f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    items = {str(i.index): i for i in catalog.iter_items(ws, bench.id)}
    rows: list[tuple[int, object, object]] = []  # (line, index, answer)
    if path.suffix.lower() == ".csv":
        reader = csv.reader(io.StringIO(text, newline=""))
        header = next(reader, None)
        if header is None or [h.strip().lower() for h in header] != ["index", "answer"]:
            raise InputError(path, 1, "header", "a gold CSV starts with the header index,answer")
        for row in reader:
            if not any(c.strip() for c in row):
                continue
            if len(row) != 2:
                raise InputError(path, reader.line_num, "line", f"expected 2 columns (index,answer), got {len(row)}")
            rows.append((reader.line_num, row[0].strip(), row[1]))
    else:
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                obj = json_loads(line, limit=1)
            except DuplicateKey as exc:
                raise InputError(path, number, exc.key[:60], "given twice in one record") from None
            except JsonTooDeep:
                raise InputError(path, number, "line", "a gold line is a flat JSON object") from None
            except ValueError as exc:
                raise InputError(path, number, "line", f"not JSON ({exc})") from None
            if not isinstance(obj, dict):
                raise InputError(path, number, "line", 'expected a JSON object {"index": …, "answer": …}')
            unknown = sorted(set(obj) - {"index", "answer"})
            if unknown:
                raise InputError(path, number, unknown[0][:60], "unknown field (known: index, answer)")
            for key in ("index", "answer"):
                if key not in obj:
                    raise InputError(path, number, key, "missing")
            rows.append((number, obj["index"], obj["answer"]))
    keys: dict[int, str] = {}
    for number, index, answer in rows:
        if isinstance(index, bool) or not isinstance(index, (int, str)):
            raise InputError(path, number, "index", "expected an integer or text index")
        item = items.get(str(index))
        if item is None:
            raise InputError(path, number, "index", f"{bench.name} has no item with index {str(index)[:60]!r}")
        if not isinstance(answer, str) or text_problem(answer):
            raise InputError(path, number, "answer", "expected the key as text")
        found = canonical_answer(len(item.options), answer)
        if found is None:
            allowed = ", ".join(answer_keys(len(item.options)))
            raise InputError(path, number, "answer", f"{answer[:30]!r} is not a key of item {index}: one of {allowed}")
        if item.id in keys:
            raise InputError(path, number, "index", f"item {str(index)[:60]!r} is given twice")
        keys[item.id] = found
    if not keys:
        raise InputError(path, 0, "file", "no gold item in it")
    return keys


def gold_match(verdict: str, corrected: str | None, item_answer: str | None, key: str) -> bool | None:
    """Whether a verdict on a gold item agrees with its confirmed key: "ok" when the stored key is the confirmed one,
    a wrong key naming the confirmed one when it is not; any other verdict does not (the lead confirmed the item
    and its key). None for a skip: no verdict."""
    if verdict == SKIP:
        return None
    if verdict == "ok":
        return item_answer == key
    if verdict == item_kinds.WRONG:
        return corrected == key and item_answer != key
    return False


# ---------------------------------------------------------------------------------------------------- storage
def make_plan(
    ws: Workspace,
    bench: catalog.Benchmark,
    annotators: Sequence[str],
    overlap: int,
    seed: int,
    *,
    gold: Mapping[int, str] | None = None,
    gold_from: str = "none",
    author: str,
) -> Plan:
    """Build (build()) and store a plan in one transaction; it stands from now on. The standing plan when it is this
    very plan already (the same command run again): nothing is stored."""
    names = parse_annotators(annotators)
    gold = dict(gold or {})
    if gold and bench.kind == "open":
        raise PlanError(f"{bench.name}: gold items need answer keys (a multiple-choice or yes/no benchmark)")
    try:
        author = annotator_name(author)
    except BadName as exc:
        raise PlanError(f"author: {exc}") from None
    items = [
        i for (i,) in ws.conn.execute("SELECT id FROM items WHERE benchmark_id = ? ORDER BY position", (bench.id,))
    ]
    if not items:
        raise PlanError(f"{bench.name} has no items to plan")
    queues = build(items, names, overlap, gold, seed)
    standing_now = standing_plan(ws, bench.id)
    if standing_now is not None and _same(ws, standing_now, names, overlap, seed, gold, queues):
        return standing_now  # the same command again stores nothing: a plan stands once (its uuid unchanged)
    return store(
        ws,
        standing.new_uuid(),
        bench.id,
        names,
        overlap,
        seed,
        gold_from if gold else "none",
        author,
        now_iso(),
        gold,
        queues,
    )


def _same(
    ws: Workspace,
    plan: Plan,
    names: Sequence[str],
    overlap: int,
    seed: int,
    gold: Mapping[int, str],
    queues: Mapping[str, Sequence[Slot]],
) -> bool:
    """Whether `plan` already assigns exactly these queues with these gold keys (the same inputs give the same plan)."""
    if (plan.annotators, plan.overlap, plan.seed) != (tuple(names), overlap, seed) or gold_keys(ws, plan.id) != gold:
        return False
    return all(
        [(s.position, s.item_id) for s in queue(ws, plan.id, name)] == [(s.position, s.item_id) for s in slots]
        for name, slots in queues.items()
    )


def store(
    ws: Workspace,
    uuid: str,
    benchmark_id: int,
    annotators: Sequence[str],
    overlap: int,
    seed: int,
    gold_from: str,
    author: str,
    created_at: str,
    gold: Mapping[int, str],
    queues: Mapping[str, Sequence[Slot]],
) -> Plan:
    """Write a whole plan (made here, or merged from another copy) in one transaction."""
    with ws.db.atomic():
        cur = ws.conn.execute(
            "INSERT INTO team_plans (uuid, benchmark_id, annotators, overlap, seed, gold_from, author, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                uuid,
                benchmark_id,
                json.dumps(list(annotators), ensure_ascii=False),
                overlap,
                seed,
                gold_from,
                author,
                created_at,
            ),
        )
        plan_id = inserted_id(cur)
        ws.conn.executemany(
            "INSERT INTO team_plan_gold (plan_id, item_id, answer) VALUES (?, ?, ?)",
            [(plan_id, i, k) for i, k in sorted(gold.items())],
        )
        ws.conn.executemany(
            "INSERT INTO team_plan_assignments (plan_id, annotator, position, item_id) VALUES (?, ?, ?, ?)",
            [(plan_id, name, s.position, s.item_id) for name, queue in queues.items() for s in queue],
        )
    return Plan(plan_id, uuid, benchmark_id, tuple(annotators), overlap, seed, gold_from, author, created_at)


_PLAN_COLUMNS = "id, uuid, benchmark_id, annotators, overlap, seed, gold_from, author, created_at"


def _plan(row: Sequence[Any]) -> Plan:
    return Plan(row[0], row[1], row[2], tuple(json.loads(row[3])), *row[4:])


def standing_plan(ws: Workspace, benchmark_id: int) -> Plan | None:
    """The plan that stands for the benchmark: the latest (created_at, then id). One seek of team_plans_standing."""
    order = ", ".join(f"{c.strip()} DESC" for c in ORDER.split(","))
    row = ws.conn.execute(
        f"SELECT {_PLAN_COLUMNS} FROM team_plans WHERE benchmark_id = ? ORDER BY {order} LIMIT 1", (benchmark_id,)
    ).fetchone()
    return None if row is None else _plan(row)


def plans(ws: Workspace, benchmark_id: int | None = None) -> list[Plan]:
    """Every plan (of a benchmark), oldest first."""
    where, params = ("benchmark_id = ?", (benchmark_id,)) if benchmark_id is not None else ("1 = 1", ())
    return [
        _plan(r)
        for r in ws.conn.execute(f"SELECT {_PLAN_COLUMNS} FROM team_plans WHERE {where} ORDER BY {ORDER}", params)
    ]


def plan_by_uuid(ws: Workspace, uuid: str) -> Plan | None:
    row = ws.conn.execute(f"SELECT {_PLAN_COLUMNS} FROM team_plans WHERE uuid = ?", (uuid,)).fetchone()
    return None if row is None else _plan(row)


def gold_keys(ws: Workspace, plan_id: int) -> dict[int, str]:
    return dict(ws.conn.execute("SELECT item_id, answer FROM team_plan_gold WHERE plan_id = ?", (plan_id,)))


def gold_key(ws: Workspace, plan_id: int, item_id: int) -> str | None:
    """The item's confirmed key when it is a gold item of the plan (one primary-key seek)."""
    row = ws.conn.execute(
        "SELECT answer FROM team_plan_gold WHERE plan_id = ? AND item_id = ?", (plan_id, item_id)
    ).fetchone()
    return None if row is None else str(row[0])


_SLOT = (
    "SELECT a.position, a.item_id, EXISTS (SELECT 1 FROM team_plan_gold g WHERE g.plan_id = a.plan_id "
    "AND g.item_id = a.item_id) FROM team_plan_assignments a"
)


def queue(ws: Workspace, plan_id: int, annotator: str) -> list[Slot]:
    """The annotator's queue in order (empty when the plan does not name them)."""
    return [
        Slot(p, i, bool(g))
        for p, i, g in ws.conn.execute(
            f"{_SLOT} WHERE a.plan_id = ? AND a.annotator = ? ORDER BY a.position", (plan_id, annotator)
        )
    ]


def queue_length(ws: Workspace, plan_id: int, annotator: str) -> int:
    """One seek: the last position of the annotator's queue, plus one."""
    row = ws.conn.execute(
        "SELECT max(position) FROM team_plan_assignments WHERE plan_id = ? AND annotator = ?", (plan_id, annotator)
    ).fetchone()
    return 0 if row[0] is None else int(row[0]) + 1


def slot_of(ws: Workspace, plan_id: int, annotator: str, item_id: int) -> Slot | None:
    """Where the item is in the annotator's queue; None: outside their plan (one seek of the unique key)."""
    row = ws.conn.execute(
        f"{_SLOT} WHERE a.plan_id = ? AND a.item_id = ? AND a.annotator = ?", (plan_id, item_id, annotator)
    ).fetchone()
    return None if row is None else Slot(row[0], row[1], bool(row[2]))


def step(ws: Workspace, plan_id: int, annotator: str, position: int, forward: bool = True) -> Slot | None:
    """The slot after (before) `position` in the annotator's queue: one seek, whatever else is stored."""
    op, order = (">", "ASC") if forward else ("<", "DESC")
    row = ws.conn.execute(
        f"{_SLOT} WHERE a.plan_id = ? AND a.annotator = ? AND a.position {op} ? ORDER BY a.position {order} LIMIT 1",
        (plan_id, annotator, position),
    ).fetchone()
    return None if row is None else Slot(row[0], row[1], bool(row[2]))


def next_unjudged(ws: Workspace, plan_id: int, annotator: str, position: int) -> Slot | None:
    """The first slot after `position` whose item has no standing verdict of the annotator's (a skip is one: the
    item was seen). Seeks along the queue, one review_standing seek per item passed."""
    row = ws.conn.execute(
        f"{_SLOT} WHERE a.plan_id = ? AND a.annotator = ? AND a.position > ? AND NOT EXISTS (SELECT 1 FROM "
        "review_standing s WHERE s.item_id = a.item_id AND s.annotator = a.annotator) ORDER BY a.position LIMIT 1",
        (plan_id, annotator, position),
    ).fetchone()
    return None if row is None else Slot(row[0], row[1], bool(row[2]))


# --------------------------------------------------------------------------------------------------- progress
@dataclass(frozen=True)
class PersonProgress:
    annotator: str
    planned: int
    done: int  # planned items with a standing verdict other than a skip
    gold: int  # gold items with a first verdict (skips left out)
    gold_matched: int
    interval: tuple[float, float] | None  # Wilson 95 % of gold_matched / gold
    flagged: bool  # gold accuracy below the threshold

    @property
    def left(self) -> int:
        return self.planned - self.done

    @property
    def accuracy(self) -> float | None:
        return self.gold_matched / self.gold if self.gold else None

    def to_json(self) -> dict[str, Any]:
        return {
            "annotator": self.annotator,
            "planned": self.planned,
            "done": self.done,
            "left": self.left,
            "gold_judged": self.gold,
            "gold_matched": self.gold_matched,
            "gold_accuracy": self.accuracy,
            "gold_interval": None if self.interval is None else list(self.interval),
            "flagged": self.flagged,
        }


@dataclass(frozen=True)
class PlanProgress:
    plan: Plan
    gold_items: int
    threshold: float
    people: tuple[PersonProgress, ...] = field(default_factory=tuple)

    def person(self, name: str) -> PersonProgress | None:
        return next((p for p in self.people if p.annotator == name), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "plan": self.plan.uuid,
            "created_at": self.plan.created_at,
            "author": self.plan.author,
            "annotators": list(self.plan.annotators),
            "overlap": self.plan.overlap,
            "seed": self.plan.seed,
            "gold_items": self.gold_items,
            "gold_threshold": self.threshold,
            "people": [p.to_json() for p in self.people],
        }


def first_verdicts(ws: Workspace, item_ids: Iterable[int]) -> dict[tuple[int, str], tuple[str, str | None]]:
    """(item, annotator) → the first verdict other than a skip (withdrawn later or not) and its corrected answer."""
    ids = sorted(set(item_ids))
    found: dict[tuple[int, str], tuple[str, str | None]] = {}
    for start in range(0, len(ids), 500):
        part = ids[start : start + 500]
        for item_id, who, verdict, corrected in ws.conn.execute(
            f"SELECT item_id, {REVIEWS.who}, verdict, corrected_answer FROM reviews WHERE item_id IN "
            f"({','.join('?' * len(part))}) AND verdict NOT IN ('{standing.WITHDRAWAL}', '{SKIP}') ORDER BY {ORDER}",
            part,
        ):
            found.setdefault((item_id, who), (verdict, corrected))
    return found


def progress(ws: Workspace, benchmark_id: int, *, threshold: float = GOLD_THRESHOLD) -> PlanProgress | None:
    """Per annotator of the standing plan: planned, done and left, and accuracy on gold (Wilson 95 %), flagged below
    `threshold`. None when no plan stands."""
    plan = standing_plan(ws, benchmark_id)
    if plan is None:
        return None
    planned = dict(
        ws.conn.execute(
            "SELECT annotator, count(*) FROM team_plan_assignments WHERE plan_id = ? GROUP BY annotator", (plan.id,)
        )
    )
    done = dict(
        ws.conn.execute(
            "SELECT a.annotator, count(*) FROM team_plan_assignments a JOIN review_standing s ON s.item_id = a.item_id "
            f"AND s.annotator = a.annotator WHERE a.plan_id = ? AND s.verdict != '{SKIP}' GROUP BY a.annotator",
            (plan.id,),
        )
    )
    keys = gold_keys(ws, plan.id)
    answers = (
        dict(
            ws.conn.execute(
                f"SELECT id, answer FROM items WHERE id IN ({','.join('?' * len(keys))})", list(keys)
            ).fetchall()
        )
        if keys
        else {}
    )
    firsts = first_verdicts(ws, keys)
    people = []
    for name in plan.annotators:
        n = k = 0
        for item_id, key in keys.items():
            first = firsts.get((item_id, name))
            if first is None:
                continue
            matched = gold_match(first[0], first[1], answers.get(item_id), key)
            if matched is None:
                continue
            n += 1
            k += matched
        people.append(
            PersonProgress(
                name,
                planned.get(name, 0),
                done.get(name, 0),
                n,
                k,
                agreement.wilson_interval(k, n),
                n > 0 and k / n < threshold,
            )
        )
    return PlanProgress(plan, len(keys), threshold, tuple(people))


def planned_pairs(ws: Workspace, plan_id: int) -> set[tuple[int, str]]:
    """Every (item, annotator) the plan assigns."""
    return set(ws.conn.execute("SELECT item_id, annotator FROM team_plan_assignments WHERE plan_id = ?", (plan_id,)))


def plan_json(ws: Workspace, plan: Plan) -> dict[str, Any]:
    """The lead's view of a plan: per annotator their items in queue order, which are gold (it reveals gold)."""
    bench = ws.conn.execute("SELECT name FROM benchmarks WHERE id = ?", (plan.benchmark_id,)).fetchone()
    index = {
        i: idx
        for i, idx in ws.conn.execute("SELECT id, source_index FROM items WHERE benchmark_id = ?", (plan.benchmark_id,))
    }
    keys = gold_keys(ws, plan.id)
    by_person: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for name, item_id in ws.conn.execute(
        "SELECT annotator, item_id FROM team_plan_assignments WHERE plan_id = ? ORDER BY annotator, position",
        (plan.id,),
    ):
        by_person[name].append({"index": index[item_id], "gold": item_id in keys})
    return {
        "plan": plan.uuid,
        "benchmark": bench[0] if bench else None,
        "annotators": list(plan.annotators),
        "overlap": plan.overlap,
        "seed": plan.seed,
        "gold_from": plan.gold_from,
        "author": plan.author,
        "created_at": plan.created_at,
        "gold": [{"index": index[i], "answer": k} for i, k in sorted(keys.items(), key=lambda e: e[0])],
        "queues": {name: by_person[name] for name in plan.annotators},
    }
