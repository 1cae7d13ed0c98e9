"""`vlmdesk run`'s run-variant options (evaluator/engine/variants.py): label maps, corruptions, k-shot prompts, CoT."""

from __future__ import annotations

from typing import Any

from evaluator.engine.variants import CHEF_SETTINGS, MAX_SHOTS, SHOT_SELECTIONS, TEXT_CORRUPTIONS
from vlmdesk.args import checked, int_in


def _label_map(text: str) -> str:
    from evaluator.engine.variants import LabelMap

    LabelMap.parse(text)
    return text


def _corruption(text: str) -> str:
    from evaluator.engine.variants import parse_corruption

    parse_corruption(text)
    return text


def add_variant_arguments(p: Any) -> None:
    g = p.add_argument_group("run variants (ChEF's desiderata; each is part of the run's identity)")
    g.add_argument(
        "--label-map",
        type=checked(_label_map, "a label map"),
        metavar="KIND:N",
        help="relabel the options and ask for the label: natural:0-4 (1 2 3 / I II III / first second / (1) (2) / "
        "α β γ), neutral:0-2 (Smith Johnson / foo dog / ~ @ #), unnatural:0-1 (letters shifted); ChEF's settings: "
        f"{' '.join(CHEF_SETTINGS)}. The stored choice stays the shown option's letter",
    )
    g.add_argument(
        "--corrupt",
        action="append",
        type=checked(_corruption, "a corruption"),
        default=[],
        metavar="SPEC",
        help="corrupt each asked image or question, seeded by --seed, item and pass (repeatable): "
        "image:NAME:SEVERITY (ImageNet-C's 15, e.g. image:gaussian_noise:3, severity 1-5) or text:NAME[:P] "
        f"({', '.join(TEXT_CORRUPTIONS)}; misspell takes a probability, e.g. text:misspell:0.1)",
    )
    g.add_argument(
        "--corrupt-options",
        action="store_true",
        help="apply the text corruptions to the option texts too (order and answer key unchanged)",
    )
    g.add_argument(
        "--shots",
        type=int_in(0, MAX_SHOTS, "a number of shots"),
        default=0,
        help=f"k-shot prompt: k solved examples of the benchmark (0-{MAX_SHOTS}, default 0), images included; "
        "never the item, a copy of it or an item with its image",
    )
    g.add_argument(
        "--shot-selection",
        choices=SHOT_SELECTIONS,
        default="random",
        help="how examples are chosen: random (seeded, per item), fixed (the same for every item), similar "
        "(TF-IDF over the question text)",
    )
    g.add_argument(
        "--cot",
        action="store_true",
        help='chain of thought: "think step by step, then give the final answer as Answer: X"; the extractors '
        "read the final answer line first",
    )


def variant_settings(args: Any, bench: Any) -> dict[str, Any]:
    """The RunSettings fields of the variant options (a label map needs options to relabel)."""
    from vlmdesk.cli import UsageError

    if args.label_map and bench.kind != "mcq":
        raise UsageError(f"--label-map relabels options; {bench.name} is a yes/no benchmark")
    if args.corrupt_options and not any(c.startswith("text:") for c in args.corrupt):
        raise UsageError("--corrupt-options needs a --corrupt text:… corruption")
    if args.shot_selection != "random" and not args.shots:
        raise UsageError("--shot-selection needs --shots 1..3")
    return {
        "label_map": args.label_map,
        "corrupt": tuple(args.corrupt),
        "corrupt_options": args.corrupt_options,
        "shots": args.shots,
        "shot_selection": args.shot_selection,
        "cot": args.cot,
    }
