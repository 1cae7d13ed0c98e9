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
BATCH: Final = 100
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
    unit: str = "items",
) -> Interval | None:
    """The percentile bootstrap interval of `statistic` over units: `data` is one sequence per sample (one value per
    unit, the same units in each when `paired`); `statistic(*samples, axis=-1)` must be vectorized as
    scipy.stats.bootstrap asks. None over no unit, or when the statistic is undefined on every resample. `unit`
    names the unit in the method ("question sets" where a benchmark's unit is not an item)."""
    import numpy as np
    from scipy.stats import bootstrap as scipy_bootstrap

    arrays = tuple(np.asarray(d, dtype=float) for d in data)
    if not arrays or any(a.size == 0 for a in arrays):
        return None
    if all(a.size == 1 for a in arrays):  # one unit: every resample is that unit (scipy asks for two)
        value = float(statistic(*(a[np.newaxis, :] for a in arrays), axis=-1)[0])
        return None if math.isnan(value) else Interval(value, value, _method(resamples, seed, unit))
    result = scipy_bootstrap(
        arrays,
        statistic,
        paired=paired,
        vectorized=True,
        n_resamples=resamples,
        confidence_level=CONFIDENCE,
        method="percentile",
        random_state=np.random.default_rng(seed),
        # Resamples drawn BATCH at a time: the same draws and interval, memory bounded by BATCH × units instead of
        # resamples × units (at 100,000 items a paired mean took 4.7 GB at once, 0.3 GB in batches).
        batch=BATCH,
    )
    low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
    if math.isnan(low) or math.isnan(high):
        return None
    return Interval(low, high, _method(resamples, seed, unit))


def _method(resamples: int, seed: int, unit: str = "items") -> str:
    if (resamples, seed, unit) == (RESAMPLES, SEED, "items"):
        return BOOTSTRAP
    return f"percentile bootstrap over {unit} ({resamples:,} resamples, seed {seed})"


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


# --- two runs compared item by item (`vlmdesk compare`) ---------------------------------------------------------

NEWCOMBE: Final = "Newcombe's hybrid score interval for paired proportions (method 10)"
MCNEMAR: Final = "McNemar's exact test"


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """The two-sided p of McNemar's exact test on the discordant pairs of two paired right/wrong outcomes (a_only
    right in A and wrong in B, b_only the other way): ``binomtest(a_only, a_only + b_only, 0.5).pvalue``; 1 when no
    pair is discordant (nothing tells the two apart)."""
    if a_only < 0 or b_only < 0:
        raise ValueError(f"counts must not be negative, got {a_only}, {b_only}")
    if a_only + b_only == 0:
        return 1.0
    from scipy.stats import binomtest

    return float(binomtest(a_only, a_only + b_only, 0.5).pvalue)


def paired_difference(both: int, a_only: int, b_only: int, neither: int) -> Interval | None:
    """The 95 % interval of the difference of two paired proportions, p_A − p_B = (a_only − b_only) / n, from the
    2×2 table of paired outcomes (both right, right in A only, right in B only, neither): Newcombe's hybrid score
    interval, method 10 of Newcombe (1998), "Improved confidence intervals for the difference between binomial
    proportions based on paired data", Statistics in Medicine 17:2635–2650 — each accuracy's Wilson interval,
    combined with the correlation φ of the two outcomes, corrected towards 0 by n/2 when positive. Exact in its
    counts (no resampling), so it costs the same at any size. None over no unit."""
    counts = (both, a_only, b_only, neither)
    if any(k < 0 for k in counts):
        raise ValueError(f"counts must not be negative, got {counts}")
    n = sum(counts)
    if n == 0:
        return None
    right_a, right_b = both + a_only, both + b_only
    p_a, p_b = right_a / n, right_b / n
    wilson_a, wilson_b = wilson(right_a, n), wilson(right_b, n)
    assert wilson_a is not None and wilson_b is not None  # n > 0
    margins = right_a * (n - right_a) * right_b * (n - right_b)
    cross = both * neither - a_only * b_only
    # φ, 0 when a margin is empty; a positive φ is shrunk by n/2 (Newcombe's correction of method 10).
    phi = 0.0 if margins == 0 else (max(cross - n / 2, 0.0) if cross > 0 else cross) / math.sqrt(margins)
    la, ua, lb, ub = p_a - wilson_a.low, wilson_a.high - p_a, p_b - wilson_b.low, wilson_b.high - p_b
    delta = math.sqrt(max(la**2 - 2 * phi * la * ub + ub**2, 0.0))
    epsilon = math.sqrt(max(ua**2 - 2 * phi * ua * lb + lb**2, 0.0))
    difference = p_a - p_b
    return Interval(max(-1.0, difference - delta), min(1.0, difference + epsilon), NEWCOMBE)


def paired_bootstrap_difference(
    a: Sequence[Sequence[float]], b: Sequence[Sequence[float]], statistic: Callable[..., Any], **kwargs: Any
) -> Interval | None:
    """The percentile bootstrap interval of statistic(A) − statistic(B) over paired units (`bootstrap(paired=True)`:
    a resample draws the same items for both runs): `a` and `b` are the runs' per-unit columns, in the same unit
    order (a mean: one column each; POPE's F1: its count columns), `statistic(*columns, axis=-1)` vectorized."""
    k = len(a)

    def difference(*columns: Any, axis: int = -1) -> Any:
        return statistic(*columns[:k], axis=axis) - statistic(*columns[k:], axis=axis)

    return bootstrap((*a, *b), difference, paired=True, **kwargs)
