"""The open study end to end on the demo (issue 25): a tiny model and the baseline answer demo-open, with a third run
of answers written for the test (the first k words of a reference, so people and metrics have something to tell
apart); the open metrics and an LLM judge (the scripted OpenAI-compatible server, asked through `vlmdesk judge`)
score them; two annotators judge every answer blind; `vlmdesk align open` reports each metric's agreement, and every
figure equals scikit-learn / scipy / krippendorff computed here independently."""

from __future__ import annotations

import json
import math
import re

import krippendorff
import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score

from annotation import open_verdicts as ov
from db import catalog, open_workspace, runs
from evaluator.scoring.open_metrics import item_scores
from vlmdesk.cli import main
from vlmdesk.demo import ensure_demo

RESAMPLES, SEED = 400, 7


def cli(capsys, ws_path, *args):
    code = main(["--workspace", str(ws_path), *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


def _overlap(answer: str, references) -> float:
    ref = set().union(*(_words(r) for r in references)) if references else set()
    return len(_words(answer) & ref) / max(len(ref), 1)


def judge_reply(prompt: str) -> str:
    """The scripted judge: right when the answer covers a third of the references' words, partly from a tenth."""
    refs = re.search(r"\[Reference answers\]\n(.*?)\n\n", prompt, re.S).group(1).splitlines()
    answer = prompt.rsplit("[Model's answer]\n", 1)[1]
    share = _overlap(answer, [r.removeprefix("- ") for r in refs])
    verdict = "right" if share >= 0.33 else "partly" if share >= 0.1 else "wrong"
    return f"[Reason] {share:.2f} of the reference words.\n[Verdict] {verdict}"


def _written_run(ws) -> int:
    """Answers made of the first k words of each item's reference, k growing with the item: right to wrong."""
    bench = catalog.benchmark_by_name(ws, "demo-open")
    run_id = runs.create_run(
        ws,
        benchmark_id=bench.id,
        model_spec="written:prefix",
        strategy="open",
        prompt_template="{}",
        extractor="rules",
        config={},
        config_key="written-prefix",
        versions={},
        git_revision=None,
        seed=0,
    )
    preds = []
    for n, item in enumerate(catalog.list_items(ws, bench.id)):
        words = item.references[0].split()
        answer = " ".join(words[: [1, 3, 6, 30][n % 4]])
        preds.append(runs.Prediction(run_id, item.id, 0, (), item.question, answer, None, None, "open", None, None, 1))
    runs.add_predictions(ws, preds)
    ws.conn.execute("UPDATE runs SET status = 'finished' WHERE id = ?", (run_id,))
    ws.conn.commit()
    return run_id


def _annotate(ws, run_ids, who: str, right_from: float, partly_from: float) -> None:
    """Walk the queue blind (next_task shows no model and no score) and judge by word overlap with the references."""
    after = None
    while (task := ov.next_task(ws, run_ids, who, after_item=after)) is not None:
        share = _overlap(task.answer, task.item.references)
        verdict = "right" if share >= right_from else "partly" if share >= partly_from else "wrong"
        ov.add_verdict(ws, *task.unit, who, verdict)
        after = task.item.id


def _wilson(k: int, n: int, z: float = 1.959963984540054):
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def test_the_open_study_on_the_demo(tmp_path, capsys, tiny_llava_dir, serve):
    path = tmp_path / "study.sqlite"
    with open_workspace(path) as ws:
        ensure_demo(ws)
    for model in (f"hf:{tiny_llava_dir}", "baseline:first"):
        code, _, err = cli(capsys, path, "run", "--bench", "demo-open", "--model", model, "--max-new-tokens", "12")
        assert code == 0, err
    with open_workspace(path) as ws:
        written = _written_run(ws)
    run_ids = [1, 2, written]
    server = serve(respond=judge_reply)
    for run_id in run_ids:
        code, _, err = cli(capsys, path, "judge", str(run_id), "--judge", f"openai:judge@{server.url}?retries=0")
        assert code == 0, err
    with open_workspace(path) as ws:
        _annotate(ws, run_ids, "ana", 0.3, 0.08)
        _annotate(ws, run_ids, "bo", 0.4, 0.05)
        scores = {r: item_scores(ws, r) for r in run_ids}
        verdicts = ov.standing_verdicts(ws, run_ids)
    # every metric that applies to one reference an item (vqa_accuracy needs four or more)
    assert {"exact_match", "word_match", "anls", "cider", "judge"} <= set(scores[written])
    assert "vqa_accuracy" not in scores[written]
    code, out, err = cli(
        capsys, path, "align", "open", "--bench", "demo-open", "--runs", ",".join(map(str, run_ids)),
        "--bootstrap", str(RESAMPLES), "--seed", str(SEED), "--json",
    )  # fmt: skip
    assert code == 0, err
    report = json.loads(out)
    assert report["answers"] == report["judged"] == 24 and report["progress"] == {"ana": 24, "bo": 24}

    # The human label, recomputed: two annotators, no adjudication — agreeing verdicts stand, a split is a tie.
    human = {u: v["ana"] for u, v in sorted(verdicts.items()) if v["ana"] == v["bo"]}
    assert report["ties"] == 24 - len(human) and sum(report["labels"].values()) == len(human)
    assert len(set(human.values())) >= 2  # people told answers apart: the figures below are defined
    checked = 0
    for name, got in report["metrics"].items():
        units = [u for u in human if u[1] in scores[u[0]].get(name, {})]
        values = [scores[u[0]][name][u[1]] for u in units]
        truth = [human[u] == "right" for u in units]
        assert got["n"] == len(units)
        candidates = [*sorted(set(values)), math.inf]  # inf: no answer counts as right (threshold null)
        accuracy = {t: sum((v >= t) == r for v, r in zip(values, truth)) for t in candidates}
        best = max(accuracy.values())
        chosen = min(t for t, hits in accuracy.items() if hits == best)
        assert got["threshold"] == (None if chosen == math.inf else chosen)
        assert got["accuracy"] == pytest.approx(best / len(units))
        assert got["wilson_95"] == pytest.approx(list(_wilson(best, len(units))))
        said = [v >= chosen for v in values]
        if len(set(truth) | set(said)) > 1:
            assert got["cohen_kappa"] == pytest.approx(cohen_kappa_score(truth, said), abs=1e-12)
            idx = np.random.default_rng(SEED).integers(0, len(units), size=(RESAMPLES, len(units)))
            kappas = [
                cohen_kappa_score([truth[i] for i in row], [said[i] for i in row])
                for row in idx
                if len({truth[i] for i in row} | {said[i] for i in row}) > 1
            ]
            assert got["kappa_95"] == pytest.approx(list(np.percentile(kappas, [2.5, 97.5])), abs=1e-9)
            checked += 1
        ranks = [{"wrong": 0, "partly": 1, "right": 2}[human[u]] for u in units]
        if len(set(values)) > 1:
            assert got["spearman"] == pytest.approx(spearmanr(values, ranks).statistic, abs=1e-12)
    assert checked >= 3  # κ and its interval held for at least three metrics (the judge among the scored ones)
    both = sorted(verdicts)
    a = [verdicts[u]["ana"] for u in both]
    b = [verdicts[u]["bo"] for u in both]
    assert report["annotators"]["cohen_kappa"] == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    codes = {"partly": 0, "right": 1, "wrong": 2}
    data = np.array([[codes[x] for x in a], [codes[x] for x in b]], dtype=float)
    alpha = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    assert report["annotators"]["krippendorff_alpha"] == pytest.approx(alpha, abs=1e-12)
