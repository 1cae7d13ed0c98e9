"""A stored run's settings in the words of the runs lists (`vlmdesk runs`, the app's runs list), read from the run's
row alone: listing runs imports none of the engine, the prompts or the prediction readers (issue 34)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from db.runs import Run

IMPORTED_ARROW = "⇩"
IMPORTED_MARK = f"{IMPORTED_ARROW} imported"
"""How lists mark a run whose predictions were made elsewhere (the app's runs list, `vlmdesk runs`)."""


def origin_of(run: Run) -> dict[str, Any] | None:
    """Where an imported run came from ({format, file, sha256, rows}); None for a run vlmdesk executed."""
    origin = run.config.get("origin")
    return origin if isinstance(origin, dict) else None


def describe_variants(config: Mapping[str, Any]) -> str:
    """A run's variants in a few words for lists ("natural:0 labels · image:fog:3 · 2-shot similar · CoT"), or ""."""
    parts = []
    if config.get("label_map"):
        parts.append(f"{config['label_map']} labels")
    corrupt = config.get("corrupt") or ()
    if isinstance(corrupt, (list, tuple)):
        parts += [str(c) for c in corrupt]
    if config.get("corrupt_options"):
        parts.append("options corrupted")
    if config.get("shots"):
        parts.append(f"{config['shots']}-shot {config.get('shot_selection', 'random')}")
    if config.get("cot"):
        parts.append("CoT")
    if config.get("multi_turn"):
        parts.append(f"multi-turn {config.get('rounds', 4)} rounds")
    if config.get("likelihood") and config.get("likelihood_score") == "chef":
        parts.append("ChEF score (CoT)")
    return " · ".join(parts)


def preset_words(config: Mapping[str, Any]) -> str:
    """A run's prompt preset in the words of the runs lists ("vlmevalkit:llava prompt"), or "" for vlmdesk's
    templates and template files."""
    preset = config.get("prompt_preset")
    return f"{preset} prompt" if isinstance(preset, str) else ""
