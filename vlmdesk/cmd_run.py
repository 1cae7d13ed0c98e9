"""Commands over evaluation runs: run, runs, report."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vlmdesk.args import int_in, model_spec, positive_int, record_id, rounds, seed

if TYPE_CHECKING:
    from db import runs
    from db.catalog import Benchmark
    from evaluator.analysis.report import OpenFigures, RunReport
    from evaluator.engine.launch import Launch
    from evaluator.engine.progress import Progress, WaitEvent
    from evaluator.engine.prompts import PromptTemplate
    from evaluator.engine.runner import RunSettings


def register_run(add) -> None:
    # run's help texts read the backend and extractor registries: imported here, not for `runs` and `report`
    from db.runs import ROUNDS_MAX, SAMPLES_MAX
    from evaluator.engine.runner import MAX_NEW_TOKENS
    from evaluator.engine.variants import COT_MAX_NEW_TOKENS
    from evaluator.scoring.choices import CHEF_COT_MAX_NEW_TOKENS, LIKELIHOOD_SCORES
    from evaluator.scoring.llm_extraction import extractor_help
    from evaluator.types import MCQ_STRATEGIES
    from vlmdesk.cli import model_specs_help
    from vlmdesk.run_variants import add_variant_arguments

    p = add(
        description="Run a model on a benchmark. Multiple choice: CircularEval by default (pass k rotates the "
        "options by k; an item counts only if every pass is right; pass 0 is VanillaEval, reported "
        "from the same run; a wrong pass ends the item). Yes/no (POPE) benchmarks take one pass. "
        "Every pass is stored; rerunning the same command continues an interrupted run.\n\n" + model_specs_help(),
        examples="""
                vlmdesk run --bench demo --model baseline:random
                vlmdesk run --bench mmbench-dev-en --model hf:llava-hf/llava-1.5-7b-hf --batch-size 16
                vlmdesk run --bench mmbench-dev-en --model 'openai:Qwen2-VL-7B@http://localhost:8000/v1'
                vlmdesk run --bench demo --model hf:./my-model --strategy vanilla --limit 10 --json
                vlmdesk run --bench demo --model hf:./my-model --likelihood-score prefix
                vlmdesk run --bench demo --model hf:./my-model --likelihood-score chef --strategy vanilla
                vlmdesk run --bench demo --model baseline:random --label-map natural:0
                vlmdesk run --bench demo --model hf:./my-model --corrupt image:gaussian_noise:3 --corrupt text:mild_mix
                vlmdesk run --bench demo --model hf:./my-model --shots 2 --shot-selection similar --cot
                vlmdesk run --bench demo --model hf:./my-vlm --multi-turn 'openai:gpt-4o-mini' --rounds 4
                vlmdesk run --bench MMBench_DEV_EN --model hf:Qwen/Qwen2-VL-2B-Instruct --prompt vlmevalkit
                vlmdesk run --bench demo --model 'openai:Qwen2-VL@http://localhost:8000/v1' --prompt vlmevalkit:qwen2_vl
                vlmdesk run --bench demo --model 'openai:m@http://localhost:8000/v1?temperature=0.7' --samples 4
                vlmdesk run --resume 7
                vlmdesk run --plan suite.toml""",
    )
    p.add_argument("--bench", help="benchmark name (vlmdesk benchmarks)")
    p.add_argument("--model", help="model spec (hf:PATH, openai:MODEL@URL, baseline:random) or a saved model's name")
    p.add_argument(
        "--strategy",
        choices=MCQ_STRATEGIES,
        default="circular",
        help="circular (default) or vanilla (pass 0 only); ignored for yes/no benchmarks",
    )
    p.add_argument(
        "--full-passes", action="store_true", help="ask every pass even after a wrong one (measures answer consistency)"
    )
    p.add_argument("--limit", type=positive_int, help="only the first N items of the benchmark")
    p.add_argument(
        "--batch-size",
        type=positive_int,
        help="prompts per model call (default 8; hf: models on a GPU then choose their own batch size)",
    )
    p.add_argument(
        "--max-new-tokens",
        type=int_in(1, MAX_NEW_TOKENS, "a number of tokens"),
        default=None,
        help=f"generation length, thought and answer together (default 32; {COT_MAX_NEW_TOKENS} with --cot; "
        f"{CHEF_COT_MAX_NEW_TOKENS} for --likelihood-score chef's chain of thought; 256 on open benchmarks, whose free "
        f"answers the arena compares; at most {MAX_NEW_TOKENS:,}: a thinking model wants thousands, e.g. 16384). A "
        "pass the budget cuts off is counted truncated in the report, never retried",
    )
    thinking = p.add_argument_group("thinking models and the chat (docs/guide/thinking-models.md)")
    thinking.add_argument(
        "--reasoning",
        default="auto",
        metavar="auto|off|OPEN,CLOSE",
        help="how a pass's thought is told from its answer: auto (default) takes the thought a server gives apart "
        "(reasoning_content) and splits <think>…</think> or text before a lone </think>; off keeps the text whole; "
        "OPEN,CLOSE splits another tag pair. Only the answer is read, scored and shown blind; the thought is kept",
    )
    thinking.add_argument(
        "--system",
        metavar="TEXT|FILE",
        help="a system prompt sent before every question: the text, or a file holding it (at most 64 KiB); a "
        "--prompt vlmevalkit preset brings its family's own unless this is given",
    )
    thinking.add_argument(
        "--chat-template-kwargs",
        metavar="JSON",
        help="keyword arguments for the model's chat template, e.g. '{\"enable_thinking\": true}' (sent to a server "
        "as chat_template_kwargs, given to a local model's template)",
    )
    thinking.add_argument(
        "--thinking-budget",
        type=int_in(1, MAX_NEW_TOKENS, "a number of tokens"),
        metavar="N",
        help="the most tokens the thought may take, below --max-new-tokens (servers that bound it apart: vLLM's "
        "thinking_token_budget; refused by backends that cannot)",
    )
    p.add_argument("--text-only", action="store_true", help="withhold the image (quality control, baselines)")
    p.add_argument(
        "--likelihood",
        action="store_true",
        help="choose by the log-likelihood of each option letter (Yes/No for POPE) instead of generating",
    )
    p.add_argument(
        "--likelihood-score",
        choices=LIKELIHOOD_SCORES,
        help="likelihood mode's score: sum (default: summed log-prob of the bare letter or Yes/No, no chain of "
        "thought), prefix (LVLM-eHub: softmax of 1/loss of each option text's first token) or chef (ChEF's "
        "calibration recipe, multiple choice: a chain of thought first, then the mean token log-prob of each "
        'candidate "(A" after ChEF\'s answer sentence; the score for calibration runs); prefix and chef imply '
        f"--likelihood; chef's thought is {CHEF_COT_MAX_NEW_TOKENS} tokens unless --max-new-tokens",
    )
    p.add_argument(
        "--no-share-prefix",
        action="store_true",
        help="hf: models: prefill every prompt whole instead of sharing each item's prefix across its rotations "
        "(answers are the same; to compare speed — a run of its own, as the spec gets share_prefix=0)",
    )
    p.add_argument(
        "--prompt",
        metavar="PRESET|FILE",
        help="the prompt: vlmdesk (default: vlmdesk's templates), vlmevalkit (the prompt VLMEvalKit builds for the "
        "model's family, read from an hf: model's config.json; the dataset's own for openai: servers and unknown "
        "families), vlmevalkit:MODEL_TYPE (that family's, e.g. vlmevalkit:qwen2_vl), or a template file: text with "
        "{hint} {question} {options} {letters}, or JSON {en:…, zh:…}. The preset is part of the run's identity "
        "(see docs/reproducing.md)",
    )
    p.add_argument("--prompt-template", metavar="FILE", help="a template file (the same as --prompt FILE)")
    p.add_argument("--seed", type=seed, default=0, help="seed for baseline:random (default 0; 0..2**32-1)")
    p.add_argument(
        "--extractor",
        default="rules",
        metavar="SPEC",
        help=f"how free-text answers become a choice: {extractor_help()} (default rules; see "
        "docs/extraction-and-alignment.md)",
    )
    add_variant_arguments(p)
    p.add_argument(
        "--multi-turn",
        type=model_spec,
        metavar="LLM_SPEC",
        help="multi-turn reasoning (LVLM-eHub): this LLM (a model spec or a saved model's name) asks the model "
        "sub-questions about the image, then answers; every turn is stored with the pass (multiple-choice "
        "benchmarks)",
    )
    p.add_argument(
        "--rounds",
        type=rounds,
        help=f"with --multi-turn: at most N rounds of sub-questions (default 4; 1..{ROUNDS_MAX}); the last one "
        "forces an answer",
    )
    p.add_argument(
        "--servers",
        metavar="FILE",
        help="an openai: model served by several replicas: one base URL per line, each optionally followed by its "
        "concurrency (http://node1:8000/v1 32); requests go to the replica with the fewest in flight, a failing "
        "one is set aside and retried later. Replicas do not name the run: with --resume, the run continues on "
        "these servers (docs/guide/servers.md, Scaling past one GPU)",
    )
    p.add_argument(
        "--samples",
        type=int_in(1, SAMPLES_MAX, "a number of samples"),
        default=1,
        metavar="K",
        help=f"K samples per item and question rotation (1..{SAMPLES_MAX}; default 1): K runs, one after another, "
        "sample s sampling with --seed + s; sample 0 is the plain run. Needs sampling (the spec's temperature > 0, no "
        "seed= of its own). The report gives mean@K and pass@k (docs/guide/runs.md, K samples per item); rerunning "
        "asks only what is missing",
    )
    p.add_argument("--resume", type=record_id, metavar="RUN_ID", help="continue this run with its stored settings")
    p.add_argument(
        "--plan",
        metavar="PLAN",
        help="run a suite: each model × benchmark of a plan file (.toml or .yaml: models, benchmarks, settings) as an "
        "ordinary run, in order; all are checked first, finished ones are skipped, interrupted ones continue "
        "(docs/guide/suites.md)",
    )
    p.add_argument("--new", action="store_true", help="start a new run even if one with these settings exists")
    p.add_argument("--json-progress", action="store_true", help="one JSON object per line on stdout, no bar")
    p.add_argument(
        "--json", action="store_true", help='print {"run_id": …} at the end (with --samples: and "run_ids", by sample)'
    )
    p.set_defaults(handler=cmd_run)


def register_runs(add) -> None:
    p = add(
        description="List runs: id, benchmark, model, strategy, status, passes stored.",
        examples="""
                vlmdesk runs
                vlmdesk runs --json""",
    )
    p.add_argument("--json", action="store_true", help="print a JSON array")
    p.add_argument(
        "--scores",
        action="store_true",
        help="add the overall figures and the duration (the app's runs list); slower on big workspaces",
    )
    p.set_defaults(handler=cmd_runs)


def register_report(add) -> None:
    p = add(
        description="Scores computed from the stored passes: VanillaEval and CircularEval side by side, per L2 "
        "ability, leaf category and split; undecided answers; model calls. POPE runs give accuracy, "
        "precision, recall, F1 and yes-ratio under the official and the strict parser. Open runs give each "
        "open metric that applies (exact_match, word_match, vqa_accuracy, anls, cider), overall and per leaf "
        "category; items without reference answers are left out and counted. Every figure comes with its 95 % "
        "interval (text, --json, the chart's error bars): Wilson for accuracies, an item being the unit (a circular "
        "item's passes are one); a seeded percentile bootstrap over items for POPE's F1 and graded metrics; the "
        "benchmark's official figure with its own (docs/guide/results.md, Intervals). Two runs: vlmdesk compare.",
        examples="""
                vlmdesk report 3
                vlmdesk report 3 --json
                vlmdesk report 3 4 --plot abilities.png
                vlmdesk report --groups
                vlmdesk report --groups --model llava-7b --plot radar.png
                vlmdesk report --plan suite.toml
                vlmdesk report --plan suite.yaml --csv suite.csv""",
    )
    p.add_argument("run_ids", type=record_id, nargs="*", metavar="RUN_ID", help="one or more runs (vlmdesk runs)")
    p.add_argument(
        "--groups",
        action="store_true",
        help="instead of runs: each model's figure per capability group (LVLM-eHub's six; vlmdesk benchmarks tag): "
        "the mean over the group's benchmarks of the model's latest finished plain run's headline figure there "
        "(CircularEval accuracy, POPE F1, open answers: word match); --plot draws the radar",
    )
    p.add_argument("--model", metavar="SPEC", help="--groups: only this model (a saved model's name or a spec)")
    p.add_argument(
        "--mcq-figure",
        choices=("circular", "vanilla"),
        default="circular",
        help="--groups: a multiple-choice benchmark's figure (default circular: CircularEval runs only)",
    )
    p.add_argument(
        "--open-figure",
        metavar="METRIC",
        default="word_match",
        help="--groups: an open benchmark's figure, an open metric scored as a fraction (default word_match, "
        "LVLM-eHub's; exact_match, vqa_accuracy, anls)",
    )
    p.add_argument(
        "--pope-figure",
        choices=("f1", "accuracy"),
        default="f1",
        help="--groups: a POPE benchmark's figure, official parser (default f1)",
    )
    p.add_argument(
        "--scoring",
        metavar="NAME",
        help="report a stored re-scoring (vlmdesk rescore) instead of the run's own: e.g. rules, rules+llm:SPEC, human",
    )
    p.add_argument(
        "--plan",
        metavar="PLAN",
        help="instead of runs: the suite table of a plan file (models × benchmarks: each benchmark's official figure, "
        "else its headline one, with its 95 %% interval, and each model's average as the OpenVLM leaderboard "
        "averages; docs/guide/suites.md)",
    )
    p.add_argument("--csv", metavar="FILE", help="--plan: also write the suite table as CSV (a row per cell)")
    p.add_argument("--json", action="store_true", help="print the report as JSON (a list for several runs)")
    p.add_argument("--plot", metavar="FILE", help="save a chart (.png, .svg or .pdf)")
    p.add_argument("--level", choices=("l2", "category"), default="l2", help="chart bars per L2 ability or leaf")
    p.set_defaults(handler=cmd_report)


def _plan_command(name: str, args) -> int:
    from vlmdesk import cmd_plan

    handler: Callable[[object], int] = getattr(cmd_plan, name)
    return handler(args)


def _emit(obj: dict) -> None:
    print(json.dumps(obj), flush=True)


def _emit_event(event: Progress | WaitEvent) -> None:
    _emit(event.to_json())


def human_progress(bar, run_id: int) -> Callable[[Progress | WaitEvent], None]:
    """The terminal's progress: the bar after each batch; a line above it for each retry wait, saying what for."""
    from evaluator.engine.progress import WaitEvent

    def show(event: Progress | WaitEvent) -> None:
        if isinstance(event, WaitEvent):
            bar.write(f"run {run_id}: {event.message}", file=sys.stderr)
        else:
            bar.total = event.passes_done + int((event.eta_s or 0) * event.calls_per_s)
            bar.update(event.passes_done - bar.n)

    return show


def cmd_run(args) -> int:
    from evaluator.engine.launch import prepare_resume, prepare_run
    from vlmdesk.cli import open_from_args

    if args.plan is not None:  # a suite: vlmdesk/cmd_plan.py
        return _plan_command("cmd_run_plan", args)
    with open_from_args(args) as ws:
        if args.samples > 1:
            return _run_samples(ws, args)
        if args.resume is not None:
            launch = prepare_resume(ws, args.resume, batch_size=args.batch_size, servers=args.servers)
        else:
            asked = requested_run(ws, args)
            launch = prepare_run(
                ws, asked.bench, asked.spec, asked.settings, asked.template, batch_size=args.batch_size, new=args.new
            )
        if launch.finished:
            run = launch.run
            print(
                f"run {run.id} already finished with these settings (vlmdesk report {run.id}; --new to run again)",
                file=sys.stderr,
            )
            return _finish(args, run.id)
        return _execute(ws, launch, args)


def _run_samples(ws, args) -> int:
    """`run --samples K`: samples 0..K-1 of the run the command names, one after another, each found (finished:
    skipped), continued or started like a plain run; the first that does not finish ends the command with its code
    (rerunning the command asks only what is missing). Refused in one line, nothing stored, where the K samples would
    not differ."""
    from dataclasses import replace

    from evaluator.engine.launch import SharedBackend, prepare_run
    from evaluator.engine.runner import sampling_refusal
    from vlmdesk.cli import UsageError

    if args.resume is not None:
        raise UsageError("--resume continues one stored run: leave out --samples (a sample is a run like any)")
    if args.new:
        raise UsageError(
            "--new with --samples: each sample run is found and continued where it stopped; for fresh samples start "
            "another group with another --seed"
        )
    asked = requested_run(ws, args)
    if (refused := sampling_refusal(asked.spec, asked.settings, args.samples)) is not None:
        raise UsageError(refused)
    run_ids = []
    shared = SharedBackend()  # loaded once for the group: a local model, a server vlmdesk starts
    try:
        for s in range(args.samples):
            settings = replace(asked.settings, sample=s)
            launch = prepare_run(
                ws, asked.bench, asked.spec, settings, asked.template, batch_size=args.batch_size, shared=shared
            )
            run_ids.append(launch.run.id)
            if launch.finished:
                print(f"run {launch.run.id} (sample {s} of {args.samples}) already finished", file=sys.stderr)
                continue
            code = _execute(ws, launch, args, quiet=True)
            if code != 0:
                print(
                    f"samples: {s} of {args.samples} finished; rerun the same command to ask only what is missing",
                    file=sys.stderr,
                )
                return code
    finally:
        shared.close()
    if args.json:
        _emit({"run_id": run_ids[0], "run_ids": run_ids})
    elif not args.json_progress:
        print(" ".join(map(str, run_ids)))
    return 0


@dataclass(frozen=True)
class RequestedRun:
    """The run a `vlmdesk run` command line names (without --resume): what its identity is made of."""

    bench: Benchmark
    spec: str
    settings: RunSettings
    template: PromptTemplate


def requested_run(ws, args, *, notes: bool = True) -> RequestedRun:
    """The benchmark, model spec, settings and template a `vlmdesk run` command line names, checked (UsageError or a
    LaunchRefused naming the option at fault; nothing is stored or loaded). `notes`: print the prompt's note."""
    from evaluator.backends import BackendError
    from evaluator.backends.hf import without_prefix_sharing
    from evaluator.engine.launch import resolve_model
    from evaluator.engine.prompt_presets import choose_prompt, preset_setup
    from evaluator.engine.runner import RunSettings, default_max_new_tokens
    from evaluator.engine.variants import COT_MAX_NEW_TOKENS
    from evaluator.scoring.choices import CHEF_COT_MAX_NEW_TOKENS
    from vlmdesk.cli import UsageError
    from vlmdesk.cmd_data import bench_or_fail
    from vlmdesk.run_variants import variant_settings

    if not args.bench or not args.model:
        raise UsageError("run needs --bench and --model (or --resume RUN_ID)")
    bench = bench_or_fail(ws, args.bench)
    if args.prompt and args.prompt_template:
        raise UsageError("--prompt and --prompt-template name the same thing: give one")
    # args.model: a saved model's name (vlmdesk models) or a spec
    spec = resolve_model(ws, args.model)
    if args.servers:
        spec = served_by(spec, args.servers)
    if args.no_share_prefix:
        try:
            spec = without_prefix_sharing(spec)
        except BackendError as exc:
            raise UsageError(str(exc)) from None
    chosen = choose_prompt(args.prompt or args.prompt_template, bench.kind, spec)
    if chosen.note and notes:
        print(f"note: {chosen.note}", file=sys.stderr)
    # A VLMEvalKit preset is the family's whole setup: its image settings on the spec, its system prompt.
    spec, preset_system = preset_setup(chosen.preset, spec, benchmark=bench.name)
    settings = RunSettings(
        strategy=args.strategy,
        full_passes=args.full_passes,
        limit=args.limit,
        max_new_tokens=args.max_new_tokens
        or (
            COT_MAX_NEW_TOKENS
            if args.cot
            else CHEF_COT_MAX_NEW_TOKENS
            if args.likelihood_score == "chef"
            else default_max_new_tokens(bench.kind)
        ),
        text_only=args.text_only,
        likelihood=args.likelihood or args.likelihood_score in ("prefix", "chef"),
        seed=args.seed,
        extractor=args.extractor,
        likelihood_score=args.likelihood_score or "sum",
        **variant_settings(args, bench),
        **multi_turn_settings(args, ws),
        prompt_preset=chosen.preset,
        **chat_settings(args, preset_system),
    )
    return RequestedRun(bench, spec, settings, chosen.template)


def served_by(spec: str, servers: str) -> str:
    """The openai spec served by the replicas a --servers file names (UsageError for a bad file or spec)."""
    from evaluator.backends import BackendError
    from evaluator.backends.openai_backend import with_servers
    from vlmdesk.cli import UsageError

    try:
        return with_servers(spec, servers)
    except BackendError as exc:
        raise UsageError(str(exc)) from None


def chat_settings(args, preset_system: str | None = None) -> dict:
    """RunSettings' thinking and chat fields from --reasoning, --system (else a prompt preset's system prompt),
    --chat-template-kwargs, --thinking-budget (UsageError naming the flag for a bad value; nothing is stored before
    they are all read)."""
    from evaluator.backends.reasoning import check_rule
    from evaluator.engine.runner import canonical_template_kwargs
    from vlmdesk.cli import UsageError

    if (wrong := check_rule(args.reasoning)) is not None:
        raise UsageError(f"--{wrong}")
    found: dict = {"reasoning": args.reasoning}
    if args.system is not None:
        found["system"] = system_prompt(args.system)
    elif preset_system is not None:
        found["system"] = preset_system
    if args.chat_template_kwargs is not None:
        try:
            found["chat_template_kwargs"] = canonical_template_kwargs(args.chat_template_kwargs)
        except ValueError as exc:
            raise UsageError(f"--chat-template-kwargs: {exc}") from None
    if args.thinking_budget is not None:
        found["thinking_budget"] = args.thinking_budget
    return found


def system_prompt(value: str) -> str:
    """--system's text: the file it names when it names a regular file (read through the bounded door), else the
    text itself. UsageError for an empty or too long prompt; a file that cannot be read, is too big or is not UTF-8
    is refused in one line by the door (InputError)."""
    from pathlib import Path

    from evaluator.engine.runner import MAX_SYSTEM_CHARS
    from evaluator.formats.importers.common import read_input_text
    from vlmdesk.cli import UsageError

    if len(value) < 4096 and "\n" not in value and Path(value).is_file():
        # One line naming the file for one that cannot be read, is over the bound or is not UTF-8 (InputError).
        value = read_input_text(value, MAX_SYSTEM_CHARS * 4, "limit for a system prompt file", "system")
    value = value.strip()
    if not value:
        raise UsageError("--system: the system prompt is empty")
    if len(value) > MAX_SYSTEM_CHARS:
        raise UsageError(f"--system: at most {MAX_SYSTEM_CHARS:,} characters")
    return value


def multi_turn_settings(args, ws) -> dict:
    """RunSettings' multi-turn fields from --multi-turn (a spec or a saved model's name) and --rounds (left at their
    defaults when not given)."""
    from db import models
    from vlmdesk.cli import UsageError

    if args.rounds is not None and args.multi_turn is None:
        raise UsageError("--rounds needs --multi-turn LLM_SPEC")
    found = {"multi_turn": models.resolve_spec(ws, args.multi_turn)} if args.multi_turn else {}
    return found | ({"rounds": args.rounds} if args.rounds is not None else {})


def _execute(ws, launch: Launch, args, *, quiet: bool = False) -> int:
    """Execute a prepared launch with the command's progress; its exit code. `quiet`: print nothing at the end (the
    caller prints the run ids: --samples)."""
    from tqdm import tqdm

    from db import runs
    from db.platform_io import cancel_interrupts
    from evaluator.backends import BackendError
    from evaluator.backends.base import ServersDown
    from evaluator.backends.secrets import redact
    from evaluator.engine.launch import run_or_resume
    from evaluator.engine.progress import DoneEvent, StartEvent
    from vlmdesk.cli import UsageError

    run = launch.run
    bar = (
        None
        if args.json_progress
        else tqdm(desc=f"run {run.id}", unit="pass", file=sys.stderr, disable=None, leave=False)
    )

    on_progress = _emit_event if bar is None else human_progress(bar, run.id)

    def on_start(engine):
        if args.json_progress:
            _emit(
                StartEvent(run.id, launch.resumed, run.benchmark_id, engine.items_total, engine.passes_stored).to_json()
            )

    # Cancel (QProcess.terminate, kill -TERM) and Ctrl-C end the run between two SQLite statements, whatever its
    # requests are doing (the openai backend's threads are daemons nobody waits for: docs/adr/0024).
    with cancel_interrupts():
        try:
            engine = run_or_resume(ws, launch, on_progress=on_progress, on_start=on_start)
        except runs.RunLost as exc:
            print(f"error: {exc}; it continues there", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print(f"run {run.id} interrupted; continue with: vlmdesk run --resume {run.id}", file=sys.stderr)
            return 130
        except BrokenPipeError:  # whoever read the progress lines went away (`… --json-progress | head`)
            print(
                f"run {run.id} interrupted: its output was closed; continue with: vlmdesk run --resume {run.id}",
                file=sys.stderr,
            )
            return 1
        except Exception as exc:
            message = redact(str(exc), run.model_spec, run.extractor, run.config.get("multi_turn"))
            if runs.get_run(ws, run.id) is None:  # removed: it failed before asking anything, so it is not stored
                raise UsageError(message) from None
            if isinstance(exc, ServersDown):
                print(
                    f"run {run.id} interrupted: {message}; continue with: vlmdesk run --resume {run.id}",
                    file=sys.stderr,
                )
                return 1
            if isinstance(exc, BackendError):
                print(
                    f"error: run {run.id} failed: {message} (continue with: vlmdesk run --resume {run.id})",
                    file=sys.stderr,
                )
                return 1
            raise
        finally:
            if bar is not None:
                bar.close()
    if args.json_progress:
        _emit(DoneEvent(run.id, engine.calls if engine else 0).to_json())
    return 0 if quiet else _finish(args, run.id)


def _finish(args, run_id: int) -> int:
    if args.json:
        _emit({"run_id": run_id})
    elif not args.json_progress:
        print(run_id)
    return 0


def cmd_runs(args) -> int:
    from db import runs
    from evaluator.analysis.report import answer_settings, describe_truncation
    from evaluator.engine.run_words import describe_variants, origin_of
    from vlmdesk.cli import open_from_args

    with open_from_args(args) as ws:
        all_runs = runs.list_runs(ws)
        # A few columns of one kept row a run (migration 0024), whatever its passes.
        cuts = {r.id: cut for r in all_runs if (cut := runs.truncation(ws, r.id)).truncated}
        scores = {}
        if args.scores:
            from evaluator.analysis.report import run_summary

            scores = {r.id: run_summary(ws, r.id) for r in all_runs}
    if args.json:
        from evaluator.engine.prompt_presets import describe_prompt  # the default templates: --json only

        print(
            json.dumps(
                [
                    {
                        "run_id": r.id,
                        "benchmark": r.benchmark,
                        "model": r.model_spec,
                        "strategy": r.strategy,
                        "variants": describe_variants(r.config),
                        "prompt": describe_prompt(r),
                        "imported": origin_of(r) is not None,
                        "status": r.status,
                        "predictions": r.predictions,
                        "created_at": r.created_at,
                        "finished_at": r.finished_at,
                        "config": r.config,
                        "settings": answer_settings(r.config, r.model_spec).to_json(),
                        "truncation": cuts[r.id].to_json() if r.id in cuts else None,
                        "error": r.error,
                        "problems": list(r.problems),
                        "owner": {
                            "host": r.owner_host,
                            "pid": r.owner_pid,
                            "since": r.owner_since,
                            "heartbeat_at": r.heartbeat_at,
                        }
                        if r.status == "running"
                        else None,
                        **({k: getattr(scores[r.id], k) for k in _SCORE_FIELDS} if args.scores else {}),
                    }
                    for r in all_runs
                ]
            )
        )
        return 0
    if not all_runs:
        print("no runs yet: vlmdesk run --bench NAME --model SPEC")
        return 0
    kinds = {r.id: run_kind(r) for r in all_runs}
    width = max(9, *map(len, kinds.values()))
    print(
        f"{'id':>4}  {'benchmark':<22} {'model':<34} {'strategy':<{width}} {'status':<11} {'passes':>7}"
        + ("   vanilla circular  pope-f1  seconds" if args.scores else "")
    )
    for r in all_runs:
        extra = ""
        s = scores.get(r.id)
        if s is not None:
            extra = (
                f"  {_pct(s.vanilla):>8} {_pct(s.circular):>8} {_pct(s.pope_f1):>8} "
                f"{s.duration_s if s.duration_s is not None else '-':>8}"
            )
        print(
            f"{r.id:>4}  {r.benchmark[:22]:<22} {r.model_spec[:34]:<34} {kinds[r.id]:<{width}} {r.status:<11} "
            f"{r.predictions:>7}" + extra
        )
    for r in all_runs:
        if (settings := answer_settings(r.config, r.model_spec)).notable:
            print(f"run {r.id}: {settings.line(compact=True)}")
        if r.id in cuts:
            print(f"run {r.id}: {describe_truncation(cuts[r.id])}")
        if r.problems:
            print(f"run {r.id}: unreadable stored value(s): {'; '.join(r.problems)}")
    return 0


def run_kind(run: runs.Run) -> str:
    """The strategy column: the strategy, the run's variants, its prompt preset and whether it was imported, in the
    app's words (gui/runs_list.py): "vanilla · natural:0 labels · vlmevalkit:llava prompt · ⇩ imported"."""
    from evaluator.engine.run_words import IMPORTED_MARK, describe_variants, origin_of, preset_words

    parts = [run.strategy, describe_variants(run.config), preset_words(run.config)]
    parts += [IMPORTED_MARK] if origin_of(run) is not None else []
    return " · ".join(filter(None, parts))


_SCORE_FIELDS = ("vanilla", "circular", "pope_accuracy", "pope_f1", "open_metrics", "questions", "duration_s")


def cmd_report(args) -> int:
    from evaluator.analysis.pope_report import attach_pope_means, format_pope_means
    from evaluator.analysis.report import run_report
    from vlmdesk.cli import UsageError, open_from_args, output_file

    if args.plan is not None:  # a suite table: vlmdesk/cmd_plan.py
        return _plan_command("cmd_report_plan", args)
    if args.csv is not None:
        raise UsageError("--csv writes a suite table: it goes with --plan")
    if args.groups:
        return cmd_report_groups(args)
    if not args.run_ids:
        raise UsageError("report needs RUN_ID (one or more), or --groups")
    if args.model is not None:
        raise UsageError("--model goes with --groups; a run's report names its model")
    with open_from_args(args) as ws:
        reports = []
        for run_id in args.run_ids:
            report = run_report(ws, run_id, scoring=args.scoring)
            if report is None:
                raise UsageError(f"no run {run_id} in {ws.path}")
            reports.append(report)
    reports, pope_means = attach_pope_means(reports)  # pope_mean on each POPE report; see docs/pope.md
    if args.plot:
        from evaluator.analysis.plots import ability_figure, open_figure, pope_figure, save_figure

        kinds = {"pope" if r.pope is not None else "open" if r.open is not None else "mcq" for r in reports}
        if len(kinds) > 1:
            raise UsageError("cannot plot POPE, open and multiple-choice runs in one chart")
        try:
            fig = (
                pope_figure(reports)
                if kinds == {"pope"}
                else open_figure(reports)
                if kinds == {"open"}
                else ability_figure(reports, "by_l2" if args.level == "l2" else "by_category")
            )
            save_figure(fig, output_file(args.plot))
        except OSError as exc:
            raise UsageError(str(exc)) from None
    if args.json:
        found = [r.to_json() for r in reports]
        print(json.dumps(found[0] if len(found) == 1 else found, ensure_ascii=False))
        return 0
    for report in reports:
        print(format_report(report))
    if pope_means:
        print(format_pope_means(pope_means))
    if args.plot:
        print(f"chart written to {args.plot}")
    return 0


def cmd_report_groups(args) -> int:
    from evaluator.analysis.groups import format_groups, groups_report
    from vlmdesk.cli import UsageError, open_from_args, output_file

    if args.run_ids or args.scoring:
        raise UsageError("--groups reads every model's runs itself: leave out RUN_ID and --scoring")
    with open_from_args(args) as ws:
        report = groups_report(
            ws,
            model=args.model,
            mcq_figure=args.mcq_figure,
            pope_figure=args.pope_figure,
            open_figure=args.open_figure,
        )
    if args.plot:
        from evaluator.analysis.plots import groups_radar_figure, save_figure

        try:
            save_figure(groups_radar_figure(report), output_file(args.plot))
        except OSError as exc:
            raise UsageError(str(exc)) from None
    if args.json:
        print(json.dumps(report.to_json(), ensure_ascii=False))
        return 0
    print(format_groups(report))
    if args.plot:
        print(f"radar written to {args.plot}")
    return 0


def _pct(value) -> str:
    return "   -  " if value is None else f"{100 * value:5.1f}%"


def _metric_value(value, scale: str) -> str:
    return "   -  " if value is None else f"{value:6.3f}" if scale == "cider" else _pct(value)


def _ci(interval, scale: str = "fraction") -> str:
    """An interval as the text report prints it beside or under its figure: `[71.2, 76.9]` (fractions ×100; CIDEr
    on its own scale, two decimals), empty where there is none."""
    if interval is None:
        return ""
    return interval.shown(1.0, 2) if scale == "cider" else interval.shown()


def _pct_ci(value, interval) -> str:
    """`74.1% [71.2, 76.9]`: a fraction and its interval in one column."""
    return _pct(value).strip() + (f" {_ci(interval)}" if interval is not None else "")


def interval_note() -> str:
    """The line under a report's figures that says how its intervals were computed (evaluator/analysis/intervals)."""
    from evaluator.analysis.intervals import BOOTSTRAP

    return f"95 % intervals: Wilson for accuracies (an item is the unit);\n  {BOOTSTRAP} for F1 and graded metrics"


def _format_open(o: OpenFigures) -> list[str]:
    """Open answers by metric (evaluator/open_metrics), overall and per leaf category."""
    lines = []
    if o.unanswered or o.unreferenced:
        lines.append(f"left out: {o.unreferenced} answer(s) without references, {o.unanswered} item(s) not answered")
    if not o.metrics:
        lines.append("no open metric applies (no answered item has references); compare runs in the arena")
        return lines
    names = list(o.metrics)
    # Columns of 14: an interval ("[100.0, 100.0]") goes under its figure.
    lines.append(f"{'':<28} {'n':>5} " + " ".join(f"{n[:14]:>14}" for n in names))
    values = " ".join(f"{_metric_value(o.metrics[n], o.scales[n]):>14}" for n in names)
    lines.append(f"{'Overall':<28} {o.answered:>5} {values}")

    def intervals(found: dict) -> None:  # under a row of figures, each interval under its figure
        if any(found.get(n) is not None for n in names):
            lines.append(f"{'':<34} " + " ".join(f"{_ci(found.get(n), o.scales[n]):>14}" for n in names))

    intervals(o.intervals)
    lines.append("-- leaf category")
    for name, group in o.by_category.items():
        got = group["metrics"]
        values = " ".join(f"{_metric_value(got.get(n), o.scales[n]):>14}" for n in names)
        lines.append(f"  {name[:26]:<26} {group['items']:>5} {values}")
        intervals(o.category_intervals.get(name, {}))
    if "cider" in o.scales.values():
        lines.append("fractions as %; CIDEr on its own scale (IDF over this run's items, held fixed in its interval)")
    if o.intervals:
        lines.append(interval_note())
    if o.vqa_rule is not None:
        from evaluator.scoring.open_metrics import VQA_RULES

        lines.append(f"vqa_accuracy by the rule of {VQA_RULES.get(o.vqa_rule, o.vqa_rule)}")
    if o.judge_set is not None:
        j, others = o.judge_set, len(o.judge_set["other_sets"])
        v = j["verdicts"]
        lines.append(
            f"judge: {j['judge']}, rubric {j['rubric_sha256'][:12]} (right {v['right']}, partly {v['partly']}, "
            f"wrong {v['wrong']}, undecided {v['undecided']})"
            + (f"; {others} other judgement set(s), see --json" if others else "")
        )
    return lines


def format_report(r: RunReport) -> str:
    from evaluator.analysis.report import describe_tokens, official_lines, thinking_lines

    preset = r.config.get("prompt_preset")
    lines = [
        f"run {r.run_id}  {r.benchmark}  {r.model}  {r.strategy}  [{r.status}]"
        + (f"  prompt {preset}" if isinstance(preset, str) else ""),
        *official_lines(r),  # the benchmark's official figure first, as the leaderboard prints it
        f"questions {r.questions}   answers {r.open.answered}"
        if r.open is not None
        else f"questions {r.questions}   model calls {r.model_calls}   undecided answers {r.undecided}",
    ]
    if r.tokens is not None:  # only a run whose server said what its passes cost
        lines.append(describe_tokens(r.tokens))
    lines += thinking_lines(r)  # the settings that decide answers, and the truncated passes, when there are any
    from evaluator.analysis.samples import sample_lines  # a sampled run: its group's mean@K and pass@k (issue 38)

    lines += sample_lines(r)
    if r.open is not None:
        lines += _format_open(r.open)
        return "\n".join(lines)
    if r.problems:
        lines.append(f"unreadable stored value(s), figures read without them: {'; '.join(r.problems)}")
    mcq = r.mcq
    lines.append(
        f"scoring {r.scoring} ({r.scoring_source})"
        + (
            f"   items with passes never asked: {mcq.circular_unasked_items} (circular counts them "
            f"wrong; {_pct(mcq.circular_upper).strip()} if right)"
            if mcq and mcq.circular_unasked_items
            else ""
        )
    )
    if r.pope is not None:
        lines.append(f"setting {r.pope.setting or '-'}   answered {r.pope.answered}")
        figures = ("accuracy", "precision", "recall", "f1")
        lines.append(
            f"{'parser':<10} " + " ".join(f"{h:>14}" for h in ("acc", "prec", "recall", "f1")) + f" {'yes':>7} "
            f"{'unknown':>8}"
        )
        for parser, m in r.pope.pope.items():
            values = " ".join(f"{_pct(getattr(m, f)):>14}" for f in figures)
            lines.append(f"{parser:<10} {values} {_pct(m.yes_ratio):>7} {m.unknown:>8}")
            if (found := r.pope.intervals.get(parser)) is not None:  # each interval under its figure
                lines.append(f"{'':<10} " + " ".join(f"{_ci(getattr(found, f)):>14}" for f in figures))
        if r.pope.intervals:
            lines.append(interval_note())
        return "\n".join(lines)
    assert mcq is not None  # a run that is not POPE is multiple choice, with its figures

    def row(name: str, sc) -> str:  # each figure with its interval: `74.1% [71.2, 76.9]`
        vanilla, circular = _pct_ci(sc.vanilla, sc.vanilla_ci), _pct_ci(sc.circular, sc.circular_ci)
        return f"{name:<44} {sc.questions:>5} {vanilla:>21} {circular:>21}"

    lines.append(f"{'':<44} {'n':>5} {'vanilla':>21} {'circular':>21}")
    lines.append(row("Overall", mcq.overall))
    for title, key in (("L2 ability", "by_l2"), ("leaf category", "by_category"), ("split", "by_split")):
        lines.append(f"-- {title}")
        for name, sc in mcq.groups(key).items():
            lines.append(row(f"  {name[:42]}", sc))
    if mcq.overall.vanilla_ci is not None:
        lines.append(interval_note())
    return "\n".join(lines)
