"""Per-item review status for browsing and navigating, derived from the review log (annotation/reviews.py).

The standing verdicts are computed in Python once per listing (the log is small next to the items) and turned into
id sets that db/item_query.py filters on, so paging stays in SQL.
"""

from __future__ import annotations

from dataclasses import dataclass

from annotation import qc, reviews
from annotation.blind import Sight
from annotation.item_kinds import ALL_VERDICTS, ItemKind, verdict_label
from db.workspace import Workspace

VERDICT_LABELS = {v: verdict_label(v) for v in ALL_VERDICTS}
"""How each verdict reads where the item's kind is not at hand (annotation/item_kinds.py words them)."""
REVIEW_FILTERS = ("unreviewed", "reviewed", "mine", "not_mine", "conflict", *reviews.VERDICTS)
"""Values of the review-status filter: by anyone / by me / disagreement / one standing verdict (every verdict the
log takes, "incomplete" with them once reviews.VERDICTS holds it)."""


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
        return self.text()

    def text(self, kind: ItemKind | None = None) -> str:
        """The status in a few words, the verdict worded for an item of this kind ("wrong reference → 2")."""
        if not self.verdicts:
            return ""
        if self.conflict:
            return "conflict"
        opinions = [(v, c) for _, v, c in self.verdicts if v != "skip"] or [(v, c) for _, v, c in self.verdicts]
        verdict, corrected = opinions[0]
        text = verdict_label(verdict, kind) + (f" → {corrected}" if corrected else "")
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


# A conflict is settled for a settler when their standing verdict (not a skip) is newer, in the log's order (time,
# then id), than every other annotator's standing verdict on the item; settling is giving that verdict
# (reviews.add_review), kept in the log. Asked per conflict in SQL (review_conflicts, review_standing: migration 0015).
_OPEN_CONFLICT = (
    "NOT EXISTS (SELECT 1 FROM review_standing m WHERE m.item_id = c.item_id AND m.annotator = :settler "
    "AND m.verdict != 'skip' AND NOT EXISTS (SELECT 1 FROM review_standing o WHERE o.item_id = c.item_id "
    "AND o.annotator != :settler AND o.verdict != 'skip' "
    "AND (o.created_at, o.review_id) > (m.created_at, m.review_id)))"
)


def open_conflict_count(ws: Workspace, benchmark_id: int, settler: str) -> int:
    """How many conflicting items the settler has not yet ruled on."""
    return int(
        ws.conn.execute(
            f"SELECT count(*) FROM review_conflicts c WHERE c.benchmark_id = :b AND {_OPEN_CONFLICT}",
            {"b": benchmark_id, "settler": settler},
        ).fetchone()[0]
    )


def next_open_conflict(ws: Workspace, benchmark_id: int, settler: str, *, after: int | None = None) -> int | None:
    """The first conflicting item (by id) after `after` the settler has not ruled on, from the first one again past
    the last: an index walk from where the settler is, whatever the number of conflicts."""
    for start in (after, None) if after is not None else (None,):
        found = ws.conn.execute(
            f"SELECT c.item_id FROM review_conflicts c WHERE c.benchmark_id = :b AND c.item_id > :after "
            f"AND {_OPEN_CONFLICT} ORDER BY c.item_id LIMIT 1",
            {"b": benchmark_id, "settler": settler, "after": -1 if start is None else start},
        ).fetchone()
        if found is not None:
            return int(found[0])
    return None


def is_open_conflict(ws: Workspace, benchmark_id: int, settler: str, item_id: int) -> bool:
    return (
        ws.conn.execute(
            f"SELECT 1 FROM review_conflicts c WHERE c.item_id = :i AND c.benchmark_id = :b AND {_OPEN_CONFLICT}",
            {"b": benchmark_id, "settler": settler, "i": item_id},
        ).fetchone()
        is not None
    )
