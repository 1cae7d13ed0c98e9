"""ChEF's calibration score (`--likelihood-score chef`) through whole `vlmdesk run`s of a tiny VLM, held against
ChEF's computations (tests/chef_reference.py) on the model's own logits for the same prompt tokens."""

from __future__ import annotations

import json

import pytest
import torch

from db import catalog, open_workspace, runs
from evaluator.analysis.desiderata import desiderata_report
from evaluator.backends.base import Query, texts_of
from evaluator.backends.hf import HFBackend
from evaluator.scoring.choices import CHEF_ANSWER_LEAD, CHEF_ANSWER_QUERY, CHEF_COT_PROMPT, chef_candidates
from tests.chef_reference import compute_ece, ppl_confidence, ppl_score
from vlmdesk.cli import main
from vlmdesk.demo import ensure_demo

THOUGHT = 8  # new tokens of the chain of thought: enough for a random model to say something


@pytest.fixture
def demo_ws(tmp_path):
    path = tmp_path / "ws.sqlite"
    with open_workspace(path) as ws:
        ensure_demo(ws)
    return path


def _run(capsys, *args) -> int:
    assert main(list(args)) == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])["run_id"]


def chef_reference_scores(model, processor, prompt: str, image: bytes, lead: str, keys: str) -> list[float]:
    """Each candidate's score as ChEF computes it: the conversation, the model's turn (lead) and the candidate
    tokenized as one text; the candidate's tokens are its last ones; ppl_score over the model's log-softmax rows."""
    q = Query(prompt, (image,))
    content = [{"type": "image"}, {"type": "text", "text": prompt}]
    rendered = processor.apply_chat_template([{"role": "user", "content": content}], add_generation_prompt=True)
    tok = processor.tokenizer
    special = not rendered.startswith(tok.bos_token)
    scores = []
    for cand in chef_candidates(keys):
        text = rendered + lead + cand
        n = len(tok(text, add_special_tokens=special)["input_ids"]) - len(
            tok(rendered + lead, add_special_tokens=special)["input_ids"]
        )
        enc = processor(text=[text], images=[q.pil_images()], return_tensors="pt", add_special_tokens=special)
        with torch.inference_mode():
            rows = model(**enc).logits[0].float().log_softmax(-1)
        ids = enc["input_ids"][0].tolist()
        length = len(ids)
        scores.append(ppl_score(rows[length - n - 1 : length - 1].tolist(), ids[length - n :]))
    return scores


def test_a_chef_run_stores_chefs_scores_confidences_and_ece(tiny_llava_dir, demo_ws, capsys):
    common = ["--workspace", str(demo_ws), "run", "--bench", "demo", "--model", f"hf:{tiny_llava_dir}", "--limit", "4"]
    chef = ["--likelihood-score", "chef", "--strategy", "vanilla", "--max-new-tokens", str(THOUGHT), "--json"]
    run_id = _run(capsys, *common, *chef, "--batch-size", "3")
    unshared = _run(capsys, *common, *chef, "--no-share-prefix")
    with open_workspace(demo_ws) as ws:
        run = runs.get_run(ws, run_id)
        preds = runs.predictions_of(ws, run_id)
        other = runs.predictions_of(ws, unshared)
        items = {i.id: i for i in catalog.list_items(ws, run.benchmark_id)}
        images = {i: catalog.image_bytes(ws, items[i].image_sha256)[0] for i in items if items[i].image_sha256}
        report = desiderata_report(ws, [run_id], bins=4)
    assert run.config["likelihood"] is True and run.config["likelihood_score"] == "chef"
    assert run.config["max_new_tokens"] == THOUGHT and len(preds) == 4
    # Sharing prefixes (the chain of thought's generation) changes nothing a ChEF run stores.
    assert [(p.response, p.scores) for p in preds] == [(p.response, p.scores) for p in other]

    backend = HFBackend(str(tiny_llava_dir))
    answers = []
    for p in preds:
        keys = "ABCD"[: len(p.scores)]
        # The scored turn asks ChEF's answer query over options shown "(A) text"; the model's turn is the chain
        # of thought, a newline, ChEF's answer sentence and the best candidate.
        assert p.prompt.endswith(f"\n{CHEF_ANSWER_QUERY}") and "\n(A) " in p.prompt and "\nA. " not in p.prompt
        assert p.stage == "likelihood" and p.response.endswith(f"\n{CHEF_ANSWER_LEAD} ({p.choice}")
        lead = p.response.removesuffix(f" ({p.choice}")
        thought = lead.removesuffix(f"\n{CHEF_ANSWER_LEAD}")
        # CoT first: the thought is what the model generates for ChEF's chain-of-thought query.
        cot_prompt = p.prompt.removesuffix(CHEF_ANSWER_QUERY) + CHEF_COT_PROMPT
        assert texts_of(backend.generate([Query(cot_prompt, (images[p.item_id],))], THOUGHT)) == [thought]
        assert thought.strip(), "the random model thought nothing; the lead would prove little"
        expected = chef_reference_scores(backend.model, backend.processor, p.prompt, images[p.item_id], lead, keys)
        assert list(p.scores) == pytest.approx(expected, abs=1e-4)
        best, prob = ppl_confidence(p.scores)
        assert p.choice == keys[best] and p.correct == (p.choice == p.answer)
        answers.append({"prob": prob, "correct": int(p.correct)})
    # Candidates of several tokens: the mean, not the sum, is stored.
    tokens = backend.tokenizer(" (A", add_special_tokens=False)["input_ids"]
    assert len(tokens) > 1
    # ChEF's ECE over four answers needs at most four bins (its loop leaves no bin empty); the report's, so binned.
    chef_ece, chef_accs, chef_probs = compute_ece(answers, num_bins=4)
    cal = report.models[0].dimensions["calibration"]
    assert cal.value == pytest.approx(chef_ece, abs=1e-12) and cal.runs == (run_id,)
    assert cal.extra["confidence"] == "chef" and "ChEF" in cal.entries[0]["confidence_is"]
    assert [b["confidence"] for b in cal.entries[0]["bins"]] == pytest.approx(chef_probs, abs=1e-12)
    assert [b["accuracy"] for b in cal.entries[0]["bins"]] == chef_accs


def test_score_after_a_lead_is_the_mean_of_the_candidates_tokens(tiny_llava_dir):
    """score(lead=…, mean=True) is the summed score of the same tokens divided by their number, with the lead read
    as the model's turn; one-token and several-token candidates alike."""
    backend = HFBackend(str(tiny_llava_dir))
    q = Query("Question: how many people are standing near the table?\n(A) one\n(B) two\n" + CHEF_ANSWER_QUERY)
    lead = f"The answer is A.\n{CHEF_ANSWER_LEAD}"
    cands = [" (A", " (B", "A"]
    means = backend.score([q], [cands], lead=[lead], mean=True)[0]
    sums = backend.score([q], [cands], lead=[lead])[0]
    text = backend._render(q)
    lengths = [
        len(backend.tokenizer(text + lead + c)["input_ids"]) - len(backend.tokenizer(text + lead)["input_ids"])
        for c in cands
    ]
    assert means == pytest.approx([s / n for s, n in zip(sums, lengths)], abs=1e-6)
    assert lengths[0] > 1 and len(set(map(round, means, [4] * 3))) == 3
    with pytest.raises(ValueError, match="lead"):
        backend.score([q], [cands], lead=[lead], first_token=True)


def test_chef_score_is_for_multiple_choice_and_for_backends_that_can_score_after_a_thought(demo_ws, capsys):
    base = ["--workspace", str(demo_ws), "run", "--model", "baseline:first", "--likelihood-score", "chef"]
    assert main([*base, "--bench", "demo"]) == 2
    assert "cannot score candidates after a chain of thought" in capsys.readouterr().err
    assert main([*base, "--bench", "demo", "--label-map", "natural:0"]) == 2
    assert "label_map" in capsys.readouterr().err


def test_the_launcher_offers_the_chef_score():
    from gui.run_queue import run_args
    from gui.runs_view import STRATEGIES

    assert any(likelihood == "chef" and strategy == "vanilla" for _, strategy, likelihood in STRATEGIES["mcq"])
    args = run_args(bench="demo", model="hf:./m", strategy="vanilla", likelihood="chef")
    assert args[-2:] == ("--likelihood-score", "chef") and "--likelihood" not in args
