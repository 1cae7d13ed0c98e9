"""Charts of run reports, drawn on plain matplotlib Figures (no pyplot state, no GUI backend).

The GUI embeds the same Figure objects in a FigureCanvasQTAgg; the command line saves them as PNG or SVG.
"""
from __future__ import annotations

from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

SHORT_L2 = {
    "coarse_perception": "CP", "finegrained_perception (instance-level)": "FP-S",
    "finegrained_perception (cross-instance)": "FP-C", "attribute_reasoning": "AR", "relation_reasoning": "RR",
    "logic_reasoning": "LR",
}


def ability_figure(reports: list[dict], level: str = "by_l2") -> Figure:
    """Grouped bars per ability: for each run, VanillaEval (light) and CircularEval (solid), plus Overall."""
    order = list(SHORT_L2)
    names = sorted({name for r in reports for name in r.get(level, {})},
                   key=lambda n: (order.index(n) if n in order else len(order), n))
    groups = ["Overall", *names]
    fig = Figure(figsize=(min(14.0, max(6.0, 0.5 * len(groups) * (1 + len(reports)))), 4.2), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    width = 0.8 / max(1, 2 * len(reports))
    colors = ["#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860"]
    for r_i, report in enumerate(reports):
        color = colors[r_i % len(colors)]
        for s_i, (strategy, alpha) in enumerate((("vanilla", 0.45), ("circular", 1.0))):
            heights = []
            for g in groups:
                scores = report["overall"] if g == "Overall" else report.get(level, {}).get(g, {})
                value = scores.get(strategy)
                heights.append(0.0 if value is None else value * 100)
            offset = (2 * r_i + s_i) * width - 0.4 + width / 2
            bars = ax.bar([x + offset for x in range(len(groups))], heights, width, color=color, alpha=alpha,
                          label=f"run {report['run_id']} {report['model']} — {strategy}")
            for bar, h in zip(bars, heights):
                ax.annotate(f"{h:.0f}", (bar.get_x() + bar.get_width() / 2, h), ha="center", va="bottom",
                            fontsize=7, xytext=(0, 1), textcoords="offset points")
    ax.set_xticks(range(len(groups)), [SHORT_L2.get(g, g) for g in groups], rotation=0 if level == "by_l2" else 45,
                  ha="center" if level == "by_l2" else "right")
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 105)
    title = reports[0]["benchmark"] if len({r["benchmark"] for r in reports}) == 1 else "runs"
    ax.set_title(f"{title}: VanillaEval vs CircularEval")
    ax.legend(fontsize=7, loc="upper right")
    ax.grid(axis="y", alpha=0.3)
    return fig


def pope_figure(reports: list[dict]) -> Figure:
    """POPE metrics per run, under both parsers."""
    metrics = ["accuracy", "precision", "recall", "f1", "yes_ratio"]
    fig = Figure(figsize=(7.5, 4.0), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    series = [(r, parser) for r in reports for parser in ("official", "strict")]
    width = 0.8 / max(1, len(series))
    for s_i, (report, parser) in enumerate(series):
        values = [(report["pope"][parser].get(m) or 0.0) * 100 for m in metrics]
        ax.bar([x + s_i * width - 0.4 + width / 2 for x in range(len(metrics))], values, width,
               label=f"run {report['run_id']} ({report.get('setting') or '-'}) — {parser}")
    ax.set_xticks(range(len(metrics)), metrics)
    ax.set_ylim(0, 105)
    ax.set_ylabel("%")
    ax.set_title("POPE")
    ax.legend(fontsize=7)
    ax.grid(axis="y", alpha=0.3)
    return fig


def save_figure(fig: Figure, path: str | Path) -> Path:
    path = Path(path)
    if path.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise ValueError(f"{path}: plot files end in .png, .svg or .pdf")
    fig.savefig(path, dpi=150)
    return path
