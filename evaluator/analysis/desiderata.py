"""ChEF's six desiderata from stored runs (`vlmdesk desiderata RUN…`, the Desiderata view in Results).

Each dimension is computed from the stored passes of the given runs (no model is called), compared where it needs
to be with the plain run of the same model and benchmark — the run asked with the same settings but no variant
(no label map, corruption, k-shot examples or chain of thought), found among the given runs first, then in the
workspace. Accuracies are VanillaEval's (pass 0), over the items both runs asked. What cannot be computed yet is
listed with the command that would produce the run it needs.

- calibration: ECE of likelihood runs (their stored per-option scores, pass 0); the confidence is ChEF's (a chain of
  thought, then the softmax of each "(A"'s mean token log-prob: `--likelihood-score chef`) where such runs are
  given, and each figure names the confidence it used;
- instruction following: MR and accuracy of label-mapped runs, the plain mean over the label maps (ChEF's
  eval_insfollow.py), with the mean within a map type and then over the types beside it;
- robustness: RRM / RR of corrupted runs per kind (image, text, both);
- in-context learning: RIAM of 1-3-shot runs against the 0-shot run;
- language: a judge's 0-10 scores of chain-of-thought runs (evaluator/analysis/desiderata_language.py);
- hallucination: POPE metrics per setting, both parsers (evaluator/analysis/report.py).

Run variants are read from the run's stored config (`label_map`, `corrupt`, `shots`, `shot_selection`, `cot`,
`likelihood_score`), so runs of any vlmdesk that stores them work here.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from db import catalog, judgements, runs
from db.errors import InvalidInput, NotFound
from db.workspace import Workspace
from evaluator.analysis.desiderata_metrics import (
    DEFAULT_BINS,
    Binning,
    Calibration,
    confidence_of,
    ece,
    match_ratio,
    random_accuracy,
    riam,
    rr,
    rrm,
)
from evaluator.scoring.choices import CONFIDENCES, original_option

DIMENSIONS = (
    "calibration",
    "instruction_following",
    "robustness",
    "in_context_learning",
    "language",
    "hallucination",
)
TITLES = {
    "calibration": "Calibration",
    "instruction_following": "Instruction following",
    "robustness": "Robustness",
    "in_context_learning": "In-context learning",
    "language": "Language",
    "hallucination": "Hallucination",
}
# The config keys of run variants (w3-variants' RunSettings fields): a run with any of them off its default is a
# variant; the plain run is the one with none.
VARIANT_DEFAULTS: dict[str, Any] = {
    "label_map": None,
    "corrupt": [],
    "corrupt_options": False,
    "shots": 0,
    "shot_selection": "random",
    "cot": False,
}
# Config keys that do not change what is compared (how many items, how batched, the seed of a corruption).
_NOT_COMPARED = frozenset(("limit", "batch_size", "seed"))
# ChEF's label-map settings (natural 0-2, neutral 0-1, unnatural 0).
LABEL_MAPS = ("natural:0", "natural:1", "natural:2", "neutral:0", "neutral:1", "unnatural:0")
CORRUPTION_KINDS = ("image", "text", "both")
EXAMPLE_CORRUPTIONS = {"image": ("image:gaussian_noise:3",), "text": ("text:mild_mix",)}
SHOTS = (1, 2, 3)


def variant(run: runs.Run) -> dict[str, Any]:
    """The run's variant settings, defaults filled in (`corrupt` as a tuple)."""
    found = {k: run.config.get(k, d) for k, d in VARIANT_DEFAULTS.items()}
    found["corrupt"] = tuple(found["corrupt"] or ())
    return found


def is_plain(run: runs.Run) -> bool:
    v = variant(run)
    return all(v[k] == (tuple(d) if isinstance(d, list) else d) for k, d in VARIANT_DEFAULTS.items())


def _base_key(run: runs.Run) -> tuple[int, str, str, str]:
    rest = {k: v for k, v in run.config.items() if k not in VARIANT_DEFAULTS and k not in _NOT_COMPARED}
    return run.benchmark_id, run.model_spec, run.strategy, json.dumps(rest, sort_keys=True)


def corruption_kind(corrupt: Sequence[str]) -> str | None:
    """image, text or both, from a run's corruptions ("image:NAME:SEVERITY", "text:NAME[:P]"); None for none."""
    kinds = {c.split(":", 1)[0] for c in corrupt}
    if not kinds:
        return None
    return "both" if {"image", "text"} <= kinds else kinds.pop()


@dataclass(frozen=True)
class Missing:
    """What a dimension lacks, and the command that would give it."""

    what: str
    command: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"what": self.what, "command": self.command}


@dataclass(frozen=True)
class Dimension:
    """One desideratum of one model: its headline `value` (None when it cannot be computed), the runs it came from,
    the per-run details, and what is missing."""

    name: str
    value: float | None
    runs: tuple[int, ...] = ()
    entries: tuple[dict[str, Any], ...] = ()
    missing: tuple[Missing, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def radar(self) -> float | None:
        """The value on a 0-100 scale where higher is better (ChEF's radar): calibration 100·(1 − ECE), instruction
        following 100·MR, robustness RRM, in-context learning RIAM, language 10·score, hallucination 100·accuracy."""
        if self.value is None:
            return None
        v = float(self.value)
        if self.name == "calibration":
            return 100 * (1 - v)
        return {"instruction_following": 100 * v, "language": 10 * v, "hallucination": 100 * v}.get(self.name, v)

    def to_json(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "radar": self.radar,
            "runs": list(self.runs),
            "entries": list(self.entries),
            "missing": [m.to_json() for m in self.missing],
            **self.extra,
        }


@dataclass(frozen=True)
class ModelDesiderata:
    model: str
    dimensions: dict[str, Dimension]

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, **{name: self.dimensions[name].to_json() for name in DIMENSIONS}}


@dataclass(frozen=True)
class DesiderataReport:
    """`vlmdesk desiderata RUN… --json`: the runs given, and per model the six dimensions."""

    run_ids: tuple[int, ...]
    models: tuple[ModelDesiderata, ...]
    bins: int = DEFAULT_BINS
    binning: Binning = "equal-count"

    def to_json(self) -> dict[str, Any]:
        return {
            "runs": list(self.run_ids),
            "bins": self.bins,
            "binning": self.binning,
            "models": [m.to_json() for m in self.models],
        }


# ------------------------------------------------------------------------------------------------ the passes


@dataclass(frozen=True)
class _Pass0:
    """An item's pass 0 as the desiderata read it."""

    n_options: int
    correct: bool | None
    chosen: int | None  # the original option chosen (None: undecided, Z, or a yes/no item)
    scores: tuple[float | None, ...] | None


class _Runs:
    """The workspace's runs and their pass 0, read once per report."""

    def __init__(self, ws: Workspace):
        self.ws = ws
        self.all = runs.list_runs(ws)
        self.by_id = {r.id: r for r in self.all}
        self.benchmarks = {b.id: b for b in catalog.list_benchmarks(ws)}
        self._passes: dict[int, dict[int, _Pass0]] = {}

    def kind(self, run: runs.Run) -> str:
        return "yesno" if run.strategy == "pope" else "mcq"

    def passes(self, run: runs.Run) -> dict[int, _Pass0]:
        """item id -> pass 0, for items with an answer key."""
        if run.id not in self._passes:
            items = {i.id: i for i in runs.items_of(self.ws, run)}
            found = {}
            for p in runs.predictions_of(self.ws, run.id):
                item = items.get(p.item_id)
                if p.pass_ != 0 or item is None or item.answer is None:
                    continue
                found[p.item_id] = _Pass0(
                    len(item.options), p.correct, original_option(p.choice, p.option_order), p.scores
                )
            self._passes[run.id] = found
        return self._passes[run.id]

    def plain_for(self, run: runs.Run, given: Sequence[int]) -> runs.Run | None:
        """The plain run (no variant) with the run's other settings: a given one first, else the workspace's latest."""
        key = _base_key(run)
        found = [r for r in self.all if r.id != run.id and is_plain(r) and _base_key(r) == key and r.predictions]
        preferred = [r for r in found if r.id in given]
        pool = preferred or found
        return max(pool, key=lambda r: r.id) if pool else None


def _accuracy(passes: dict[int, _Pass0], items: Iterable[int]) -> float | None:
    chosen = [passes[i].correct is True for i in items]
    return sum(chosen) / len(chosen) if chosen else None


def _pair(data: _Runs, a: runs.Run, b: runs.Run) -> tuple[list[int], float | None, float | None, float | None]:
    """(common items, accuracy of a, accuracy of b, random accuracy) over the items both runs asked."""
    pa, pb = data.passes(a), data.passes(b)
    common = sorted(set(pa) & set(pb))
    acc_random = random_accuracy([pa[i].n_options for i in common])
    return common, _accuracy(pa, common), _accuracy(pb, common), acc_random


def _mean(values: Iterable[float | None]) -> float | None:
    found = [v for v in values if v is not None]
    return sum(found) / len(found) if found else None


def _cmd(*parts: str) -> str:
    return " ".join(shlex.quote(p) for p in parts)


def _run_cmd(bench: str, model: str, *options: str) -> str:
    return _cmd("vlmdesk", "run", "--bench", bench, "--model", model, *options)


def comparable_options(run: runs.Run) -> list[str]:
    """The `vlmdesk run` options that give a run the settings of `run` but its variants: a missing run started with
    them is compared with `run` (same strategy, likelihood, tokens, extractor…; the limit and seed too, so it asks the
    same items the same way)."""
    c = run.config
    options = ["--strategy", run.strategy] if run.strategy not in ("pope", "circular") else []  # circular: default
    options += ["--full-passes"] if c.get("full_passes") else []
    options += ["--limit", str(c["limit"])] if c.get("limit") is not None else []
    options += ["--max-new-tokens", str(c["max_new_tokens"])] if c.get("max_new_tokens", 32) != 32 else []
    options += ["--text-only"] if c.get("text_only") else []
    options += ["--likelihood"] if c.get("likelihood") else []
    options += ["--likelihood-score", str(c["likelihood_score"])] if c.get("likelihood_score", "sum") != "sum" else []
    options += ["--seed", str(c["seed"])] if c.get("seed", 0) != 0 else []
    options += ["--extractor", str(c["extractor"])] if c.get("extractor", "rules") != "rules" else []
    options += ["--multi-turn", str(c["multi_turn"])] if c.get("multi_turn") else []
    options += ["--rounds", str(c["rounds"])] if c.get("multi_turn") and c.get("rounds", 4) != 4 else []
    return options


def _reference(mcq: list[runs.Run]) -> runs.Run:
    """The run whose settings the commands for missing variant runs copy: the plain run most of the given variant
    runs compare with (the first given on a tie), else the first run."""
    plain = [r for r in mcq if is_plain(r)]
    if not plain:
        return mcq[0]
    partners = [sum(not is_plain(v) and _base_key(v) == _base_key(r) for v in mcq) for r in plain]
    return plain[max(range(len(plain)), key=lambda n: (partners[n], -n))]


# ------------------------------------------------------------------------------------------------ dimensions


def _confidences(data: _Runs, run: runs.Run) -> tuple[list[float], list[bool], int]:
    """(confidence, right) of each scored item's pass 0, and how many items had no stored scores. Log-likelihoods
    go through a softmax (a null score is -inf); `likelihood_score` "prefix" scores are probabilities already."""
    probabilities = run.config.get("likelihood_score") == "prefix"
    confidences, correct, unscored = [], [], 0
    for p in data.passes(run).values():
        if not p.scores or (probabilities and any(s is None for s in p.scores)):
            unscored += 1
            continue
        scores = [float("-inf") if s is None else s for s in p.scores]
        confidences.append(confidence_of(scores, probabilities=probabilities)[0])
        correct.append(p.correct is True)
    return confidences, correct, unscored


def calibration_of(
    data: _Runs, mcq: list[runs.Run], *, bins: int = DEFAULT_BINS, binning: Binning = "equal-count"
) -> Dimension:
    entries: list[dict[str, Any]] = []
    used: list[int] = []
    missing: list[Missing] = []
    likelihood = [r for r in mcq if r.config.get("likelihood") and is_plain(r)]
    # ChEF's confidence where there are ChEF-scored runs: figures of two definitions are never averaged together.
    chef = [r for r in likelihood if r.config.get("likelihood_score") == "chef"]
    for run in chef or likelihood:
        confidences, correct, unscored = _confidences(data, run)
        if not confidences:
            missing.append(
                Missing(
                    f"run {run.id} has no stored option scores (it ran before vlmdesk stored them)",
                    _run_cmd(
                        run.benchmark, run.model_spec, *_likelihood_options(run), "--strategy", "vanilla", "--new"
                    ),
                )
            )
            continue
        found = ece(confidences, correct, bins=bins, binning=binning)
        used.append(run.id)
        entries.append(
            {
                "run_id": run.id,
                "benchmark": run.benchmark,
                "score": "prefix" if run.config.get("likelihood_score") == "prefix" else "log-likelihood",
                "confidence": _score_of(run),
                "confidence_is": CONFIDENCES[_score_of(run)],
                "ece": found.ece,
                "ece_equal_count": ece(confidences, correct, bins=bins).ece,
                "ece_equal_width": ece(confidences, correct, bins=bins, binning="equal-width").ece,
                "n": found.n,
                "unscored": unscored,
                "bins": [b.to_json() for b in found.bins],
            }
        )
    if not used and not missing:
        for bench in sorted({r.benchmark for r in mcq}):
            model = mcq[0].model_spec
            missing.append(
                Missing(
                    f"a ChEF-scored likelihood run on {bench}",
                    _run_cmd(bench, model, "--likelihood-score", "chef", "--strategy", "vanilla"),
                )
            )
    confidence = sorted({e["confidence"] for e in entries})
    return Dimension(
        "calibration",
        _mean(e["ece"] for e in entries),
        tuple(used),
        tuple(entries),
        tuple(missing),
        {"confidence": confidence[0] if len(confidence) == 1 else "mixed" if confidence else None},
    )


def _score_of(run: runs.Run) -> str:
    """The likelihood score a run used ("sum" when it stored none: it ran before the setting existed)."""
    score = run.config.get("likelihood_score", "sum")
    return score if score in CONFIDENCES else "sum"


def _likelihood_options(run: runs.Run) -> list[str]:
    score = _score_of(run)
    return ["--likelihood"] if score == "sum" else ["--likelihood-score", score]


def reliability(data: _Runs, run: runs.Run, *, bins: int, binning: Binning) -> Calibration | None:
    """The calibration of one likelihood run (the reliability diagram's numbers); None without stored scores."""
    confidences, correct, _ = _confidences(data, run)
    return ece(confidences, correct, bins=bins, binning=binning) if confidences else None


def _paired(
    data: _Runs, variants: list[runs.Run], given: Sequence[int], what: str, fix: str
) -> tuple[list[tuple[runs.Run, runs.Run | None]], list[Missing]]:
    """(variant, plain run or None) pairs, and Missing entries for variants without a plain run."""
    pairs: list[tuple[runs.Run, runs.Run | None]] = []
    missing: list[Missing] = []
    for run in variants:
        plain = data.plain_for(run, given)
        if plain is None:
            options = comparable_options(run)
            missing.append(
                Missing(
                    f"the plain run of run {run.id} ({what}; the same settings without {fix})",
                    _run_cmd(run.benchmark, run.model_spec, *options),
                )
            )
        pairs.append((run, plain))
    return pairs, missing


def instruction_following_of(data: _Runs, mcq: list[runs.Run], given: Sequence[int]) -> Dimension:
    mapped = [r for r in mcq if variant(r)["label_map"]]
    pairs, missing = _paired(data, mapped, given, "label-mapped", "--label-map")
    entries: list[dict[str, Any]] = []
    used: list[int] = []
    for run, plain in pairs:
        if plain is None:
            continue
        chosen_plain = {i: p.chosen for i, p in data.passes(plain).items()}
        chosen_mapped = {i: p.chosen for i, p in data.passes(run).items()}
        mr, n = match_ratio(chosen_plain, chosen_mapped)
        common, _, acc, _ = _pair(data, plain, run)
        label_map = str(variant(run)["label_map"])
        used += [run.id, plain.id]
        entries.append(
            {
                "run_id": run.id,
                "plain_run_id": plain.id,
                "benchmark": run.benchmark,
                "label_map": label_map,
                "type": label_map.split(":", 1)[0],
                "mr": mr,
                "accuracy": acc,
                "items": n,
            }
        )
    by_map: dict[str, list[dict[str, Any]]] = {}
    for e in entries:
        by_map.setdefault(e["label_map"], []).append(e)
    # ChEF's eval_insfollow.py: the plain mean over the settings (label maps; several runs of one map count once).
    per_map = {m: (_mean(e["mr"] for e in g), _mean(e["accuracy"] for e in g)) for m, g in by_map.items()}
    mr = _mean(v[0] for v in per_map.values())
    acc = _mean(v[1] for v in per_map.values())
    # Beside it, named as such: the mean within a map type (natural, neutral, unnatural), then over the types.
    by_type: dict[str, list[tuple[float | None, float | None]]] = {}
    for m, v in per_map.items():
        by_type.setdefault(m.split(":", 1)[0], []).append(v)
    type_mr = {t: _mean(v[0] for v in g) for t, g in sorted(by_type.items())}
    type_acc = {t: _mean(v[1] for v in g) for t, g in sorted(by_type.items())}
    done = {e["label_map"] for e in entries}
    if mcq:
        ref = _reference(mcq)
        bench, model, same = ref.benchmark, ref.model_spec, comparable_options(ref)
        if not any(is_plain(r) for r in mcq) and not entries:
            missing.append(Missing(f"a plain run on {bench}", _run_cmd(bench, model, *same)))
        for label_map in LABEL_MAPS:
            if label_map not in done:
                missing.append(
                    Missing(f"label map {label_map}", _run_cmd(bench, model, *same, "--label-map", label_map))
                )
    return Dimension(
        "instruction_following",
        mr,
        tuple(sorted(set(used))),
        tuple(entries),
        tuple(missing),
        {
            "accuracy": acc,
            "by_type": type_mr,
            "mr_mean_of_types": _mean(type_mr.values()),
            "accuracy_mean_of_types": _mean(type_acc.values()),
        },
    )


def robustness_of(data: _Runs, mcq: list[runs.Run], given: Sequence[int]) -> Dimension:
    corrupted = [r for r in mcq if variant(r)["corrupt"]]
    pairs, missing = _paired(data, corrupted, given, "corrupted", "--corrupt")
    entries: list[dict[str, Any]] = []
    used: list[int] = []
    for run, plain in pairs:
        if plain is None:
            continue
        common, acc_o, acc_c, acc_r = _pair(data, plain, run)
        if acc_o is None or acc_c is None or acc_r is None:
            continue
        corrupt = list(variant(run)["corrupt"])
        used += [run.id, plain.id]
        entries.append(
            {
                "run_id": run.id,
                "plain_run_id": plain.id,
                "benchmark": run.benchmark,
                "corrupt": corrupt,
                "kind": corruption_kind(corrupt),
                "corrupt_options": bool(variant(run)["corrupt_options"]),
                "accuracy": acc_c,
                "plain_accuracy": acc_o,
                "acc_random": acc_r,
                "rrm": rrm(acc_o, acc_c, acc_r),
                "rr": rr(acc_o, acc_c),
                "items": len(common),
            }
        )
    by_kind: dict[str, dict[str, Any]] = {
        kind: {
            "rrm": _mean(e["rrm"] for e in entries if e["kind"] == kind),
            "rr": _mean(e["rr"] for e in entries if e["kind"] == kind),
            "runs": [e["run_id"] for e in entries if e["kind"] == kind],
        }
        for kind in CORRUPTION_KINDS
    }
    if mcq:
        ref = _reference(mcq)
        bench, model, same = ref.benchmark, ref.model_spec, comparable_options(ref)
        for kind in CORRUPTION_KINDS:
            if not by_kind[kind]["runs"]:
                options = [
                    o for c in EXAMPLE_CORRUPTIONS["image"] + EXAMPLE_CORRUPTIONS["text"] for o in ("--corrupt", c)
                ]
                if kind != "both":
                    options = [o for c in EXAMPLE_CORRUPTIONS[kind] for o in ("--corrupt", c)]
                what = "image and text" if kind == "both" else kind
                missing.append(Missing(f"a run with {what} corruption", _run_cmd(bench, model, *same, *options)))
    value = _mean(v["rrm"] for v in by_kind.values())
    return Dimension(
        "robustness", value, tuple(sorted(set(used))), tuple(entries), tuple(missing), {"by_kind": by_kind}
    )


def icl_of(data: _Runs, mcq: list[runs.Run], given: Sequence[int]) -> Dimension:
    shot_runs = [r for r in mcq if isinstance(variant(r)["shots"], int) and variant(r)["shots"] > 0]
    pairs, missing = _paired(data, shot_runs, given, "k-shot", "--shots")
    groups: dict[tuple[int, str], dict[int, runs.Run]] = {}
    plains: dict[int, runs.Run] = {}
    for run, plain in pairs:
        if plain is None:
            continue
        plains[plain.id] = plain
        shots = groups.setdefault((plain.id, str(variant(run)["shot_selection"])), {})
        k = int(variant(run)["shots"])
        if k not in shots or run.id in given:
            shots[k] = run
    entries: list[dict[str, Any]] = []
    used: list[int] = []
    for (plain_id, selection), shots in sorted(groups.items()):
        plain = plains[plain_id]
        pp = data.passes(plain)
        common = set(pp)
        for run in shots.values():
            common &= set(data.passes(run))
        acc0 = _accuracy(pp, common)
        accs = {k: _accuracy(data.passes(run), common) for k, run in sorted(shots.items())}
        acc_r = random_accuracy([pp[i].n_options for i in common])
        value = (
            riam(acc0, [a for a in accs.values() if a is not None], acc_r)
            if acc0 is not None and acc_r is not None
            else None
        )
        used += [plain_id, *(r.id for r in shots.values())]
        entries.append(
            {
                "plain_run_id": plain_id,
                "benchmark": plain.benchmark,
                "shot_selection": selection,
                "runs": {str(k): r.id for k, r in sorted(shots.items())},
                "acc0": acc0,
                "accuracy": {str(k): a for k, a in accs.items()},
                "acc_random": acc_r,
                "riam": value,
                "items": len(common),
            }
        )
        for k in SHOTS:
            if k not in shots:
                missing.append(
                    Missing(
                        f"{k}-shot run ({selection}) beside run {plain_id}",
                        _run_cmd(
                            plain.benchmark,
                            plain.model_spec,
                            *comparable_options(plain),
                            "--shots",
                            str(k),
                            "--shot-selection",
                            selection,
                        ),
                    )
                )
    if mcq and not entries:
        ref = _reference(mcq)
        bench, model, same = ref.benchmark, ref.model_spec, comparable_options(ref)
        have = {variant(r)["shots"] for r in shot_runs}  # runs waiting only for their plain run are not missing
        for k in SHOTS:
            if k not in have:
                missing.append(Missing(f"a {k}-shot run", _run_cmd(bench, model, *same, "--shots", str(k))))
    return Dimension(
        "in_context_learning",
        _mean(e["riam"] for e in entries),
        tuple(sorted(set(used))),
        tuple(entries),
        tuple(missing),
    )


def language_of(data: _Runs, candidates: list[runs.Run]) -> Dimension:
    from evaluator.analysis.desiderata_language import language_score

    judged = judgements.judged_runs(data.ws)
    entries: list[dict[str, Any]] = []
    used: list[int] = []
    missing: list[Missing] = []
    cot = [r for r in candidates if variant(r)["cot"] or r.id in judged]
    for run in cot:
        if run.id not in judged:
            missing.append(
                Missing(
                    f"judgements of run {run.id}'s chain-of-thought answers",
                    _cmd("vlmdesk", "desiderata", "language", str(run.id), "--judge", "SPEC"),
                )
            )
            continue
        for judge in judged[run.id]:
            score = language_score(data.ws, run.id, judge)
            used.append(run.id)
            entries.append({"run_id": run.id, "benchmark": run.benchmark, **score.to_json()})
    if not cot and candidates:
        bench, model = candidates[0].benchmark, candidates[0].model_spec
        missing.append(Missing("a chain-of-thought run", _run_cmd(bench, model, "--cot", "--max-new-tokens", "256")))
    return Dimension(
        "language", _mean(e["score"] for e in entries), tuple(sorted(set(used))), tuple(entries), tuple(missing)
    )


def hallucination_of(data: _Runs, yesno: list[runs.Run], model: str) -> Dimension:
    from evaluator.analysis.report import run_report

    entries: list[dict[str, Any]] = []
    used: list[int] = []
    for run in yesno:
        if not is_plain(run):
            continue
        report = run_report(data.ws, run.id)
        if report is None or report.pope is None:
            continue
        used.append(run.id)
        entries.append(
            {
                "run_id": run.id,
                "benchmark": run.benchmark,
                "setting": report.pope.setting,
                "answered": report.pope.answered,
                "pope": {parser: m.to_json() for parser, m in report.pope.pope.items()},
            }
        )
    missing = []
    if not entries:
        names = sorted(b.name for b in data.benchmarks.values() if b.kind == "yesno")
        if names:
            missing += [Missing(f"a POPE run on {n}", _run_cmd(n, model)) for n in names]
        else:
            missing.append(
                Missing(
                    "a POPE benchmark and a run on it",
                    "vlmdesk pope build --annotations instances_val2014.json --images val2014/ --setting random "
                    "--out pope.jsonl --import",
                )
            )
    accuracy = _mean(e["pope"]["official"]["accuracy"] for e in entries)
    return Dimension(
        "hallucination",
        accuracy,
        tuple(used),
        tuple(entries),
        tuple(missing),
        {"f1": _mean(e["pope"]["official"]["f1"] for e in entries)},
    )


# ------------------------------------------------------------------------------------------------ the report


def desiderata_report(
    ws: Workspace, run_ids: Sequence[int], *, bins: int = DEFAULT_BINS, binning: Binning = "equal-count"
) -> DesiderataReport:
    """The six desiderata of the models of the given runs. NotFound for an id that is no run."""
    data = _Runs(ws)
    given = list(dict.fromkeys(run_ids))
    unknown = [i for i in given if i not in data.by_id]
    if unknown:
        raise NotFound(f"no run {', '.join(map(str, unknown))} in {ws.path}")
    # Open runs (free answers, no key) have no place in any of the six: they are rated in the arena.
    chosen = [data.by_id[i] for i in given if data.by_id[i].strategy != "open"]
    models = []
    for model in dict.fromkeys(r.model_spec for r in chosen):
        mine = [r for r in chosen if r.model_spec == model]
        mcq = [r for r in mine if data.kind(r) == "mcq"]
        yesno = [r for r in mine if data.kind(r) == "yesno"]
        dims = {
            "calibration": calibration_of(data, mcq, bins=bins, binning=binning),
            "instruction_following": instruction_following_of(data, mcq, given),
            "robustness": robustness_of(data, mcq, given),
            "in_context_learning": icl_of(data, mcq, given),
            "language": language_of(data, mine),
            "hallucination": hallucination_of(data, yesno, model),
        }
        models.append(ModelDesiderata(model, dims))
    return DesiderataReport(tuple(given), tuple(models), bins, binning)


def run_reliability(
    ws: Workspace, run_id: int, *, bins: int = DEFAULT_BINS, binning: Binning = "equal-count"
) -> Calibration | None:
    """One likelihood run's calibration (its reliability diagram); None when it has no stored option scores."""
    data = _Runs(ws)
    run = data.by_id.get(run_id)
    if run is None:
        raise NotFound(f"no run {run_id} in {ws.path}")
    return reliability(data, run, bins=bins, binning=binning)


def _fmt(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _confidence_text(score: object) -> str:
    if score == "mixed":
        return "runs of several definitions, see --json"
    return CONFIDENCES.get(str(score), "—")


def format_report(report: DesiderataReport) -> str:
    """The report as text: per model, each dimension's value, its runs, and what is missing."""
    lines = []
    for m in report.models:
        lines.append(f"model {m.model}")
        for name in DIMENSIONS:
            d = m.dimensions[name]
            value = {
                "calibration": f"ECE {_fmt(d.value, 4)} ({report.binning}, {report.bins} bins; confidence: "
                f"{_confidence_text(d.extra.get('confidence'))})",
                "instruction_following": f"MR {_fmt(d.value)}  accuracy {_fmt(d.extra.get('accuracy'))}"
                f" (mean over label maps; mean of types: MR {_fmt(d.extra.get('mr_mean_of_types'))})",
                "robustness": "RRM "
                + "  ".join(f"{k} {_fmt(v['rrm'], 1)}" for k, v in d.extra.get("by_kind", {}).items()),
                "in_context_learning": f"RIAM {_fmt(d.value, 1)}",
                "language": f"score {_fmt(d.value, 2)} / 10",
                "hallucination": f"POPE accuracy {_fmt(d.value)}  F1 {_fmt(d.extra.get('f1'))} (official parser)",
            }[name]
            runs_text = f"  runs {', '.join(map(str, d.runs))}" if d.runs else ""
            lines.append(f"  {TITLES[name]:<22} {value}{runs_text}")
            for miss in d.missing:
                lines.append(f"      missing: {miss.what}" + (f"  →  {miss.command}" if miss.command else ""))
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------ ECE of a file

MAX_FILE_BYTES = 256 * 2**20
MAX_LINE_BYTES = 64 * 2**10


def read_confidences(path: str | Path) -> tuple[list[float], list[bool]]:
    """`{"confidence": number in [0, 1], "correct": true/false (or 1/0)}` per line (blank lines skipped), read as
    hostile input: a regular file of at most 256 MB, lines of at most 64 KB; the first bad line is InvalidInput
    `FILE:LINE: field: what`."""
    from evaluator.formats.importers.common import Refused, json_loads, open_regular

    path = Path(path)
    try:
        f = open_regular(path, MAX_FILE_BYTES, "limit of this command")
    except Refused as exc:
        raise InvalidInput(f"{path}:0: file: {str(exc).removeprefix(f'{path} ')}") from None
    except OSError as exc:
        raise InvalidInput(f"{path}:0: file: {exc.strerror or exc}") from None
    confidences: list[float] = []
    correct: list[bool] = []
    with f:
        number = 0
        while raw := f.readline(MAX_LINE_BYTES + 1):
            number += 1

            def bad(what: str, problem: str, number: int = number) -> InvalidInput:
                return InvalidInput(f"{path}:{number}: {what}: {problem}")

            if len(raw) > MAX_LINE_BYTES:
                raise bad("line", f"longer than {MAX_LINE_BYTES} bytes")
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise bad("line", "not UTF-8") from None
            if number == 1:
                text = text.removeprefix("\ufeff")  # a BOM, as every other reader of files drops it
            if not text.strip():
                continue
            try:
                record = json_loads(text, limit=4)
            except ValueError as exc:  # JSONDecodeError, too deep, a huge number
                raise bad("line", f"not valid JSON ({getattr(exc, 'msg', str(exc))[:80]})") from None
            if not isinstance(record, dict):
                raise bad("line", "not a JSON object")
            value = record.get("confidence")
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise bad("confidence", f"expected a number in [0, 1], got {json.dumps(value)[:40]}")
            if not 0 <= value <= 1:  # NaN fails this too
                raise bad("confidence", f"{value!r:.40} is not in [0, 1]")
            ok = record.get("correct")
            if ok not in (True, False, 0, 1) or isinstance(ok, float):
                raise bad("correct", f"expected true/false or 1/0, got {json.dumps(ok)[:40]}")
            confidences.append(float(value))
            correct.append(bool(ok))
    return confidences, correct
