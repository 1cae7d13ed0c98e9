"""`vlmdesk judge-pairs`: a judge model asked the arena's question on a benchmark's stored pairs
(evaluator/scoring/pair_judge.py asks; db/pair_judgements.py stores).

Each pair (annotation/arena.py) is shown as the annotators see it — the item's question, the left run's answer, then
the right one's (pass 0, thoughts excluded) — and, with both orders, once more with the sides swapped, so a judge that
prefers whatever comes first shows it (position bias). The verdict is stored on the pair's sides. Judgements are
stored chunk by chunk under the judgement set (judge identity, prompt version, with image): asking again asks only
the (pair, order)s missing — an interrupted judging resumes, a judge shown the image is another set.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from annotation import arena
from db import catalog
from db import pair_judgements as store
from db.errors import InvalidInput
from db.workspace import ReadOnlyWorkspace, Workspace
from evaluator.scoring import pair_judge
from evaluator.scoring.open_judge import item_images

if TYPE_CHECKING:
    from evaluator.backends import Backend

CHUNK = 16  # (pair, order)s asked, and stored in one transaction, at once
SIDE: dict[tuple[str, bool], str] = {
    ("first", False): "left",
    ("second", False): "right",
    ("first", True): "right",
    ("second", True): "left",
}
"""(what the judge said, the sides swapped) -> the pair's side; tie and bothbad stay what they are."""


def on_sides(said: str | None, swapped: bool) -> str | None:
    """A judge's verdict on the answers as shown, mapped back to the pair's left / right."""
    if said is None:
        return None
    return SIDE.get((said, swapped), said)


@dataclass(frozen=True)
class PairJudging:
    """What a judgement set holds of a benchmark's pairs after `judge_pairs` (`judge-pairs --json`)."""

    benchmark: str
    set_key: str
    judge: str
    prompt_version: str
    with_image: bool
    both_orders: bool
    pairs: int  # pairs in the benchmark's queue
    judgements: int  # stored (pair, order)s of this set
    verdicts: dict[str, int]  # left / right / tie / bothbad / undecided over the stored judgements
    left: int  # (pair, order)s asked for and not stored yet
    missing_answer: int  # pairs skipped: a run's answer to the item is gone
    calls: int  # judge calls made now

    def to_json(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "set": self.set_key,
            "judge": self.judge,
            "prompt_version": self.prompt_version,
            "with_image": self.with_image,
            "both_orders": self.both_orders,
            "pairs": self.pairs,
            "judgements": self.judgements,
            "verdicts": self.verdicts,
            "left": self.left,
            "missing_answer": self.missing_answer,
            "calls": self.calls,
        }


def identity(judge: str, with_image: bool) -> tuple[str, str]:
    """(the judge's spec identity, its set key) under the current prompt."""
    from evaluator.backends import run_identity

    who = run_identity(judge)
    return who, store.set_key(who, pair_judge.PROMPT_VERSION, with_image)


def judge_pairs(
    ws: Workspace,
    bench: catalog.Benchmark,
    judge: str,
    *,
    with_image: bool = False,
    both_orders: bool = False,
    limit: int | None = None,
    backend: Backend | None = None,
    max_new_tokens: int = pair_judge.MAX_NEW_TOKENS,
    on_progress: Callable[[int, int], None] | None = None,
) -> PairJudging:
    """Ask `judge` (a checked model spec) about every pair of the benchmark not yet judged by this set (both orders
    with `both_orders`; the first `limit` (pair, order)s), storing each chunk as it is answered."""
    if bench.kind != "open":
        raise InvalidInput(f"benchmark {bench.name!r} is {bench.kind}; arena pairs are drawn on open benchmarks")
    who, key = identity(judge, with_image)
    queue = arena.pairs(ws, bench.id)
    orders = (False, True) if both_orders else (False,)
    done = {(j.pair_id, j.swapped) for j in store.judgements_of(ws, key, bench.id)}
    wanted = [(p, s) for p in queue for s in orders if (p.id, s) not in done]
    todo = wanted[:limit] if limit is not None else wanted
    calls = missing = 0
    if todo:
        if ws.read_only:  # said before a judge is paid for verdicts that could not be stored
            raise ReadOnlyWorkspace(f"{ws.path}: workspace is read-only: {len(todo)} pair judgement(s) to ask")
        if backend is None:
            from evaluator.backends import load_backend

            backend = load_backend(judge)
        shown: dict[int, arena.Shown] = {}
        for start in range(0, len(todo), CHUNK):
            chunk, asks = [], []
            for pair, swapped in todo[start : start + CHUNK]:
                seen = shown.get(pair.id) or shown.setdefault(pair.id, arena.shown(ws, pair))
                if arena.MISSING_ANSWER in (seen.left_answer, seen.right_answer):
                    missing += 1
                    continue
                first, second = (
                    (seen.right_answer, seen.left_answer) if swapped else (seen.left_answer, seen.right_answer)
                )
                images = item_images(ws, seen.item) if with_image else ()
                chunk.append((pair, swapped))
                asks.append(pair_judge.Ask(seen.item.question, images, first, second))
            if asks:
                heard, asked = pair_judge.ask(backend, asks, with_image=with_image, max_new_tokens=max_new_tokens)
                calls += asked
                store.store(
                    ws,
                    [
                        store.PairJudgement(
                            p.id,
                            key,
                            who,
                            pair_judge.PROMPT_VERSION,
                            with_image,
                            s,
                            on_sides(h.said, s),
                            h.attempts,
                            h.raw,
                        )
                        for (p, s), h in zip(chunk, heard)
                    ],
                )
            if on_progress is not None:
                on_progress(min(start + CHUNK, len(todo)), len(todo))
    stored = store.judgements_of(ws, key, bench.id)
    counts = Counter(j.verdict for j in stored)
    have = {(j.pair_id, j.swapped) for j in stored}
    return PairJudging(
        bench.name,
        key,
        who,
        pair_judge.PROMPT_VERSION,
        with_image,
        both_orders,
        len(queue),
        len(stored),
        {**{v: counts.get(v, 0) for v in store.VERDICTS}, "undecided": counts.get(None, 0)},
        sum(1 for p in queue for s in orders if (p.id, s) not in have),
        missing,
        calls,
    )
