"""95 % intervals on every figure a run gives, and the estimators that go with them (issue 38, docs/adr/0057).

One home for the statistics of scores (the alignment study's κ bootstrap and the arena's ratings keep theirs):

- A proportion of right/wrong units (VanillaEval, CircularEval, POPE's accuracy, precision and recall, an official
  accuracy): the Wilson score interval, ``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")`` — exact in
  its counts, so a report computes it from the kept sums whatever the run's size.
- Anything else (a mean of graded scores, POPE's F1, a mean over an item's K samples, an official figure that is
  not a plain proportion): a percentile bootstrap over items (``scipy.stats.bootstrap``), an item being the unit —
  its passes and samples are one cluster, resampled together. Seeded (SEED), RESAMPLES resamples, so a report
  prints the same interval every time.
- pass@k: the unbiased estimator of Chen et al. (2021), 1 − C(n−c, k) / C(n, k), per item, averaged.

Every interval says its method in words (`Interval.method`), as the report prints it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

CONFIDENCE: Final = 0.95
RESAMPLES: Final = 2000
SEED: Final = 0
WILSON: Final = "Wilson"
BOOTSTRAP: Final = f"percentile bootstrap over items ({RESAMPLES:,} resamples, seed {SEED})"


@dataclass(frozen=True)
class Interval:
    """A 95 % interval [low, high] on the figure's own scale, and how it was computed (WILSON, BOOTSTRAP…)."""

    low: float
    high: float
    method: str

    def to_json(self) -> dict[str, Any]:
        return {"low": self.low, "high": self.high, "method": self.method}

    def scaled(self, factor: float) -> Interval:
        """The same interval on another scale (a fraction ×100 as the leaderboard prints it, a share × a count)."""
        return Interval(self.low * factor, self.high * factor, self.method)

    def shown(self, scale: float = 100.0, digits: int = 1) -> str:
        """`[71.2, 76.9]`: the bounds as a report prints them (×100 by default)."""
        return f"[{self.low * scale:.{digits}f}, {self.high * scale:.{digits}f}]"


def wilson(successes: int, n: int, confidence: float = CONFIDENCE) -> Interval | None:
    """The Wilson score interval of successes / n (no continuity correction); None when n = 0."""
    if n <= 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be within 0..{n}, got {successes}")
    from scipy.stats import binomtest

    ci = binomtest(successes, n).proportion_ci(confidence_level=confidence, method="wilson")
    return Interval(float(ci.low), float(ci.high), WILSON)


def bootstrap(
    data: Sequence[Sequence[float]],
    statistic: Callable[..., Any],
    *,
    paired: bool = False,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Interval | None:
    """The percentile bootstrap interval of `statistic` over units: `data` is one sequence per sample (one value per
    unit, the same units in each when `paired`); `statistic(*samples, axis=-1)` must be vectorized as
    scipy.stats.bootstrap asks. None over no unit, or when the statistic is undefined on every resample."""
    import numpy as np
    from scipy.stats import bootstrap as scipy_bootstrap

    arrays = tuple(np.asarray(d, dtype=float) for d in data)
    if not arrays or any(a.size == 0 for a in arrays):
        return None
    if all(a.size == 1 for a in arrays):  # one unit: every resample is that unit (scipy asks for two)
        value = float(statistic(*(a[np.newaxis, :] for a in arrays), axis=-1)[0])
        return None if math.isnan(value) else Interval(value, value, _method(resamples, seed))
    result = scipy_bootstrap(
        arrays,
        statistic,
        paired=paired,
        vectorized=True,
        n_resamples=resamples,
        confidence_level=CONFIDENCE,
        method="percentile",
        random_state=np.random.default_rng(seed),
    )
    low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
    if math.isnan(low) or math.isnan(high):
        return None
    return Interval(low, high, _method(resamples, seed))


def _method(resamples: int, seed: int) -> str:
    if (resamples, seed) == (RESAMPLES, SEED):
        return BOOTSTRAP
    return f"percentile bootstrap over items ({resamples:,} resamples, seed {seed})"


def bootstrap_mean(values: Sequence[float], **kwargs: Any) -> Interval | None:
    """The percentile bootstrap interval of a mean of per-item values (graded scores, an item's share of right
    samples)."""
    import numpy as np

    return bootstrap((values,), np.mean, **kwargs)


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimator of pass@k from n samples of which c are right: 1 − C(n−c, k) / C(n, k) (Chen et al.
    2021, "Evaluating Large Language Models Trained on Code"); k ≤ n."""
    if not 0 < k <= n or not 0 <= c <= n:
        raise ValueError(f"pass@k needs 0 < k <= n and 0 <= c <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)
