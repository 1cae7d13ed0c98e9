"""The arena (LVLM-eHub's, rated as Chatbot Arena rates): two runs' free answers to one open item, side by side, and
people's blind votes on which is better.

A **pair** is drawn once and kept in the workspace (`arena_pairs`): an item, the run shown left and the run shown
right (the side is drawn at random and recorded), a position in the benchmark's queue. A **vote** is a human record
like a verdict (annotation/standing.py): appended with a uuid, withdrawn by an undo row naming it, corrected by a
newer vote; one standing vote per (pair, annotator) counts. Each standing vote is one battle of the rating
(evaluator/analysis/ratings.py): model_a is the left run's model, model_b the right one's.
"""

from __future__ import annotations

import codecs
import itertools
import json
import random
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Final, Literal, get_args

from annotation import standing
from annotation.names import annotator_name, record_note
from db import catalog, runs
from db.catalog import now_iso
from db.errors import InvalidInput, NotFound
from db.workspace import Workspace, inserted_id
from evaluator.analysis.ratings import WINNERS, Battle, Winner
from evaluator.formats.importers.common import (
    DuplicateKey,
    InputError,
    JsonTooDeep,
    Refused,
    json_loads,
    no_duplicate_keys,
    open_regular,
)
from evaluator.formats.importers.importer import model_name_problem

Vote = Literal["left", "right", "tie", "bothbad"]
"""left / right better, a tie, or both bad (a tie too, for the rating)."""
VOTES: tuple[Vote, ...] = get_args(Vote)
UNDO: Final = standing.WITHDRAWAL
WINNER: dict[str, Winner] = {"left": "model_a", "right": "model_b", "tie": "tie", "bothbad": "tie (bothbad)"}
MAX_PER_ITEM = 1000
MISSING_ANSWER = "(no answer stored for this run)"
_PAIR_COLUMNS = "id, uuid, benchmark_id, item_id, left_run_id, right_run_id, position, seed, created_at"
_VOTE_COLUMNS = "id, pair_id, annotator, vote, note, seconds, created_at, uuid, withdraws"


@dataclass(frozen=True)
class Pair:
    id: int
    uuid: str
    benchmark_id: int
    item_id: int
    left_run_id: int
    right_run_id: int
    position: int
    seed: int
    created_at: str

    def to_json(self) -> dict[str, Any]:
        return {
            "pair": self.uuid,
            "position": self.position,
            "item_id": self.item_id,
            "left_run": self.left_run_id,
            "right_run": self.right_run_id,
        }


@dataclass(frozen=True)
class ArenaVote:
    id: int
    pair_id: int
    annotator: str
    vote: Vote | Literal["undo"]
    note: str | None
    seconds: float | None
    created_at: str
    uuid: str
    withdraws: str | None


@dataclass(frozen=True)
class Shown:
    """What the Arena tab shows of a pair: the item and the two answers; the models only after a vote."""

    pair: Pair
    item: catalog.Item
    left_answer: str
    right_answer: str
    left_model: str
    right_model: str


# ------------------------------------------------------------------------------------------------------ pairs
def arena_runs(ws: Workspace, benchmark_id: int | None = None) -> list[runs.Run]:
    """THE runs the arena can pair (of one benchmark, or every one): every run on an open benchmark, made here or
    imported (`vlmdesk import-predictions`), whatever its strategy says. `arena pairs` and the app's Draw arena
    pairs… both ask here."""
    open_ids = {r[0] for r in ws.conn.execute("SELECT id FROM benchmarks WHERE kind = 'open'")}
    return [r for r in runs.list_runs(ws) if r.benchmark_id in open_ids and benchmark_id in (None, r.benchmark_id)]


def _open_runs(ws: Workspace, bench: catalog.Benchmark, run_ids: list[int]) -> list[runs.Run]:
    if bench.kind != "open":
        raise InvalidInput(f"benchmark {bench.name!r} is {bench.kind}; the arena compares answers to open questions")
    if len(set(run_ids)) < 2:
        raise InvalidInput("the arena needs at least two different runs")
    eligible = {r.id for r in arena_runs(ws, bench.id)}
    found = []
    for run_id in dict.fromkeys(run_ids):
        run = runs.get_run(ws, run_id)
        if run is None:
            raise NotFound(f"no run {run_id}")
        if run.id not in eligible:
            raise InvalidInput(f"run {run_id} is on benchmark {run.benchmark!r}, not {bench.name!r}")
        found.append(run)
    specs: dict[str, int] = {}
    for run in found:
        if run.model_spec in specs:
            raise InvalidInput(
                f"runs {specs[run.model_spec]} and {run.id} are both {run.model_spec!r}; choose one run per model"
            )
        specs[run.model_spec] = run.id
    return found


def draw_pairs(
    ws: Workspace, bench: catalog.Benchmark, run_ids: list[int], *, per_item: int = 1, seed: int = 0
) -> list[Pair]:
    """For each item (in order), `per_item` distinct pairs of the runs that answered it, drawn uniformly over the
    pairs of models, each with a random side; appended to the benchmark's queue in one transaction. Seeded: the
    same runs, answers and seed draw the same pairs."""
    if not 1 <= per_item <= MAX_PER_ITEM:
        raise InvalidInput(f"--per-item: {per_item} is not in 1..{MAX_PER_ITEM}")
    chosen = _open_runs(ws, bench, run_ids)
    answered: dict[int, list[int]] = {}
    for run_id, item_id in ws.conn.execute(
        "SELECT run_id, item_id FROM predictions WHERE pass = 0 AND run_id IN (SELECT value FROM json_each(?)) "
        "ORDER BY run_id",
        (json.dumps([r.id for r in chosen]),),
    ):
        answered.setdefault(item_id, []).append(run_id)
    order = [r.id for r in chosen]
    rng = random.Random(seed)
    drawn: list[tuple[int, int, int]] = []
    for item in catalog.list_items(ws, bench.id):
        who = sorted(answered.get(item.id, []), key=order.index)
        combos = list(itertools.combinations(who, 2))
        for a, b in rng.sample(combos, min(per_item, len(combos))):
            drawn.append((item.id, *((a, b) if rng.random() < 0.5 else (b, a))))
    if not drawn:
        raise InvalidInput("no item was answered by two of these runs; run them on the benchmark first")
    now = now_iso()
    with ws.db.atomic():
        start = next_position(ws, bench.id) - 1
        ids = [
            insert_pair(ws, bench.id, item_id, left, right, start + n, seed, now)
            for n, (item_id, left, right) in enumerate(drawn, start=1)
        ]
    return [p for p in pairs(ws, bench.id) if p.id in set(ids)]


def insert_pair(
    ws: Workspace, benchmark_id: int, item_id: int, left: int, right: int, position: int, seed: int, now: str
) -> int:
    """One pair appended to a benchmark's queue (the caller holds the transaction and chose the position)."""
    return inserted_id(
        ws.conn.execute(
            "INSERT INTO arena_pairs (uuid, benchmark_id, item_id, left_run_id, right_run_id, position, seed, "
            "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (standing.new_uuid(), benchmark_id, item_id, left, right, position, seed, now),
        )
    )


def next_position(ws: Workspace, benchmark_id: int) -> int:
    """The position after the last of a benchmark's queue (read inside the caller's write transaction)."""
    last = ws.conn.execute(
        "SELECT coalesce(max(position), 0) FROM arena_pairs WHERE benchmark_id = ?", (benchmark_id,)
    ).fetchone()[0]
    return int(last) + 1


def pairs(ws: Workspace, benchmark_id: int | None = None) -> list[Pair]:
    """The queue in order (of one benchmark, or every one)."""
    where, params = ("WHERE benchmark_id = ?", [benchmark_id]) if benchmark_id is not None else ("", [])
    rows = ws.conn.execute(f"SELECT {_PAIR_COLUMNS} FROM arena_pairs {where} ORDER BY benchmark_id, position", params)
    return [Pair(*r) for r in rows]


def get_pair(ws: Workspace, pair_id: int) -> Pair | None:
    row = ws.conn.execute(f"SELECT {_PAIR_COLUMNS} FROM arena_pairs WHERE id = ?", (pair_id,)).fetchone()
    return Pair(*row) if row else None


def shown(ws: Workspace, pair: Pair) -> Shown:
    """The item and both answers (pass 0 of each run)."""
    row = ws.conn.execute(f"SELECT {catalog.ITEM_COLUMNS} FROM items WHERE id = ?", (pair.item_id,)).fetchone()
    answers = {
        run_id: (response, spec)
        for run_id, response, spec in ws.conn.execute(
            "SELECT p.run_id, p.response, r.model_spec FROM predictions p JOIN runs r ON r.id = p.run_id "
            "WHERE p.item_id = ? AND p.pass = 0 AND p.run_id IN (?, ?)",
            (pair.item_id, pair.left_run_id, pair.right_run_id),
        )
    }
    models = {
        r.id: r.model_spec for r in (runs.get_run(ws, pair.left_run_id), runs.get_run(ws, pair.right_run_id)) if r
    }
    # A pass removed since the draw (vlmdesk check names such pairs) shows as missing, never as an empty answer.
    left, right = (answers.get(i, (MISSING_ANSWER, models.get(i, "?"))) for i in (pair.left_run_id, pair.right_run_id))
    item = catalog.with_images(ws, [catalog.item_from_row(row)])[0]
    return Shown(pair, item, left[0], right[0], left[1], right[1])


# ------------------------------------------------------------------------------------------------------ votes
def add_vote(
    ws: Workspace, pair_id: int, annotator: str, vote: Vote, *, note: str | None = None, seconds: float | None = None
) -> ArenaVote:
    """Commit a vote (a newer vote by the same annotator on the same pair corrects the older one)."""
    if vote not in VOTES:
        raise InvalidInput(f"unknown vote {vote!r} (one of {', '.join(VOTES)})")
    if get_pair(ws, pair_id) is None:
        raise NotFound(f"no arena pair {pair_id}")
    return _append(ws, pair_id, annotator_name(annotator), vote, record_note(note), seconds, None)


def undo_last(
    ws: Workspace, annotator: str, *, pair_id: int | None = None, benchmark_id: int | None = None
) -> ArenaVote | None:
    """Withdraw the annotator's latest standing vote (on one pair, in one benchmark, or anywhere); returns it."""
    mine = [
        v for v in standing_votes(ws, benchmark_id=benchmark_id, annotator=annotator) if pair_id in (None, v.pair_id)
    ]
    if not mine:
        return None
    last = mine[-1]
    _append(ws, last.pair_id, last.annotator, UNDO, None, None, last.uuid)
    return last


def _append(
    ws: Workspace,
    pair_id: int,
    annotator: str,
    vote: Vote | Literal["undo"],
    note: str | None,
    seconds: float | None,
    withdraws: str | None,
) -> ArenaVote:
    created, uid = now_iso(), standing.new_uuid()
    with ws.db.atomic():
        cur = ws.conn.execute(
            "INSERT INTO arena_votes (pair_id, annotator, vote, note, seconds, created_at, uuid, withdraws) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (pair_id, annotator, vote, note, seconds, created, uid, withdraws),
        )
    return ArenaVote(inserted_id(cur), pair_id, annotator, vote, note, seconds, created, uid, withdraws)


def standing_votes(
    ws: Workspace,
    *,
    benchmark_id: int | None = None,
    annotator: str | None = None,
    item_id: int | None = None,
    pair_id: int | None = None,
) -> list[ArenaVote]:
    """The vote that stands per (pair, annotator), in time order (of one benchmark's pairs, one item's, one pair's)."""
    where: list[str] = ["1 = 1"]
    params: list[object] = []
    if pair_id is not None:
        where.append("t.pair_id = ?")
        params.append(pair_id)
    if benchmark_id is not None:
        where.append("t.pair_id IN (SELECT id FROM arena_pairs WHERE benchmark_id = ?)")
        params.append(benchmark_id)
    if item_id is not None:
        where.append("t.pair_id IN (SELECT id FROM arena_pairs WHERE item_id = ?)")
        params.append(item_id)
    if annotator is not None:
        where.append("t.annotator = ?")
        params.append(annotator)
    sql = standing.standing_sql(standing.ARENA_VOTES, _VOTE_COLUMNS, " AND ".join(where))
    return [ArenaVote(*r) for r in ws.conn.execute(sql, params)]


def history(ws: Workspace, pair_id: int, annotator: str) -> list[ArenaVote]:
    """This annotator's votes and undos on a pair, in time order (never another annotator's: the blind rule)."""
    rows = ws.conn.execute(
        f"SELECT {_VOTE_COLUMNS} FROM arena_votes WHERE pair_id = ? AND annotator = ? ORDER BY {standing.ORDER}",
        (pair_id, annotator),
    )
    return [ArenaVote(*r) for r in rows]


def left_for(ws: Workspace, benchmark_id: int, annotator: str) -> list[Pair]:
    """The pairs of the queue this annotator has no standing vote on, in the order they are offered: every item's
    first pair (in queue order), then every item's second pair, and so on — so an item's pairs come apart."""
    voted = {v.pair_id for v in standing_votes(ws, benchmark_id=benchmark_id, annotator=annotator)}
    queue = pairs(ws, benchmark_id)
    seen: dict[int, int] = {}
    rank = {}
    for p in queue:
        rank[p.id] = seen[p.item_id] = seen.get(p.item_id, -1) + 1
    return sorted((p for p in queue if p.id not in voted), key=lambda p: (rank[p.id], p.position))


def next_left(
    ws: Workspace, benchmark_id: int, annotator: str, *, after: Pair | None = None, later: Collection[int] = ()
) -> Pair | None:
    """The pair to show next to this annotator, by index (migration 0020's item rank): left_for's order walked on from
    the pair `after` (from the first again past the last), the pairs in `later` (skipped) after the others, never a
    pair of `after`'s item while another item has a pair left. What next_pair picks of left_for, for a voter who goes
    through the queue in order, at the cost of a few index reads whatever the queue's length."""
    not_voted = (
        "NOT EXISTS (SELECT 1 FROM arena_votes v WHERE v.pair_id = p.id AND v.annotator = :who AND "
        f"{standing.live(standing.ARENA_VOTES, 'v')})"
    )
    params: dict[str, object] = {
        "b": benchmark_id,
        "who": annotator,
        "later": json.dumps(sorted(later)),
        "item": after.item_id if after is not None else -1,
        "rank": -1,
        "position": -1,
    }
    if after is not None:
        row = ws.conn.execute("SELECT item_rank FROM arena_pairs WHERE id = ?", (after.id,)).fetchone()
        params.update(rank=row[0] if row else -1, position=after.position)
    skipped = "p.id IN (SELECT value FROM json_each(:later))"
    for wanted in (
        f"NOT {skipped} AND p.item_id != :item",
        f"{skipped} AND p.item_id != :item",
        f"NOT {skipped}",
        skipped,
    ):
        for onward in (
            "(p.item_rank, p.position) > (:rank, :position)",
            "(p.item_rank, p.position) <= (:rank, :position)",
        ):
            row = ws.conn.execute(
                f"SELECT {_PAIR_COLUMNS} FROM arena_pairs p WHERE p.benchmark_id = :b AND {onward} AND {wanted} "
                f"AND {not_voted} ORDER BY p.item_rank, p.position LIMIT 1",
                params,
            ).fetchone()
            if row is not None:
                return Pair(*row)
    return None


def is_left(ws: Workspace, pair_id: int, annotator: str) -> bool:
    """No standing vote of this annotator on the pair."""
    return not standing_votes(ws, pair_id=pair_id, annotator=annotator)


def item_pairs(ws: Workspace, item_id: int) -> list[Pair]:
    """An item's pairs, in queue order."""
    rows = ws.conn.execute(f"SELECT {_PAIR_COLUMNS} FROM arena_pairs WHERE item_id = ? ORDER BY position", (item_id,))
    return [Pair(*r) for r in rows]


def next_pair(left: list[Pair], *, after_item: int | None = None, later: Collection[int] = ()) -> Pair | None:
    """The pair to show next of `left` (left_for's order; the pairs in `later`, skipped, after the others): never one
    of the item just shown while another item has a pair left — its answers were just read beside the vote."""
    ahead = [p for p in left if p.id not in later] + [p for p in left if p.id in later]
    return next((p for p in ahead if p.item_id != after_item), ahead[0] if ahead else None)


def models_revealed(ws: Workspace, pair: Pair, annotator: str) -> bool:
    """May the models of `pair` be named to this annotator? Only once they have a standing vote on every pair of its
    item: the same run's answer to the item is in the item's other pairs, so a name would unblind those votes."""
    if not annotator:
        return False
    item_pairs = {r[0] for r in ws.conn.execute("SELECT id FROM arena_pairs WHERE item_id = ?", (pair.item_id,))}
    voted = {v.pair_id for v in standing_votes(ws, annotator=annotator, item_id=pair.item_id)}
    return item_pairs <= voted


def pair_count(ws: Workspace, benchmark_id: int) -> int:
    """The pairs in a benchmark's queue: kept by triggers (migration 0020), a million pairs are not counted."""
    row = ws.conn.execute("SELECT arena_pairs FROM benchmark_counts WHERE benchmark_id = ?", (benchmark_id,)).fetchone()
    return int(row[0]) if row else 0


def progress(ws: Workspace, benchmark_id: int, annotator: str) -> dict[str, int]:
    """Pairs in the queue, voted by this annotator, left for them (nobody else's votes: the blind rule)."""
    total = pair_count(ws, benchmark_id)
    # The pairs with a live vote of this annotator (a standing one exists exactly when a live one does), counted in SQL.
    mine = ws.conn.execute(
        # CROSS JOIN: from the votes (few), never by walking the benchmark's million pairs.
        "SELECT count(DISTINCT v.pair_id) FROM arena_votes v CROSS JOIN arena_pairs p ON p.id = v.pair_id "
        f"WHERE p.benchmark_id = ? AND v.annotator = ? AND {standing.live(standing.ARENA_VOTES, 'v')}",
        (benchmark_id, annotator),
    ).fetchone()[0]
    return {"pairs": total, "voted": mine, "left": total - mine}


def battles(ws: Workspace, benchmark_id: int | None = None) -> list[Battle]:
    """Every standing vote as a battle (left = model_a), in time order: what the ratings read."""
    models = {r.id: r.model_spec for r in runs.list_runs(ws)}
    by_pair = {p.id: p for p in pairs(ws, benchmark_id)}
    # A pair whose run is gone (removed by hand: no command deletes a run with answers) rates nothing; its votes
    # are kept and `vlmdesk check` names the pair.
    return [
        Battle(a, b, WINNER[v.vote])
        for v in standing_votes(ws, benchmark_id=benchmark_id)
        if (p := by_pair.get(v.pair_id)) is not None
        and (a := models.get(p.left_run_id)) is not None
        and (b := models.get(p.right_run_id)) is not None
        and a != b
    ]


# ------------------------------------------------------------------------------------------ votes from elsewhere
MAX_BATTLE_FILE_BYTES = 4 * 2**30
MAX_BATTLE_LINE_BYTES = 16 * 2**20  # a Chatbot Arena battle line carries both conversations
_DECODER = json.JSONDecoder(object_pairs_hook=no_duplicate_keys)  # a key given twice is refused, as in sync files
MAX_BATTLES = 3_000_000  # Chatbot Arena's public dumps hold under 2 million; 10^6 read in ~10 s and ~250 MB
_CHUNK = 2**20


def read_battles(path: str | Path) -> list[Battle]:
    """Battles from a file in Chatbot Arena's shape: JSON Lines, or a JSON array of objects (how FastChat publishes
    clean_battle_*.json); `model_a`, `model_b`, `winner` (model_a | model_b | tie | tie (bothbad)) in every object,
    other fields ignored; in file order (online Elo reads that order). Read as hostile input: a regular file, bounded
    size, object length, JSON depth and number of battles; the first bad object is InputError at its line."""
    path = Path(path)
    try:
        f = open_regular(path, MAX_BATTLE_FILE_BYTES, "limit for a votes file")
    except FileNotFoundError:
        raise InputError(path, 0, "path", "no such file") from None
    except Refused as exc:
        raise InputError(path, 0, "path", str(exc).removeprefix(f"{path} ")) from None
    except OSError as exc:
        raise InputError(path, 0, "path", f"cannot read ({exc.strerror or exc})") from None
    found: list[Battle] = []
    names: dict[str, str] = {}  # one string per model, not one per battle
    with f:
        head = f.peek(_CHUNK)[:_CHUNK] if hasattr(f, "peek") else b""
        records = _array_records(path, f) if head.lstrip()[:1] == b"[" else _line_records(path, f)
        for number, obj in records:
            if len(found) == MAX_BATTLES:
                raise InputError(path, number, "votes", f"more than {MAX_BATTLES:,} battles; rate a sample")
            found.append(_battle(path, number, obj, names))
    if not found:
        raise InputError(path, 0, "votes", "no votes in the file")
    return found


def _battle(path: Path, number: int, obj: object, names: dict[str, str]) -> Battle:
    if not isinstance(obj, dict):
        raise InputError(path, number, "line", "expected a JSON object with model_a, model_b and winner")
    for key in ("model_a", "model_b"):
        value = obj.get(key)
        if not isinstance(value, str):
            raise InputError(path, number, key, "expected a model name (text)")
        if value not in names:
            # The one rule for a model's name as a label (an imported run's too): one printable line of at most 100
            # characters, so no escape sequence, newline or bidirectional override forges the printed table.
            if problem := model_name_problem(value):
                raise InputError(path, number, key, problem)
            names[value] = value
    winner = obj.get("winner")
    if winner not in WINNERS:
        raise InputError(path, number, "winner", f"{str(winner)[:40]!r} is not one of {', '.join(WINNERS)}")
    if obj["model_a"] == obj["model_b"]:
        raise InputError(path, number, "model_b", "the same model as model_a")
    return Battle(names[obj["model_a"]], names[obj["model_b"]], winner)


def _line_records(path: Path, f: BinaryIO) -> Iterator[tuple[int, object]]:
    for number, raw in enumerate(iter(lambda: f.readline(MAX_BATTLE_LINE_BYTES + 1), b""), start=1):
        if len(raw) > MAX_BATTLE_LINE_BYTES:
            raise InputError(path, number, "line", f"longer than {MAX_BATTLE_LINE_BYTES // 2**20} MB")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(path, number, "line", f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
        if not text.strip():
            continue
        try:
            yield number, json_loads(text, decoder=_DECODER)
        except DuplicateKey as exc:
            raise InputError(path, number, exc.key[:60], "given twice in one battle") from None
        except JsonTooDeep:
            raise InputError(path, number, "line", "JSON nested too deep") from None
        except ValueError as exc:
            raise InputError(path, number, "line", f"not JSON ({str(exc)[:80]})") from None


def _array_records(path: Path, f: BinaryIO) -> Iterator[tuple[int, object]]:
    """The objects of a JSON array, streamed: the file is never held whole (a 4 GB array would be ~40 GB of Python
    objects), only one object of at most MAX_BATTLE_LINE_BYTES at a time."""
    decoder, utf8 = _DECODER, codecs.getincrementaldecoder("utf-8")()
    buf, pos, eof = "", 0, False
    line, mark = 1, 0  # the line number at buf[mark], counted forward only (counting from 0 each time: quadratic)

    def more() -> None:
        nonlocal buf, pos, eof, mark
        here(pos)
        buf, pos, mark = buf[pos:], 0, 0
        chunk = f.read(_CHUNK)
        eof = not chunk
        try:
            buf += utf8.decode(chunk, final=eof)
        except UnicodeDecodeError as exc:
            raise InputError(path, line + buf.count("\n"), "file", f"not UTF-8 ({exc.reason})") from None

    def peek() -> str:
        nonlocal pos
        while True:
            while pos < len(buf) and buf[pos] in " \t\r\n":
                pos += 1
            if pos < len(buf) or eof:
                return buf[pos : pos + 1]
            more()

    def here(at: int | None = None) -> int:
        nonlocal line, mark
        at = pos if at is None else at
        if at > mark:
            line += buf.count("\n", mark, at)
            mark = at
        return line

    if peek() != "[":
        raise InputError(path, here(), "array", "expected '['")
    pos += 1
    if peek() == "]":
        pos += 1
    else:
        while True:
            if peek() != "{":
                raise InputError(path, here(), "element", "expected a JSON object with model_a, model_b and winner")
            while True:
                try:
                    obj, end = decoder.raw_decode(buf, pos)
                    break
                except RecursionError:
                    raise InputError(path, here(), "element", "JSON nested too deep") from None
                except DuplicateKey as exc:  # only a whole object reaches the hook: never one cut by the buffer
                    raise InputError(path, here(), exc.key[:60], "given twice in one battle") from None
                except ValueError as exc:  # an object cut by the buffer's end, or a bad one
                    if eof or len(buf) - pos > MAX_BATTLE_LINE_BYTES:
                        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)[:80]
                        at = exc.pos if isinstance(exc, json.JSONDecodeError) else None
                        raise InputError(
                            path, here(at), "element", f"not JSON ({reason}) or longer than 16 MB"
                        ) from None
                    more()
            yield here(), obj
            pos = end
            separator = peek()
            pos += 1
            if separator == "]":
                break
            if separator != ",":
                raise InputError(path, here(), "array", "expected ',' or ']' after an object")
    if peek():
        raise InputError(path, here(), "array", "text after the closing ']'")
