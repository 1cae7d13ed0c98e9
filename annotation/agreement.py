"""Agreement statistics for the alignment study, from well-kept libraries where one exists.

- Wilson score interval: evaluator/analysis/intervals.py (scipy.stats.binomtest(k, n).proportion_ci, no continuity
  correction), the one home of the intervals on scores.
- Cohen's κ and the confusion matrix: scikit-learn (cohen_kappa_score, confusion_matrix).
- Krippendorff's α (nominal, missing values allowed): the `krippendorff` package.
Percent agreement is a count, written here. Libraries are imported lazily (scikit-learn takes a second to import).
Undefined statistics (no data; κ or α when only one category occurs at all) are None, never NaN.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float] | None:
    """The Wilson score interval of a proportion; None when n = 0 (evaluator/analysis/intervals.py, its home)."""
    from evaluator.analysis.intervals import wilson

    found = wilson(successes, n, confidence)
    return None if found is None else (found.low, found.high)


def percent_agreement(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    if len(a) != len(b):
        raise ValueError("two raters must rate the same units")
    return sum(x == y for x, y in zip(a, b)) / len(a) if a else None


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """Cohen's κ of two raters over the same units (labels compared as strings)."""
    if len(a) != len(b):
        raise ValueError("two raters must rate the same units")
    if not a:
        return None
    if len(set(a) | set(b)) == 1:
        return None  # both raters used one and the same category everywhere: chance agreement is 1, κ undefined
    import warnings

    from sklearn.metrics import cohen_kappa_score

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        value = float(cohen_kappa_score([str(x) for x in a], [str(x) for x in b]))
    return None if math.isnan(value) else value


def krippendorff_alpha(units: Sequence[Mapping[str, Hashable]]) -> float | None:
    """Nominal Krippendorff's α. ``units``: per unit, rater → label (raters may skip units)."""
    raters = sorted({r for u in units for r in u})
    categories = sorted({str(v) for u in units for v in u.values()})
    pairable = [u for u in units if len(u) >= 2]
    if len(raters) < 2 or not pairable or len(categories) < 2:
        return None
    import krippendorff
    import numpy as np

    code = {c: i for i, c in enumerate(categories)}
    data = np.full((len(raters), len(units)), np.nan)
    for j, unit in enumerate(units):
        for r, v in unit.items():
            data[raters.index(r), j] = code[str(v)]
    value = float(
        krippendorff.alpha(
            reliability_data=data, level_of_measurement="nominal", value_domain=list(range(len(categories)))
        )
    )
    return None if math.isnan(value) else value


@dataclass(frozen=True)
class Confusion:
    labels: tuple[str, ...]  # row and column order
    matrix: tuple[tuple[int, ...], ...]  # matrix[i][j]: truth labels[i], prediction labels[j]

    def to_json(self) -> dict[str, Any]:
        return {"labels": list(self.labels), "matrix": [list(r) for r in self.matrix]}


def confusion(truth: Sequence[str], predicted: Sequence[str]) -> Confusion:
    if len(truth) != len(predicted):
        raise ValueError("truth and predictions must have the same length")
    labels = tuple(sorted(set(truth) | set(predicted)))
    if not labels:
        return Confusion((), ())
    from sklearn.metrics import confusion_matrix

    m = confusion_matrix(list(truth), list(predicted), labels=list(labels))
    return Confusion(labels, tuple(tuple(int(x) for x in row) for row in m))
