"""Per-item review status for browsing and navigating, derived from the review log (annotation/reviews.py).

The standing verdicts are computed in Python once per listing (the log is small next to the items) and turned into
id sets that db/item_query.py filters on, so paging stays in SQL.
"""

from __future__ import annotations

from dataclasses import dataclass

from annotation import qc, reviews
from annotation.blind import Sight
from db.workspace import Workspace

VERDICT_LABELS = {
    "ok": "ok",
    "wrong_answer": "wrong key",
    "ambiguous": "ambiguous",
    "text_answerable": "text-answerable",
    "bad_image": "bad image",
    "skip": "skipped",
}
REVIEW_FILTERS = ("unreviewed", "reviewed", "mine", "not_mine", "conflict", *reviews.VERDICTS)
"""Values of the review-status filter: by anyone / by me / disagreement / one standing verdict."""


@dataclass(frozen=True)
class ReviewStatus:
    verdicts: tuple[tuple[str, str, str | None], ...]  # (annotator, verdict, corrected answer), standing only

    @property
    def conflict(self) -> bool:
        opinions = {(v, c) for _, v, c in self.verdicts if v != "skip"}
        return len(opinions) > 1

    def by(self, annotator: str) -> tuple[str, str | None] | None:
        return next(((v, c) for a, v, c in self.verdicts if a == annotator), None)

    @property
    def label(self) -> str:
        if not self.verdicts:
            return ""
        if self.conflict:
            return "conflict"
        opinions = [(v, c) for _, v, c in self.verdicts if v != "skip"] or [(v, c) for _, v, c in self.verdicts]
        verdict, corrected = opinions[0]
        text = VERDICT_LABELS.get(verdict, verdict) + (f" → {corrected}" if corrected else "")
        # ×n counts the annotators who said it: "ok ×2" for one ok and one skip would claim an agreement.
        return text + (f" ×{len(opinions)}" if len(opinions) > 1 else "")


def review_status(ws: Workspace, benchmark_id: int) -> dict[int, ReviewStatus]:
    """Standing verdicts per reviewed item of a benchmark (unreviewed items are absent)."""
    grouped: dict[int, list[tuple[str, str, str | None]]] = {}
    for item_id, annotator, verdict, corrected in reviews.standing_opinions(ws, benchmark_id):  # in time order
        grouped.setdefault(item_id, []).append((annotator, verdict, corrected))
    return {item: ReviewStatus(tuple(v)) for item, v in grouped.items()}


def visible_status(status: dict[int, ReviewStatus], sight: Sight) -> dict[int, ReviewStatus]:
    """The review status an annotator may see (annotation/blind.py): before their verdict, only their own."""
    if not sight.blind:
        return status
    out = {}
    for item, s in status.items():
        shown = s if sight.reveals(item) else ReviewStatus(tuple(v for v in s.verdicts if v[0] == sight.annotator))
        if shown.verdicts:
            out[item] = shown
    return out


def item_review_status(ws: Workspace, item_id: int) -> ReviewStatus:
    """The standing verdicts on one item, from its own rows (an index read, whatever the benchmark's size)."""
    return ReviewStatus(
        tuple((r.annotator, r.verdict, r.corrected_answer) for r in reviews.standing_reviews(ws, item_id=item_id))
    )


def review_filter_ids(
    status: dict[int, ReviewStatus], which: str, annotator: str | None
) -> tuple[frozenset[int] | None, frozenset[int] | None]:
    """(only_ids, exclude_ids) for db.item_query.ItemFilter that select the items matching a review filter."""
    if which not in REVIEW_FILTERS:
        raise ValueError(f"unknown review filter {which!r} (one of {', '.join(REVIEW_FILTERS)})")
    if which == "unreviewed":
        return None, frozenset(status)
    if which == "reviewed":
        return frozenset(status), None
    if which in ("mine", "not_mine"):
        mine = frozenset(i for i, s in status.items() if annotator and s.by(annotator))
        return (mine, None) if which == "mine" else (None, mine)
    if which == "conflict":
        return frozenset(i for i, s in status.items() if s.conflict), None
    return frozenset(i for i, s in status.items() if any(v == which for _, v, _ in s.verdicts)), None


QC_FILTERS = ("flagged", "unflagged", *qc.STATUSES)
"""Values of the QC filter: any active flag / none / a flag with that resolution."""


@dataclass(frozen=True)
class QCMark:
    stages: tuple[tuple[str, str], ...]  # (stage, status) per active flag

    @property
    def label(self) -> str:
        return ", ".join(f"{qc.CATEGORY[stage]} · {status}" for stage, status in self.stages)

    @property
    def short_label(self) -> str:
        """For a narrow table column: "flawed · pending", "text · confirmed"."""
        return ", ".join(f"{_QC_SHORT[stage]} · {status}" for stage, status in self.stages)


_QC_SHORT = {"text-only": "text", "consensus": "flawed"}


def qc_marks(ws: Workspace, benchmark_id: int) -> dict[int, QCMark]:
    """Active quality-control flags per item, with their resolution (annotation/qc.py)."""
    found: dict[int, list[tuple[str, str]]] = {}
    for c in qc.queue(ws, benchmark_id=benchmark_id):
        found.setdefault(c.item_id, []).append((c.stage, c.status))
    return {item: QCMark(tuple(sorted(v))) for item, v in found.items()}


def visible_qc(marks: dict[int, QCMark], sight: Sight) -> dict[int, QCMark]:
    """QC flags say which runs answered an item right: blind mode shows them only for items the annotator judged."""
    return marks if not sight.blind else {item: m for item, m in marks.items() if sight.reveals(item)}


def qc_filter_ids(marks: dict[int, QCMark], which: str) -> tuple[frozenset[int] | None, frozenset[int] | None]:
    if which not in QC_FILTERS:
        raise ValueError(f"unknown QC filter {which!r} (one of {', '.join(QC_FILTERS)})")
    if which == "flagged":
        return frozenset(marks), None
    if which == "unflagged":
        return None, frozenset(marks)
    return frozenset(i for i, m in marks.items() if any(s == which for _, s in m.stages)), None


def combine(
    *pairs: tuple[frozenset[int] | None, frozenset[int] | None],
) -> tuple[frozenset[int] | None, frozenset[int] | None]:
    """Intersect several (only_ids, exclude_ids) filters into one."""
    only: frozenset[int] | None = None
    exclude: frozenset[int] = frozenset()
    for o, e in pairs:
        if o is not None:
            only = o if only is None else only & o
        if e:
            exclude |= e
    return only, (exclude or None)


def open_conflicts(ws: Workspace, benchmark_id: int, settler: str) -> list[tuple[int, list[reviews.Review]]]:
    """Conflicting items the settler has not yet ruled on: no standing verdict of theirs newer than every other
    standing verdict on the item. Settling is giving that verdict (reviews.add_review); it is kept in the log."""
    out = []
    for item_id, standing in sorted(reviews.conflicts(ws, benchmark_id).items()):
        mine = [r for r in standing if r.annotator == settler]
        others = [r for r in standing if r.annotator != settler]
        if mine and others and (mine[0].created_at, mine[0].id) > max((r.created_at, r.id) for r in others):
            continue
        out.append((item_id, standing))
    return out
