"""The mean over POPE settings across several run reports (`vlmdesk report R1 R2 R3`).

A mean over settings only means something for one model asked the same way: runs are grouped by model and run
settings (the stored config without batch size, which does not change answers), and a group gets a mean when
it holds at least two runs whose benchmarks name distinct settings. A group with a repeated or unnamed setting
gets none (and says why) instead of an average that mixes a rerun or another dataset in.
"""
from __future__ import annotations

import json

from evaluator.pope import FRACTION_METRICS, PARSERS, mean_over_settings


def _group_key(report: dict) -> str:
    config = {k: v for k, v in (report.get("config") or {}).items() if k != "batch_size"}
    return json.dumps([report["model"], config], sort_keys=True)


def pope_means(reports: list[dict]) -> list[dict]:
    """One entry per group of POPE reports (in order of first appearance) with two or more runs:
    {"model", "runs": [ids], "settings": {setting: run_id} or null, "official": {fraction: mean} or null,
    "strict": … or null, "note": why there is no mean, or null}."""
    groups: dict[str, list[dict]] = {}
    for report in reports:
        if report.get("strategy") == "pope":
            groups.setdefault(_group_key(report), []).append(report)
    means = []
    for members in groups.values():
        if len(members) < 2:
            continue
        settings = [r.get("setting") for r in members]
        entry = {"model": members[0]["model"], "runs": [r["run_id"] for r in members], "settings": None,
                 **{parser: None for parser in PARSERS}, "note": None}
        if None in settings:
            unnamed = [r["run_id"] for r in members if r.get("setting") is None]
            entry["note"] = f"no mean: the benchmark of run {unnamed[0]} names no POPE setting"
        elif len(set(settings)) < len(settings):
            repeated = next(s for s in settings if settings.count(s) > 1)
            runs = [r["run_id"] for r in members if r.get("setting") == repeated]
            entry["note"] = f"no mean: setting {repeated} appears in runs {', '.join(map(str, runs))}"
        else:
            entry["settings"] = {r["setting"]: r["run_id"] for r in members}
            for parser in PARSERS:
                entry[parser] = mean_over_settings([r["pope"][parser] for r in members])
        means.append(entry)
    return means


def _pct(value) -> str:
    return "   -  " if value is None else f"{100 * value:5.1f}%"


def format_pope_means(means: list[dict]) -> str:
    """Text for `vlmdesk report`: per group, the mean fractions per parser (or why there is none)."""
    lines = []
    for entry in means:
        runs = ", ".join(map(str, entry["runs"]))
        if entry["note"]:
            lines.append(f"POPE mean over settings  {entry['model']}  runs {runs}: {entry['note']}")
            continue
        lines.append(f"POPE mean over settings  {entry['model']}  runs {runs} "
                     f"({', '.join(entry['settings'])})")
        lines.append(f"{'parser':<10} {'acc':>7} {'prec':>7} {'recall':>7} {'f1':>7} {'yes':>7}")
        for parser in PARSERS:
            m = entry[parser]
            lines.append(f"{parser:<10} " + " ".join(f"{_pct(m[k]):>7}" for k in FRACTION_METRICS))
    return "\n".join(lines)


def attach_pope_means(reports: list[dict]) -> list[dict]:
    """Sets "pope_mean" on every POPE report (its group's entry, or None) and returns the entries.

    Kept on each report, not beside the list, so `report --json` keeps its shape (an object for one run, a list
    for several) whatever mix of runs is asked for.
    """
    means = pope_means(reports)
    for report in reports:
        if report.get("strategy") == "pope":
            report["pope_mean"] = next((m for m in means if report["run_id"] in m["runs"]), None)
    return means
