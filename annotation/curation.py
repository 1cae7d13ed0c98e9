"""The curated version of a benchmark: what human decisions remove or correct, and the export with its change log.

Per item, every QC flag (active or withdrawn: a human judgement outlives the runs that prompted it) resolves on its
own (annotation.qc.resolve). Optionally the item's standing reviews (annotation.reviews) resolve the same way:
ok and incomplete keep (references missing an answer leave the key as it is), wrong_answer corrects, ambiguous /
text_answerable / bad_image remove, skip does not vote. Then:
removal by any source wins; otherwise corrections apply when every source that corrects names the same answer;
different corrections are a conflict and nothing is applied. Disputed (tied) flags apply nothing.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from annotation import qc, reviews
from db import catalog
from db.catalog import Benchmark, now_iso
from db.workspace import Workspace
from evaluator.formats.exporters import ExportReport, export_benchmark
from evaluator.formats.outfiles import AtomicOutput, check_output
from evaluator.scoring.choices import canonical_answer

REVIEW_OUTCOME: dict[str, tuple[str, str | None]] = {
    "ok": ("keep", None),
    "incomplete": ("keep", None),
    "ambiguous": ("remove", None),
    "text_answerable": ("remove", None),
    "bad_image": ("remove", None),
}


@dataclass(frozen=True)
class Change:
    """One line of the change log."""

    index: int | str
    action: str  # removed | answer_corrected | not_applied
    old_answer: str | None
    new_answer: str | None
    sources: tuple[str, ...]  # "qc:text-only", "qc:consensus", "reviews"
    reasons: tuple[str, ...]
    annotators: tuple[str, ...]
    notes: tuple[str, ...]
    decided_at: str | None
    why_not_applied: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            k: list(v) if isinstance(v, tuple) else v
            for k, v in asdict(self).items()
            if not (k == "why_not_applied" and v is None)
        }


@dataclass(frozen=True)
class _Verdict:
    source: str
    action: str  # remove | correct
    answer: str | None
    reason: str
    annotators: tuple[str, ...]
    notes: tuple[str, ...]
    decided_at: str


def curation_plan(ws: Workspace, benchmark_id: int, *, with_reviews: bool = False) -> dict[int, Change]:
    """item id -> the change the curated export makes to it (or records as not applied)."""
    items = {i.id: i for i in catalog.list_items(ws, benchmark_id)}
    verdicts: dict[int, list[_Verdict]] = {}
    for c in qc.queue(ws, benchmark_id=benchmark_id, include_withdrawn=True, status="confirmed"):
        r = c.resolution
        assert r.action is not None and r.reason is not None  # a confirmed resolution has both (qc.resolve)
        winners = [d for d in r.votes if d.outcome == (r.action, r.answer)]
        verdicts.setdefault(c.item_id, []).append(
            _Verdict(
                f"qc:{c.stage}",
                r.action,
                r.answer,
                r.reason,
                tuple(d.annotator for d in winners),
                tuple(d.note for d in winners if d.note),
                max(d.created_at for d in winners),
            )
        )
    if with_reviews:
        for item_id, verdict in _review_verdicts(ws, benchmark_id, items).items():
            verdicts.setdefault(item_id, []).append(verdict)
    plan = {}
    for item_id, found in verdicts.items():
        plan[item_id] = _combine(items[item_id], found)
    order = {i: n for n, i in enumerate(items)}
    return dict(sorted(plan.items(), key=lambda kv: order[kv[0]]))


def _review_verdicts(ws: Workspace, benchmark_id: int, items: dict[int, catalog.Item]) -> dict[int, _Verdict]:
    by_item: dict[int, list[reviews.Review]] = {}
    for r in reviews.standing_reviews(ws, benchmark_id=benchmark_id):
        if r.verdict != "skip":
            by_item.setdefault(r.item_id, []).append(r)
    found = {}
    for item_id, standing in by_item.items():
        outcome = {
            r.id: REVIEW_OUTCOME.get(r.verdict, ("correct", _norm(items[item_id], r.corrected_answer)))
            for r in standing
        }
        ranked = Counter(outcome.values()).most_common()
        if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
            continue  # tied reviewers: nothing applies
        (action, answer), _ = ranked[0]
        if action == "keep" or (action == "correct" and answer in (None, items[item_id].answer)):
            continue
        winners = [r for r in standing if outcome[r.id] == (action, answer)]
        found[item_id] = _Verdict(
            "reviews",
            action,
            answer,
            Counter(r.verdict for r in winners).most_common(1)[0][0],
            tuple(r.annotator for r in winners),
            tuple(r.note for r in winners if r.note),
            max(r.created_at for r in winners),
        )
    return found


def _norm(item: catalog.Item, answer: str | None) -> str | None:
    """A reviewer's corrected answer in the item's own terms, or None when it names no option."""
    return canonical_answer(len(item.options), answer)


def _combine(item: catalog.Item, found: list[_Verdict]) -> Change:
    removing = [v for v in found if v.action == "remove"]
    chosen = removing or found
    answers = {v.answer for v in found if v.action == "correct" and v.answer is not None}
    action = "removed" if removing else "answer_corrected" if len(answers) == 1 else "not_applied"
    return Change(
        index=item.index,
        action=action,
        old_answer=item.answer,
        new_answer=next(iter(answers)) if action == "answer_corrected" else None,
        sources=tuple(v.source for v in chosen),
        reasons=tuple(dict.fromkeys(v.reason for v in chosen)),
        annotators=tuple(dict.fromkeys(a for v in chosen for a in v.annotators)),
        notes=tuple(n for v in chosen for n in v.notes),
        decided_at=max(v.decided_at for v in chosen),
        why_not_applied=(f"conflicting corrections: {', '.join(sorted(answers))}" if action == "not_applied" else None),
    )


def changes_path(out: Path) -> Path:
    return out.with_name(out.name + ".changes.jsonl")


def export_curated(
    ws: Workspace, bench: Benchmark, out: str | Path, *, fmt: str | None = None, with_reviews: bool = False
) -> tuple[ExportReport, list[Change]]:
    """Write the curated benchmark to `out` and its change log to `out`.changes.jsonl."""
    out = Path(out)
    check_output(changes_path(out))  # before the benchmark is written: both files or neither
    plan = curation_plan(ws, bench.id, with_reviews=with_reviews)
    report = export_benchmark(
        ws,
        bench,
        out,
        fmt=fmt,
        exclude=frozenset(i for i, c in plan.items() if c.action == "removed"),
        answers={
            i: c.new_answer for i, c in plan.items() if c.action == "answer_corrected" and c.new_answer is not None
        },
    )
    log = changes_path(out)
    exported_at = now_iso()
    with AtomicOutput(log) as f:
        for change in plan.values():
            f.write(
                json.dumps(
                    {"benchmark": bench.name, "exported_at": exported_at, **change.to_json()}, ensure_ascii=False
                )
                + "\n"
            )
    return report, list(plan.values())
