"""Runs and their predictions (one row per run, item and pass), and who is executing a run.

A process executing a run owns it: it claims the run in one transaction (only when the run has no owner, or its
owner is gone) and beats a heartbeat while it runs. A run stored as running whose owner is gone reads as
`interrupted` everywhere (`effective_status`), and the next claim takes it over.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import socket
import sqlite3
import uuid
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Final, Literal, NoReturn

from db import catalog
from db.catalog import now_iso
from db.errors import EnvironmentFault, InvalidInput, NotFound, UserError
from db.platform_io import pid_alive
from db.workspace import Workspace, inserted_id

# The numbers a run stores, bounded where they enter (vlmdesk/args.py for the command line).
ID_MAX = 2**63 - 1  # SQLite's INTEGER
COUNT_MAX = 10**9  # items, passes, tokens, batch sizes
SEED_MAX = 2**32 - 1
TOKENS_MAX = 2**40  # tokens a server may say one pass cost (migration 0016's CHECK holds the same bound)
ROUNDS_MAX = 10  # rounds of sub-questions of a multi-turn pass (evaluator/engine/multiturn.py)
SPEC_MAX = 2000  # characters of a model spec stored in a run's settings
SAMPLES_MAX = 64  # samples of a sample group (`run --samples K`): sample numbers 0..SAMPLES_MAX-1

HEARTBEAT_S = 5.0
STALE_AFTER_S = 60.0  # a heartbeat older than this means the owner is gone (stopped, killed, or on a lost host)


Strategy = Literal["circular", "vanilla", "pope", "open"]
"""How a run asks its items: CircularEval (every rotation), VanillaEval (pass 0 only), POPE (one yes/no pass), open
(one free answer to an open question, never extracted or scored)."""
RunStatus = Literal["running", "finished", "failed", "interrupted"]
"""A run's status; its effective status reads `interrupted` for a `running` run whose owner is gone."""


class RunBusy(UserError):
    """The run is being executed by another live process."""

    def __init__(self, run: Run):
        super().__init__(
            f"run {run.id} is being run by pid {run.owner_pid} on {run.owner_host} since {run.owner_since}"
        )
        self.run = run


class RunLost(EnvironmentFault):
    """This process no longer owns the run it was executing (another process took it over)."""


@dataclass(frozen=True)
class Owner:
    """A process that executes runs: host name, pid and a random token naming this claim."""

    host: str
    pid: int
    token: str

    @classmethod
    def here(cls) -> Owner:
        return cls(socket.gethostname(), os.getpid(), uuid.uuid4().hex)


@dataclass(frozen=True)
class Run:
    id: int
    benchmark_id: int
    benchmark: str
    model_spec: str
    strategy: Strategy
    prompt_template: str
    extractor: str
    config: dict[str, Any]
    config_key: str
    versions: dict[str, Any]
    git_revision: str | None
    seed: int
    status: RunStatus  # effective: a `running` run whose owner is gone reads `interrupted`
    error: str | None
    created_at: str
    updated_at: str
    finished_at: str | None
    predictions: int = 0
    owner_host: str | None = None
    owner_pid: int | None = None
    owner_token: str | None = None
    owner_since: str | None = None
    heartbeat_at: str | None = None
    stored_status: RunStatus | Literal[""] = ""
    problems: tuple[str, ...] = field(default=())  # stored values that could not be read, shown as such

    @property
    def limit(self) -> int | None:
        """The run's item limit, or None (every item) — also when the stored value is unreadable (in problems)."""
        value = self.config.get("limit")
        return value if valid_int(value, 1, COUNT_MAX) else None


def answer_key(answer: str) -> str:
    """What identifies an answer's text (people's verdicts on open answers name it): its sha256, UTF-8."""
    return hashlib.sha256(answer.encode("utf-8", "surrogatepass")).hexdigest()


def valid_int(value: object, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


TurnRole = Literal["asker", "model"]
TURN_ROLES: tuple[TurnRole, ...] = ("asker", "model")


@dataclass(frozen=True)
class Turn:
    """One turn of a multi-turn pass: the asking LLM's words ("asker") or the evaluated model's ("model")."""

    role: TurnRole
    text: str


def turns_json(turns: tuple[Turn, ...] | None) -> str | None:
    """The stored form of a pass's turns (migration 0013): a JSON list of {"role", "text"}; None for none."""
    if turns is None:
        return None
    return json.dumps([{"role": t.role, "text": t.text} for t in turns], ensure_ascii=False)


def turns_from_json(text: object) -> tuple[Turn, ...] | None:
    """A pass's stored turns; None when it has none. A damaged value reads as None rather than failing every view
    of the item (the column's CHECK keeps it JSON; `vlmdesk check` reports wrong shapes)."""
    value = _stored_list(text)
    if value is None:
        return None
    return tuple(
        Turn(t["role"], t["text"])
        for t in value
        if isinstance(t, dict) and t.get("role") in TURN_ROLES and isinstance(t.get("text"), str)
    )


@dataclass(frozen=True)
class Prediction:
    run_id: int
    item_id: int
    pass_: int
    option_order: tuple[int, ...]
    prompt: str
    response: str
    answer: str | None
    choice: str | None
    stage: str
    reason: str | None
    correct: bool | None
    latency_ms: float | None
    # One score per option (or yes/no candidate) shown, in shown order: likelihood runs' log-probs (summed; the mean
    # per token for likelihood_score "chef"; probabilities for "prefix"); None for generated passes. Calibration
    # (evaluator/desiderata) reads them.
    scores: tuple[float | None, ...] | None = None
    turns: tuple[Turn, ...] | None = None  # a multi-turn pass's dialogue (evaluator/engine/multiturn.py); else None
    # The tokens a server said this pass cost (its `usage`), when it said so; None otherwise (local models, old runs).
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    # A thinking model's pass (issue 36, migration 0024): the thought apart from the answer (`response` is the answer
    # only: everything that scores or shows a pass blind reads it), why generation stopped ("length": the token budget
    # ended it) and the reasoning tokens the server said it spent. None when not split, not said, or stored before.
    thought: str | None = None
    finish_reason: str | None = None
    reasoning_tokens: int | None = None

    @property
    def truncated(self) -> bool:
        """The token budget ended the pass (inside the thought when its stage is "truncated": no answer at all)."""
        return self.finish_reason == "length"

    def row(self, created_at: str) -> tuple[object, ...]:
        return (
            self.run_id,
            self.item_id,
            self.pass_,
            json.dumps(list(self.option_order)),
            self.prompt,
            self.response,
            self.answer,
            self.choice,
            self.stage,
            self.reason,
            None if self.correct is None else int(self.correct),
            self.latency_ms,
            created_at,
            scores_json(self.scores),
            turns_json(self.turns),
            self.prompt_tokens,
            self.completion_tokens,
            self.thought,
            self.finish_reason,
            self.reasoning_tokens,
        )

    def token_problems(self) -> list[str]:
        """What is wrong with the pass's token counts (each None or a whole number 0..TOKENS_MAX; a bool is not)."""
        return [
            f"run {self.run_id} item {self.item_id} pass {self.pass_}: {name} {str(value)[:40]!r} is not a whole "
            f"number of tokens in 0..{TOKENS_MAX}"
            for name, value in (
                ("prompt_tokens", self.prompt_tokens),
                ("completion_tokens", self.completion_tokens),
                ("reasoning_tokens", self.reasoning_tokens),
            )
            if value is not None and not valid_int(value, 0, TOKENS_MAX)
        ]


@dataclass(frozen=True)
class TokenUsage:
    """The tokens a run's server said its stored passes cost: how many passes said so (`passes`), and the sums of
    their prompt and completion tokens (None when no pass gave that count)."""

    passes: int
    prompt: int | None
    completion: int | None
    reasoning: int | None = None  # of the completion tokens, those spent thinking (when a server said so)

    def to_json(self) -> dict[str, int | None]:
        out = {"passes": self.passes, "prompt": self.prompt, "completion": self.completion}
        return out if self.reasoning is None else {**out, "reasoning": self.reasoning}


@dataclass(frozen=True)
class Truncation:
    """A run's passes the token budget ended (finish_reason "length"), of its stored passes, and how many of them were
    cut inside the thought (no answer at all: their stage is "truncated")."""

    truncated: int
    in_thought: int
    passes: int
    wrong: int = 0  # of the truncated passes, those scored wrong (every one cut inside the thought, on a keyed item)

    def line(self) -> str:
        """ "truncated: 37 of 4,329 (12 inside the thought)"."""
        inside = f" ({self.in_thought:,} inside the thought)" if self.in_thought else ""
        return f"truncated: {self.truncated:,} of {self.passes:,}{inside}"

    def to_json(self) -> dict[str, int]:
        return {"truncated": self.truncated, "in_thought": self.in_thought, "wrong": self.wrong, "passes": self.passes}


_RUN_SELECT = """
SELECT r.*, b.name AS benchmark, coalesce((SELECT c.passes FROM run_counts c WHERE c.run_id = r.id), 0) AS predictions
FROM runs r JOIN benchmarks b ON b.id = r.benchmark_id
"""


def _json_object(text: object, what: str, problems: list[str]) -> dict[str, Any]:
    """A stored JSON object, or {} with the reason noted: a damaged value must not make the workspace unreadable."""
    try:
        value = (
            json.loads(text, parse_constant=_no_constant, parse_float=_finite)
            if isinstance(text, (str, bytes))
            else None
        )
    except (ValueError, RecursionError) as exc:
        problems.append(f"{what}: not readable JSON ({str(exc)[:80]})")
        return {}
    if not isinstance(value, dict):
        problems.append(f"{what}: expected a JSON object, got {str(text)[:40]!r}")
        return {}
    return value


def _no_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a number")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{text[:20]} is out of range")
    return value


def config_problems(config: dict[str, Any]) -> list[str]:
    """Stored settings outside what any vlmdesk could have written (the engine refuses to resume on them)."""
    found = []
    for key in ("limit", "batch_size", "max_new_tokens"):
        value = config.get(key)
        if key in config and not (value is None and key == "limit") and not valid_int(value, 1, COUNT_MAX):
            found.append(f"config.{key}: {str(value)[:40]!r} is not a count in 1..{COUNT_MAX}")
    if "seed" in config and not valid_int(config["seed"], 0, SEED_MAX):
        found.append(f"config.seed: {str(config['seed'])[:40]!r} is not a seed in 0..{SEED_MAX}")
    for key in ("full_passes", "text_only", "likelihood"):
        if key in config and not isinstance(config[key], bool):
            found.append(f"config.{key}: {str(config[key])[:40]!r} is not true/false")
    for key in ("strategy", "extractor", "likelihood_score", "prompt_preset", "reasoning"):
        if key in config and not isinstance(config[key], str):
            found.append(f"config.{key}: {str(config[key])[:40]!r} is not text")
    for key in ("system", "chat_template_kwargs"):  # issue 36's; None when not set
        if config.get(key) is not None and not isinstance(config[key], str):
            found.append(f"config.{key}: {str(config[key])[:40]!r} is not text")
    if config.get("thinking_budget") is not None and not valid_int(config["thinking_budget"], 1, COUNT_MAX):
        found.append(f"config.thinking_budget: {str(config['thinking_budget'])[:40]!r} is not a count")
    found += _multi_turn_problems(config)
    if "sample" in config and not valid_int(config["sample"], 0, SAMPLES_MAX - 1):
        found.append(f"config.sample: {str(config['sample'])[:40]!r} is not a sample number in 0..{SAMPLES_MAX - 1}")
    if "sample_of" in config and not (isinstance(config["sample_of"], str) and len(config["sample_of"]) == 64):
        found.append(f"config.sample_of: {str(config['sample_of'])[:40]!r} is not a run's config key")
    return found


def _multi_turn_problems(config: dict[str, Any]) -> list[str]:
    found = []
    spec = config.get("multi_turn")
    if spec is not None and not (isinstance(spec, str) and 0 < len(spec) <= SPEC_MAX):
        found.append(f"config.multi_turn: {str(spec)[:40]!r} is not a model spec of 1..{SPEC_MAX} characters")
    if "rounds" in config and not valid_int(config["rounds"], 1, ROUNDS_MAX):
        found.append(f"config.rounds: {str(config['rounds'])[:40]!r} is not a number of rounds in 1..{ROUNDS_MAX}")
    return found


_RUN_FIELDS = set(Run.__dataclass_fields__) - {"stored_status", "problems"}


def _run(record: sqlite3.Row | dict[str, Any], now: datetime | None = None) -> Run:
    row = {k: v for k, v in dict(record).items() if k in _RUN_FIELDS}  # columns a later migration adds are ignored
    problems: list[str] = []
    row["config"] = _json_object(row["config"], "config", problems)
    problems += config_problems(row["config"])
    row["versions"] = _json_object(row["versions"], "versions", problems)
    if not valid_int(row["seed"], -SEED_MAX, ID_MAX):
        problems.append(f"seed: {str(row['seed'])[:40]!r} is not a whole number")
        row["seed"] = 0
    if row["owner_pid"] is not None and not valid_int(row["owner_pid"], 0, ID_MAX):
        row["owner_pid"] = None
    run = Run(**row, stored_status=row["status"], problems=tuple(problems))
    return replace(run, status=effective_status(run, now))


# -- ownership -----------------------------------------------------------------------------------------------


def _parse_time(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        when = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def owner_gone(run: Run, now: datetime | None = None) -> bool:
    """Whether the process that claimed the run no longer runs it: no owner recorded, a dead pid on this host,
    or a heartbeat older than STALE_AFTER_S (any host: a stopped process, or a host we cannot look into)."""
    if run.owner_token is None:
        return True
    if run.owner_host == socket.gethostname() and (run.owner_pid is None or not pid_alive(run.owner_pid)):
        return True
    beat = _parse_time(run.heartbeat_at)
    now = now or datetime.now(UTC)
    return beat is None or (now - beat).total_seconds() > STALE_AFTER_S


def effective_status(run: Run, now: datetime | None = None) -> RunStatus:
    """The status to show and act on: a run stored as `running` whose owner is gone is `interrupted`. The one
    rule for `vlmdesk runs`, `report`, `check` and the app's lists."""
    stored = run.stored_status or run.status
    if stored == "running" and owner_gone(run, now):
        return "interrupted"
    return stored


def _owned_by(run: Run, owner: Owner) -> bool:
    """The same process (a second claim by the process that holds the run is not a conflict)."""
    return run.owner_host == owner.host and run.owner_pid == owner.pid


class _immediate:
    """A write transaction taken at its start (BEGIN IMMEDIATE), so a read-then-write cannot be raced; the
    workspace's hold is checked before and at its end as in every write (db.workspace.WorkspaceDatabase)."""

    def __init__(self, ws: Workspace):
        self.ws = ws

    def __enter__(self) -> sqlite3.Connection:
        self.ws.regain_hold()
        self.ws.conn.execute("BEGIN IMMEDIATE")
        return self.ws.conn

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        conn = self.ws.conn
        if exc_type is None:
            try:
                self.ws.confirm_hold()
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        elif conn.in_transaction:
            conn.execute("ROLLBACK")


def _claim_in_txn(conn: sqlite3.Connection, run: Run, owner: Owner, now: str) -> None:
    if run.owner_token is not None and not owner_gone(run) and not _owned_by(run, owner):
        raise RunBusy(run)
    conn.execute(
        "UPDATE runs SET owner_host = ?, owner_pid = ?, owner_token = ?, owner_since = ?, heartbeat_at = ?, "
        "status = 'running', error = NULL, finished_at = NULL, updated_at = ? WHERE id = ? AND owner_token IS ?",
        (owner.host, owner.pid, owner.token, now, now, now, run.id, run.owner_token),
    )


def check_free(run: Run, owner: Owner | None = None) -> None:
    """RunBusy when another live process is executing the run (a read: no lock is taken)."""
    owner = owner or Owner.here()
    if run.owner_token is not None and not owner_gone(run) and not _owned_by(run, owner):
        raise RunBusy(run)


def claim_run(ws: Workspace, run_id: int, owner: Owner) -> Run:
    """Take the run for this process, in one transaction: only when it has no owner or its owner is gone.
    RunBusy otherwise (the run is left alone); LookupError when there is no such run."""
    now = now_iso()
    with _immediate(ws) as conn:
        run = get_run(ws, run_id)
        if run is None:
            raise NotFound(f"no run {run_id}")
        _claim_in_txn(conn, run, owner, now)
    return _stored_run(ws, run_id)


def create_or_claim(
    ws: Workspace,
    *,
    reuse: bool,
    owner: Owner,
    benchmark_id: int,
    model_spec: str,
    strategy: str,
    prompt_template: str,
    extractor: str,
    config: dict[str, Any],
    config_key: str,
    versions: dict[str, Any],
    git_revision: str | None,
    seed: int,
) -> Run:
    """With `reuse`, the latest run with this config key, claimed for `owner` (or returned as is when finished);
    else, or when there is none, a new run owned by `owner`. One transaction: two processes started at once
    never both create the run, and the second gets RunBusy."""
    now = now_iso()
    with _immediate(ws) as conn:
        found = latest_run_with_key(ws, config_key) if reuse else None
        if found is not None:
            if found.status != "finished":
                _claim_in_txn(conn, found, owner, now)
            run_id = found.id
        else:
            run_id = inserted_id(
                conn.execute(
                    "INSERT INTO runs (benchmark_id, model_spec, strategy, prompt_template, extractor, config, "
                    "config_key, versions, git_revision, seed, status, created_at, updated_at, owner_host, owner_pid, "
                    "owner_token, owner_since, heartbeat_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?)",
                    (
                        benchmark_id,
                        model_spec,
                        strategy,
                        prompt_template,
                        extractor,
                        json.dumps(config, sort_keys=True),
                        config_key,
                        json.dumps(versions, sort_keys=True),
                        git_revision,
                        seed,
                        now,
                        now,
                        owner.host,
                        owner.pid,
                        owner.token,
                        now,
                        now,
                    ),
                )
            )
    return _stored_run(ws, run_id)


def create_run(
    ws: Workspace,
    *,
    benchmark_id: int,
    model_spec: str,
    strategy: str,
    prompt_template: str,
    extractor: str,
    config: dict[str, Any],
    config_key: str,
    versions: dict[str, Any],
    git_revision: str | None,
    seed: int,
    owner: Owner | None = None,
) -> int:
    """A new run, owned by `owner` (default: this process)."""
    return create_or_claim(
        ws,
        reuse=False,
        owner=owner or Owner.here(),
        benchmark_id=benchmark_id,
        model_spec=model_spec,
        strategy=strategy,
        prompt_template=prompt_template,
        extractor=extractor,
        config=config,
        config_key=config_key,
        versions=versions,
        git_revision=git_revision,
        seed=seed,
    ).id


def heartbeat(conn: sqlite3.Connection, run_id: int, owner: Owner) -> bool:
    """Record that the owner is alive; False when the run is no longer this owner's. `conn` may be a connection
    of another thread (the heartbeat thread keeps its own)."""
    with conn:
        cur = conn.execute(
            "UPDATE runs SET heartbeat_at = ? WHERE id = ? AND owner_token = ?", (now_iso(), run_id, owner.token)
        )
    return cur.rowcount == 1


def release(ws: Workspace, run_id: int, owner: Owner, status: str, *, error: str | None = None) -> bool:
    """Set the run's final status and give up ownership, if this owner still holds it (False otherwise: a run
    taken over by another process is left to that process)."""
    now = now_iso()
    with ws.db.atomic():
        cur = ws.conn.execute(
            "UPDATE runs SET status = ?, error = ?, updated_at = ?, finished_at = ?, owner_host = NULL, "
            "owner_pid = NULL, owner_token = NULL, owner_since = NULL, heartbeat_at = NULL "
            "WHERE id = ? AND owner_token = ?",
            (status, error, now, now if status == "finished" else None, run_id, owner.token),
        )
    return cur.rowcount == 1


def dead_owner_runs(ws: Workspace) -> list[Run]:
    """Runs stored as running whose owner is gone (what `vlmdesk check` reports; they show as interrupted)."""
    return [r for r in list_runs(ws) if r.stored_status == "running" and r.status == "interrupted"]


def mark_interrupted(ws: Workspace, run_id: int) -> bool:
    """Store `interrupted` for a running run whose owner is gone (`vlmdesk check --repair`); False when the run
    is not such a run (finished, or its owner is alive)."""
    with _immediate(ws) as conn:
        run = get_run(ws, run_id)
        if run is None or run.stored_status != "running" or run.status != "interrupted":
            return False
        who = f"pid {run.owner_pid} on {run.owner_host}" if run.owner_token else "no recorded owner"
        conn.execute(
            "UPDATE runs SET status = 'interrupted', error = ?, updated_at = ?, owner_host = NULL, owner_pid = NULL, "
            "owner_token = NULL, owner_since = NULL, heartbeat_at = NULL WHERE id = ? AND owner_token IS ?",
            (f"interrupted: its process ({who}) is gone", now_iso(), run_id, run.owner_token),
        )
    return True


# -- reads and writes ----------------------------------------------------------------------------------------


def _stored_run(ws: Workspace, run_id: int) -> Run:
    """The run just written in this process (its absence is a bug, not a user's mistake)."""
    run = get_run(ws, run_id)
    if run is None:
        raise RuntimeError(f"run {run_id} was not stored")
    return run


def get_run(ws: Workspace, run_id: int) -> Run | None:
    if not valid_int(run_id, 1, ID_MAX):
        return None
    rows = list(ws.db.query(_RUN_SELECT + " WHERE r.id = ?", [run_id]))
    return _run(rows[0]) if rows else None


def latest_run_with_key(ws: Workspace, config_key: str) -> Run | None:
    rows = list(ws.db.query(_RUN_SELECT + " WHERE r.config_key = ? ORDER BY r.id DESC LIMIT 1", [config_key]))
    return _run(rows[0]) if rows else None


# A sample group's runs (issue 38): sample 0 is the latest run with the group's key as its own config key, sample
# s >= 1 the latest whose config names the key as `sample_of` (migration 0026's index on that expression).
SAMPLE_OF_SQL: Final = "(CASE WHEN json_valid(config) THEN json_extract(config, '$.sample_of') END)"


def group_key(run: Run) -> str:
    """The key of the sample group a run belongs to: its `sample_of`, else its own config key (a plain run is sample 0
    of the group its key names)."""
    key = run.config.get("sample_of")
    return key if isinstance(key, str) else run.config_key


def sample_number_of(config: dict[str, Any]) -> int:
    """A run's sample number in its group, from its config (0 for a plain run; a stored value out of range reads as
    0)."""
    value = config.get("sample")
    return value if isinstance(value, int) and valid_int(value, 0, SAMPLES_MAX - 1) else 0


def sample_group(ws: Workspace, key: str) -> dict[int, Run]:
    """sample number -> the latest run of that sample in the group `key` names: sample 0 by its config key, the others
    by the index on `sample_of`; O(K) index seeks whatever else is stored."""
    found = {}
    if (first := latest_run_with_key(ws, key)) is not None:
        found[0] = first
    rows = ws.db.query(_RUN_SELECT + f" WHERE {SAMPLE_OF_SQL.replace('config', 'r.config')} = ? ORDER BY r.id", [key])
    for row in rows:
        run = _run(row)
        if (s := sample_number_of(run.config)) > 0:
            found[s] = run  # ordered by id: the latest of a sample number wins
    return dict(sorted(found.items()))


@dataclass(frozen=True)
class ItemOutcome:
    """One item of a run as its kept figures hold it (migration 0021): its run result (right, wrong, pending,
    unscored), VanillaEval right (pass 0 right, keyed), and for POPE the official parser's reading and the label."""

    item_id: int
    result: str
    vanilla: bool
    official: str | None
    pope_label: str | None


def item_outcomes(ws: Workspace, run_id: int) -> list[ItemOutcome]:
    """Every item of a run with a stored pass, as kept: one row each, read by the table's key (the run's rows only)."""
    rows = ws.conn.execute(
        "SELECT item_id, result, vanilla, official, pope_label FROM run_item_figures WHERE run_id = ? ORDER BY item_id",
        (run_id,),
    )
    return [ItemOutcome(i, result, bool(vanilla), official, label) for i, result, vanilla, official, label in rows]


def list_runs(ws: Workspace) -> list[Run]:
    now = datetime.now(UTC)
    return [_run(r, now) for r in ws.db.query(_RUN_SELECT + " ORDER BY r.id")]


def delete_unstarted(ws: Workspace, run_id: int, owner: Owner) -> bool:
    """Remove a run this owner created that has no pass stored (it failed before asking anything)."""
    with ws.db.atomic():
        cur = ws.conn.execute(
            "DELETE FROM runs WHERE id = ? AND owner_token = ? AND NOT EXISTS "
            "(SELECT 1 FROM predictions WHERE run_id = ?)",
            (run_id, owner.token, run_id),
        )
    return cur.rowcount == 1


def add_predictions(ws: Workspace, predictions: list[Prediction], owner: Owner | None = None) -> None:
    """One batch, one transaction: a batch is either stored whole or (after a kill) not at all. With `owner`, the
    batch is stored only while that owner holds the run (RunLost otherwise), and beats its heartbeat."""
    problems = [problem for p in predictions for problem in p.token_problems()]
    if problems:  # checked before the transaction: a batch with one bad count is refused whole
        raise InvalidInput(problems[0] + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""))
    now = now_iso()
    with ws.db.atomic():
        if predictions and owner is not None:
            cur = ws.conn.execute(
                "UPDATE runs SET updated_at = ?, heartbeat_at = ? WHERE id = ? AND owner_token = ?",
                (now, now, predictions[0].run_id, owner.token),
            )
            if cur.rowcount != 1:
                raise RunLost(f"run {predictions[0].run_id} was taken over by another process")
        ws.conn.executemany(
            "INSERT INTO predictions (run_id, item_id, pass, option_order, prompt, response, answer, choice, stage, "
            "reason, correct, latency_ms, created_at, scores, turns, prompt_tokens, completion_tokens, thought, "
            "finish_reason, reasoning_tokens) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [p.row(now) for p in predictions],
        )
        if predictions and owner is None:
            ws.conn.execute("UPDATE runs SET updated_at = ? WHERE id = ?", (now, predictions[0].run_id))


def items_of(ws: Workspace, run: Run) -> list[catalog.Item]:
    """The items a run asks, in file order: its benchmark's, only the first `limit` when it was started with one."""
    return catalog.list_items(ws, run.benchmark_id, limit=run.limit)


PREDICTION_COLUMNS = (
    "run_id, item_id, pass, option_order, prompt, response, answer, choice, stage, reason, correct, latency_ms, "
    "scores, turns, prompt_tokens, completion_tokens, thought, finish_reason, reasoning_tokens"
)
"""Every column prediction_from_row reads, in its order: what a reader of whole passes selects."""


def predictions_of(ws: Workspace, run_id: int) -> list[Prediction]:
    rows = ws.conn.execute(
        f"SELECT {PREDICTION_COLUMNS} FROM predictions WHERE run_id = ? ORDER BY item_id, pass", (run_id,)
    )
    return [prediction_from_row(r) for r in rows]


def token_usage(ws: Workspace, run_id: int) -> TokenUsage:
    """The tokens a run's stored passes cost as its server said, as kept beside them (migration 0021): passes with a
    count, and the sums (None when no pass has that count). A value outside what the door lets in (a file written
    by other tools) is not counted."""
    row = ws.conn.execute(
        "SELECT token_passes, prompt_passes, prompt_tokens, completion_passes, completion_tokens, reasoning_passes, "
        "reasoning_tokens FROM run_counts WHERE run_id = ?",
        (run_id,),
    ).fetchone()
    if row is None:
        return TokenUsage(0, None, None)
    passes, prompt_passes, prompt, completion_passes, completion, reasoning_passes, reasoning = row
    return TokenUsage(
        passes,
        prompt if prompt_passes else None,
        completion if completion_passes else None,
        reasoning if reasoning_passes else None,
    )


def truncation(ws: Workspace, run_id: int) -> Truncation:
    """The run's truncated passes, as kept beside them (migration 0024): a few columns of one row."""
    row = ws.conn.execute(
        "SELECT truncated, truncated_thought, passes, truncated_wrong FROM run_counts WHERE run_id = ?", (run_id,)
    ).fetchone()
    return Truncation(*row) if row is not None else Truncation(0, 0, 0)


@dataclass(frozen=True)
class GroupFigures:
    """One group (an L2 ability, a leaf category or a split) of a run's kept figures: its keyed items in the run's
    benchmark, asked or not, and those right under VanillaEval, right under CircularEval, and right so far with
    passes never asked (circular runs)."""

    questions: int
    vanilla: int
    circular: int
    unasked: int


@dataclass(frozen=True)
class KeptFigures:
    """A run's figures under its own scoring as the workspace keeps them while passes are stored (migration 0021):
    `questions` the items it asks, `sums` its sums over its items and passes by column name, `groups`
    level (l2, category, split) -> group name -> its figures, for every group holding a keyed item."""

    questions: int
    sums: dict[str, int]
    groups: dict[str, dict[str, GroupFigures]]


# What run_group_figures sums per combination of a run's groups (migration 0021); a run's are the sums of its few.
_COMBINATION_SUMS = ("vanilla", "circular", "unasked", "undecided_vanilla", "complete", "consistent")


def kept_figures(ws: Workspace, run: Run) -> KeptFigures | None:
    """The run's kept figures, read in a few rows whatever its size; None where they are not kept: an open run (its
    metrics are means over answers, not sums) or a run whose limit leaves items of its benchmark out (the kept sums
    are over the whole benchmark)."""
    row = ws.conn.execute("SELECT items FROM benchmark_counts WHERE benchmark_id = ?", (run.benchmark_id,)).fetchone()
    items = row[0] if row else 0
    if run.strategy == "open" or (run.limit is not None and run.limit < items):
        return None
    sums: dict[str, int] = {}
    for table in ("run_figures", "run_counts"):  # POPE's sums; what the passes say (none stored yet: zeros)
        cur = ws.conn.execute(f"SELECT * FROM {table} WHERE run_id = ?", (run.id,))
        names = [d[0] for d in cur.description]
        sums.update(zip(names, cur.fetchone() or (0,) * len(names), strict=True))
    totals = ws.conn.execute(
        f"SELECT {', '.join(f'coalesce(sum({s}), 0)' for s in _COMBINATION_SUMS)} FROM run_group_figures "
        "WHERE run_id = ?",
        (run.id,),
    ).fetchone()
    sums.update(zip(_COMBINATION_SUMS, totals, strict=True))
    groups: dict[str, dict[str, GroupFigures]] = {"l2": {}, "category": {}, "split": {}}
    for level in groups:
        for name, questions, vanilla, circular, unasked in ws.conn.execute(
            "SELECT g.name, g.answered, coalesce(f.vanilla, 0), coalesce(f.circular, 0), coalesce(f.unasked, 0) "
            f"FROM benchmark_groups g LEFT JOIN (SELECT {level} AS name, sum(vanilla) AS vanilla, sum(circular) AS "
            f"circular, sum(unasked) AS unasked FROM run_group_figures WHERE run_id = ? GROUP BY {level}) f "
            "ON f.name = g.name WHERE g.benchmark_id = ? AND g.level = ? AND g.answered > 0",
            (run.id, run.benchmark_id, level),
        ):
            groups[level][name] = GroupFigures(questions, vanilla, circular, unasked)
    return KeptFigures(items, sums, groups)


def _tokens_read(value: object) -> int | None:
    """A stored token count, or None when absent or outside what the door lets in."""
    return value if isinstance(value, int) and valid_int(value, 0, TOKENS_MAX) else None


def prediction_from_row(r: tuple[Any, ...]) -> Prediction:
    """A Prediction from the predictions columns in PREDICTION_COLUMNS' order: run_id … latency_ms, then optionally
    scores and turns (both or neither), then optionally prompt_tokens and completion_tokens (both or neither), then
    optionally thought, finish_reason and reasoning_tokens (all three or none)."""
    return Prediction(
        r[0],
        r[1],
        r[2],
        tuple(json.loads(r[3])),
        r[4],
        r[5],
        r[6],
        r[7],
        r[8],
        r[9],
        None if r[10] is None else bool(r[10]),
        r[11],
        scores_from_json(r[12]) if len(r) > 12 else None,
        turns_from_json(r[13]) if len(r) > 13 else None,
        _tokens_read(r[14]) if len(r) > 14 else None,
        _tokens_read(r[15]) if len(r) > 15 else None,
        r[16] if len(r) > 16 and isinstance(r[16], str) else None,
        r[17] if len(r) > 17 and isinstance(r[17], str) else None,
        _tokens_read(r[18]) if len(r) > 18 else None,
    )


def scores_json(scores: tuple[float | None, ...] | None) -> str | None:
    """Scores as stored: a JSON list; a non-finite score (a log-prob of -inf) is stored as null."""
    if scores is None:
        return None
    return json.dumps([s if s is not None and math.isfinite(s) else None for s in scores])


def scores_from_json(text: object) -> tuple[float | None, ...] | None:
    """Stored scores, or None when absent or unreadable (a damaged value must not stop a report)."""
    value = _stored_list(text)
    if value is None or not all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in value):
        return None
    return tuple(None if v is None else float(v) for v in value)


def _stored_list(text: object) -> list[Any] | None:
    """A JSON list stored in a column, or None when absent or unreadable: a damaged value reads as nothing rather
    than failing every view of the item (`vlmdesk check` reports it)."""
    if not isinstance(text, str):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, list) else None
