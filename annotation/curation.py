"""The curated version of a benchmark: what human decisions remove or correct, and the export with its change log.

Per item, every QC flag (active or withdrawn: a human judgement outlives the runs that prompted it) resolves on its
own (annotation.qc.resolve). Optionally the item's standing reviews (annotation.reviews) resolve the same way:
ok keeps, wrong_answer corrects (an open item's corrected reference becomes its only one), ambiguous /
text_answerable / bad_image remove, skip does not vote; incomplete keeps the key, and on an open item the answer it
names is added to the references (several annotators' missing answers add up: they do not contradict each other).
Then: removal by any source wins; otherwise corrections apply when every source that corrects names the same answer;
different corrections are a conflict and nothing is applied. Disputed (tied) flags apply nothing.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from annotation import item_kinds, qc, reviews
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
    action: str  # removed | answer_corrected | references_added | not_applied
    old_answer: str | None
    new_answer: str | None
    sources: tuple[str, ...]  # "qc:text-only", "qc:consensus", "reviews"
    reasons: tuple[str, ...]
    annotators: tuple[str, ...]
    notes: tuple[str, ...]
    decided_at: str | None
    why_not_applied: str | None = None
    added_references: tuple[str, ...] = ()  # open items: answers the references missed (incomplete verdicts)

    def to_json(self) -> dict[str, Any]:
        return {
            k: list(v) if isinstance(v, tuple) else v
            for k, v in asdict(self).items()
            if not (k == "why_not_applied" and v is None) and not (k == "added_references" and not v)
        }


@dataclass(frozen=True)
class _Verdict:
    source: str
    action: str  # remove | correct | add (an open item's missing reference)
    answer: str | None
    reason: str
    annotators: tuple[str, ...]
    notes: tuple[str, ...]
    decided_at: str
    added: tuple[str, ...] = ()  # action "add": the answers an open item's references missed


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
        for item_id, found_here in _review_verdicts(ws, benchmark_id, items).items():
            verdicts.setdefault(item_id, []).extend(found_here)
    plan = {}
    for item_id, found in verdicts.items():
        plan[item_id] = _combine(items[item_id], found)
    order = {i: n for n, i in enumerate(items)}
    return dict(sorted(plan.items(), key=lambda kv: order[kv[0]]))


def _review_verdicts(ws: Workspace, benchmark_id: int, items: dict[int, catalog.Item]) -> dict[int, list[_Verdict]]:
    by_item: dict[int, list[reviews.Review]] = {}
    for r in reviews.standing_reviews(ws, benchmark_id=benchmark_id):
        if r.verdict != "skip":
            by_item.setdefault(r.item_id, []).append(r)
    row = ws.conn.execute("SELECT kind FROM benchmarks WHERE id = ?", (benchmark_id,)).fetchone()
    kind = item_kinds.kind_of(row[0]) if row else "mcq"
    found: dict[int, list[_Verdict]] = {}
    for item_id, standing in by_item.items():
        added = [r for r in standing if kind == "open" and r.verdict == "incomplete" and r.corrected_answer]
        if added:  # answers the references missed: each annotator's adds up, none outvotes another
            found.setdefault(item_id, []).append(
                _Verdict(
                    "reviews",
                    "add",
                    None,
                    "incomplete",
                    tuple(dict.fromkeys(r.annotator for r in added)),
                    tuple(r.note for r in added if r.note),
                    max(r.created_at for r in added),
                    tuple(dict.fromkeys(r.corrected_answer for r in added if r.corrected_answer)),
                )
            )
        outcome = {
            r.id: REVIEW_OUTCOME.get(r.verdict, ("correct", _norm(items[item_id], r.corrected_answer, kind)))
            for r in standing
        }
        ranked = Counter(outcome.values()).most_common()
        if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
            continue  # tied reviewers: nothing applies
        (action, answer), _ = ranked[0]
        if action == "keep" or (action == "correct" and _unchanged(items[item_id], answer, kind)):
            continue
        winners = [r for r in standing if outcome[r.id] == (action, answer)]
        found.setdefault(item_id, []).append(
            _Verdict(
                "reviews",
                action,
                answer,
                Counter(r.verdict for r in winners).most_common(1)[0][0],
                tuple(r.annotator for r in winners),
                tuple(r.note for r in winners if r.note),
                max(r.created_at for r in winners),
            )
        )
    return found


def _norm(item: catalog.Item, answer: str | None, kind: item_kinds.ItemKind) -> str | None:
    """A reviewer's corrected answer in the item's own terms, or None when it names no option (an open item's is
    its text, as add_review stored it)."""
    if kind == "open":
        return answer.strip() or None if answer else None
    return canonical_answer(len(item.options), answer)


def _unchanged(item: catalog.Item, answer: str | None, kind: item_kinds.ItemKind) -> bool:
    return answer is None or (item.references == (answer,) if kind == "open" else answer == item.answer)


def _combine(item: catalog.Item, found: list[_Verdict]) -> Change:
    removing = [v for v in found if v.action == "remove"]
    answers = {v.answer for v in found if v.action == "correct" and v.answer is not None}
    added = tuple(dict.fromkeys(a for v in found if v.action == "add" for a in v.added))
    if removing:
        action = "removed"
    elif len(answers) > 1:
        action = "not_applied"
    else:
        action = "answer_corrected" if answers else "references_added"
    chosen = removing or found
    return Change(
        index=item.index,
        action=action,
        old_answer=item.answer,
        new_answer=next(iter(answers)) if action == "answer_corrected" else None,
        sources=tuple(dict.fromkeys(v.source for v in chosen)),
        reasons=tuple(dict.fromkeys(v.reason for v in chosen)),
        annotators=tuple(dict.fromkeys(a for v in chosen for a in v.annotators)),
        notes=tuple(n for v in chosen for n in v.notes),
        decided_at=max(v.decided_at for v in chosen),
        why_not_applied=(f"conflicting corrections: {', '.join(sorted(answers))}" if action == "not_applied" else None),
        added_references=added if action in ("answer_corrected", "references_added") else (),
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
        added_references={i: c.added_references for i, c in plan.items() if c.added_references},
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
