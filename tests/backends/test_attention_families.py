"""The families with attention of their own, attacked where sharing a KV cache breaks (the generic proofs are in
tests/backends/test_families.py and, where sharing is on, tests/backends/test_hf_prefix.py).

- Gemma 3: sliding-window layers. Each tiny prefix is longer than the window; it must be cached whole and continued
  without pads between prefix and suffix inside a window (the mask counts cache columns, not positions).
- Llama 3.2 Vision: the image is reached through cross-attention, whose cache holds the image states and not the
  prompt's tokens; sharing is off for that reason.
- PaliGemma: prefix-LM, the prompt attends to itself bidirectionally (sharing off); prompted as its checkpoints are,
  without a chat template.
"""

from __future__ import annotations

import pytest

from evaluator.backends.base import Query
from evaluator.backends.families import family_of
from evaluator.backends.hf import HFBackend
from tests.backends.test_hf_prefix import IMAGES, OPTIONS, query, token_ids
from tests.tiny_families_attention import GEMMA3_SLIDING_WINDOW


@pytest.fixture(scope="module")
def gemma3(tiny_family_dirs):
    return HFBackend(str(tiny_family_dirs("gemma3")))


def _waves() -> list[list[Query]]:
    # Rotation k of every item with an image, as the engine asks them (their suffixes differ in length).
    return [[query(i, k) for i in range(4) if k < len(OPTIONS[i])] for k in range(3)]


def _pope() -> list[Query]:
    # Yes/no questions (no option lines: the prefix is cut right after the image), two or three per image.
    asks = ["Is there a cat in the image?", "Is there a person standing near the table in this photo?", "A dog?"]
    return [
        Query(f"{ask} Please answer yes or no.", (IMAGES[i],), ("Yes", "No"))
        for i in range(3)
        for ask in asks[: 2 + i % 2]
    ]


def test_gemma3_tiny_model_really_slides(gemma3):
    text = gemma3.model.config.get_text_config(decoder=True)
    assert set(text.layer_types) == {"sliding_attention", "full_attention"}
    assert gemma3._sliding_window == text.sliding_window == GEMMA3_SLIDING_WINDOW
    enc = gemma3._encode([query(0, 0)])
    assert enc["input_ids"].shape[1] > 8 * GEMMA3_SLIDING_WINDOW
    # The model's own cache keeps only the last window of a sliding layer: a prefix cut from it would be wrong.
    cache = gemma3.model(**enc, use_cache=True).cache
    kept = [layer.keys.shape[2] for layer in cache.layers]
    assert kept[text.layer_types.index("sliding_attention")] < GEMMA3_SLIDING_WINDOW < enc["input_ids"].shape[1]
    assert kept[text.layer_types.index("full_attention")] == enc["input_ids"].shape[1]


@pytest.mark.parametrize("batch", [1, 3, 8])
def test_gemma3_prefixes_longer_than_the_window_continue_exactly(gemma3, batch, monkeypatch):
    calls = _waves()
    gemma3.max_batch_size = batch
    grouped = []
    real = gemma3._continue_groups
    monkeypatch.setattr(
        gemma3, "_continue_groups", lambda rows, groups, *a: grouped.append(groups) or real(rows, groups, *a)
    )
    try:
        gemma3.share_prefix = False
        plain = [token_ids(gemma3, call, 8) for call in calls]
        gemma3.share_prefix = True
        gemma3.clear_cache()
        hits = gemma3.stats["prefix_hits"]
        shared = [token_ids(gemma3, call, 8) for call in calls]
    finally:
        gemma3.max_batch_size = 8
        gemma3.share_prefix = family_of("gemma3").share_prefix
    assert shared == plain
    assert gemma3.stats["prefix_hits"] - hits == sum(map(len, calls))
    # Every prefix (image, question) is longer than the window and cached whole, every layer.
    for entry in gemma3._prefixes.values():
        assert len(entry.ids) > 2 * GEMMA3_SLIDING_WINDOW
        assert {k.shape[2] for k, _ in entry.kv} == {len(entry.ids)}
    # Rows of several suffix lengths in one sub-batch went in groups of one length.
    assert bool(grouped) == (batch > 1)


def test_gemma3_yes_no_questions_share_their_image_exactly(gemma3):
    queries = _pope()
    gemma3.max_batch_size = 4
    try:
        gemma3.share_prefix = False
        plain = token_ids(gemma3, queries, 8)
        plain_scores = gemma3.score(queries, [list(q.letters) for q in queries])
        gemma3.share_prefix = True
        gemma3.clear_cache()
        before = dict(gemma3.stats)
        shared = token_ids(gemma3, queries, 8)
        after = dict(gemma3.stats)
        shared_scores = gemma3.score(queries, [list(q.letters) for q in queries])
    finally:
        gemma3.max_batch_size = 8
        gemma3.share_prefix = family_of("gemma3").share_prefix
    assert shared == plain
    # Every row continued a cached prefix (its image); a sub-batch prepared while the one before it ran may
    # prefill an image's prefix a second time.
    assert after["prefix_hits"] - before["prefix_hits"] == len(queries) and after["plain_rows"] == before["plain_rows"]
    assert 3 <= after["prefix_misses"] - before["prefix_misses"] < len(queries)
    for got, want in zip(shared_scores, plain_scores):
        assert got == pytest.approx(want, abs=1e-4)


def test_gemma3_pads_between_prefix_and_suffix_would_shorten_the_window(gemma3, monkeypatch):
    """The control: continued as one left-padded batch (pads before the shorter suffixes), some row's tokens
    change, which is why _continue groups rows by suffix length on a sliding-window model."""
    calls = _waves()
    gemma3.max_batch_size = 8
    try:
        gemma3.share_prefix = False
        plain = [token_ids(gemma3, call, 8) for call in calls]
        gemma3.share_prefix = True
        gemma3.clear_cache()
        monkeypatch.setattr(gemma3, "_window_groups", lambda rows, n: None)
        padded = [token_ids(gemma3, call, 8) for call in calls]
    finally:
        gemma3.share_prefix = family_of("gemma3").share_prefix
    assert padded != plain


def test_gemma3_single_row_likelihood_with_shared_prefixes(gemma3):
    queries = [q for call in _waves() for q in call]
    candidates = [list(q.letters) for q in queries]
    gemma3.share_prefix = False
    try:
        plain = gemma3.score(queries, candidates)
        gemma3.share_prefix = True
        gemma3.clear_cache()
        shared = gemma3.score(queries, candidates)
    finally:
        gemma3.share_prefix = family_of("gemma3").share_prefix
    for got, want in zip(shared, plain):
        assert got == pytest.approx(want, abs=1e-4)


def test_mllama_cross_attention_cache_holds_the_image_not_the_prompt(tiny_family_dirs):
    backend = HFBackend(str(tiny_family_dirs("mllama")))
    assert not backend.share_prefix and "cross-attention" in backend.share_prefix_note
    enc = backend._encode([query(1, 0)])  # an 40×96 image: several tiles
    assert enc["aspect_ratio_mask"].sum() > 1
    cache = backend.model(**enc, use_cache=True).cache
    cross = backend.model.config.text_config.cross_attention_layers
    length = enc["input_ids"].shape[1]
    for i, layer in enumerate(cache.layers):
        # A self-attention layer holds one entry per prompt token; a cross-attention layer the image's states,
        # which no cut of the prompt into prefix and suffix can split.
        assert (layer.keys.shape[2] == length) == (i not in cross)


def test_paligemma_prompt_attends_to_its_options(tiny_family_dirs):
    """Two rotations of one item share their text up to the options, yet the model's output at the end of that
    shared text differs: the prefix attends to what follows it, so its KV cannot be computed once."""
    import torch

    backend = HFBackend(str(tiny_family_dirs("paligemma")))
    assert not backend.share_prefix and "bidirectional" in backend.share_prefix_note
    one, two = (backend._encode([query(0, k)]) for k in (0, 1))
    a, b = one["input_ids"][0].tolist(), two["input_ids"][0].tolist()
    common = next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)
    assert common > 20
    with torch.inference_mode():
        la, lb = (backend.model(**enc).logits[0, common - 1] for enc in (one, two))
    assert not torch.allclose(la, lb, atol=1e-4)


def test_paligemma_is_prompted_as_its_checkpoints_are(tiny_family_dirs):
    backend = HFBackend(str(tiny_family_dirs("paligemma")))
    assert backend.processor.chat_template is None and backend.tokenizer.chat_template is None
    q = query(0, 0)
    text = backend._render(q)
    assert text == f"<image><bos>answer en {q.prompt}\n"
    enc = backend._encode([q])
    ids = enc["input_ids"][0].tolist()
    n = backend.processor.image_seq_length
    image_id = backend.processor.image_token_id
    # The processor's layout: the image's tokens, BOS, the prompt and "\n", all in the bidirectional prefix.
    assert ids[:n] == [image_id] * n and ids[n] == backend.tokenizer.bos_token_id
    assert ids[n + 1 :] == backend.tokenizer(text[len("<image><bos>") :], add_special_tokens=False)["input_ids"]
    assert enc["token_type_ids"].tolist() == [[0] * len(ids)]
    # A text-only question needs no processor (which wants an image): BOS, the prompt, "\n".
    alone = Query("Is there a cat? Please answer yes or no.", (), ("Yes", "No"))
    assert backend._render(alone) == f"<bos>answer en {alone.prompt}\n"
    assert (
        isinstance(backend.generate([alone], 3)[0].text, str) and len(backend.score([alone], [["Yes", "No"]])[0]) == 2
    )
