"""Prefix sharing, overlap and single-row likelihood in HFBackend give exactly what plain generate / per-candidate
rows give, on a tiny random model of every family that shares prefixes (evaluator/backends/families.py), in fp32,
called the
way the engine calls them (one rotation of every alive item per call, items ending early)."""

from __future__ import annotations

import pytest

from evaluator.backends.base import Query, texts_of
from evaluator.backends.families import FAMILIES
from evaluator.backends.hf import HFBackend, parse_hf_spec
from evaluator.engine.prompts import default_template
from evaluator.scoring.choices import letters, rotation
from tests.backends.test_hf import image_bytes

OPTIONS = [
    ["a red car", "a blue boat", "a green tree", "a dog on the grass"],
    ["cat", "dog", "bird", "two people"],
    ["yes", "no", "maybe"],
    ["A. the table", "the answer is B", "C", "D. none"],  # option texts that look like letters
    ["red", "blue", "green", "yellow"],
]
IMAGES = [
    image_bytes((200, 30, 30), (80, 50)),
    image_bytes((20, 90, 200), (40, 96), "JPEG"),
    image_bytes((10, 180, 40), (64, 64)),
    image_bytes((200, 30, 30), (80, 50)),  # the same image as item 0, another question: another prefix
    b"",  # text-only
]
QUESTIONS = ["What is shown in the image?", "How many?", "Is there a cat in the image?", "Which one?", "Question?"]
HINTS = [None, "Look at the table.", None, "The answer is A.", None]


def query(item: int, k: int) -> Query:
    order = rotation(len(OPTIONS[item]), k)
    shown = tuple(OPTIONS[item][j] for j in order)
    prompt = default_template("mcq").render(question=QUESTIONS[item], hint=HINTS[item], options=shown, language="en")
    images = (IMAGES[item],) if IMAGES[item] else ()
    return Query(prompt, images, tuple(letters(len(shown))))


def waves(alive_after: dict[int, int]) -> list[list[Query]]:
    """The engine's calls: wave k asks rotation k of every item still alive (item i lives alive_after[i] waves)."""
    return [[query(i, k) for i in range(len(OPTIONS)) if k < min(alive_after[i], len(OPTIONS[i]))] for k in range(4)]


def token_ids(backend: HFBackend, queries: list[Query], max_new_tokens: int) -> list[list[int]]:
    out: list[list[int]] = [[] for _ in queries]

    def work(rows, new_ids, _logits):
        for row, ids in zip(rows, new_ids):
            out[row.index] = ids

    backend._drive(queries, [1] * len(queries), max_new_tokens, False, work)
    return out


# Every family whose row in evaluator/backends/families.py turns prefix sharing on must pass these tests.
@pytest.fixture(scope="module", params=[f.model_type for f in FAMILIES if f.share_prefix])
def vlm(request, tiny_family_dirs):
    return HFBackend(str(tiny_family_dirs(request.param)))


@pytest.mark.parametrize("batch", [1, 3])
def test_shared_prefixes_generate_exactly_the_tokens_of_plain_generate(vlm, batch):
    calls = waves({0: 4, 1: 1, 2: 3, 3: 2, 4: 4})  # items 1 and 3 end early; item 2 has three options
    vlm.max_batch_size = batch
    try:
        vlm.share_prefix, vlm.overlap = False, False
        hits = vlm.stats["prefix_hits"]
        plain = [token_ids(vlm, call, 8) for call in calls]
        assert vlm.stats["prefix_hits"] == hits
        vlm.share_prefix, vlm.overlap = True, True
        vlm.clear_cache()
        before = dict(vlm.stats)
        shared = [token_ids(vlm, call, 8) for call in calls]
        after = dict(vlm.stats)
        texts = [texts_of(vlm.generate(call, 8)) for call in calls]
    finally:
        vlm.max_batch_size, vlm.share_prefix, vlm.overlap = 8, True, True
    assert shared == plain
    assert any(len(ids) > 1 for call in plain for ids in call), "every row stopped at once: nothing compared"
    assert texts == [[vlm.tokenizer.decode(ids, skip_special_tokens=True).strip() for ids in c] for c in plain]
    # Each item's prefix (image, hint, question) was prefilled once and reused by its other rotations.
    assert after["prefix_misses"] - before["prefix_misses"] == len(OPTIONS)
    assert after["prefix_hits"] - before["prefix_hits"] == sum(map(len, calls))
    assert after["plain_rows"] == before["plain_rows"]


def test_rows_stop_at_eos_and_an_evicted_prefix_is_prefilled_again(vlm):
    calls = waves({i: 4 for i in range(len(OPTIONS))})
    vlm.share_prefix = False
    plain = [token_ids(vlm, call, 12) for call in calls]
    vlm.share_prefix = True
    vlm.clear_cache()
    budget = vlm.prefix_cache_bytes
    vlm.prefix_cache_bytes = 1  # every prefix is evicted as soon as its sub-batch is done
    misses = vlm.stats["prefix_misses"]
    try:
        assert [token_ids(vlm, call, 12) for call in calls] == plain
        # Only the prefixes of the last sub-batch stay; the others were prefilled again for each rotation.
        assert len(vlm._prefixes) <= vlm.max_batch_size
        assert vlm.stats["prefix_misses"] - misses > len(OPTIONS)
    finally:
        vlm.prefix_cache_bytes = budget
    eos = vlm.model.generation_config.eos_token_id
    for ids in (ids for call in plain for ids in call if eos in ids):
        # A finished row is padded after its EOS, never continued.
        assert set(ids[ids.index(eos) + 1 :]) <= {vlm.tokenizer.pad_token_id, eos}


def test_single_row_likelihood_equals_one_row_per_candidate(vlm):
    queries = [q for call in waves({i: 4 for i in range(len(OPTIONS))}) for q in call]
    candidates = [list(q.letters) for q in queries]
    cand_ids = [[vlm.tokenizer(c, add_special_tokens=False)["input_ids"] for c in cs] for cs in candidates]
    assert all(len(t) == 1 for ids in cand_ids for t in ids)
    vlm.max_batch_size = 3
    try:
        reference = [[0.0] * len(cs) for cs in candidates]
        vlm._score_rows(queries, candidates, cand_ids, reference, list(range(len(queries))))
        vlm.clear_cache()
        before = vlm.stats["prefix_hits"]
        single = vlm.score(queries, candidates)
        assert vlm.stats["prefix_hits"] - before == len(queries)  # one row per query, prefixes shared
        vlm.share_prefix = False
        unshared = vlm.score(queries, candidates)
    finally:
        vlm.max_batch_size, vlm.share_prefix = 8, True
    for got, plain, want in zip(single, unshared, reference):
        assert got == pytest.approx(want, abs=1e-4) and plain == pytest.approx(want, abs=1e-4)
    assert len({round(s, 4) for s in single[0]}) > 1


def test_prefix_score_reads_each_candidates_first_token_in_context(vlm):
    q = query(0, 0)
    cands = [" a red car.", " a blue boat.", " C."]
    got = vlm.score([q], [cands], first_token=True)[0]
    text = vlm._render(q)
    special = vlm._add_special(text)
    base = vlm.tokenizer(text, add_special_tokens=special)["input_ids"]
    firsts = [vlm.tokenizer(text + c, add_special_tokens=special)["input_ids"][len(base)] for c in cands]
    sums = vlm.score([q], [[vlm.tokenizer.decode([t]) for t in firsts]])[0]
    assert got == pytest.approx(sums, abs=1e-4)


def test_a_prompt_without_options_shares_everything_up_to_its_last_image(vlm):
    """POPE's yes/no questions have no option lines: the prompt is cut right after its last image, so questions
    about one image share that prefix; generation and Yes/No scores are those of the plain prompts."""
    questions = ["Is there a cat in the image? Please answer yes or no.", "Is there a person? Please answer yes or no."]
    queries = [Query(q, (image,), ("Yes", "No")) for image in IMAGES[:3] for q in questions]
    yes_no = [["Yes", "No"]] * len(queries)
    vlm.max_batch_size = 3
    try:
        vlm.share_prefix = False
        plain, plain_scores = token_ids(vlm, queries, 8), vlm.score(queries, yes_no)
        vlm.share_prefix = True
        vlm.clear_cache()
        before = dict(vlm.stats)
        shared = token_ids(vlm, queries, 8)
        middle = dict(vlm.stats)
        again = token_ids(vlm, queries, 8)  # every prefix cached now: none prefilled again
        after = dict(vlm.stats)
        scores = vlm.score(queries, yes_no)
    finally:
        vlm.max_batch_size, vlm.share_prefix = 8, True
    assert shared == plain == again
    assert after["prefix_hits"] - before["prefix_hits"] == 2 * len(queries)
    assert middle["prefix_misses"] - before["prefix_misses"] <= len(queries)
    assert after["prefix_misses"] == middle["prefix_misses"]
    assert after["plain_rows"] == before["plain_rows"]
    for got, want in zip(scores, plain_scores):
        assert got == pytest.approx(want, abs=1e-4)


def test_spec_switches_and_describe(tiny_llava_dir):
    off = parse_hf_spec(f"{tiny_llava_dir}?share_prefix=0&overlap=0&batch_size=auto")
    info = off.describe()
    assert info["share_prefix"] == "off (share_prefix=0)" and info["overlap"] is False
    # No GPU here: "auto" keeps the CPU default and the engine gets one sub-batch per call.
    assert off.max_batch_size == 8 and info["batch_size_auto"] is False and off.call_size(8) == 8
    assert off.spec == f"hf:{tiny_llava_dir}?share_prefix=0&overlap=0"
    on = parse_hf_spec(str(tiny_llava_dir), default_batch_size=2)
    assert on.describe()["share_prefix"] == "on" and on.call_size(2) == 8 and on.chunk_items >= 8
