"""Suites of runs from a plan file: `vlmdesk run --plan PLAN` and `vlmdesk report --plan PLAN` (docs/guide/suites.md).

evaluator/formats/plan_file.py reads the file and checks its shape; here each of its runs becomes the command line of
an ordinary `vlmdesk run` (`--bench B --model M` and the settings: true → the flag, false → nothing, a number or a
text → `--flag value`, a list → the flag once per value), parsed by the run command's own parser and checked by
`requested_run` — every run of the plan before any is started, so a bad plan stores nothing. A plan's runs are
ordinary runs: found again by their identity (evaluator.engine.launch.stored_run), so a finished one is skipped and
an interrupted one continues from its stored passes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from db.workspace import Workspace
    from evaluator.formats.plan_file import Plan, PlanEntry
    from vlmdesk.cmd_run import RequestedRun

# run's options that are the command's, not a run's settings: what to run (--bench, --model: the plan's models and
# benchmarks; --resume, --plan), how to report (--json, --json-progress) and --new (a plan's rerun continues its runs).
NOT_SETTINGS = frozenset({"help", "plan", "resume", "new", "json", "json_progress", "workspace", "read_only", "bench",
                          "model"})  # fmt: skip


@dataclass(frozen=True)
class RunOption:
    """One `vlmdesk run` option a plan may set: its flag, and how a value becomes arguments ("switch": true or
    false; "value": one value; "values": the flag repeated per value)."""

    flag: str
    kind: str
    choices: tuple[str, ...] | None


def run_parser() -> argparse.ArgumentParser:
    """The `vlmdesk run` command's own parser (vlmdesk/cli.py builds it; only run's options are filled in)."""
    from vlmdesk.cli import build_parser

    parser = build_parser(lazy=True)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    fill = sub.unfilled.pop("run", None)  # type: ignore[attr-defined]
    if fill is not None:
        fill()
    found: argparse.ArgumentParser = sub.choices["run"]
    return found


def run_options(parser: argparse.ArgumentParser) -> dict[str, RunOption]:
    """Every option of `parser` a plan may set, by its name with underscores (max_new_tokens)."""
    found = {}
    for action in parser._actions:
        longs = [s for s in action.option_strings if s.startswith("--")]
        if not longs or action.dest in NOT_SETTINGS:
            continue
        if isinstance(action, argparse._StoreTrueAction):
            kind = "switch"
        elif isinstance(action, argparse._AppendAction):
            kind = "values"
        else:
            kind = "value"
        choices = tuple(str(c) for c in action.choices) if action.choices else None
        found[longs[0][2:].replace("-", "_")] = RunOption(longs[0], kind, choices)
    return found


class _ArgumentError(Exception):
    pass


def _raise(message: str):
    raise _ArgumentError(message)


@dataclass(frozen=True)
class PlannedRun:
    """One run of a plan, checked: its `vlmdesk run` arguments, parsed, and what they ask for."""

    entry: PlanEntry
    argv: tuple[str, ...]  # after `vlmdesk run`
    args: argparse.Namespace
    asked: RequestedRun

    @property
    def title(self) -> str:
        return f"{self.entry.model.label} on {self.entry.benchmark.name}"


def entry_argv(entry: PlanEntry, options: dict[str, RunOption], file: str) -> list[str]:
    """The `vlmdesk run` arguments of one run of a plan (InputError naming the setting for a key that is not a run
    option or a value of the wrong kind)."""
    from evaluator.formats.importers.common import InputError
    from evaluator.formats.plan_file import did_you_mean

    argv = ["--bench", entry.benchmark.name, "--model", entry.model.spec]
    for s in entry.settings:
        option = options.get(s.key)
        if option is None:
            why = (
                "a plan's models and benchmarks say what to run"
                if s.key in NOT_SETTINGS
                else "not a vlmdesk run option"
            )
            raise InputError(file, s.line, s.field, why + did_you_mean(s.key, list(options)))
        values = s.value if isinstance(s.value, list) else [s.value]
        if option.kind == "switch":
            if not isinstance(s.value, bool):
                raise InputError(file, s.line, s.field, f"{option.flag} is a switch: true or false")
            argv += [option.flag] if s.value else []
            continue
        if isinstance(s.value, bool):
            raise InputError(file, s.line, s.field, f"{option.flag} takes a value, not true/false")
        if isinstance(s.value, list) and option.kind != "values":
            raise InputError(file, s.line, s.field, f"{option.flag} takes one value, not a list")
        for v in values:
            text = str(v)
            if option.choices is not None and text not in option.choices:
                raise InputError(file, s.line, s.field, f"{text[:80]!r} is not one of {', '.join(option.choices)}")
            argv += [option.flag, text]
    return argv


def check_plan(ws: Workspace, plan: Plan) -> list[PlannedRun]:
    """Every run of the plan as `vlmdesk run` would take it, each checked before any is started (InputError naming
    the file, the line and the field of the first problem). Nothing is stored or loaded."""
    from db.errors import UserError
    from evaluator.engine.launch import resolve_model
    from evaluator.engine.runner import sampling_refusal
    from evaluator.formats.importers.common import InputError
    from evaluator.scoring.llm_extraction import parse_extractor_spec
    from vlmdesk.cli import UsageError
    from vlmdesk.cmd_data import bench_or_fail
    from vlmdesk.cmd_run import requested_run

    parser = run_parser()
    options = run_options(parser)
    parser.error = _raise  # type: ignore[method-assign]  # a bad value is the plan's error, with its line
    found = []
    checked_benches: set[str] = set()
    checked_models: set[str] = set()
    for entry in plan.entries():
        bench, model = entry.benchmark, entry.model
        try:
            if bench.name not in checked_benches:
                bench_or_fail(ws, bench.name)
                checked_benches.add(bench.name)
        except UserError as exc:
            raise InputError(plan.file, bench.name_line, bench.name_field, str(exc)) from None
        try:
            if model.spec not in checked_models:
                resolve_model(ws, model.spec)
                checked_models.add(model.spec)
        except UserError as exc:
            raise InputError(plan.file, model.spec_line, model.spec_field, str(exc)) from None
        argv = entry_argv(entry, options, plan.file)
        try:
            args = parser.parse_args(argv)
        except _ArgumentError as exc:
            raise _blame(plan, entry, options, " ".join(str(exc).split())) from None
        try:
            asked = requested_run(ws, args, notes=False)
            asked.settings.check()
            parse_extractor_spec(asked.settings.extractor)
            if (refused := sampling_refusal(asked.spec, asked.settings, getattr(args, "samples", 1))) is not None:
                raise UsageError(refused)  # it names --samples: blamed on that setting below
        except (UserError, ValueError) as exc:
            raise _blame(plan, entry, options, str(exc)) from None
        found.append(PlannedRun(entry, tuple(argv), args, asked))
    return found


def _blame(plan: Plan, entry: PlanEntry, options: dict[str, RunOption], message: str):
    """The InputError for a message about one run of the plan: at the setting whose flag it names, else at the
    model (the run as a whole: `model[1] × benchmark[2]`)."""
    from evaluator.formats.importers.common import InputError

    for s in entry.settings:
        option = options.get(s.key)
        if option is not None and (option.flag in message or f"{s.key}:" in message):
            return InputError(plan.file, s.line, s.field, message)
    where = f"{entry.model.field} × {entry.benchmark.field}"
    return InputError(plan.file, entry.model.line, where, message)


def read_checked(ws: Workspace, path: str) -> tuple[Plan, list[PlannedRun]]:
    from evaluator.formats.plan_file import read_plan

    plan = read_plan(path)
    return plan, check_plan(ws, plan)


def stored_runs_of(ws: Workspace, planned: PlannedRun) -> list:
    """The stored runs that are this planned run (found by their identity: benchmark, model, settings, template),
    None for one never started: one run, or K with `samples = K` (sample s of its group)."""
    from dataclasses import replace

    from evaluator.engine.launch import stored_run

    a = planned.asked
    samples = getattr(planned.args, "samples", 1)
    return [stored_run(ws, a.bench, a.spec, replace(a.settings, sample=s) if s else a.settings, a.template)
            for s in range(samples)]  # fmt: skip


def finished(found: list) -> bool:
    return all(r is not None and r.status == "finished" for r in found)


def _refuse_run_options(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """--plan comes alone: the file gives every run's settings (--json, --json-progress and --workspace aside)."""
    from vlmdesk.cli import UsageError

    for action in parser._actions:
        if not action.option_strings or action.dest in ("help", "plan", "json", "json_progress"):
            continue
        if action.dest in ("workspace", "read_only"):
            continue
        if getattr(args, action.dest, action.default) != action.default:
            raise UsageError(f"--plan takes every run's settings from the file: leave out {action.option_strings[-1]}")


def cmd_run_plan(args: argparse.Namespace) -> int:
    """`vlmdesk run --plan PLAN`: each run of the plan in order; a finished one is skipped, the others run (or
    continue) as `vlmdesk run` would run them. A cancel stops the plan at once (exit 130)."""
    from db.errors import UserError
    from db.platform_io import cancel_interrupts
    from vlmdesk.cli import INTERRUPTED, open_from_args
    from vlmdesk.cmd_run import cmd_run

    _refuse_run_options(args, run_parser())
    with open_from_args(args) as ws:
        plan, planned = read_checked(ws, args.plan)
        stored = [stored_runs_of(ws, p) for p in planned]
    done = sum(1 for found in stored if finished(found))
    print(f"plan {args.plan}: {len(planned)} runs, {done} finished, {len(planned) - done} to run", file=sys.stderr)
    outcome: list[dict[str, Any]] = []
    failed = 0
    resume = f"continue with: vlmdesk run --plan {args.plan}"
    with cancel_interrupts():  # a cancel between two runs stops the plan too
        try:
            for n, (p, found) in enumerate(zip(planned, stored, strict=True), 1):
                head = f"plan {n}/{len(planned)}: {p.title}"
                if finished(found):
                    ids = ", ".join(str(r.id) for r in found)
                    print(f"{head}: run {ids} already finished", file=sys.stderr)
                    outcome.append(_outcome(p, found[0].id, "skipped"))
                    continue
                print(f"{head}: vlmdesk run {' '.join(p.argv)}", file=sys.stderr, flush=True)
                one = argparse.Namespace(**vars(p.args))
                one.command, one.json, one.json_progress = "run", False, args.json_progress
                for key in ("workspace", "read_only"):
                    if hasattr(args, key):
                        setattr(one, key, getattr(args, key))
                # With --json the plan's stdout is its summary alone: each run's id goes to stderr.
                quiet = contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext()
                try:
                    with quiet:
                        code = cmd_run(one)
                except UserError as exc:
                    print(f"error: {head}: {exc}", file=sys.stderr)
                    code = 1
                run_id = _run_id(args, p)
                if code == INTERRUPTED:
                    print(f"plan interrupted; {resume}", file=sys.stderr)
                    return INTERRUPTED
                failed += code != 0
                outcome.append(_outcome(p, run_id, "finished" if code == 0 else "failed"))
        except KeyboardInterrupt:
            print(f"plan interrupted; {resume}", file=sys.stderr)
            return INTERRUPTED
    if args.json:
        print(json.dumps({"plan": args.plan, "runs": outcome}, ensure_ascii=False))
    if failed:
        print(f"{failed} run(s) of the plan did not finish; {resume}", file=sys.stderr)
        return 1
    return 0


def _outcome(p: PlannedRun, run_id: int | None, what: str) -> dict[str, Any]:
    return {"model": p.entry.model.label, "benchmark": p.entry.benchmark.name, "run_id": run_id, "outcome": what}


def _run_id(args: argparse.Namespace, p: PlannedRun) -> int | None:
    from vlmdesk.cli import open_from_args

    with open_from_args(args) as ws:
        run = stored_runs_of(ws, p)[0]
    return run.id if run is not None else None


def cmd_report_plan(args: argparse.Namespace) -> int:
    """`vlmdesk report --plan PLAN`: the suite table (text, --json, --csv FILE)."""
    from evaluator.analysis.suite import SuiteCell, format_suite, suite_table, write_suite_csv
    from vlmdesk.cli import UsageError, open_from_args, output_file

    if args.run_ids or args.groups or args.plot or args.scoring or args.model is not None:
        raise UsageError("--plan reads the plan's runs itself: leave out RUN_ID, --groups, --model, --scoring, --plot")
    csv_path = output_file(args.csv) if args.csv else None
    with open_from_args(args) as ws:
        plan, planned = read_checked(ws, args.plan)
        cells = []
        for p in planned:
            run = stored_runs_of(ws, p)[0]  # with samples = K, sample 0: its report carries the group's mean@K
            cells.append(
                SuiteCell(p.entry.model.label, p.entry.benchmark.name, run.id if run else None, ("run", *p.argv))
            )
        table = suite_table(ws, [m.label for m in plan.models], [b.name for b in plan.benchmarks], cells)
    if csv_path is not None:
        try:
            write_suite_csv(table, csv_path)
        except OSError as exc:
            raise UsageError(f"{args.csv}: {exc.strerror or exc}") from None
    if args.json:
        print(json.dumps({"plan": args.plan, **table.to_json()}, ensure_ascii=False))
        return 0
    print(format_suite(table))
    if csv_path is not None:
        print(f"suite table written to {args.csv}")
    return 0
