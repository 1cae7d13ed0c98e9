"""ChEF's desiderata metrics on the issue's worked numbers (issue 15) and hand-made cases."""

from __future__ import annotations

import math

import pytest

from evaluator.analysis.desiderata_metrics import (
    confidence_of,
    ece,
    match_ratio,
    random_accuracy,
    riam,
    rr,
    rrm,
    softmax,
)

CONF12 = [0.30, 0.35, 0.40, 0.45, 0.50, 0.55, 0.60, 0.70, 0.80, 0.90, 0.95, 0.99]
OK12 = [bool(c) for c in (0, 1, 0, 0, 1, 1, 0, 1, 1, 1, 1, 1)]


def test_ece_equal_count_is_chefs_binning():
    found = ece(CONF12, OK12)
    assert found.ece == pytest.approx(0.284167, abs=5e-7)
    # 12 items in 10 bins: the first 12 mod 10 = 2 bins hold 2 items, the rest 1.
    assert [b.count for b in found.bins] == [2, 2, 1, 1, 1, 1, 1, 1, 1, 1]
    assert found.bins[0].confidence == pytest.approx(0.325) and found.bins[0].accuracy == 0.5


def test_ece_equal_width():
    found = ece(CONF12, OK12, binning="equal-width")
    assert found.ece == pytest.approx(0.1175, abs=5e-7)
    # 0.30 is in (.2, .3], 0.70 in (.6, .7] (not pushed up by 0.7 * 10 = 7.000000000000001).
    assert [b.count for b in found.bins] == [1, 2, 2, 2, 1, 1, 1, 2]


def test_ece_order_of_input_does_not_matter_and_five_items():
    found = ece([0.9, 0.8, 0.6, 0.5, 0.3], [True, False, True, False, False])
    assert found.ece == pytest.approx(0.42)
    assert found.n == 5 and len(found.bins) == 5  # fewer items than bins: one item each, no empty bins
    shuffled = ece(list(reversed(CONF12)), list(reversed(OK12)))
    assert shuffled.ece == pytest.approx(0.284167, abs=5e-7)


def test_ece_of_nothing_is_none():
    assert ece([], []).ece is None
    assert ece([], [], binning="equal-width").to_json() == {"ece": None, "n": 0, "binning": "equal-width", "bins": []}


def test_confidence_from_log_likelihoods_is_softmax():
    conf, best = confidence_of([math.log(0.2), math.log(0.5), math.log(0.3)])
    assert best == 1 and conf == pytest.approx(0.5)
    # Only differences matter (a summed log-prob of one token equals its mean).
    assert confidence_of([-1.0, -2.0])[0] == pytest.approx(confidence_of([-11.0, -12.0])[0])
    assert confidence_of([0.1, 0.3], probabilities=True) == (pytest.approx(0.75), 1)
    assert softmax([-math.inf, -math.inf]) == [0.5, 0.5]


def test_rrm_and_rr_worked_example():
    assert rrm(0.60, 0.50, 0.2757) == pytest.approx(69.164, abs=5e-4)
    assert rr(0.60, 0.50) == pytest.approx(83.333, abs=5e-4)
    assert rrm(0.25, 0.3, 0.25) is None and rr(0.0, 0.1) is None


def test_random_accuracy_from_items():
    assert random_accuracy([4, 4, 2]) == pytest.approx((0.25 + 0.25 + 0.5) / 3)
    assert random_accuracy([4, 2], "circular") == pytest.approx((0.25**4 + 0.5**2) / 2)
    assert random_accuracy([]) is None
    assert random_accuracy([0]) == 0.5  # a yes/no item: two answers


def test_riam_worked_example_and_undefined():
    assert riam(0.50, [0.45], 0.2757) == pytest.approx(38.854, abs=5e-4)
    assert riam(0.50, [0.40, 0.45, 0.50], 0.2757) == pytest.approx(riam(0.50, [0.45], 0.2757))
    assert riam(0.25, [0.9], 0.25) is None and riam(0.2, [0.9], 0.25) is None
    assert riam(0.5, [], 0.25) is None


def test_match_ratio_hand_made():
    plain = {1: 0, 2: 2, 3: None, 4: 1, 5: 3}
    mapped = {1: 0, 2: 1, 3: None, 4: 1, 6: 0}  # item 5 not asked under the map, item 6 not without it
    mr, n = match_ratio(plain, mapped)
    assert n == 4 and mr == pytest.approx(2 / 4)  # items 1 and 4 agree; undecided item 3 matches nothing
    assert match_ratio({}, mapped) == (None, 0)
