"""The generation and image-processor settings a model spec may set (issue 36): their names and bounds, one home for
every backend that takes them (hf:, openai:, and the servers vlmdesk starts through openai:). Each backend decides
what it sends them as; a spec without them asks as it always did and keeps its run's identity."""

from __future__ import annotations

GENERATION = ("temperature", "top_p", "top_k", "repetition_penalty", "seed")
PROCESSOR = ("min_pixels", "max_pixels", "max_tiles")  # the Qwen-VL family's pixel bounds; InternVL's tile count
RANGES: dict[str, tuple[float, float]] = {
    "temperature": (0.0, 2.0),
    "top_p": (1e-9, 1.0),
    "top_k": (1, 1_000_000),
    "repetition_penalty": (1e-9, 10.0),
    "seed": (0, 2**63 - 1),
    "min_pixels": (1, 2**31),
    "max_pixels": (1, 2**31),
    "max_tiles": (1, 1024),
}
WHOLE = frozenset({"top_k", "seed", "min_pixels", "max_pixels", "max_tiles"})  # whole numbers; the rest real
