"""Charts of run reports, drawn on plain matplotlib Figures (no pyplot state, no GUI backend).

The GUI embeds the same Figure objects in a FigureCanvasQTAgg; the command line saves them as PNG or SVG.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode

from matplotlib.artist import Artist
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from db.errors import InvalidInput
from evaluator.analysis.labels import elide_middle, short_model
from evaluator.formats.outfiles import AtomicOutput
from evaluator.types import PopeParser

if TYPE_CHECKING:
    from evaluator.analysis.intervals import Interval
    from evaluator.analysis.ratings import Leaderboard
    from evaluator.analysis.report import RunReport, Scores

SHORT_L2 = {
    "coarse_perception": "CP",
    "finegrained_perception (instance-level)": "FP-S",
    "finegrained_perception (cross-instance)": "FP-C",
    "attribute_reasoning": "AR",
    "relation_reasoning": "RR",
    "logic_reasoning": "LR",
}
LEVEL_OF = {"by_l2": "l2", "by_category": "category", "by_split": "split"}
COLORS = ["#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860"]
_TARGET = "bar?"


def _tag(patch: Artist, **target: object) -> None:
    """Name what a bar stands for (run, level, group, …) in its gid, so a viewer can list the items behind it."""
    patch.set_gid(_TARGET + urlencode({k: v for k, v in target.items() if v is not None}))


def bar_target(artist: Artist) -> dict[str, Any] | None:
    """What a bar of these figures stands for: {"run": "3", "level": "l2", "group": "…", "strategy": "…"} (POPE:
    "parser", "metric"; alignment: "extractor"), or None for any other artist."""
    gid = artist.get_gid() or ""
    return dict(parse_qsl(gid[len(_TARGET) :])) if gid.startswith(_TARGET) else None


def run_label(report: RunReport) -> str:
    return f"run {report.run_id} · {short_model(report.model, 36)}"


def _groups(report: RunReport, level: str) -> dict[str, Scores]:
    return report.mcq.groups(level) if report.mcq else {}


def error_kw() -> dict[str, Any]:
    """How a bar's 95 % interval is drawn: a thin whisker with short caps in the theme's text colour (dark on the
    light charts, light on the app's dark ones: a fixed dark grey all but vanished there)."""
    import matplotlib

    return {"elinewidth": 0.9, "capsize": 2, "capthick": 0.9, "ecolor": matplotlib.rcParams["text.color"]}


def _whiskers(values: list[float], intervals: list[Interval | None], scale: float) -> list[list[float]]:
    """matplotlib's asymmetric errors ([below…], [above…]) of bars `values` (already ×scale) from their intervals; a
    bar without an interval gets none (NaN: no whisker and no cap is drawn)."""
    nan = float("nan")
    below = [nan if i is None else max(0.0, v - i.low * scale) for v, i in zip(values, intervals)]
    above = [nan if i is None else max(0.0, i.high * scale - v) for v, i in zip(values, intervals)]
    return [below, above]


def _tops(values: list[float], errors: list[list[float]]) -> list[float]:
    """Where each bar's value label goes: above its whisker, or above the bar where it has none."""
    return [v if e != e else v + e for v, e in zip(values, errors[1])]  # e != e: NaN


def ability_figure(reports: list[RunReport], level: str = "by_l2") -> Figure:
    """Grouped bars per ability: for each run, VanillaEval (light) and CircularEval (solid), plus Overall."""
    order = list(SHORT_L2)
    names = sorted(
        {name for r in reports for name in _groups(r, level)},
        key=lambda n: (order.index(n) if n in order else len(order), n),
    )
    groups = ["Overall", *names]
    fig = Figure(figsize=(min(14.0, max(6.0, 0.5 * len(groups) * (1 + len(reports)))), 4.2), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    width = 0.8 / max(1, 2 * len(reports))
    for r_i, report in enumerate(reports):
        color = COLORS[r_i % len(COLORS)]
        for s_i, (strategy, alpha) in enumerate((("vanilla", 0.45), ("circular", 1.0))):
            heights, intervals = [], []
            for g in groups:
                scores = report.mcq.overall if g == "Overall" and report.mcq else _groups(report, level).get(g)
                value = getattr(scores, strategy) if scores is not None else None
                heights.append(0.0 if value is None else value * 100)
                intervals.append(
                    getattr(scores, f"{strategy}_ci") if scores is not None and value is not None else None
                )
            offset = (2 * r_i + s_i) * width - 0.4 + width / 2
            errors = _whiskers(heights, intervals, 100)
            bars = ax.bar(
                [x + offset for x in range(len(groups))],
                heights,
                width,
                color=color,
                alpha=alpha,
                label=f"{run_label(report)} — {strategy}",
                yerr=errors,
                error_kw=error_kw(),
            )
            for bar, g in zip(bars, groups):
                _tag(
                    bar,
                    run=report.run_id,
                    level="all" if g == "Overall" else LEVEL_OF.get(level, level),
                    group=None if g == "Overall" else g,
                    strategy=strategy,
                )
            _bar_values(ax, bars, heights, crowded=len(reports) > 1, tops=_tops(heights, errors))
    ax.set_xticks(
        range(len(groups)),
        [SHORT_L2.get(g, g) for g in groups],
        rotation=0 if level == "by_l2" else 45,
        ha="center" if level == "by_l2" else "right",
    )
    ax.set_ylabel("accuracy (%), 95 % interval")  # the whiskers: Wilson, an item the unit
    ax.set_ylim(0, 125 if len(reports) > 1 else 110)  # room for upright values above the whiskers
    title = reports[0].benchmark if len({r.benchmark for r in reports}) == 1 else "runs"
    # 10 pt as the other charts' titles: at the default size it ran past a 1024-pixel window's canvas.
    ax.set_title(f"{title}: VanillaEval (light) vs CircularEval (solid)", fontsize=10)
    # Below the axes: inside, the legend would hide bars.
    _legend(
        ax,
        fontsize=8,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.12 if level == "by_l2" else -0.35),
        ncols=2,
        frameon=False,
    )
    ax.grid(axis="y", alpha=0.3)
    return fig


def open_figure(reports: list[RunReport]) -> Figure:
    """Open runs by metric (evaluator/open_metrics): horizontal bars per Overall and leaf category (names read
    level in a narrow pane), one colour per metric (runs after the first lighter); fractions in %, CIDEr beside
    them on its own axis."""
    opens = [r for r in reports if r.open is not None and r.open.metrics]
    if not opens:
        raise InvalidInput("no open metric applies to these runs (no answered item has reference answers)")
    scales: dict[str, str] = {}
    for r in opens:
        assert r.open is not None  # kept above
        scales.update(r.open.scales)
    fractions = [n for n, s in scales.items() if s == "fraction"]
    own = [n for n, s in scales.items() if s != "fraction"]
    groups = ["Overall", *sorted({g for r in opens if r.open is not None for g in r.open.by_category})]
    rows = len(groups) * max(1.0, 0.6 * len(opens) * max(1, len(fractions)) / 4)
    fig = Figure(figsize=(6.4, min(12.0, max(3.6, 1.4 + 0.5 * rows))), layout="constrained")
    FigureCanvasAgg(fig)
    if own and fractions:
        ax, cider_ax = fig.subplots(1, 2, sharey=True, width_ratios=[3, 1])
    else:
        ax, cider_ax = fig.add_subplot(), None

    def value(report: RunReport, group: str, metric: str) -> float | None:
        figures = report.open
        assert figures is not None  # kept above
        if group == "Overall":
            return figures.metrics.get(metric)
        found: float | None = figures.by_category.get(group, {}).get("metrics", {}).get(metric)
        return found

    def interval(report: RunReport, group: str, metric: str) -> Interval | None:
        figures = report.open
        assert figures is not None  # kept above
        found = figures.intervals if group == "Overall" else figures.category_intervals.get(group, {})
        return found.get(metric)

    def draw(axes: Any, metrics: list[str], percent: bool, colour_from: int) -> None:
        series = [(r_i, r, m_i, m) for r_i, r in enumerate(opens) for m_i, m in enumerate(metrics)]
        height = 0.8 / max(1, len(series))
        for s_i, (r_i, report, m_i, metric) in enumerate(series):
            widths = [(value(report, g, metric) or 0.0) * (100 if percent else 1) for g in groups]
            errors = _whiskers(widths, [interval(report, g, metric) for g in groups], 100 if percent else 1)
            bars = axes.barh(
                [y + s_i * height - 0.4 + height / 2 for y in range(len(groups))],
                widths,
                height,
                color=COLORS[(colour_from + m_i) % len(COLORS)],
                alpha=1.0 if r_i == 0 else 0.5,
                label=metric if len(opens) == 1 else f"{run_label(report)} — {metric}",
                xerr=errors,
                error_kw={**error_kw(), "capsize": 1.5},
            )
            for bar, g, w, end in zip(bars, groups, widths, _tops(widths, errors)):
                _tag(
                    bar,
                    run=report.run_id,
                    level="all" if g == "Overall" else "category",
                    group=None if g == "Overall" else g,
                    metric=metric,
                )
                axes.annotate(
                    f"{w:.0f}" if percent else f"{w:.2f}",
                    (end, bar.get_y() + bar.get_height() / 2),  # past the whisker
                    ha="left",
                    va="center",
                    fontsize=6.5,
                    xytext=(1.5, 0),
                    textcoords="offset points",
                    # Taller than a thin bar: on the axes' own colour, not on the neighbouring bar's.
                    bbox={"boxstyle": "square,pad=0.05", "fc": axes.get_facecolor(), "ec": "none"},
                )
        axes.grid(axis="x", alpha=0.3)

    first = ax if fractions else None
    if fractions:
        draw(ax, fractions, True, 0)
        ax.set_xlabel("score (%), 95 % interval")
        ax.set_xlim(0, 118)
    target = cider_ax if cider_ax is not None else (None if fractions else ax)
    if target is not None:
        draw(target, own, False, len(fractions))
        top = max(
            max(value(r, g, m) or 0.0, (i.high if (i := interval(r, g, m)) is not None else 0.0))
            for r in opens
            for g in groups
            for m in own
        )
        target.set_xlim(0, max(1.0, top * 1.3))
        target.set_xlabel("CIDEr" if fractions else "CIDEr, 95 % interval")  # its own scale (0-10)
    ax.set_yticks(range(len(groups)), groups, fontsize=8)
    ax.invert_yaxis()  # Overall on top
    handles = [h for a in (first, target) if a is not None for h in a.get_legend_handles_labels()[0]]
    labels = [lab for a in (first, target) if a is not None for lab in a.get_legend_handles_labels()[1]]
    # Above the bars, in the title's place (the chart's own title line names the runs).
    _legend(fig, handles, labels, fontsize=8, loc="outside upper center", ncols=3, frameon=False)
    return fig


_LEGEND_ARGS = "_vlmdesk_legend"  # how a legend of these figures was asked for (owner, handles, labels, options)
_ROOM = 0.96  # the share of the figure's width a legend may take (its frame and the figure's margins)


def _legend(owner: Any, handles: list[Any] | None = None, labels: list[str] | None = None, **options: Any) -> Any:
    """A legend that fit_legends may lay out again narrower: it keeps what it was asked for."""
    if handles is None or labels is None:
        handles, labels = owner.get_legend_handles_labels()
    legend = owner.legend(handles, labels, **options)
    setattr(legend, _LEGEND_ARGS, (owner, handles, labels, options))
    return legend


def fit_legends(fig: Figure) -> None:
    """Keep each legend inside the figure at its present size (a window's pane, narrower than the figure was drawn
    for): fewer columns first, then each label's first line elided in the middle — its run and what follows the
    model stay readable. Laid out anew from what was asked each time, so a wider figure gets the whole labels back."""
    legends = [legend for legend in (*fig.legends, *(ax.get_legend() for ax in fig.axes)) if legend is not None]
    legends = [legend for legend in legends if hasattr(legend, _LEGEND_ARGS)]
    if not legends:
        return
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]  # an Agg canvas (FigureCanvasAgg, QtAgg)
    room = _ROOM * fig.bbox.width
    for legend in legends:
        owner, handles, labels, options = getattr(legend, _LEGEND_ARGS)
        widest = max((len(label.split("\n", 1)[0]) for label in labels), default=0)
        tries = [(n, widest) for n in range(int(options.get("ncols", 1)), 0, -1)]
        tries += [(1, limit) for limit in range(widest - 4, 11, -4)]
        for ncols, limit in tries:
            if isinstance(owner, Figure):  # a figure's legends add up (an axes has one: a new one replaces it)
                legend.remove()
            legend = owner.legend(handles, [_shorten(label, limit) for label in labels], **{**options, "ncols": ncols})
            setattr(legend, _LEGEND_ARGS, (owner, handles, labels, options))
            if legend.get_window_extent(renderer).width <= room:
                break


def _shorten(label: str, limit: int) -> str:
    first, newline, rest = label.partition("\n")
    return elide_middle(first, limit) + newline + rest


def _bar_values(ax: Any, bars: Any, heights: list[float], *, crowded: bool, tops: list[float] | None = None) -> None:
    """Each bar's value above it (above its whisker, `tops`, when it has one); upright and smaller where several runs
    put narrow bars side by side (level text of neighbouring bars ran together, "2020")."""
    for bar, h, top in zip(bars, heights, tops or heights):
        ax.annotate(
            f"{h:.0f}",
            (bar.get_x() + bar.get_width() / 2, top),
            ha="center",
            va="bottom",
            fontsize=6.5 if crowded else 7,
            rotation=90 if crowded else 0,
            xytext=(0, 1.5),
            textcoords="offset points",
        )


def pope_figure(reports: list[RunReport]) -> Figure:
    """POPE metrics per run, under both parsers."""
    metrics = ["accuracy", "precision", "recall", "f1", "yes_ratio"]
    fig = Figure(figsize=(7.5, 4.0), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    parsers: tuple[PopeParser, ...] = ("official", "strict")
    series = [(r, parser) for r in reports for parser in parsers]
    width = 0.8 / max(1, len(series))
    for s_i, (report, parser) in enumerate(series):
        pope = report.pope
        assert pope is not None  # the caller passes POPE runs only
        values = [(getattr(pope.pope[parser], m) or 0.0) * 100 for m in metrics]
        found = pope.intervals.get(parser)  # yes_ratio has none: it is not an estimate of how right the model is
        errors = _whiskers(values, [getattr(found, m, None) if found is not None else None for m in metrics], 100)
        r_i = s_i // 2
        bars = ax.bar(
            [x + s_i * width - 0.4 + width / 2 for x in range(len(metrics))],
            values,
            width,
            color=COLORS[r_i % len(COLORS)],
            alpha=1.0 if parser == "official" else 0.5,
            label=f"{pope.setting or '-'} · {run_label(report)} — {parser}",
            yerr=errors,
            error_kw=error_kw(),
        )
        for bar, metric in zip(bars, metrics):
            _tag(bar, run=report.run_id, level="pope", parser=parser, metric=metric)
        _bar_values(ax, bars, values, crowded=len(series) > 2, tops=_tops(values, errors))
    ax.set_xticks(range(len(metrics)), metrics)
    ax.set_ylabel("%, 95 % interval")
    ax.set_title("POPE per setting (solid: official parser, light: strict)", fontsize=10)
    ax.set_ylim(0, 128 if len(series) > 2 else 114)  # room for the upright values above the whiskers
    _legend(ax, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncols=2, frameon=False)
    ax.grid(axis="y", alpha=0.3)
    return fig


def drop_figure(reports: list[RunReport]) -> Figure:
    """VanillaEval vs CircularEval overall per run, with the drop between them (MMBench's headline finding)."""
    circular = [r for r in reports if r.mcq and r.mcq.overall.circular is not None]
    if not circular:
        raise InvalidInput("VanillaEval vs CircularEval needs a CircularEval run")
    fig = Figure(figsize=(max(5.0, 1.6 * len(circular) + 2), 4.0), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for x, report in enumerate(circular):
        mcq = report.mcq
        assert mcq is not None  # kept above: runs with CircularEval figures
        vanilla, circ = (100 * (getattr(mcq.overall, k) or 0.0) for k in ("vanilla", "circular"))
        color = COLORS[x % len(COLORS)]
        for dx, strategy, value, alpha in ((-0.2, "vanilla", vanilla, 0.45), (0.2, "circular", circ, 1.0)):
            (bar,) = ax.bar(
                [x + dx],
                [value],
                0.38,
                color=color,
                alpha=alpha,
                label=("VanillaEval" if strategy == "vanilla" else "CircularEval") if x == 0 else None,
            )
            _tag(bar, run=report.run_id, level="all", strategy=strategy)
            ax.annotate(
                f"{value:.1f}",
                (x + dx, value),
                ha="center",
                va="bottom",
                fontsize=8,
                xytext=(0, 1),
                textcoords="offset points",
            )
        ax.annotate(
            f"−{vanilla - circ:.1f} pts",
            (x, max(vanilla, circ) + 7),
            ha="center",
            fontsize=9,
            color="#b3261e",
            fontweight="bold",
        )
    ax.set_xticks(range(len(circular)), [run_label(r).replace(" · ", "\n") for r in circular], fontsize=8)
    ax.set_ylim(0, 112)
    ax.set_ylabel("overall accuracy (%)")
    ax.set_title("VanillaEval vs CircularEval (light: vanilla, solid: circular)", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    return fig


def alignment_figure(report: Any, extractor: str | None = None) -> Figure:
    # report: annotation.alignment.AlignmentReport, a layer above this one (so not imported here).
    """An alignment study (annotation.alignment.AlignmentReport): per extractor the share of responses read as
    the final human label, with its Wilson 95 % interval; beside it one extractor's confusion matrix."""
    names = [n for n, e in report.extractors.items() if e.overall.n]
    fig = Figure(figsize=(10.0, 4.2), layout="constrained")
    FigureCanvasAgg(fig)
    bars_ax, matrix_ax = fig.subplots(1, 2, width_ratios=[1.15, 1])
    overall = [report.extractors[n].overall for n in names]
    rates = [100 * o.rate for o in overall]
    lows = [r - 100 * o.wilson_95[0] for r, o in zip(rates, overall)]
    highs = [100 * o.wilson_95[1] - r for r, o in zip(rates, overall)]
    bars = bars_ax.bar(
        range(len(names)),
        rates,
        0.6,
        color=[COLORS[i % len(COLORS)] for i in range(len(names))],
        yerr=[lows, highs],
        capsize=6,
        error_kw={"elinewidth": 1.2, "ecolor": "#3c4043"},
    )
    for bar, name, rate, o in zip(bars, names, rates, overall):
        _tag(bar, level="alignment", extractor=name)
        bars_ax.annotate(
            f"{rate:.1f}%\n{o.agreed}/{o.n}",
            (bar.get_x() + bar.get_width() / 2, 2),
            ha="center",
            va="bottom",
            fontsize=8,
            color="white",
            fontweight="bold",
        )
    bars_ax.set_xticks(range(len(names)), [n if len(n) <= 22 else n[:21] + "…" for n in names], fontsize=8)
    bars_ax.set_ylim(0, 105)
    bars_ax.set_ylabel("alignment with the final human label (%)")
    bars_ax.set_title(f"set {report.set_name}: {report.final.decided} decided labels (bars: Wilson 95 %)", fontsize=10)
    bars_ax.grid(axis="y", alpha=0.3)
    extractor = extractor if extractor in names else (names[0] if names else None)
    if extractor is None:
        matrix_ax.axis("off")
        # The theme's text colour, muted (a fixed grey was 2.6:1 on the app's dark charts).
        matrix_ax.text(0.5, 0.5, "no decided labels yet", ha="center", va="center", alpha=0.7)
        return fig
    conf = report.extractors[extractor].confusion
    labels, matrix = conf.labels, conf.matrix
    matrix_ax.imshow(matrix, cmap="Blues", vmin=0)
    peak = max((v for row in matrix for v in row), default=0)
    for i, row in enumerate(matrix):
        for j, v in enumerate(row):
            matrix_ax.text(
                j,
                i,
                str(v),
                ha="center",
                va="center",
                fontsize=9,
                color="white" if peak and v > peak / 2 else "#202124",
            )
    matrix_ax.set_xticks(range(len(labels)), labels, fontsize=8, rotation=45 if len(labels) > 6 else 0)
    matrix_ax.set_yticks(range(len(labels)), labels, fontsize=8)
    matrix_ax.set_xlabel(f"{extractor} said")
    matrix_ax.set_ylabel("people said")
    matrix_ax.set_title(f"confusion: {extractor}", fontsize=10)
    return fig


def leaderboard_figure(board: Leaderboard) -> Figure:
    """Arena ratings, best on top, with their bootstrap 95 % intervals as whiskers and the online Elo as a mark."""
    models = list(reversed(board.models))
    fig = Figure(figsize=(7.0, max(2.4, 0.45 * len(models) + 1.2)), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    y = list(range(len(models)))
    ratings = [m.rating for m in models]
    ax.errorbar(
        ratings,
        y,
        xerr=[[m.rating - m.lower for m in models], [m.upper - m.rating for m in models]],
        fmt="o",
        color=COLORS[0],
        ecolor=COLORS[0],
        capsize=4,
        label="Bradley–Terry (95 % bootstrap interval)",
    )
    ax.scatter([m.elo for m in models], y, marker="x", color=COLORS[1], label="online Elo", zorder=3)
    ax.set_yticks(y, [f"#{m.rank}  {short_model(m.model, 40)}  ({m.votes})" for m in models], fontsize=8)
    ax.axvline(1000, color="grey", linewidth=0.8, alpha=0.5)
    ax.set_xlabel("rating")
    ax.set_title(f"Arena leaderboard — {board.battles} votes, {board.rounds} bootstrap rounds", fontsize=10)
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(axis="x", alpha=0.3)
    return fig


def win_rate_figure(models: list[str], matrix: list[list[float | None]]) -> Figure:
    """The pairwise win-rate matrix: row model's share of its non-tied votes against the column model."""
    import numpy as np

    n = len(models)
    fig = Figure(figsize=(max(4.0, 0.8 * n + 2.5), max(3.2, 0.7 * n + 1.8)), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    values = np.array([[np.nan if v is None else v for v in row] for row in matrix], dtype=float).reshape(n, n)
    image = ax.imshow(values, cmap="RdBu", vmin=0.0, vmax=1.0)
    for i in range(n):
        for j in range(n):
            if not np.isnan(values[i, j]):
                ax.text(j, i, f"{values[i, j]:.2f}", ha="center", va="center", fontsize=8)
    labels = [short_model(m, 40) for m in models]
    ax.set_xticks(range(n), labels, rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(n), labels, fontsize=8)
    ax.set_xlabel("model B")
    ax.set_ylabel("model A")
    ax.set_title("share of A's non-tied votes against B won by A", fontsize=10)
    fig.colorbar(image, ax=ax, shrink=0.8)
    return fig


def save_figure(fig: Figure, path: str | Path) -> Path:
    path = Path(path)
    if path.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise InvalidInput(f"{path}: plot files end in .png, .svg or .pdf")
    fit_legends(fig)
    with AtomicOutput(path, binary=True) as f:  # evaluator/formats/outfiles.py's rule
        fig.savefig(f, dpi=150, format=path.suffix.lower()[1:])
    return path


# --- ChEF's desiderata (evaluator/analysis/desiderata.py) -------------------------------------------------------------


def reliability_figure(calibration: Any, title: str = "") -> Figure:
    # calibration: evaluator.analysis.desiderata_metrics.Calibration
    """A reliability diagram: per bin, accuracy against mean confidence (bars at the bin's mean confidence, width
    by its share of the items), the diagonal of perfect calibration, and the ECE."""
    fig = Figure(figsize=(7.0, 4.6), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.plot([0, 1], [0, 1], "--", color="#80868b", linewidth=1, label="perfect calibration")
    bins = calibration.bins
    if bins:
        xs = [b.confidence for b in bins]
        bars = ax.bar(xs, [b.accuracy for b in bins], 0.028, color=COLORS[0], alpha=0.85, label="accuracy per bin")
        for bar, b in zip(bars, bins):
            ax.annotate(
                str(b.count),
                (bar.get_x() + bar.get_width() / 2, b.accuracy),
                ha="center",
                va="bottom",
                fontsize=7,
                xytext=(0, 1),
                textcoords="offset points",
            )
        # The gap each bin adds to the ECE: from its accuracy to its mean confidence.
        ax.vlines(xs, [b.accuracy for b in bins], xs, color=COLORS[3], linewidth=2, alpha=0.7, label="gap")
    ece_text = "—" if calibration.ece is None else f"{calibration.ece:.4f}"
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1.08)
    ax.set_xlabel("confidence (mean of the bin)")
    ax.set_ylabel("accuracy")
    ax.set_title(
        f"{title + ': ' if title else ''}ECE {ece_text} ({calibration.binning}, n = {calibration.n})", fontsize=10
    )
    # Beside the axes: inside, it would hide bins.
    _legend(
        ax, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="counts above the bars", title_fontsize=7
    )
    ax.grid(alpha=0.3)
    return fig


def _radar(
    title: str, names: list[str], ticks: list[str], series: list[tuple[str, list[float | None]]], top: float
) -> Figure:
    """One radar: an axis per name (labelled by `ticks`), a closed line per (label, values) of `series`, on 0..top
    (at least; a value None is drawn at 0 and its axis's name listed as n/a in the series' legend entry)."""
    from math import pi

    fig = Figure(figsize=(6.4, 5.4), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(projection="polar")
    angles = [2 * pi * i / len(names) for i in range(len(names))]
    for m_i, (name, values) in enumerate(series):
        shown = [max(0.0, v) if v is not None else 0.0 for v in values]
        top = max(top, *shown)
        gaps = [a.lower() for a, v in zip(names, values) if v is None]
        name = short_model(name, 40)
        # Wrapped: on one line six missing dimensions ran past a 1024-pixel-wide window's figure. Several models:
        # only how many (the report beside names them), else their lists took the figure from the radar.
        if gaps and len(series) > 2:
            label = f"{name} (n/a: {len(gaps)} of {len(names)})"
        else:
            label = name + ("\n" + textwrap.fill(f"(n/a: {', '.join(gaps)})", 60) if gaps else "")
        color = COLORS[m_i % len(COLORS)]
        ax.plot([*angles, angles[0]], [*shown, shown[0]], color=color, linewidth=1.6, marker="o", ms=3, label=label)
        ax.fill([*angles, angles[0]], [*shown, shown[0]], color=color, alpha=0.12)
    ax.set_xticks(angles, ticks, fontsize=8)
    ax.tick_params(axis="x", pad=7)  # the axis names clear of the outer circle
    ax.set_ylim(0, top * 1.05)
    ax.tick_params(axis="y", labelsize=7)
    ax.set_title(title, fontsize=10)
    if series:  # no series: an empty legend warns on stderr
        # Below the axis names (two lines each), not over the bottom ones.
        _legend(ax, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.1), frameon=False)
    return fig


def radar_figure(report: Any) -> Figure:
    # report: evaluator.analysis.desiderata.DesiderataReport
    """ChEF's figure: the six desiderata of each model on one radar, each on a 0-100 scale where higher is better
    (a dimension that cannot be computed is drawn at 0 and named in the legend)."""
    from evaluator.analysis.desiderata import DIMENSIONS, TITLES

    series = [(m.model, [m.dimensions[d].radar for d in DIMENSIONS]) for m in report.models]
    names = [TITLES[d] for d in DIMENSIONS]
    return _radar(
        "Desiderata (0-100, higher is better)", names, [n.replace(" ", "\n", 1) for n in names], series, 100.0
    )


def groups_radar_figure(report: Any) -> Figure:
    # report: evaluator.analysis.groups.GroupsReport
    """LVLM-eHub's six capability groups of each model on one radar (0-100: the mean headline figure of the
    group's benchmarks, × 100); a group the model ran no benchmark of is drawn at 0 and named in the legend."""
    from evaluator.analysis.groups import GROUPS

    if not report.models:
        raise InvalidInput("no model has a counted run on a tagged benchmark: nothing to draw")
    series = [(m.model, [None if g.value is None else 100 * g.value for g in m.groups]) for m in report.models]
    names = list(GROUPS.values())
    ticks = [t.replace(" ", "\n", 1) for t in names]
    if len(report.models) == 1:  # one model: how many benchmarks each group's figure averages, on its axis
        ticks = [f"{t}\n(n={len(g.entries)})" for t, g in zip(ticks, report.models[0].groups)]
    mcq = "CircularEval" if report.mcq_figure == "circular" else "VanillaEval"
    pope = "F1" if report.pope_figure == "f1" else "accuracy"
    title = f"Capability groups (LVLM-eHub), 0-100\n{mcq} accuracy · POPE {pope} · open answers: {report.open_figure}"
    return _radar(title, names, ticks, series, 100.0)


def robustness_figure(report: Any) -> Figure:
    # report: evaluator.analysis.desiderata.DesiderataReport
    """RRM per corruption and severity: one group of bars per corruption (kind and name; runs that combine several
    are one group), a bar per severity, for every model; the line at 100 is no loss."""
    rows: list[tuple[str, str, str, float]] = []  # model, corruption, severity, RRM
    for model in report.models:
        for e in model.dimensions["robustness"].entries:
            if e["rrm"] is None:
                continue
            parts = [c.split(":") for c in e["corrupt"]]
            name = " + ".join(":".join(p[:2]) for p in parts)
            severity = "/".join(p[2] for p in parts if len(p) > 2) or "–"  # a text corruption may have none
            rows.append((model.model, name, severity, e["rrm"]))
    if not rows:
        raise InvalidInput("no corrupted run with its plain run among these: nothing to draw")
    corruptions = sorted({r[1] for r in rows})
    models = sorted({r[0] for r in rows})
    widest = max(sum(1 for r in rows if r[1] == c) for c in corruptions)
    width = 0.8 / widest
    fig = Figure(figsize=(min(12.0, max(7.0, 0.45 * len(rows) + 3.5)), 4.6), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for c_i, corruption in enumerate(corruptions):
        # Only the (model, severity) pairs this corruption has, side by side: no empty slots.
        present = sorted((r for r in rows if r[1] == corruption), key=lambda r: (models.index(r[0]), r[2]))
        for b_i, (model, _, severity, value) in enumerate(present):
            x = c_i + (b_i - (len(present) - 1) / 2) * width
            (bar,) = ax.bar([x], [value], width * 0.92, color=COLORS[models.index(model) % len(COLORS)])
            ax.annotate(
                f"{value:.0f}",
                (x, max(value, 0)),
                ha="center",
                va="bottom",
                fontsize=7,
                xytext=(0, 1),
                textcoords="offset points",
            )
            ax.annotate(severity, (x, 0), ha="center", va="top", fontsize=7, xytext=(0, -2), textcoords="offset points")
    for m_i, model in enumerate(models):
        ax.bar([0], [0], 0, color=COLORS[m_i % len(COLORS)], label=short_model(model, 40))
    ax.axhline(100, color="#80868b", linewidth=1, linestyle="--")
    # A combined corruption's parts one per line, so long names never run into their neighbours.
    labels = [c.replace(" + ", "\n+ ") for c in corruptions]
    ax.set_xticks(range(len(corruptions)), labels, fontsize=8, rotation=20, ha="right", rotation_mode="anchor")
    values = [r[3] for r in rows]
    ax.set_ylim(min(0.0, min(values) * 1.1), max(100.0, max(values)) * 1.12)  # room for the values over the bars
    ax.tick_params(axis="x", pad=14)  # room for the severities under the bars
    ax.set_ylabel("RRM (100 = no loss, 0 = chance)")
    ax.set_title("Robustness: RRM per corruption and severity", fontsize=10)
    ax.set_xlabel("corruption (its severity under each bar)", fontsize=8)
    _legend(ax, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the plot, never over a bar
    ax.grid(axis="y", alpha=0.3)
    return fig
