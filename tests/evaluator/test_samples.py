"""K samples per item (issue 38): `run --samples K` stores a sample group of K runs against a scripted server, its
report's mean@K and pass@k equal the unbiased estimator and scipy's bootstrap computed here, an interrupted group
asks only what is missing when rerun, sample 0 is the plain run, and what cannot sample is refused in one line."""

from __future__ import annotations

import json
import math
import os
import random
import signal
import subprocess
import sys
import threading

import numpy as np
import pytest
from scipy import stats

from db import open_workspace, runs
from evaluator.analysis.intervals import RESAMPLES, pass_at_k
from evaluator.analysis.samples import pass_ks, right_of
from tests.factories import mmbench_rows, write_tsv
from tests.server_process import completion
from tests.servers import Step
from tests.sqlite_steps import counting_steps
from vlmdesk.cli import main

HEADER = ["index", "question", "hint", "A", "B", "C", "D", "answer", "category", "image", "source", "l2-category"]


def scipy_interval(values):
    """The percentile bootstrap interval scipy gives over these per-item values, seeded as vlmdesk seeds it."""
    ci = stats.bootstrap(
        (np.asarray(values, dtype=float),),
        np.mean,
        n_resamples=RESAMPLES,
        confidence_level=0.95,
        method="percentile",
        random_state=np.random.default_rng(0),
    ).confidence_interval
    return ci.low, ci.high


def written_out_pass_at(n: int, c: int, k: int) -> float:
    return 1 - math.comb(n - c, k) / math.comb(n, k)


# ---------------------------------------------------------------------------------------------------- the estimator


def test_pass_at_k_and_mean_at_k_equal_the_written_out_estimator_and_scipys_bootstrap():
    rng = random.Random(38)
    k = 6
    counts = {}
    for item in range(60):
        n = rng.choice([k, k, k, 4, 2, 1])  # some items with fewer samples (an interrupted sample)
        counts[item] = (n, rng.randint(0, n))
    figure = right_of(counts, "CircularEval", k)
    assert [p.k for p in figure.pass_at] == [1, 2, 4, 6] == list(pass_ks(6))
    shares = [c / n for n, c in counts.values()]
    assert figure.items == 60 and figure.mean == pytest.approx(sum(shares) / 60)
    assert (figure.interval.low, figure.interval.high) == pytest.approx(scipy_interval(shares))
    for p in figure.pass_at:
        per_item = [written_out_pass_at(n, c, p.k) for n, c in counts.values() if n >= p.k]
        assert p.items == len(per_item) and p.left_out == 60 - len(per_item)
        assert p.value == pytest.approx(sum(per_item) / len(per_item))
        assert (p.interval.low, p.interval.high) == pytest.approx(scipy_interval(per_item))
        assert all(pass_at_k(n, c, p.k) == pytest.approx(written_out_pass_at(n, c, p.k)) for n, c in counts.values()
                   if n >= p.k)  # fmt: skip
    assert figure.pass_at[0].value == pytest.approx(figure.mean)  # pass@1 is mean@K
    assert [p.left_out for p in figure.pass_at] == [0, sum(n < 2 for n, _ in counts.values()),
                                                   sum(n < 4 for n, _ in counts.values()),
                                                   sum(n < 6 for n, _ in counts.values())]  # fmt: skip


def test_pass_ks_are_powers_of_two_below_k_and_k():
    assert pass_ks(1) == (1,) and pass_ks(2) == (1, 2) and pass_ks(5) == (1, 2, 4, 5) and pass_ks(8) == (1, 2, 4, 8)


# ---------------------------------------------------------------------------------------------------- real runs


@pytest.fixture
def bench(tmp_path):
    rows = list(mmbench_rows(6, circular=False))
    path = write_tsv(tmp_path / "six.tsv", rows, header=HEADER)
    ws_path = tmp_path / "w.vlmdesk"
    assert main(["--workspace", str(ws_path), "import", str(path), "--name", "six"]) == 0
    return ws_path


class Sampler:
    """A scripted sampling server's answers: A or B drawn afresh for every request (both exist in every item), so
    samples differ; `down` answers 503; counts the answers given."""

    def __init__(self, seed: int = 0, *, down_after: int | None = None, delay: float = 0.0):
        self.rng, self.lock = random.Random(seed), threading.Lock()
        self.answered, self.down_after, self.delay = 0, down_after, delay

    def __call__(self, text: str) -> Step:
        with self.lock:
            if self.down_after is not None and self.answered >= self.down_after:
                return Step(503, {"error": {"message": "overloaded"}})
            self.answered += 1
            return Step(200, completion(self.rng.choice("AB")), delay=self.delay)


def cli(capsys, ws_path, *args) -> tuple[int, str, str]:
    code = main(["--workspace", str(ws_path), *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def run_args(url: str, samples: int, *extra) -> list[str]:
    spec = f"openai:m@{url}?concurrency=1&retries=0&temperature=0.7"
    return ["run", "--bench", "six", "--model", spec, "--samples", str(samples), *extra]


def counted(ws_path) -> dict[str, dict[int, tuple[int, int]]]:
    """Each figure's (n_i, c_i) per item, counted here from the stored passes of every run (one group): CircularEval
    right iff every rotation is stored right, decided iff one is wrong or all are right; VanillaEval pass 0."""
    tallies: dict[str, dict[int, list[int]]] = {"CircularEval": {}, "VanillaEval": {}}
    with open_workspace(ws_path) as ws:
        options = {i: len(json.loads(o)) for i, o in ws.conn.execute("SELECT id, options FROM items")}
        for run in runs.list_runs(ws):
            by_item: dict[int, dict[int, bool]] = {}
            for p in runs.predictions_of(ws, run.id):
                by_item.setdefault(p.item_id, {})[p.pass_] = p.correct
            for item, marks in by_item.items():
                v = tallies["VanillaEval"].setdefault(item, [0, 0])
                v[0], v[1] = v[0] + 1, v[1] + bool(marks[0])
                all_right = len(marks) == options[item] and all(marks.values())
                if all_right or not all(marks.values()):
                    c = tallies["CircularEval"].setdefault(item, [0, 0])
                    c[0], c[1] = c[0] + 1, c[1] + all_right
    return {name: {i: (n, c) for i, (n, c) in t.items()} for name, t in tallies.items()}


def stored_passes(ws_path) -> int:
    with open_workspace(ws_path) as ws:
        return ws.conn.execute("SELECT count(*) FROM predictions").fetchone()[0]


def test_a_run_of_three_samples_stores_three_runs_and_reports_their_figures(serve, bench, capsys, monkeypatch):
    import evaluator.engine.launch as launch

    seeds = []
    opened = launch.open_backend
    monkeypatch.setattr(
        launch, "open_backend", lambda *a, seed, **kw: seeds.append(seed) or opened(*a, seed=seed, **kw)
    )
    sampler = Sampler()
    server = serve(respond=sampler)
    code, out, err = cli(capsys, bench, *run_args(server.url, 3, "--seed", "5", "--json"))
    assert code == 0, err
    got = json.loads(out.strip().splitlines()[-1])
    assert got["run_id"] == got["run_ids"][0] and len(set(got["run_ids"])) == 3
    assert seeds == [5]  # one backend for the group (a local model, a started server: loaded once), reseeded
    with open_workspace(bench) as ws:
        stored = {r.id: r for r in runs.list_runs(ws)}
        assert set(stored) == set(got["run_ids"]) and all(r.status == "finished" for r in stored.values())
        first = stored[got["run_ids"][0]]
        assert "sample" not in first.config and "sample_of" not in first.config  # sample 0 is the plain run
        for s, run_id in enumerate(got["run_ids"][1:], 1):
            run = stored[run_id]
            assert run.config["sample"] == s and run.config["sample_of"] == first.config_key and run.seed == 5
        assert list(runs.sample_group(ws, first.config_key)) == [0, 1, 2]
    assert sampler.answered == stored_passes(bench)
    # Samples differ (A or B drawn per request): not every sample gave the same answers.
    with open_workspace(bench) as ws:
        answers = [tuple(p.response for p in runs.predictions_of(ws, r)) for r in got["run_ids"]]
    assert len(set(answers)) > 1

    expected = counted(bench)
    for run_id in got["run_ids"]:  # every sample's report shows the group's figures
        code, out, err = cli(capsys, bench, "report", run_id, "--json")
        assert code == 0, err
        samples = json.loads(out)["samples"]
        assert samples["k"] == 3 and samples["run_ids"] == got["run_ids"] and samples["finished"] == 3
        figures = {f["name"]: f for f in samples["figures"]}
        assert list(figures) == ["CircularEval", "VanillaEval"]
        for name, counts in expected.items():
            f = figures[name]
            shares = [c / n for n, c in counts.values()]
            assert f["items"] == len(counts) and f["mean"] == pytest.approx(sum(shares) / len(shares))
            assert (f["interval"]["low"], f["interval"]["high"]) == pytest.approx(scipy_interval(shares))
            for p in f["pass_at"]:
                per_item = [written_out_pass_at(n, c, p["k"]) for n, c in counts.values() if n >= p["k"]]
                assert p["value"] == pytest.approx(sum(per_item) / len(per_item)), (name, p)
    code, out, _ = cli(capsys, bench, "report", got["run_ids"][1])
    line = next(x for x in out.splitlines() if x.startswith("samples: K=3"))
    assert f"runs {', '.join(map(str, got['run_ids']))}; 3 finished" in line and "bootstrap over items" in line
    assert any(x.strip().startswith("CircularEval: mean@3 ") and "pass@2" in x for x in out.splitlines())
    code, out, _ = cli(capsys, bench, "runs")
    assert f"run {got['run_ids'][2]}: sample 2 · " in out and f"run {got['run_ids'][0]}: sample" not in out

    # Rerun: every sample is finished, nothing is asked.
    before = len(server.requests)
    code, out, err = cli(capsys, bench, *run_args(server.url, 3, "--seed", "5"))
    assert code == 0 and len(server.requests) == before and err.count("already finished") == 3
    assert out.split() == list(map(str, got["run_ids"]))


def test_an_interrupted_group_asks_only_the_missing_passes_when_rerun(serve, bench, capsys):
    sampler = Sampler(1, down_after=9)  # a few passes into sample 0 or 1, the server goes down
    server = serve(respond=sampler)
    code, out, err = cli(capsys, bench, *run_args(server.url, 3, "--json"))
    assert code != 0 and "interrupted" in err and "rerun the same command" in err, err
    assert stored_passes(bench) == 9
    sampler.down_after = None
    code, out, err = cli(capsys, bench, *run_args(server.url, 3, "--json"))
    assert code == 0, err
    assert sampler.answered == stored_passes(bench)  # every answer given was stored once: nothing asked twice
    with open_workspace(bench) as ws:
        assert [r.status for r in runs.list_runs(ws)] == ["finished"] * 3
        keys = {(p.run_id, p.item_id, p.pass_) for r in runs.list_runs(ws) for p in runs.predictions_of(ws, r.id)}
    assert len(keys) == stored_passes(bench)


def test_sample_0_is_the_plain_run_so_two_samples_after_it_ask_only_sample_1(serve, bench, capsys):
    sampler = Sampler(2)
    server = serve(respond=sampler)
    spec = f"openai:m@{server.url}?concurrency=1&retries=0&temperature=0.7"
    code, out, err = cli(capsys, bench, "run", "--bench", "six", "--model", spec, "--json")
    assert code == 0, err
    plain = json.loads(out)["run_id"]
    plain_passes = sampler.answered
    code, out, err = cli(capsys, bench, *run_args(server.url, 2, "--json"))
    assert code == 0, err
    got = json.loads(out)
    assert got["run_ids"][0] == plain and f"run {plain} (sample 0 of 2) already finished" in err
    with open_workspace(bench) as ws:
        assert sampler.answered - plain_passes == runs.get_run(ws, got["run_ids"][1]).predictions
        assert len(runs.list_runs(ws)) == 2
    # The plain run's report now shows its group; a report of a run without siblings shows none.
    code, out, _ = cli(capsys, bench, "report", plain, "--json")
    assert json.loads(out)["samples"]["k"] == 2


@pytest.mark.parametrize(
    ("spec_tail", "extra", "message"),
    [
        ("", (), "--samples 3 needs sampling: add ?temperature=0.7 to the model spec (greedy decoding gives the same "
                 "answer 3 times)"),
        ("&temperature=0", (), "--samples 3 needs sampling"),
        ("&temperature=0.7&seed=7", (), "--samples 3: the spec's seed=7 makes every sample the same"),
        ("&temperature=0.7", ("--new",), "--new with --samples"),
        ("&temperature=0.7", ("--resume", "1"), "--resume continues one stored run"),
    ],
)  # fmt: skip
def test_what_cannot_sample_is_refused_in_one_line_and_nothing_is_stored(serve, bench, capsys, spec_tail, extra,
                                                                         message):  # fmt: skip
    server = serve(respond=Sampler())
    spec = f"openai:m@{server.url}?concurrency=1{spec_tail}"
    code, out, err = cli(capsys, bench, "run", "--bench", "six", "--model", spec, "--samples", "3", *extra)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert server.requests == []
    with open_workspace(bench) as ws:
        assert runs.list_runs(ws) == []


def test_likelihood_mode_is_refused_with_samples(bench, capsys):
    code, _, err = cli(capsys, bench, "run", "--bench", "six", "--model", "baseline:random", "--likelihood",
                       "--samples", "2")  # fmt: skip
    assert code == 2 and "likelihood mode scores the options" in err and len(err.strip().splitlines()) == 1
    with open_workspace(bench) as ws:
        assert runs.list_runs(ws) == []


def test_a_stored_sample_number_out_of_range_is_named():
    problems = runs.config_problems({"sample": runs.SAMPLES_MAX, "sample_of": "x"})
    assert problems == [
        f"config.sample: '{runs.SAMPLES_MAX}' is not a sample number in 0..{runs.SAMPLES_MAX - 1}",
        "config.sample_of: 'x' is not a run's config key",
    ]


def test_a_sigterm_stops_the_group_at_once_and_the_rerun_asks_only_what_is_missing(serve, bench, capsys):
    sampler = Sampler(3, delay=0.02)
    server = serve(respond=sampler)
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    cmd = [sys.executable, "-m", "vlmdesk", "--workspace", str(bench), *run_args(server.url, 3, "--json-progress")]
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    events = []
    assert child.stdout is not None
    for line in child.stdout:
        events.append(json.loads(line))
        if events[-1]["event"] == "progress" and sum(e["event"] == "done" for e in events) == 1:
            child.send_signal(signal.SIGTERM)  # sample 0 done, sample 1 under way
            break
    rest, err = child.communicate(timeout=60)
    assert child.returncode == 130, err
    events += [json.loads(line) for line in rest.splitlines()]
    started = [e["run_id"] for e in events if e["event"] == "start"]
    assert len(started) == 2 and [e["event"] for e in events].count("done") == 1  # sample 1 never said done
    with open_workspace(bench) as ws:
        states = [r.status for r in runs.list_runs(ws)]
    assert states == ["finished", "interrupted"]  # stopped at once: sample 2 never started
    stored = stored_passes(bench)
    before = len(server.requests)
    code, out, err = cli(capsys, bench, *run_args(server.url, 3, "--json"))
    assert code == 0, err
    assert len(server.requests) - before == stored_passes(bench) - stored  # the rerun asked only what was missing
    assert json.loads(out)["run_ids"][:2] == started


# ---------------------------------------------------------------------------------------------------- what it costs


def test_finding_a_group_costs_the_same_whatever_else_is_stored(bench):
    """A group's lookup (and a plain run's: no siblings) is O(K) index seeks: the same SQLite work beside 10 or 400
    other runs, sample runs of other groups among them."""
    steps = {}
    with open_workspace(bench) as ws:
        bench_id = ws.conn.execute("SELECT id FROM benchmarks").fetchone()[0]

        def create(key: str, config: dict) -> int:
            return runs.create_run(
                ws, benchmark_id=bench_id, model_spec="m", strategy="circular", prompt_template="{}",
                extractor="rules", config=config, config_key=key, versions={}, git_revision=None, seed=0,
            )  # fmt: skip

        group = "f" * 64
        ids = [create(group, {})] + [create(f"{s:064x}", {"sample": s, "sample_of": group}) for s in (1, 2, 3)]
        made = 0
        for others in (10, 400):
            for n in range(made, others):
                key = f"{n + 100:064x}"
                create(key, {})
                create(f"{n + 10**6:064x}", {"sample": 1, "sample_of": key})
            made = others
            with counting_steps(ws.conn, every=10) as counted:
                found = runs.sample_group(ws, group)
                alone = runs.sample_group(ws, "e" * 64)
            steps[others] = counted.count
            assert [r.id for r in found.values()] == ids and list(found) == [0, 1, 2, 3] and alone == {}
    assert steps[400] <= 1.1 * steps[10] + 2, steps


def test_the_groups_one_backend_takes_each_samples_seed_through_its_wrappers():
    """A sample group loads its backend once (SharedBackend) and gives sample s the run's seed + s: reseed reaches the
    backend that samples with it through the door that wraps it."""
    from evaluator.backends import load_backend
    from evaluator.backends.base import reseed

    backend = load_backend("baseline:random", seed=5)
    assert backend.describe()["seed"] == 5
    reseed(backend, 7)
    assert backend.describe()["seed"] == 7
