"""The live arena (LVLM-eHub's, docs/adr/0037): a person asks anything about an image, two saved models drawn by
matchmaking answer anonymously, the person votes.

A battle is stored as what the replayed arena already reads, so ratings, vote export and every view take it with no
special case: the question becomes an item of the workspace's live-arena benchmark (an open benchmark, created on
first use; its image stored by content hash like any import's), each answer a pass of that model's one-pass open run
of the benchmark (one run per model, found by its config key like any rerun, each battle adding a pass), and the two
runs a pair of its queue (arena_pairs, the left side as shown); the vote is an arena vote on that pair. A battle is
stored whole or not at all: both answers are asked first, then one transaction writes the item, both passes and the
pair. A model that fails stores nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from annotation import arena
from db import catalog, models, runs
from db.catalog import Benchmark, now_iso
from db.errors import InvalidInput
from db.workspace import Workspace
from evaluator.analysis.matchmaking import draw_match
from evaluator.engine.launch import resolve_model
from evaluator.engine.live import MAX_QUESTION_CHARS, LiveAnswer, live_prompt
from evaluator.engine.prompts import default_template
from evaluator.engine.runner import OPEN_ANSWER, OPEN_MAX_NEW_TOKENS, RunSettings, new_run
from evaluator.formats.importers.common import (
    DEFAULT_MAX_IMAGE_MB,
    check_image,
    open_regular,
    sha256_bytes,
    text_problem,
)

LIVE_BENCH = "live-arena"
LIVE_SOURCE = "vlmdesk live arena"  # the benchmark's source; its hash is the benchmark's identity
LIVE_FORMAT = "live"
MAX_IMAGE_BYTES = DEFAULT_MAX_IMAGE_MB * 2**20


@dataclass(frozen=True)
class Battle:
    """A stored live battle: its pair (left and right as shown), the item, and both answers."""

    pair: arena.Pair
    item_id: int
    left: LiveAnswer
    right: LiveAnswer


# ------------------------------------------------------------------------------------------------------ input
def read_image(path: str | Path) -> bytes:
    """An image file's bytes, bounded and decoded once (InvalidInput naming the file otherwise)."""
    path = Path(path)
    try:
        with open_regular(path, MAX_IMAGE_BYTES, "image limit") as f:
            data = f.read(MAX_IMAGE_BYTES + 1)
    except FileNotFoundError:
        raise InvalidInput(f"{path}: no such file") from None
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if len(data) > MAX_IMAGE_BYTES:
        raise InvalidInput(f"{path}: over the image limit of {DEFAULT_MAX_IMAGE_MB} MB")
    try:
        check_image(data)
    except ValueError as exc:
        raise InvalidInput(f"{path}: {exc}") from None
    return data


def check_question(text: str) -> str:
    """The question as stored (surrounding blanks removed); InvalidInput when empty, too long or not text."""
    question = (text or "").strip()
    if not question:
        raise InvalidInput("question: empty (type what to ask about the image)")
    if len(question) > MAX_QUESTION_CHARS:
        raise InvalidInput(f"question: {len(question)} characters, over the limit of {MAX_QUESTION_CHARS}")
    if problem := text_problem(question):
        raise InvalidInput(f"question: {problem}")
    return question


# ------------------------------------------------------------------------------------------------- matchmaking
def contenders(ws: Workspace, chosen: list[str] | None = None) -> list[str]:
    """The model specs that may be drawn: the saved models (Models tab), or the names/specs `chosen`; each spec
    once (two names for one spec are one model). InvalidInput with fewer than two."""
    named = chosen if chosen else [m.name for m in models.list_models(ws)]
    specs = list(dict.fromkeys(resolve_model(ws, n) for n in named))
    if len(specs) < 2:
        where = "--models names" if chosen else "the workspace has"
        raise InvalidInput(
            f"the live arena needs two different models; {where} {len(specs)} (save models in the Models tab or "
            "with vlmdesk models add)"
        )
    return specs


def match(ws: Workspace, seed: int, chosen: list[str] | None = None) -> tuple[str, str]:
    """(left spec, right spec) drawn by evaluator/analysis/matchmaking.py's rule over every standing vote of the
    workspace."""
    return draw_match(contenders(ws, chosen), arena.battles(ws), seed)


# ------------------------------------------------------------------------------------------------------ storing
def live_benchmark(ws: Workspace) -> Benchmark | None:
    return catalog.benchmark_by_source(ws, sha256_bytes(LIVE_SOURCE.encode()))


def _ensure_benchmark(ws: Workspace) -> Benchmark:
    found = live_benchmark(ws)
    if found is not None:
        return found
    if catalog.benchmark_by_name(ws, LIVE_BENCH) is not None:
        raise InvalidInput(f"a benchmark named {LIVE_BENCH!r} exists and is not the live arena's; rename it first")
    with ws.db.atomic():
        catalog.insert_benchmark(
            ws,
            name=LIVE_BENCH,
            kind="open",
            format=LIVE_FORMAT,
            source=LIVE_SOURCE,
            source_sha256=sha256_bytes(LIVE_SOURCE.encode()),
            meta={"live_arena": True},
        )
    created = live_benchmark(ws)
    assert created is not None
    return created


def _run_for(ws: Workspace, bench: Benchmark, answer: LiveAnswer) -> runs.Run:
    """The model's open run of the live benchmark: the stored one with these settings, else a new one, finished
    at once (a battle adds its pass; nothing is ever left to ask)."""
    owner = runs.Owner.here()
    run = new_run(
        ws,
        bench,
        answer.model,
        RunSettings(max_new_tokens=OPEN_MAX_NEW_TOKENS),
        default_template("open"),
        batch_size=1,
        backend_info=answer.backend,
        owner=owner,
        reuse=True,
    )
    if run.status != "finished":
        runs.release(ws, run.id, owner, "finished")
    return run


def record_battle(
    ws: Workspace, image: bytes, question: str, left: LiveAnswer, right: LiveAnswer, *, seed: int = 0
) -> Battle:
    """Store a battle whose two answers are in: the item, a pass of each model's run, the pair (one transaction;
    the benchmark and the runs, empty, may be created before it)."""
    question = check_question(question)
    if left.model == right.model:
        raise InvalidInput(f"a battle needs two different models, got {left.model!r} twice")
    mime, width, height = check_image(image)
    bench = _ensure_benchmark(ws)
    left_run, right_run = _run_for(ws, bench, left), _run_for(ws, bench, right)
    sha = sha256_bytes(image)
    now = now_iso()
    with ws.db.atomic():
        catalog.put_image(ws, sha256=sha, data=image, mime=mime, width=width, height=height)
        position = ws.conn.execute(
            "SELECT coalesce(max(position), 0) + 1 FROM items WHERE benchmark_id = ?", (bench.id,)
        ).fetchone()[0]
        catalog.insert_items(
            ws,
            [(bench.id, position, position, question, None, "[]", None, None, None, None, "en", sha, 0, "{}")],
        )
        item_id = ws.conn.execute(
            "SELECT id FROM items WHERE benchmark_id = ? AND source_index = ?", (bench.id, position)
        ).fetchone()[0]
        runs.add_predictions(
            ws,
            [
                runs.Prediction(
                    run.id,
                    item_id,
                    0,
                    (),
                    live_prompt(question),
                    answer.text,
                    None,
                    OPEN_ANSWER.choice,
                    OPEN_ANSWER.stage,
                    OPEN_ANSWER.reason,
                    None,
                    answer.latency_ms,
                )
                for run, answer in ((left_run, left), (right_run, right))
            ],
        )
        pair_id = arena.insert_pair(
            ws, bench.id, item_id, left_run.id, right_run.id, arena.next_position(ws, bench.id), seed, now
        )
    pair = arena.get_pair(ws, pair_id)
    assert pair is not None
    return Battle(pair, item_id, left, right)
