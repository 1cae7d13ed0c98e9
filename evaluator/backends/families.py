"""The model families vlmdesk has verified on the hf: backend: one row per transformers ``model_type``.

Every row is backed by tests/backends/test_families.py, which builds a tiny random-weight model of that exact
architecture class (tests/tiny_families.py) and runs it through `vlmdesk run`: batched left-padded generation,
likelihood with single- and multi-token candidates, POPE, and prefix sharing — proven to give the token ids of plain
``generate`` where it is on, off with its reason where sharing a KV cache is not exact for the family. The table of
docs/guide/models.md and `vlmdesk models families` are written from this table. A model type not listed runs through
the generic path and says once that it is unverified.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Family:
    model_type: str  # transformers' config.model_type
    name: str  # what people call it
    checkpoint: str  # the smallest public checkpoint a user would try first
    share_off: str | None = None  # why prefix sharing is off for the family (None: on, proven exact)

    @property
    def share_prefix(self) -> bool:
        return self.share_off is None

    def to_json(self) -> dict[str, object]:
        return {
            "model_type": self.model_type,
            "name": self.name,
            "checkpoint": self.checkpoint,
            "generation": True,
            "likelihood": True,
            "pope": True,
            "prefix_sharing": "on" if self.share_off is None else f"off: {self.share_off}",
        }


FAMILIES: tuple[Family, ...] = (
    Family("llava", "LLaVA-1.5", "llava-hf/llava-1.5-7b-hf"),
    Family("llava_next", "LLaVA-NeXT", "llava-hf/llava-v1.6-mistral-7b-hf"),
    Family("llava_onevision", "LLaVA-OneVision", "llava-hf/llava-onevision-qwen2-0.5b-ov-hf"),
    Family("qwen2_vl", "Qwen2-VL", "Qwen/Qwen2-VL-2B-Instruct"),
    Family("qwen2_5_vl", "Qwen2.5-VL", "Qwen/Qwen2.5-VL-3B-Instruct"),
    Family("qwen3_vl", "Qwen3-VL", "Qwen/Qwen3-VL-2B-Instruct"),
    Family("gemma3", "Gemma 3", "google/gemma-3-4b-it"),
    Family("internvl", "InternVL", "OpenGVLab/InternVL3-1B-hf"),
    Family("idefics3", "Idefics3", "HuggingFaceM4/Idefics3-8B-Llama3"),
    Family("smolvlm", "SmolVLM2", "HuggingFaceTB/SmolVLM2-256M-Video-Instruct"),
    Family("mistral3", "Mistral 3", "mistralai/Mistral-Small-3.1-24B-Instruct-2503"),
    Family(
        "mllama",
        "Llama 3.2 Vision",
        "meta-llama/Llama-3.2-11B-Vision-Instruct",
        "the image is reached through cross-attention layers whose cache holds the image states, not one entry per "
        "prompt token, and every later token needs its cross_attention_mask rows: a cached prefix cannot be cut and "
        "continued",
    ),
    Family(
        "paligemma",
        "PaliGemma",
        "google/paligemma2-3b-mix-224",
        "prefix-LM: the image and the whole prompt attend to each other bidirectionally, so the question's KV "
        "depends on the options after it and cannot be computed once for every rotation",
    ),
)
# Text-only LMs (quality control's text runs) whose prefix sharing tests/backends/test_hf_prefix.py also covers.
TEXT_SHARE_TYPES = frozenset({"llama", "mistral"})
_BY_TYPE = {f.model_type: f for f in FAMILIES}


def family_of(model_type: str) -> Family | None:
    return _BY_TYPE.get(model_type)


def unverified_note(model_type: str) -> str:
    return (
        f"model type {model_type[:60]!r} is not among the verified families (vlmdesk models families): it runs "
        "through the generic path, unverified"
    )


def markdown_table() -> str:
    """The table of docs/guide/models.md (tests/test_families_table.py checks the page holds exactly this)."""
    lines = [
        "| Family | model_type | Generation | Likelihood | POPE | Prefix sharing | Try first |",
        "|---|---|---|---|---|---|---|",
    ]
    for f in FAMILIES:
        share = "✔" if f.share_off is None else f"off: {f.share_off}"
        lines.append(f"| {f.name} | `{f.model_type}` | ✔ | ✔ | ✔ | {share} | `{f.checkpoint}` |")
    return "\n".join(lines)
