"""Matchmaking's weights and draws against its stated rule: w(a, b) = (u_a + u_b) · exp(−|r_a − r_b| / 400), with
u = 1 / √(1 + battles) and r the Bradley–Terry rating (1000 for a model without battles)."""

import math
import random
from collections import Counter

import pytest

from evaluator.analysis.matchmaking import draw_from, draw_match, weights
from evaluator.analysis.ratings import Battle, bradley_terry

MODELS = ("m1", "m2", "m3", "m4")
# m1 beat m2 often (far apart, many battles); m3 met m1 a few times; m4 never played.
BATTLES = (
    [Battle("m1", "m2", "model_a")] * 12
    + [Battle("m2", "m1", "tie")] * 2
    + [Battle("m3", "m1", "model_a"), Battle("m1", "m3", "model_a"), Battle("m3", "m2", "tie (bothbad)")]
)


def rule(models, battles):
    """The rule as the ADR states it, computed here from the battles."""
    ratings = bradley_terry(battles)
    count = Counter(m for b in battles for m in (b.model_a, b.model_b))
    u = {m: 1 / math.sqrt(1 + count[m]) for m in models}
    r = {m: ratings.get(m, 1000.0) for m in models}
    return {
        (a, b): (u[a] + u[b]) * math.exp(-abs(r[a] - r[b]) / 400) for i, a in enumerate(models) for b in models[i + 1 :]
    }


def test_weights_follow_the_rule():
    got = weights(MODELS, BATTLES)
    want = rule(MODELS, BATTLES)
    assert got.keys() == want.keys() and len(got) == 6  # every unordered pair once, never (m, m)
    for pair in want:
        assert got[pair] == pytest.approx(want[pair], rel=1e-12)
    # What the rule means: the pair far apart with many battles weighs least, the two new-ish close ones most.
    assert min(got, key=got.get) == ("m1", "m2")
    assert got[("m3", "m4")] > got[("m1", "m2")] * 5


def test_no_battles_draws_uniformly_and_a_repeated_model_counts_once():
    got = weights(["a", "b", "c", "a"], [])
    assert list(got) == [("a", "b"), ("a", "c"), ("b", "c")]
    assert set(got.values()) == {2.0}  # u = 1 and no rating gap for everyone


def test_sampled_frequencies_match_the_weights():
    table = weights(MODELS, BATTLES)
    total = sum(table.values())
    rng = random.Random(7)
    n = 40_000
    drawn = Counter()
    left = Counter()
    for _ in range(n):
        a, b = draw_from(table, rng)
        assert a != b
        drawn[tuple(sorted((a, b)))] += 1
        left[a] += 1
    for pair, w in table.items():
        p = w / total
        sigma = math.sqrt(p * (1 - p) / n)
        assert abs(drawn[tuple(sorted(pair))] / n - p) < 5 * sigma, (pair, drawn, p)
    # The side is a coin: each drawn pair puts its first model left half the time.
    m1_pairs = sum(c for pair, c in drawn.items() if "m1" in pair)
    assert abs(left["m1"] / m1_pairs - 0.5) < 5 * math.sqrt(0.25 / m1_pairs)


def test_seeded_and_needs_two_models():
    assert draw_match(MODELS, BATTLES, 3) == draw_match(MODELS, BATTLES, 3)
    assert len({draw_match(MODELS, BATTLES, s) for s in range(30)}) > 3
    with pytest.raises(ValueError, match="two different models"):
        draw_match(["only", "only"], [], 0)
