"""Bradley–Terry, bootstrap intervals and online Elo on votes whose answers are known by hand."""

import random

import pytest

from evaluator.analysis.ratings import Battle, bootstrap, bradley_terry, leaderboard, online_elo, win_rates


def test_two_wins_one_loss_give_chatbot_arenas_numbers():
    # p(A beats B) = 2/3 = 1 / (1 + 10^(-(r_a - r_b))) -> r_a - r_b = log10(2); ratings 1000 ± 200·log10(2).
    battles = [Battle("A", "B", "model_a"), Battle("B", "A", "model_b"), Battle("A", "B", "model_b")]
    ratings = bradley_terry(battles)
    assert ratings["A"] == pytest.approx(1060.206, abs=1e-3)
    assert ratings["B"] == pytest.approx(939.794, abs=1e-3)


def test_a_tie_counts_half_whether_plain_or_both_bad():
    for tie in ("tie", "tie (bothbad)"):
        ratings = bradley_terry([Battle("A", "B", "model_a"), Battle("A", "B", tie)])
        assert ratings["A"] == pytest.approx(1095.424, abs=1e-3)
        assert ratings["B"] == pytest.approx(904.576, abs=1e-3)


def test_online_elo_depends_on_the_order_of_votes():
    win_then_tie = [Battle("A", "B", "model_a"), Battle("A", "B", "tie")]
    elo = online_elo(win_then_tie)
    assert elo["A"] == pytest.approx(1001.977, abs=1e-3)
    assert elo["B"] == pytest.approx(998.023, abs=1e-3)
    tie_then_win = online_elo(list(reversed(win_then_tie)))
    assert tie_then_win["A"] == pytest.approx(1002.0, abs=1e-3)  # the tie at equal ratings changes nothing
    assert tie_then_win["A"] != pytest.approx(elo["A"], abs=1e-3)
    # Bradley–Terry reads the same votes in any order.
    assert bradley_terry(list(reversed(win_then_tie)))["A"] == pytest.approx(bradley_terry(win_then_tie)["A"])


def test_bootstrap_interval_contains_the_estimate_and_is_seeded():
    rng = random.Random(1)
    battles = [Battle("A", "B", rng.choice(["model_a", "model_a", "model_b", "tie"])) for _ in range(60)]
    battles += [Battle("B", "C", rng.choice(["model_a", "model_b", "tie"])) for _ in range(60)]
    ratings = bradley_terry(battles)
    intervals = bootstrap(battles, rounds=200, seed=3)
    for model, (low, high) in intervals.items():
        assert low < ratings[model] < high
    assert bootstrap(battles, rounds=200, seed=3) == intervals
    assert bootstrap(battles, rounds=200, seed=4) != intervals


def test_synthetic_votes_from_known_strengths_recover_the_order():
    strengths = {"w": 0.0, "x": 0.25, "y": 0.5, "z": 0.9}  # log10 odds
    rng = random.Random(7)
    names = list(strengths)
    battles = []
    for _ in range(500):
        a, b = rng.sample(names, 2)
        p_a = 1 / (1 + 10 ** (strengths[b] - strengths[a]))
        u = rng.random()
        battles.append(Battle(a, b, "tie" if abs(u - p_a) < 0.05 else "model_a" if u < p_a else "model_b"))
    board = leaderboard(battles, rounds=100, seed=0)
    assert [m.model for m in board.models] == ["z", "y", "x", "w"]
    assert board.models[0].rank == 1
    assert board.models[-1].rank > 1  # the weakest is separated from the strongest
    for m in board.models:
        assert m.lower <= m.rating <= m.upper
        assert m.votes == m.wins + m.ties + m.losses
    assert sum(m.votes for m in board.models) == 2 * 500


def test_rank_counts_models_whose_interval_is_wholly_above():
    battles = [Battle("A", "B", "model_a")] * 30 + [Battle("A", "B", "model_b")] * 2
    battles += [Battle("B", "C", "model_a")] * 16 + [Battle("B", "C", "model_b")] * 15
    board = leaderboard(battles, rounds=100, seed=1)
    by = {m.model: m for m in board.models}
    assert by["A"].rank == 1
    for m in ("B", "C"):
        above = sum(1 for o in board.models if o.lower > by[m].upper)
        assert by[m].rank == 1 + above
    assert by["C"].rank >= 2
    js = board.to_json()
    assert set(js["models"][0]) == {
        "model",
        "rating",
        "lower",
        "upper",
        "rank",
        "votes",
        "wins",
        "ties",
        "losses",
        "elo",
    }


def test_win_rate_matrix_leaves_ties_out():
    battles = [Battle("A", "B", "model_a"), Battle("B", "A", "model_a"), Battle("A", "B", "tie")]
    models, matrix = win_rates(battles)
    assert models == ["A", "B"]
    assert matrix[0][1] == 0.5 and matrix[1][0] == 0.5
    assert matrix[0][0] is None


def test_a_battle_needs_two_models_and_a_known_winner():
    with pytest.raises(ValueError):
        Battle("A", "A", "model_a")
    with pytest.raises(ValueError):
        Battle("A", "B", "left")  # type: ignore[arg-type]
