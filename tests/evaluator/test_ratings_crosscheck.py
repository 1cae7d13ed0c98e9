"""evaluator/analysis/ratings.py against independent scorers written here the way Chatbot Arena writes them
(lm-sys/FastChat fastchat/serve/monitor/elo_analysis.py): `compute_mle_elo` as scikit-learn's unpenalised logistic
regression on the pairwise win table (a win weighs 2, a tie 1 each way), `compute_elo` battle by battle."""

import math
import random
from collections import defaultdict

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from evaluator.analysis.ratings import Battle, bootstrap, bradley_terry, leaderboard, online_elo

SCALE, BASE, INIT = 400, 10, 1000


def fastchat_mle_elo(battles: list[Battle], tol: float = 1e-10) -> dict[str, float]:
    models = sorted({m for b in battles for m in (b.model_a, b.model_b)})
    index = {m: i for i, m in enumerate(models)}
    win = np.zeros((len(models), len(models)))  # win[i, j]: i's wins over j, a win counted twice and a tie once
    for b in battles:
        a, c = index[b.model_a], index[b.model_b]
        if b.winner == "model_a":
            win[a, c] += 2
        elif b.winner == "model_b":
            win[c, a] += 2
        else:
            win[a, c] += 1
            win[c, a] += 1
    x, y, weight = [], [], []
    for i in range(len(models)):
        for j in range(len(models)):
            if i == j or win[i, j] + win[j, i] == 0:
                continue
            row = np.zeros(len(models))
            row[i], row[j] = math.log(BASE), -math.log(BASE)
            x += [row, row]
            y += [1.0, 0.0]
            weight += [win[i, j], win[j, i]]
    lr = LogisticRegression(fit_intercept=False, C=np.inf, tol=tol, max_iter=10_000)
    lr.fit(np.array(x), np.array(y), sample_weight=np.array(weight))
    scores = SCALE * lr.coef_[0] + INIT
    return {m: float(scores[index[m]]) for m in models}


def fastchat_online_elo(battles: list[Battle], k: float = 4) -> dict[str, float]:
    rating: dict[str, float] = defaultdict(lambda: INIT)
    for b in battles:
        ra, rb = rating[b.model_a], rating[b.model_b]
        ea = 1 / (1 + BASE ** ((rb - ra) / SCALE))
        eb = 1 / (1 + BASE ** ((ra - rb) / SCALE))
        sa = {"model_a": 1.0, "model_b": 0.0, "tie": 0.5, "tie (bothbad)": 0.5}[b.winner]
        rating[b.model_a] += k * (sa - ea)
        rating[b.model_b] += k * (1 - sa - eb)
    return dict(rating)


def synthetic(n: int, seed: int) -> list[Battle]:
    strengths = {"alpha": 0.0, "beta": 0.2, "gamma": 0.35, "delta": 0.6, "eps": -0.3}
    rng = random.Random(seed)
    names = list(strengths)
    battles = []
    for _ in range(n):
        a, b = rng.sample(names, 2)
        p_a = 1 / (1 + 10 ** (strengths[b] - strengths[a]))
        u = rng.random()
        tie = rng.choice(["tie", "tie (bothbad)"])
        battles.append(Battle(a, b, tie if abs(u - p_a) < 0.08 else "model_a" if u < p_a else "model_b"))
    return battles


def differences(ratings: dict[str, float]) -> dict[str, float]:
    """Ratings less their mean: the likelihood only fixes differences, so anchorings may differ."""
    mean = sum(ratings.values()) / len(ratings)
    return {m: r - mean for m, r in ratings.items()}


@pytest.mark.parametrize("seed", [0, 1])
def test_bradley_terry_agrees_with_chatbot_arenas_logistic_regression(seed):
    battles = synthetic(2000, seed)
    ours, theirs = differences(bradley_terry(battles)), differences(fastchat_mle_elo(battles))
    assert ours.keys() == theirs.keys()
    for model in ours:
        assert ours[model] == pytest.approx(theirs[model], abs=1e-3)
    assert sum(bradley_terry(battles).values()) / 5 == pytest.approx(INIT)  # our anchoring: the mean is 1000


def test_online_elo_agrees_with_chatbot_arenas_compute_elo_in_the_recorded_order():
    battles = synthetic(3000, 5)
    ours, theirs = online_elo(battles), fastchat_online_elo(battles)
    for model in theirs:
        assert ours[model] == pytest.approx(theirs[model], abs=1e-9)
    # Another order gives other numbers, the same in both.
    shuffled = random.Random(1).sample(battles, len(battles))
    assert online_elo(shuffled)["delta"] == pytest.approx(fastchat_online_elo(shuffled)["delta"], abs=1e-9)
    assert online_elo(shuffled)["delta"] != pytest.approx(ours["delta"], abs=1e-3)


def test_bootstrap_is_percentiles_of_resampled_fits_with_linear_interpolation():
    # Chatbot Arena resamples the battles with replacement, refits, and takes pandas' quantile(0.025 / 0.975)
    # (linear interpolation). Refit each resample with the independent scorer and compare the spread: the
    # bootstraps draw differently, so their ends agree to sampling error, not to the digit.
    battles = synthetic(600, 2)
    ours = bootstrap(battles, rounds=100, seed=0)
    rng = np.random.default_rng(0)
    fits = []
    for _ in range(100):
        drawn = [battles[i] for i in rng.integers(0, len(battles), len(battles))]
        fits.append(differences(fastchat_mle_elo(drawn, tol=1e-6)))
    centre = sum(bradley_terry(battles).values()) / 5
    for model, (low, high) in ours.items():
        theirs = np.quantile([f[model] + centre for f in fits], [0.025, 0.975])
        assert low == pytest.approx(theirs[0], abs=25)
        assert high == pytest.approx(theirs[1], abs=25)


def test_rank_is_one_plus_the_models_whose_lower_bound_is_above_the_upper_bound():
    board = leaderboard(synthetic(1500, 3), rounds=100, seed=0)
    for m in board.models:
        assert m.rank == 1 + sum(1 for o in board.models if o.lower > m.upper)
    assert board.models[0].rank == 1
