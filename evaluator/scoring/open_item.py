"""One open item's scores, as an annotator reads them beside an answer (Review, Browse): the open metrics that score an
item from its answer and references alone, and which of them is the item's primary score.

The metrics are evaluator/scoring/open_metrics.py's entries made with `per_item` (exact, word, VQA, ANLS, and any
plugin's made the same way). The others are figures of a whole run, never of one item: CIDEr's IDF is over the run's
references, a judge's scores are its stored verdicts (`vlmdesk judge`); the Results tab shows them per item.
"""

from __future__ import annotations

from collections.abc import Sequence

from evaluator.scoring.open_metrics import REGISTRY, OpenMetricEntry, PerItem

CAPTION_WORDS = 4
"""A reference of this many words or more is a sentence: several distinct ones are captions."""
RUN_ONLY_NOTE = "CIDEr and a judge's scores are the run's: see Results"


def item_metrics() -> tuple[OpenMetricEntry, ...]:
    """The open metrics that score each item on its own (a `per_item` entry; a name to import is never one). A
    broken plugin leaves out only itself (help_entries): a panel shown never fails on it."""
    return tuple(e for e in REGISTRY.help_entries() if isinstance(e.score, PerItem))


def item_scores(
    response: str,
    references: Sequence[str],
    benchmark_name: str | None = None,
    benchmark_meta: dict[str, object] | None = None,
) -> dict[str, float]:
    """metric name -> this answer's score, for each per-item metric that applies to the item (none without
    references: a live-arena question is voted on, not scored). The benchmark's name and meta choose the rule of a
    metric that has one per benchmark (vqa_accuracy: open_metrics.vqa_rule), as the run's report does; without
    them, the default rule."""
    out: dict[str, float] = {}
    for entry in item_metrics():
        score = entry.score
        assert isinstance(score, PerItem)  # item_metrics keeps those only
        if len(references) >= score.min_references:
            out[entry.name] = score.rule_for(benchmark_name, benchmark_meta)(response, tuple(references))
    return out


def primary(scores: dict[str, float], references: Sequence[str]) -> str | None:
    """The metric an item's short score is given in, by the shape of its references: VQAv2's accuracy where they
    are votes (4+ with repeats: VQA's ten); none for captions (several distinct sentences: CIDEr is their metric,
    and it is the run's); else the word match (the Runs list's first open figure), or the first metric that scored
    the item. None when nothing fits."""
    distinct = set(references)
    if "vqa_accuracy" in scores and len(distinct) < len(references):
        return "vqa_accuracy"
    if len(distinct) > 1 and any(len(r.split()) >= CAPTION_WORDS for r in distinct):
        return None
    return "word_match" if "word_match" in scores else next(iter(scores), None)


def score_text(metric: str, value: float) -> str:
    """ "VQA 67 %": the metric's short title and the score (a fraction as %, another scale with two decimals)."""
    entry = next((e for e in item_metrics() if e.name == metric), None)
    title = entry.title if entry is not None else metric
    if entry is not None and entry.scale != "fraction":
        return f"{title} {value:.2f}"
    return f"{title} {100 * value:.0f} %"


def scores_text(scores: dict[str, float], references: Sequence[str]) -> str:
    """Every score of an item in one line, the primary one first: "VQA 100 % · exact 100 % · word 100 %"."""
    first = primary(scores, references)
    ordered = ([first] if first else []) + [m for m in scores if m != first]
    return " · ".join(score_text(m, scores[m]) for m in ordered)
