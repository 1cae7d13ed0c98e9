"""Prefix sharing on the Qwen-VL families, attacked where they differ from other decoders: 3-D rotary positions
(M-RoPE). A prompt's positions come from each image's grid (temporal, height, width), so every token after an image
sits at its index plus a per-row delta, and generate() continues a cache at the mask's positions plus the
``rope_deltas`` stored on the model by whatever ran last. A shared prefix must continue from its own delta: checked
on every generated step's logits (a position one off moves them by units on these models) against plain generate of
the prompt alone, with images of different sizes in one batch, two images in one prompt, a prefix that ends with its
image (POPE), text-only rows, and prefixes reused after other work left other deltas behind."""

from __future__ import annotations

import pytest

from evaluator.backends.base import Query
from evaluator.backends.families import FAMILIES
from evaluator.backends.hf import HFBackend
from tests.backends.test_hf import image_bytes
from tests.backends.test_hf_prefix import IMAGES, query

QWEN = [f.model_type for f in FAMILIES if f.model_type in ("qwen2_vl", "qwen2_5_vl", "qwen3_vl") and f.share_prefix]
WIDE = image_bytes((120, 40, 160), (112, 40))  # another grid again: 2×4 merged tokens


@pytest.fixture(scope="module", params=QWEN)
def qwen(request, tiny_family_dirs):
    return HFBackend(str(tiny_family_dirs(request.param)))


def two_images(k: int) -> Query:
    """Two images of different sizes in one prompt: the suffix's delta is the sum of both grids' shifts."""
    q = query(1, k)
    return Query(q.prompt, (WIDE, IMAGES[2]), q.letters)


def pope(image: bytes) -> Query:
    """No option lines: the prefix is cut right after the image, so it ends with image tokens."""
    return Query("Is there a cat in the image? Please answer yes or no.", (image,), ("Yes", "No"))


def wave(k: int) -> list[Query]:
    """Rotation k of the five items of test_hf_prefix (three grids, one image twice, one text-only) and more."""
    return [query(i, k) for i in range(5)] + [two_images(k), pope(IMAGES[0]), pope(IMAGES[1]), pope(WIDE)]


def steps(backend: HFBackend, queries: list[Query], max_new_tokens: int, mixed: bool = False) -> list[tuple]:
    """(new token ids, logits of every generated step) per query. ``mixed``: all queries in one sub-batch, so rows
    with different grids, image counts and text-only rows share one prefill and one continuation."""
    import torch

    out: list[tuple] = [()] * len(queries)
    generate = backend.model.generate

    def recording(*args, **kwargs):
        kwargs["output_logits"] = True
        result = generate(*args, **kwargs)
        recording.logits = torch.stack(result.logits, 1)  # rows × steps × vocabulary
        return result

    def work(rows, new_ids, _first):
        for r, (row, ids) in enumerate(zip(rows, new_ids)):
            out[row.index] = (ids, recording.logits[r])

    backend.model.generate = recording
    try:
        if mixed:
            prepared = backend._prepare(queries, list(range(len(queries))))
            backend._run_sub_batch(queries, prepared, max_new_tokens, True, work)
        else:
            backend._drive(queries, [1] * len(queries), max_new_tokens, True, work)
    finally:
        backend.model.generate = generate
    return out


def plain_alone(backend: HFBackend, queries: list[Query], max_new_tokens: int) -> list[tuple]:
    """The reference: plain generate of each prompt alone."""
    sharing, batch = backend.share_prefix, backend.max_batch_size
    backend.share_prefix, backend.max_batch_size = False, 1
    try:
        return steps(backend, queries, max_new_tokens)
    finally:
        backend.share_prefix, backend.max_batch_size = sharing, batch


def assert_same(got: list[tuple], want: list[tuple]) -> None:
    for (ids, logits), (want_ids, want_logits) in zip(got, want):
        assert ids == want_ids
        n = min(len(logits), len(want_logits))  # a batch pads a finished row with more steps
        assert (logits[:n] - want_logits[:n]).abs().max().item() < 1e-4


@pytest.mark.parametrize("batch", [1, 3, "mixed"])
def test_every_generated_step_of_a_shared_prefix_sees_the_positions_of_the_prompt_alone(qwen, batch):
    calls = [wave(0), wave(1)]  # the second wave continues every prefix the first one cached
    want = [plain_alone(qwen, call, 5) for call in calls]
    assert any(len(ids) > 1 for call in want for ids, _ in call), "every row stopped at once: nothing compared"
    qwen.clear_cache()
    qwen.max_batch_size = 3 if batch == 3 else 1
    misses, hits = qwen.stats["prefix_misses"], qwen.stats["prefix_hits"]
    try:
        got = [steps(qwen, call, 5, mixed=batch == "mixed") for call in calls]
    finally:
        qwen.max_batch_size = 8
    for g, w in zip(got, want):
        assert_same(g, w)
    # Every query shared a prefix of its own (item 3 repeats item 0's image with another question; the POPE
    # prefixes differ by image), prefilled once and continued in both waves.
    assert qwen.stats["prefix_misses"] - misses == len(calls[0])
    assert qwen.stats["prefix_hits"] - hits == 2 * len(calls[0])
    deltas = {e.rope_delta for e in qwen._prefixes.values()}
    assert 0 in deltas and len(deltas) >= 3, deltas  # text-only 0; the grids' shifts differ


def test_a_prefix_continues_from_its_own_delta_whatever_ran_before_it(qwen):
    """generate() reads the delta the last prefill left on the model: other rows' (another batch size), a
    multi-token score's, or anything else. A cached prefix must not care."""
    import torch

    first = [query(0, 0), two_images(0)]
    later = [query(0, 1), two_images(1)]
    want = plain_alone(qwen, later, 5)
    qwen.clear_cache()
    qwen.max_batch_size = 2
    try:
        steps(qwen, first, 2)  # caches both prefixes
        qwen.share_prefix = False
        qwen.max_batch_size = 3
        steps(qwen, [query(1, 0), query(2, 0), pope(IMAGES[1])], 2)  # leaves three other rows' deltas
        qwen.share_prefix = True
        hits = qwen.stats["prefix_hits"]
        assert_same(steps(qwen, later, 5), want)
        qwen.score([pope(WIDE)], [["Yes, there is a cat", "No"]])  # a multi-token score: positions of other rows
        qwen._mrope_holder().rope_deltas = torch.full((5, 1), 37)
        assert_same(steps(qwen, later[::-1], 5), want[::-1])
        assert qwen.stats["prefix_hits"] - hits == 4 and qwen.stats["prefix_misses"] >= 2
    finally:
        qwen.max_batch_size, qwen.share_prefix = 8, True


def test_single_token_scores_of_shared_prefixes_equal_the_prompt_alone(qwen):
    """Likelihood letters read the first step of a continued prefix: the same positions, mixed grids, batch 3."""
    queries = wave(2)
    candidates = [list(q.letters) for q in queries]
    qwen.share_prefix = False
    alone = [qwen.score([q], [c])[0] for q, c in zip(queries, candidates)]
    qwen.share_prefix = True
    qwen.clear_cache()
    qwen.max_batch_size = 3
    try:
        qwen.score(queries, candidates)  # caches the prefixes
        shared = qwen.score(queries, candidates)
    finally:
        qwen.max_batch_size = 8
    for got, want in zip(shared, alone):
        assert got == pytest.approx(want, abs=1e-4)
