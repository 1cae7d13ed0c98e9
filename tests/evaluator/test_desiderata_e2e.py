"""The six desiderata end to end: real runs of the tiny random-weight LLaVA through `vlmdesk run` on the demo
(one workspace, every run once), then `vlmdesk desiderata --json` checked against a recount from what was stored."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
from PIL import Image

from db import catalog, judgements, open_workspace, runs
from evaluator.analysis.desiderata_metrics import confidence_of, ece, random_accuracy, riam, rr, rrm
from evaluator.engine.corruptions import corrupt_image_bytes
from evaluator.engine.variants import ShotPicker
from evaluator.scoring.choices import LETTERS
from tests.servers import transformers_serve
from vlmdesk.cli import main
from vlmdesk.demo import ensure_demo

LIMIT = 8
BOTH = ["--corrupt", "image:gaussian_noise:3", "--corrupt", "text:mild_mix"]
# Likelihood runs always choose an option, so the tiny model's accuracies are not all zero; the plain run is also
# the calibration run. The chain-of-thought run generates.
RUNS = {
    "plain": ["--likelihood"],
    "mapped": ["--likelihood", "--label-map", "natural:0"],
    "image": ["--likelihood", "--corrupt", "image:gaussian_noise:3"],
    "text": ["--likelihood", "--corrupt", "text:mild_mix"],
    "both": ["--likelihood", *BOTH],
    "both_again": ["--likelihood", *BOTH, "--new"],
    "shots1": ["--likelihood", "--shots", "1"],
    "shots2": ["--likelihood", "--shots", "2"],
    "shots3": ["--likelihood", "--shots", "3"],
    "cot": ["--cot", "--max-new-tokens", "12"],
}


def cli(capsys, *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().out


@pytest.fixture(scope="module")
def demo_runs(tiny_llava_dir, tmp_path_factory):
    """A demo workspace with one run of each kind (VanillaEval, 8 items, short answers), run ids by name."""
    ws_path = tmp_path_factory.mktemp("desiderata_e2e") / "ws.sqlite"
    with open_workspace(ws_path) as ws:
        ensure_demo(ws)
    ids: dict[str, int] = {}
    common = ["--model", f"hf:{tiny_llava_dir}", "--strategy", "vanilla", "--limit", str(LIMIT), "--batch-size", "8"]
    common += ["--max-new-tokens", "3"]
    out = tmp_path_factory.mktemp("out") / "run.json"
    for name, extra in [*RUNS.items(), ("pope", None)]:
        bench = ["--bench", "demo-pope", "--model", f"hf:{tiny_llava_dir}", "--limit", str(LIMIT), "--batch-size", "8"]
        args = ["--bench", "demo", *common, *extra] if extra is not None else [*bench, "--max-new-tokens", "3"]
        with open(out, "w") as f, contextlib.redirect_stdout(f):
            assert main(["--workspace", str(ws_path), "run", *args, "--json"]) == 0, name
        ids[name] = json.loads(out.read_text().strip().splitlines()[-1])["run_id"]
    return ws_path, ids


def _report(capsys, ws_path, *run_ids: int) -> dict:
    code, out = cli(capsys, "--workspace", str(ws_path), "desiderata", *map(str, run_ids), "--json")
    assert code == 0
    (model,) = json.loads(out)["models"]
    return model


def _pass0(ws_path, run_id: int) -> dict[int, runs.Prediction]:
    with open_workspace(ws_path) as ws:
        return {p.item_id: p for p in runs.predictions_of(ws, run_id) if p.pass_ == 0}


def _same(found: float | None, expected: float | None) -> bool:
    return found is None and expected is None or (found is not None and found == pytest.approx(expected))


def _accuracy(passes: dict[int, runs.Prediction], items) -> float:
    return sum(passes[i].correct is True for i in items) / len(items)


def test_calibration_from_stored_option_scores(demo_runs, capsys):
    ws_path, ids = demo_runs
    preds = _pass0(ws_path, ids["plain"])
    assert len(preds) == LIMIT
    for p in preds.values():  # one log-likelihood per option shown, the choice their argmax
        assert p.scores is not None and len(p.scores) == len(p.option_order)
        assert LETTERS[max(range(len(p.scores)), key=lambda i: p.scores[i])] == p.choice
    # The documented rule, by hand: softmax over the options, confidence = the max, 10 equal-count bins.
    confidences = []
    for p in preds.values():
        top = max(p.scores)
        weights = [2.718281828459045 ** (s - top) for s in p.scores]
        confidences.append(max(weights) / sum(weights))
    correct = [p.correct is True for p in preds.values()]
    assert [round(c, 9) for c in confidences] == [round(confidence_of(p.scores)[0], 9) for p in preds.values()]
    cal = _report(capsys, ws_path, ids["plain"])["calibration"]
    assert cal["runs"] == [ids["plain"]] and cal["entries"][0]["n"] == LIMIT
    assert cal["value"] == pytest.approx(ece(confidences, correct).ece)
    assert cal["entries"][0]["ece_equal_width"] == pytest.approx(ece(confidences, correct, binning="equal-width").ece)
    # Equal-count bins of 8 items into 10: eight bins of one item, sorted by confidence.
    assert [b["count"] for b in cal["entries"][0]["bins"] if b["count"]] == [1] * LIMIT


def test_match_ratio_and_accuracy_of_a_label_map_are_a_recount(demo_runs, capsys):
    ws_path, ids = demo_runs
    plain, mapped = _pass0(ws_path, ids["plain"]), _pass0(ws_path, ids["mapped"])
    assert all(p.choice is None or p.choice in LETTERS for p in mapped.values())  # standard letters, never "1"
    assert all("you need to output" in p.prompt for p in mapped.values())
    common = [i for i in plain if i in mapped]
    assert len(common) == LIMIT and all(p.choice is not None for p in [*plain.values(), *mapped.values()])
    original = {
        n: {i: p.option_order[LETTERS.index(p.choice)] for i, p in r.items()}
        for n, r in (("plain", plain), ("mapped", mapped))
    }
    expected_mr = sum(original["plain"][i] == original["mapped"][i] for i in common) / len(common)
    model = _report(capsys, ws_path, ids["plain"], ids["mapped"])
    dim = model["instruction_following"]
    assert dim["runs"] == sorted([ids["plain"], ids["mapped"]])
    assert dim["value"] == pytest.approx(expected_mr)
    assert dim["accuracy"] == pytest.approx(_accuracy(mapped, sorted(set(plain) & set(mapped))))
    # The commands for the missing maps copy the plain run's settings, so they would be comparable.
    commands = [m["command"] for m in dim["missing"]]
    assert commands and all(
        "--strategy vanilla --limit 8 --max-new-tokens 3 --likelihood --label-map" in c for c in commands
    )


def test_robustness_is_a_recount_and_corruption_is_deterministic(demo_runs, capsys):
    ws_path, ids = demo_runs
    plain = _pass0(ws_path, ids["plain"])
    model = _report(capsys, ws_path, ids["plain"], ids["image"], ids["text"], ids["both"])
    by_run = {e["run_id"]: e for e in model["robustness"]["entries"]}
    with open_workspace(ws_path) as ws:
        items = {i.id: i for i in catalog.list_items(ws, catalog.benchmark_by_name(ws, "demo").id)}
    for kind in ("image", "text", "both"):
        corrupted = _pass0(ws_path, ids[kind])
        common = sorted(set(plain) & set(corrupted))
        acc_o, acc_c = _accuracy(plain, common), _accuracy(corrupted, common)
        acc_r = random_accuracy([len(items[i].options) for i in common])
        entry = by_run[ids[kind]]
        assert (entry["kind"], entry["plain_run_id"], entry["items"]) == (kind, ids["plain"], LIMIT)
        assert entry["accuracy"] == pytest.approx(acc_c) and entry["plain_accuracy"] == pytest.approx(acc_o)
        assert _same(entry["rrm"], rrm(acc_o, acc_c, acc_r)) and _same(entry["rr"], rr(acc_o, acc_c))
        changed = [corrupted[i].prompt != plain[i].prompt for i in common]
        assert any(changed) if kind != "image" else not any(changed)  # the text kinds corrupt the question
        # The corruption reached the model: every kind moves the stored option scores.
        assert any(corrupted[i].scores != plain[i].scores for i in common), kind
    # The same settings again (--new): the same corrupted prompts and the same answers.
    first, again = _pass0(ws_path, ids["both"]), _pass0(ws_path, ids["both_again"])
    assert ids["both"] != ids["both_again"]
    assert {i: (p.prompt, p.scores, p.choice) for i, p in first.items()} == {
        i: (p.prompt, p.scores, p.choice) for i, p in again.items()
    }
    # The image a pass is shown: corrupted, the same for the seed, the size kept.
    with open_workspace(ws_path) as ws:
        item = items[next(iter(plain))]
        original = catalog.image_bytes(ws, item.image_sha256)[0]
    one = corrupt_image_bytes(original, (("gaussian_noise", 3),), 7)
    assert one == corrupt_image_bytes(original, (("gaussian_noise", 3),), 7) != original
    assert Image.open(io.BytesIO(one)).size == Image.open(io.BytesIO(original)).size


def test_riam_is_a_recount_and_no_shot_leaks_the_answer(demo_runs, capsys):
    ws_path, ids = demo_runs
    plain = _pass0(ws_path, ids["plain"])
    shots = {k: _pass0(ws_path, ids[f"shots{k}"]) for k in (1, 2, 3)}
    model = _report(capsys, ws_path, ids["plain"], *(ids[f"shots{k}"] for k in (1, 2, 3)))
    (entry,) = model["in_context_learning"]["entries"]
    common = sorted(set(plain).intersection(*shots.values()))
    with open_workspace(ws_path) as ws:
        bench = catalog.benchmark_by_name(ws, "demo")
        pool = catalog.list_items(ws, bench.id)
    items = {i.id: i for i in pool}
    acc0 = _accuracy(plain, common)
    accs = [_accuracy(shots[k], common) for k in (1, 2, 3)]
    acc_r = random_accuracy([len(items[i].options) for i in common])
    assert entry["runs"] == {str(k): ids[f"shots{k}"] for k in (1, 2, 3)} and entry["items"] == LIMIT
    assert entry["acc0"] == pytest.approx(acc0) and entry["accuracy"] == pytest.approx(dict(zip("123", accs)))
    assert _same(entry["riam"], riam(acc0, accs, acc_r))
    # The stored prompts hold exactly the picker's examples, in order, each with its key, none a leak.
    for k, passes in shots.items():
        picker = ShotPicker(pool, k, "random", 0)
        for item_id, p in passes.items():
            item = items[item_id]
            examples = picker.pick(item)
            assert len(examples) == k
            head, question = p.prompt.rsplit("Now answer this question", 1)
            assert item.question in question
            for n, example in enumerate(examples, 1):
                assert f"Example {n} (image {n}):" in head and f"Answer: {example.answer}" in head
                assert example.question in head
                assert example.id != item.id and example.image_sha256 != item.image_sha256
                assert (example.question, sorted(example.options)) != (item.question, sorted(item.options))
            # No other item that shows this image (or asks this question) appears among the examples.
            for other in pool:
                if other.id != item.id and other.image_sha256 == item.image_sha256:
                    assert other not in examples


def test_language_of_a_cot_run_judged_through_transformers_serve(demo_runs, tiny_text_lm_dir, tmp_path, capsys):
    ws_path, ids = demo_runs
    cot = _pass0(ws_path, ids["cot"])
    assert all("Think step by step" in p.prompt for p in cot.values())
    with transformers_serve(tiny_text_lm_dir, tmp_path) as server:
        base_url, model = server.running()
        judge = f"openai:{model}@{base_url}?concurrency=4&retries=0&timeout=120"
        code, out = cli(
            capsys,
            "--workspace",
            str(ws_path),
            "desiderata",
            "language",
            str(ids["cot"]),
            "--judge",
            judge,
            "--max-new-tokens",
            "8",
            "--json",
        )
    found = json.loads(out)
    with open_workspace(ws_path) as ws:
        stored = judgements.judgements_of(ws, ids["cot"], judge)
        passes = [p for p in runs.predictions_of(ws, ids["cot"]) if p.response]
    assert code == 0 and len(stored) == len(passes) == found["passes_judged"] and found["passes_left"] == 0
    # A random-weight judge: whatever it scored is what it wrote; every other pass is missing after 3 attempts.
    scored = [j for j in stored if j.score is not None]
    missing = [j for j in stored if j.score is None]
    assert found["passes_missing"] == len(missing) and all(j.attempts == 3 for j in missing)
    assert found["calls"] == sum(j.attempts for j in stored)
    assert all("Overall Score" in j.raw and 0 <= j.score <= 10 for j in scored)
    per_item: dict[int, list[float]] = {}
    for j in scored:
        per_item.setdefault(j.item_id, []).append(j.score)
    assert found["items_scored"] == len(per_item)
    means = [sum(v) / len(v) for v in per_item.values()]
    assert found["score"] == (pytest.approx(sum(means) / len(means)) if means else None)
    lang = _report(capsys, ws_path, ids["cot"])["language"]
    assert lang["value"] == found["score"] and (lang["runs"] == [ids["cot"]])


def test_hallucination_of_a_pope_run_and_the_radar(demo_runs, capsys, tmp_path):
    ws_path, ids = demo_runs
    model = _report(capsys, ws_path, *ids.values())
    pope = model["hallucination"]
    (entry,) = pope["entries"]
    assert pope["runs"] == [ids["pope"]] and entry["answered"] <= LIMIT
    assert set(entry["pope"]) == {"official", "strict"}
    official, strict = entry["pope"]["official"], entry["pope"]["strict"]
    assert pope["value"] == pytest.approx(official["accuracy"]) and pope["f1"] == official["f1"]
    assert official["accuracy"] == pytest.approx((official["tp"] + official["tn"]) / official["questions"])
    # The strict parser's reading is the stored choice: its unknowns are the undecided passes.
    stored = _pass0(ws_path, ids["pope"])
    assert strict["unknown"] == sum(p.choice is None for p in stored.values()) and strict["questions"] == LIMIT
    for dim in ("calibration", "instruction_following", "robustness", "in_context_learning", "hallucination"):
        assert model[dim]["runs"], dim
    for figure in ("radar", "reliability", "robustness"):
        png = tmp_path / f"{figure}.png"
        args = ["--workspace", str(ws_path), "desiderata", *map(str, ids.values()), "--figure", figure]
        assert cli(capsys, *args, "--plot", str(png))[0] == 0 and png.stat().st_size > 5000
