"""Annotator statistics per benchmark: what each person judged, how fast, and how well they agree with the others.

Everything is read from the standing verdicts (annotation/standing.py: a withdrawn or corrected verdict no longer
counts). A verdict's category for agreement is the verdict, with the corrected answer where it names one
("wrong_answer→C", "incomplete→a tabby"); a skip is no verdict: it is left out of agreement, as from conflicts, and an
item is judged (by someone, by an annotator) only by a standing verdict other than a skip.

- Cohen's κ of an annotator against each other annotator over the items both judged, and the mean of those pairs;
- Krippendorff's α (nominal) over every annotator of the benchmark;
- items per hour: judged items over the time spent on every standing record (the seconds stored with each; a skip's
  time was spent too, judging nothing);
- disagreements to discuss: the benchmark's conflicts (annotation.reviews.conflicts) the annotator is part of.
While an assignment plan stands for the benchmark (annotation/team_plans.py), agreement (κ per pair, α) is reported on
the planned overlap: only the verdicts the plan asked for count — a pair's κ over the items the plan gave both, not
whatever overlap happened (a lead's own check of an item, say).
Both statistics come from annotation/agreement.py (scikit-learn and the krippendorff package).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from annotation import agreement, reviews, team_plans
from db.workspace import Workspace

SKIP = "skip"


@dataclass(frozen=True)
class AnnotatorStats:
    annotator: str
    verdicts: dict[str, int]  # standing verdicts by kind (skips included)
    items: int  # items judged: a standing verdict other than a skip
    seconds: float  # time spent on the standing records (skips included), where stored
    items_per_hour: float | None
    kappa: dict[str, float | None] = field(default_factory=dict)  # other annotator → κ over shared items
    shared: dict[str, int] = field(default_factory=dict)  # other annotator → items both judged (skips left out)
    mean_kappa: float | None = None
    disagreements: int = 0  # conflicts on the benchmark this annotator is part of

    def to_json(self) -> dict[str, Any]:
        return {
            "annotator": self.annotator,
            "verdicts": dict(self.verdicts),
            "items": self.items,
            "seconds": round(self.seconds, 1),
            "items_per_hour": None if self.items_per_hour is None else round(self.items_per_hour, 1),
            "kappa": dict(self.kappa),
            "shared": dict(self.shared),
            "mean_kappa": self.mean_kappa,
            "disagreements": self.disagreements,
        }


@dataclass(frozen=True)
class BenchmarkAgreement:
    benchmark_id: int
    total_items: int
    reviewed_items: int  # items judged by someone: a standing verdict other than a skip
    alpha: float | None  # Krippendorff's α over every annotator (None: undefined — fewer than 2 raters, …)
    conflicts: int
    annotators: tuple[AnnotatorStats, ...]
    plan: str | None = None  # the uuid of the standing plan: agreement is then on its planned overlap

    @property
    def planned(self) -> bool:
        return self.plan is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "agreement_on": "planned overlap" if self.planned else "items both judged",
            "plan": self.plan,
            "total_items": self.total_items,
            "reviewed_items": self.reviewed_items,
            "alpha": self.alpha,
            "conflicts": self.conflicts,
            "annotators": [a.to_json() for a in self.annotators],
        }


def category(review: reviews.Review) -> str:
    """What a verdict says, for agreement: the verdict, and the answer it names (a wrong key's, a missing reference)."""
    return f"{review.verdict}→{review.corrected_answer}" if review.corrected_answer else review.verdict


def benchmark_stats(ws: Workspace, benchmark_id: int) -> BenchmarkAgreement:
    standing = reviews.standing_reviews(ws, benchmark_id=benchmark_id)
    total = ws.conn.execute("SELECT count(*) FROM items WHERE benchmark_id = ?", (benchmark_id,)).fetchone()[0]
    plan = team_plans.standing_plan(ws, benchmark_id)
    assigned = team_plans.planned_pairs(ws, plan.id) if plan is not None else None
    mine: dict[str, list[reviews.Review]] = defaultdict(list)
    opinions: dict[int, dict[str, str]] = defaultdict(dict)  # item → annotator → category (skips left out)
    judged_items: set[int] = set()  # items judged by someone (planned or not)
    for r in standing:
        mine[r.annotator].append(r)
        if r.verdict != SKIP:
            judged_items.add(r.item_id)
        if r.verdict != SKIP and (assigned is None or (r.item_id, r.annotator) in assigned):
            opinions[r.item_id][r.annotator] = category(r)
    conflicts = reviews.conflicts(ws, benchmark_id)
    in_conflict = Counter(a for rs in conflicts.values() for a in {r.annotator for r in rs})
    people = sorted(mine)
    out = []
    for person in people:
        rs = mine[person]
        judged = [r for r in rs if r.verdict != SKIP]
        seconds = sum(r.seconds for r in rs if r.seconds)
        timed = sum(1 for r in judged if r.seconds)
        kappa, shared = {}, {}
        for other in people:
            if other == person:
                continue
            both = [unit for unit in opinions.values() if person in unit and other in unit]
            shared[other] = len(both)
            kappa[other] = agreement.cohen_kappa([u[person] for u in both], [u[other] for u in both])
        defined = [k for k in kappa.values() if k is not None]
        out.append(
            AnnotatorStats(
                person,
                dict(Counter(r.verdict for r in rs)),
                len(judged),  # this person's items judged (the benchmark's count is the report's)
                seconds,
                3600 * timed / seconds if seconds > 0 else None,
                kappa,
                shared,
                sum(defined) / len(defined) if defined else None,
                in_conflict.get(person, 0),
            )
        )
    return BenchmarkAgreement(
        benchmark_id,
        total,
        len(judged_items),
        agreement.krippendorff_alpha(list(opinions.values())),
        len(conflicts),
        tuple(out),
        plan.uuid if plan is not None else None,
    )
