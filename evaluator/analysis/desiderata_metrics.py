"""ChEF's desiderata as numbers (Shi et al., "ChEF"; OpenGVLab/LAMM src/ChEF): pure functions, no workspace.

- Calibration: per-option scores -> softmax -> confidence (the max probability) and prediction (the argmax); ECE over
  equal-count bins (ChEF's: sorted by confidence, the first N mod B bins hold one item more) or equal-width bins.
- Instruction following: MR, the share of items whose option chosen under a label map is the one chosen without.
- Robustness: RRM = (acc_c - acc_r) / (acc_o - acc_r) * 100 and RR = acc_c / acc_o * 100.
- In-context learning: RIAM = (mean(acc_1..3) - acc_0) / (acc_0 - acc_r) * 50 + 50.

Accuracies are fractions in [0, 1]; RRM, RR and RIAM are on ChEF's 0-100 scale. acc_random is computed from the items
asked (1/N per item under VanillaEval, (1/N)^N under CircularEval) instead of ChEF's per-dataset constants.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

Binning = Literal["equal-count", "equal-width"]
BINNINGS: tuple[Binning, ...] = ("equal-count", "equal-width")
DEFAULT_BINS = 10
MAX_BINS = 1000


@dataclass(frozen=True)
class CalibrationBin:
    count: int
    confidence: float  # mean confidence of the bin's items
    accuracy: float  # share of them right

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Calibration:
    """ECE (None over no item) and the non-empty bins, lowest confidence first."""

    ece: float | None
    n: int
    bins: tuple[CalibrationBin, ...]
    binning: Binning = "equal-count"

    def to_json(self) -> dict[str, Any]:
        return {"ece": self.ece, "n": self.n, "binning": self.binning, "bins": [b.to_json() for b in self.bins]}


def softmax(scores: Sequence[float]) -> list[float]:
    """Probabilities from log-scores (-inf gives 0); uniform when every score is -inf."""
    top = max(scores)
    if top == -math.inf:
        return [1 / len(scores)] * len(scores)
    exps = [math.exp(s - top) for s in scores]
    total = sum(exps)
    return [e / total for e in exps]


def confidence_of(scores: Sequence[float], *, probabilities: bool = False) -> tuple[float, int]:
    """(confidence, index of the predicted option) from one pass's per-option scores: log-likelihoods through a
    softmax (ChEF), or, with `probabilities`, scores that already are probabilities (normalised to sum 1)."""
    if probabilities:
        total = sum(scores)
        probs = [s / total for s in scores] if total > 0 else [1 / len(scores)] * len(scores)
    else:
        probs = softmax(scores)
    best = max(range(len(probs)), key=probs.__getitem__)
    return probs[best], best


def ece(
    confidences: Sequence[float],
    correct: Sequence[bool],
    *,
    bins: int = DEFAULT_BINS,
    binning: Binning = "equal-count",
) -> Calibration:
    """Expected calibration error = sum over bins of |bin| * |mean confidence - accuracy| / N."""
    if len(confidences) != len(correct):
        raise ValueError("confidences and correct differ in length")
    if not 1 <= bins <= MAX_BINS:
        raise ValueError(f"bins must be in 1..{MAX_BINS}")
    n = len(confidences)
    if n == 0:
        return Calibration(None, 0, (), binning)
    pairs = sorted(zip(confidences, correct), key=lambda p: p[0])  # stable: ties keep their input order
    groups: list[list[tuple[float, bool]]]
    if binning == "equal-count":
        least, extra = divmod(n, bins)
        groups, start = [], 0
        for b in range(bins):
            size = least + (1 if b < extra else 0)
            groups.append(pairs[start : start + size])
            start += size
    elif binning == "equal-width":
        # Bin b holds (b/B, (b+1)/B]; 0 goes to the first. Compared with the edges themselves, not by c*B (0.7*10
        # is 7.000000000000001 in floating point and would land one bin too high).
        edges = [b / bins for b in range(1, bins)]
        groups = [[] for _ in range(bins)]
        for c, ok in pairs:
            groups[bisect.bisect_left(edges, c)].append((c, ok))
    else:
        raise ValueError(f"binning {binning!r}: one of {', '.join(BINNINGS)}")
    found, total = [], 0.0
    for group in groups:
        if not group:
            continue
        conf = sum(c for c, _ in group) / len(group)
        acc = sum(1 for _, ok in group if ok) / len(group)
        total += len(group) * abs(conf - acc)
        found.append(CalibrationBin(len(group), conf, acc))
    return Calibration(total / n, n, tuple(found), binning)


def random_accuracy(option_counts: Sequence[int], strategy: str = "vanilla") -> float | None:
    """The accuracy of guessing uniformly, from the items asked: mean of 1/N (VanillaEval, one pass; yes/no items
    count N = 2) or of (1/N)^N (CircularEval: every rotation right). None over no item."""
    if not option_counts:
        return None
    circular = strategy == "circular"
    chances = [(1 / max(n, 2)) ** (max(n, 2) if circular else 1) for n in option_counts]
    return sum(chances) / len(chances)


def rrm(acc_original: float, acc_corrupted: float, acc_random: float) -> float | None:
    """Relative robustness for multi-choice (ChEF): 100 when corruption costs nothing, 0 at chance level. None
    when the original accuracy is at chance (nothing to lose)."""
    if acc_original == acc_random:
        return None
    return (acc_corrupted - acc_random) / (acc_original - acc_random) * 100


def rr(acc_original: float, acc_corrupted: float) -> float | None:
    """Relative robustness: the corrupted accuracy as a percentage of the original (None when that is 0)."""
    return acc_corrupted / acc_original * 100 if acc_original else None


def riam(acc_zero: float, acc_shots: Sequence[float], acc_random: float) -> float | None:
    """Relative in-context accuracy for multi-choice (ChEF): 50 when k-shot examples change nothing, above 50 when
    they help. None without k-shot accuracies, or when zero-shot is at or below chance (the scale is undefined)."""
    if not acc_shots or acc_zero <= acc_random:
        return None
    mean = sum(acc_shots) / len(acc_shots)
    return (mean - acc_zero) / (acc_zero - acc_random) * 50 + 50


def match_ratio(plain: dict[int, int | None], mapped: dict[int, int | None]) -> tuple[float | None, int]:
    """(MR, items compared): the share of items, asked in both runs, whose original option chosen under the label
    map is the one chosen without it. Consistency, not correctness; an undecided reading matches nothing."""
    common = [i for i in plain if i in mapped]
    if not common:
        return None, 0
    same = sum(1 for i in common if plain[i] is not None and plain[i] == mapped[i])
    return same / len(common), len(common)
