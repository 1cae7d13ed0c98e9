"""Run variants on real workspaces: label maps, text corruptions, k-shot prompts, chain of thought."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from PIL import Image

from db import catalog, open_workspace, runs
from db.errors import InvalidInput
from evaluator.backends.baseline import BaselineBackend
from evaluator.engine.prompts import default_template
from evaluator.engine.runner import Engine, RunSettings, config_key, new_run, settings_of
from evaluator.engine.variants import (
    COT_INSTRUCTION,
    LabelMap,
    TextCorruption,
    corrupt_text,
    parse_corruption,
    read_final_answer,
    read_labels,
)
from evaluator.formats.importers import import_benchmark
from evaluator.scoring.choices import LETTERS
from tests.factories import jpeg_bytes


def write_bench(folder: Path, n: int = 12) -> Path:
    """n items with 3–4 options; items 0 and 1 share an image and item 2 repeats item 3's question and options."""
    for i in range(n):
        (folder / f"img{i}.jpg").write_bytes(jpeg_bytes(i, side=48))
    path = folder / "v.jsonl"
    with open(path, "w") as f:
        for i in range(n):
            k = 3 + i % 2
            question = f"Which animal is in picture number {i}?" if i != 2 else "Which animal is in picture number 3?"
            options = [f"animal {i} {j}" for j in range(k)] if i != 2 else [f"animal 3 {j}" for j in range(4)]
            rec = {
                "index": i,
                "question": question,
                "options": options,
                "answer": LETTERS[i % len(options)],
                "image": f"img{0 if i == 1 else i}.jpg",
            }
            f.write(json.dumps(rec) + "\n")
    return path


@pytest.fixture
def ws_path(tmp_path):
    path = tmp_path / "ws.sqlite"
    with open_workspace(path) as ws:
        import_benchmark(ws, write_bench(tmp_path), fmt="jsonl", name="v")
    return path


class Scripted(BaselineBackend):
    """Answers each query with `answer(query)`; records the queries."""

    def __init__(self, answer):
        super().__init__("first")
        self.answer, self.seen = answer, []

    def generate(self, queries, max_new_tokens):
        self.seen.extend(queries)
        return [self.answer(q) for q in queries]


class Scoring(Scripted):
    def score(self, queries, candidates):
        self.seen.extend(queries)
        return [[1.0 if c == self.answer(q) else 0.0 for c in cands] for q, cands in zip(queries, candidates)]


def engine(ws, settings, backend, batch_size=4):
    bench = catalog.benchmark_by_name(ws, "v")
    run = new_run(
        ws, bench, backend.spec, settings, default_template(bench.kind), batch_size=batch_size, backend_info={}
    )
    return Engine(ws, run, backend, batch_size=batch_size)


# ---------------------------------------------------------------------------------------------------- label maps


def test_label_maps_are_chefs():
    assert LabelMap.parse("natural:0").labels(3) == ("1", "2", "3")
    assert LabelMap.parse("natural:1").labels(4) == ("I", "II", "III", "IV")
    assert LabelMap.parse("natural:2").labels(2) == ("first", "second")
    assert LabelMap.parse("natural:3").labels(2) == ("(1)", "(2)")
    assert LabelMap.parse("natural:4").labels(3) == ("α", "β", "γ")
    assert LabelMap.parse("neutral:0").labels(2) == ("Smith", "Johnson")
    assert LabelMap.parse("neutral:1").labels(4) == ("foo", "dog", "hip", "oh")
    assert LabelMap.parse("neutral:2").labels(4) == ("~", "@", "#", "$")
    assert LabelMap.parse("unnatural:0").labels(4) == ("B", "C", "D", "A")
    for kind, maps in (("natural", 5), ("neutral", 3)):
        for i in range(maps):
            labels = LabelMap.parse(f"{kind}:{i}").labels(25)
            assert len(set(labels)) == 25
    for bad in ("natural", "natural:5", "odd:0", "neutral:-1", "natural:x"):
        with pytest.raises(InvalidInput):
            LabelMap.parse(bad)


def test_mapped_prompt_adds_chefs_sentence_to_each_option_line():
    prompt = default_template("mcq").render(
        question="Q?", hint=None, options=("cat", "dog"), language="en", labels=("1", "2")
    )
    assert 'A. cat If the answer is "(A)", you need to output "1".' in prompt
    assert 'B. dog If the answer is "(B)", you need to output "2".' in prompt
    assert "letter" not in prompt.splitlines()[-1]  # the default "answer with the letter" would contradict the map


@pytest.mark.parametrize(
    "spec, response, letter",
    [
        ("natural:0", "2", "B"),
        ("natural:0", "(3)", "C"),
        ("natural:0", "The answer is 1.", "A"),
        ("natural:0", "Looking at it, option 2 fits. Answer: 3", "C"),
        ("natural:1", "I think the answer is II", "B"),
        ("natural:1", "III", "C"),
        ("natural:2", "Second.", "B"),
        ("natural:3", "(2)", "B"),
        ("natural:4", "γ", "C"),
        ("neutral:0", "Smith", "A"),
        ("neutral:1", '"hip"', "C"),
        ("neutral:2", "@", "B"),
        ("unnatural:0", "B", "A"),
        ("unnatural:0", "(A)", "C"),
        ("natural:0", "the dog", "B"),  # the option's text, when no label is named
    ],
)
def test_rules_read_mapped_labels_as_the_standard_letter(spec, response, letter):
    options = {"A": "the cat", "B": "the dog", "C": "a bird"}
    found = read_labels(response, options, LabelMap.parse(spec).labels(3))
    assert found.choice == letter and found.stage == "rules"


@pytest.mark.parametrize("response", ["1 or 2", "12", "1.5 metres", "", "hmm"])
def test_unclear_mapped_answers_stay_undecided(response):
    found = read_labels(response, {"A": "x", "B": "y", "C": "z"}, ("1", "2", "3"))
    assert found.choice is None and found.stage == "none"


def test_label_mapped_circular_run_stores_standard_letters_and_raw_labels(ws_path):
    def oracle(query):
        return query.letters[0]  # always the first shown option's label

    with open_workspace(ws_path) as ws:
        eng = engine(ws, RunSettings(label_map="natural:1", full_passes=True), Scripted(oracle))
        eng.execute()
        preds = runs.predictions_of(ws, eng.run.id)
    assert {p.choice for p in preds} == {"A"}  # the first shown option is A in every pass, whatever its label
    assert all('label "I" → A' in p.reason for p in preds)
    assert all('you need to output "II"' in p.prompt for p in preds)
    # right exactly where the displayed answer is A
    assert all(p.correct == (p.answer == "A") for p in preds)
    assert len({p.pass_ for p in preds}) == 4


def test_label_mapped_likelihood_scores_the_labels_and_stores_letters(ws_path):
    with open_workspace(ws_path) as ws:
        backend = Scoring(lambda q: q.letters[-1])
        eng = engine(ws, RunSettings(label_map="neutral:0", likelihood=True, strategy="vanilla"), backend)
        eng.execute()
        preds = runs.predictions_of(ws, eng.run.id)
    assert backend.seen[0].letters[:3] == ("Smith", "Johnson", "Williams")
    assert all(p.choice == LETTERS[len(json.loads(json.dumps(p.option_order))) - 1] for p in preds)
    assert all("Smith=" in p.reason for p in preds)


# ----------------------------------------------------------------------------------------- text corruptions


def test_text_corruptions_are_seeded_and_typed():
    from random import Random

    text = "Which is not shown? It is the dog that they are walking in the park today."
    assert corrupt_text(text, TextCorruption("lowercase"), Random(0)) == text.lower()
    contracted = corrupt_text(text, TextCorruption("contractions"), Random(0))
    assert "isn't" in contracted and "It's" in contracted and "they're" in contracted
    a = corrupt_text(text, TextCorruption("misspell", 0.5), Random(1))
    assert a == corrupt_text(text, TextCorruption("misspell", 0.5), Random(1)) and a != text
    assert len(a.split()) == len(text.split())
    spaced = corrupt_text(text, TextCorruption("extra_spaces"), Random(3))
    assert spaced.split() == text.split() and spaced != text
    mild = corrupt_text(text, TextCorruption("mild_mix"), Random(2))
    assert mild == mild.lower() and "isn't" in mild
    assert parse_corruption("text:misspell:0.1") == TextCorruption("misspell", 0.1)
    for bad in ("text:shout", "text:misspell:2", "text:lowercase:0.1", "image:fog", "image:fog:6", "sound:x"):
        with pytest.raises(InvalidInput):
            parse_corruption(bad)


def test_corrupted_question_and_options_keep_order_and_key(ws_path):
    settings = RunSettings(corrupt=("text:misspell:1.0",), corrupt_options=True, strategy="vanilla")
    with open_workspace(ws_path) as ws:
        backend = Scripted(lambda q: "B")
        eng = engine(ws, settings, backend)
        eng.execute()
        preds = runs.predictions_of(ws, eng.run.id)
        items = {i.id: i for i in catalog.list_items(ws, eng.run.benchmark_id)}
    for p in preds:
        item = items[p.item_id]
        assert item.question not in p.prompt  # every word of three letters or more has a typo
        assert not any(f"{LETTERS[j]}. {o}" in p.prompt for j, o in enumerate(item.options))
        assert p.answer == item.answer and p.choice == "B"  # order and key unchanged


def test_text_corruption_is_deterministic_per_seed_item_and_pass(ws_path):
    with open_workspace(ws_path) as ws:
        bench = catalog.benchmark_by_name(ws, "v")
        items = catalog.list_items(ws, bench.id)
        from evaluator.engine.variants import Variants

        def prompts(seed, k):
            settings = RunSettings(corrupt=("text:mild_mix",), seed=seed)
            v = Variants(ws, settings, default_template("mcq"), "mcq", bench.id, seed)
            return [v.query(i, k, tuple(range(len(i.options)))).prompt for i in items]

        assert prompts(0, 0) == prompts(0, 0)
        assert prompts(0, 0) != prompts(1, 0)
        assert prompts(0, 0) != prompts(0, 1)


# --------------------------------------------------------------------------------------------------- k-shot


@pytest.mark.parametrize("selection", ["random", "fixed", "similar"])
def test_shots_never_leak_the_item_its_copy_or_its_image(ws_path, selection):
    with open_workspace(ws_path) as ws:
        backend = Scripted(lambda q: "A")
        eng = engine(ws, RunSettings(shots=3, shot_selection=selection, strategy="vanilla"), backend)
        items = {i.id: i for i in catalog.list_items(ws, eng.run.benchmark_id)}
        by_index = {i.index: i for i in items.values()}
        picked = {i.id: eng.variants.shots.pick(i) for i in items.values()}
        eng.execute()
    for item_id, examples in picked.items():
        item = items[item_id]
        assert len(examples) == 3
        for e in examples:
            assert e.id != item.id and e.image_sha256 != item.image_sha256
            assert not (e.question == item.question and sorted(e.options) == sorted(item.options))
    # items 0 and 1 share an image; items 2 and 3 are the same question
    assert by_index[1].id not in {e.id for e in picked[by_index[0].id]}
    assert by_index[3].id not in {e.id for e in picked[by_index[2].id]}
    for q in backend.seen:
        assert len(q.images) == 4  # three examples' images, then the item's
        assert q.prompt.count("Answer: ") == 3 and "Example 3 (image 3):" in q.prompt
        assert "Now answer this question (image 4):" in q.prompt
    if selection == "fixed":
        sets = [tuple(e.id for e in ex) for ex in picked.values()]
        assert max(sets.count(s) for s in set(sets)) >= len(sets) - 6  # the same three, except where they leak


def test_shot_answer_lines_carry_the_examples_key_and_similar_ranks_by_question(ws_path):
    with open_workspace(ws_path) as ws:
        backend = Scripted(lambda q: "A")
        eng = engine(ws, RunSettings(shots=1, shot_selection="similar", strategy="vanilla"), backend)
        by_index = {i.index: i for i in catalog.list_items(ws, eng.run.benchmark_id)}
        example = eng.variants.shots.pick(by_index[5])[0]
        query = eng.variants.query(by_index[5], 0, (0, 1, 2, 3))
    assert f"Answer: {example.answer}" in query.prompt
    assert example.question in query.prompt
    with open_workspace(ws_path) as ws:
        eng = engine(ws, RunSettings(shots=1, shot_selection="random", seed=3, strategy="vanilla"), Scripted(str))
        items = catalog.list_items(ws, eng.run.benchmark_id)
        random_one = [eng.variants.shots.pick(i)[0].id for i in items]
        assert random_one == [eng.variants.shots.pick(i)[0].id for i in items]  # seeded


# ------------------------------------------------------------------------------------------ chain of thought


def test_cot_prompt_replaces_the_direct_instruction_and_reads_the_final_line(ws_path):
    response = "Option A looks like a cat, but B is plausible.\nOn reflection C fits.\nAnswer: C"
    found = read_final_answer(response, {"A": "cat", "B": "dog", "C": "bird"})
    assert found.choice == "C" and found.reason.startswith("final answer line")
    with open_workspace(ws_path) as ws:
        backend = Scripted(lambda q: "Let me think. A is wrong.\nAnswer: B")
        eng = engine(ws, RunSettings(cot=True, strategy="vanilla"), backend)
        eng.execute()
        preds = runs.predictions_of(ws, eng.run.id)
    assert all("directly" not in p.prompt and COT_INSTRUCTION["en"].split(",")[0] in p.prompt for p in preds)
    assert all(p.choice == "B" for p in preds)


# ------------------------------------------------------------------------------------------------ identity


def test_variants_are_stored_and_keyed_only_when_set(ws_path):
    plain = RunSettings()
    assert not {"label_map", "corrupt", "corrupt_options", "shots", "shot_selection", "cot"} & set(plain.identity())
    varied = RunSettings(corrupt=("image:fog:3", "text:lowercase"), label_map="natural:0")
    assert varied.identity()["corrupt"] == ("image:fog:3", "text:lowercase")
    with open_workspace(ws_path) as ws:
        bench = catalog.benchmark_by_name(ws, "v")
        template = default_template("mcq")
        assert config_key(bench, "m", plain, template) != config_key(bench, "m", varied, template)
        run = new_run(ws, bench, "baseline:first", varied, template, batch_size=2, backend_info={})
        again = runs.get_run(ws, run.id)
    assert again.config["corrupt"] == ["image:fog:3", "text:lowercase"]
    assert settings_of(again) == varied  # a tuple again
    for bad in (
        RunSettings(label_map="natural:9"),
        RunSettings(corrupt=("image:fog:9",)),
        RunSettings(shots=4),
        RunSettings(shot_selection="best"),
        RunSettings(corrupt_options=True),
    ):
        with pytest.raises(InvalidInput):
            bad.check()


def test_image_size_kept_by_the_engine_and_changes_per_pass(ws_path):
    with open_workspace(ws_path) as ws:
        backend = Scripted(lambda q: "A")
        eng = engine(ws, RunSettings(corrupt=("image:gaussian_noise:3",), full_passes=True), backend)
        item = catalog.list_items(ws, eng.run.benchmark_id)[0]
        original = catalog.image_bytes(ws, item.image_sha256)[0]
        q0, q0b, q1 = (eng.variants.query(item, k, (0, 1, 2)) for k in (0, 0, 1))
    size = Image.open(io.BytesIO(original)).size
    assert Image.open(io.BytesIO(q0.images[0])).size == size
    assert q0.images == q0b.images and q0.images != q1.images and q0.images[0] != original


def test_an_llm_extractor_reads_undecided_mapped_answers_with_the_labels_shown(ws_path):
    from evaluator.scoring.llm_extraction import LLMExtractor, RulesThenLLM

    judge = Scripted(lambda q: "C")  # the LLM answers with a standard letter
    with open_workspace(ws_path) as ws:
        model = Scripted(lambda q: "Hard to say, maybe the second or the third one.")
        bench = catalog.benchmark_by_name(ws, "v")
        settings = RunSettings(label_map="natural:2", strategy="vanilla", limit=3, extractor="rules+llm:baseline:first")
        run = new_run(ws, bench, model.spec, settings, default_template("mcq"), batch_size=4, backend_info={})
        eng = Engine(ws, run, model, batch_size=4, extractor=RulesThenLLM(LLMExtractor(judge, ws=ws)))
        eng.execute()
        preds = runs.predictions_of(ws, run.id)
    assert [p.choice for p in preds] == ["C", "C", "C"] and all(p.stage == "llm" for p in preds)
    assert all(p.reason.startswith("rules: several labels named: second, third") for p in preds)
    assert all('(label "third")' in q.prompt for q in judge.seen)


def test_a_cot_yes_no_answer_is_read_from_its_final_line(tmp_path):
    (tmp_path / "img.jpg").write_bytes(jpeg_bytes(0, side=32))
    path = tmp_path / "p.jsonl"
    lines = [{"question_id": i, "image": "img.jpg", "text": f"Is there a cat {i}?", "label": "yes"} for i in range(3)]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        import_benchmark(ws, path, fmt="pope", name="v", setting="random")
        backend = Scripted(lambda q: "No dog is visible, but yes, there is a cat.\nAnswer: yes")
        eng = engine(ws, RunSettings(cot=True), backend)
        eng.execute()
        preds = runs.predictions_of(ws, eng.run.id)
    assert all(p.choice == "yes" and p.correct for p in preds)
    assert all("Answer: X" in q.prompt and "yes, no" in q.prompt for q in backend.seen)
    with pytest.raises(InvalidInput):
        RunSettings(cot=True, likelihood=True).check()
