"""Results › Charts shows each figure's 95 % interval (issue 38): the bars drawn in the app carry whiskers at the
report's interval bounds, and a bar's tooltip gives the figure with its interval and method."""

from __future__ import annotations

import pytest
from matplotlib.container import BarContainer
from scipy.stats import binomtest

from db import open_workspace
from evaluator.analysis.report import group_items, run_report
from vlmdesk.cli import main as cli_main


@pytest.fixture
def two_runs(demo_ws):
    """demo_ws has run 1 (baseline:first, circular); add run 2 (POPE, baseline:random)."""
    assert cli_main(["--workspace", str(demo_ws), "run", "--bench", "demo-pope", "--model", "baseline:random"]) == 0
    return demo_ws


def _whisker_tops(chart) -> list[float]:
    """The upper end of every whisker drawn in the chart (bars without an interval have none)."""
    tops = []
    for container in chart.figure.axes[0].containers:
        if isinstance(container, BarContainer) and container.errorbar is not None:
            (lines,) = container.errorbar.lines[2]
            tops += [float(s[1][1]) for s in lines.get_segments() if len(s)]
    return tops


def test_results_bars_carry_whiskers_and_tooltips_with_the_reports_intervals(qtbot, two_runs, make_window):
    window = make_window(two_runs)
    dash = window.view("results")
    window.show_view("results")  # a tab out of sight computes nothing
    dash.show_runs([1], chart="l2")
    qtbot.waitUntil(lambda: not dash.computing, timeout=10_000)
    with open_workspace(two_runs) as ws:
        mcq, pope = run_report(ws, 1), run_report(ws, 2)
        coarse = [r for r in group_items(ws, 1, level="l2", group="coarse_perception") if r.circular is not None]
    expected = [s.circular_ci.high * 100 for s in (mcq.mcq.overall, *mcq.mcq.by_l2.values())]
    drawn = _whisker_tops(dash.chart)
    assert all(any(t == pytest.approx(d) for d in drawn) for t in expected), (expected, drawn)
    # The tooltip of a bar: Wilson on the group's items, computed here from their right/wrong.
    ci = binomtest(sum(r.circular for r in coarse), len(coarse)).proportion_ci(method="wilson")
    tip = dash._describe_bar({"run": "1", "level": "l2", "group": "coarse_perception", "strategy": "circular"})
    assert f"95 % interval {100 * ci.low:.1f}–{100 * ci.high:.1f}, Wilson" in tip

    dash.show_runs([2], chart="pope")
    qtbot.waitUntil(lambda: not dash.computing, timeout=10_000)
    f1 = pope.pope.intervals["official"].f1
    assert any(t == pytest.approx(100 * f1.high) for t in _whisker_tops(dash.chart))
    tip = dash._describe_bar({"run": "2", "level": "pope", "parser": "official", "metric": "f1"})
    assert f"{100 * f1.low:.1f}–{100 * f1.high:.1f}, percentile bootstrap over items" in tip
    tip = dash._describe_bar({"run": "2", "level": "pope", "parser": "official", "metric": "yes_ratio"})
    assert "interval" not in tip  # the share of yes answers is no estimate of rightness: no interval
