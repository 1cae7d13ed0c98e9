"""One tiny random-weight model builder per row of evaluator/backends/families.py (model_type → build(dir) → dir).

The builders live beside their kin: tests/tiny_models.py (LLaVA, Idefics3), tests/tiny_families_qwen.py (the Qwen-VL
family's 3-D rotary positions), tests/tiny_families_plain.py (decoders with 1-D positions: LLaVA-NeXT, OneVision,
InternVL, Mistral 3, SmolVLM) and tests/tiny_families_attention.py (families with attention of their own: Gemma 3,
PaliGemma, Mllama). Each one uses the family's real model, config and processor classes; a processor whose family
wants a video processor (torchvision, which cannot load beside the CPU torch here) is a fixture subclass without
the video slot, never a product change.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests import tiny_families_attention, tiny_families_plain, tiny_families_qwen
from tests.tiny_models import build_tiny_idefics3, build_tiny_llava

BUILDERS: dict[str, Callable[[Path], Path]] = {
    "llava": build_tiny_llava,
    "idefics3": build_tiny_idefics3,
    **tiny_families_qwen.BUILDERS,
    **tiny_families_plain.BUILDERS,
    **tiny_families_attention.BUILDERS,
}
