"""The LLM step of the benchmarks whose official figure a grader model decides (MathVista's answer extraction, MMVet's
correctness score), asked as VLMEvalKit asks it and cached so re-scoring never asks twice.

VLMEvalKit's protocol (open-compass/VLMEvalKit@e8e78f05f3080fe28154f2130321f17951c3be94,
vlmeval/dataset/utils/mathvista.py MathVista_auxeval and vlmeval/dataset/utils/mmvet.py MMVet_auxeval): the same
prompt up to 5 times, try i at temperature i × 0.5, until the benchmark's own test accepts the reply; when no try is
accepted the benchmark's fallback stands (MathVista: an empty extraction; MMVet: score 0.0). The judge is any model
spec; each temperature is the spec with its `temperature` setting replaced, loaded only when a try needs it.

Results are stored in the extraction cache (db/extractions.py, no migration): key = sha256 of (step name, prompt
version, the judge's run identity, the prompt), `choice` = the accepted reply (None: given up), `raw` = every reply,
`reason` = the tries' log. The prompt holds everything the reply depends on, so the same question and prediction
under the same judge is asked once, across runs. Which judge scored a run last is kept as one more cache entry per
(step, run), so a metric can read the run's figure without asking anything. A BackendError (server down, 4xx) is not
a reply: it is raised, and what was stored before stays.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from db import extractions as store
from db.errors import InvalidInput
from db.workspace import ReadOnlyWorkspace, Workspace
from evaluator.backends import Backend, BackendError, Query, check_spec, run_identity
from evaluator.backends.base import texts_of

PROMPT_VERSION = 1
TRIES = 5  # VLMEvalKit's retry = 5
TEMPERATURE_STEP = 0.5  # try i asks at temperature i * 0.5
CHUNK = 32  # prompts per backend call; each chunk's results are stored before the next is sent
GIVEN_UP = "none"
ANSWERED = "llm"


def at_temperature(spec: str, temperature: float) -> str:
    """The model spec asking at `temperature`: its own `temperature` option replaced (removed at 0, the default)."""
    head, sep, query = spec.partition("?")
    options = [o for o in query.split("&") if o and o.split("=", 1)[0].strip() != "temperature"] if sep else []
    if temperature > 0:
        options.append(f"temperature={temperature:g}")
    return head + ("?" + "&".join(options) if options else "")


def cache_key(step: str, judge_identity: str, prompt: str) -> str:
    payload = [step, PROMPT_VERSION, judge_identity, prompt]
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False).encode()).hexdigest()


def _run_key(step: str, run_id: int) -> str:
    return hashlib.sha256(json.dumps([step, "run judge", run_id]).encode()).hexdigest()


@dataclass(frozen=True)
class Graded:
    """One prompt's outcome: the accepted reply (None: no try accepted), how many tries, every reply, the log."""

    reply: str | None
    tries: int
    replies: tuple[str, ...]
    log: str
    asked_now: bool = False


def _from_cache(entry: store.CachedExtraction) -> Graded:
    return Graded(entry.choice if entry.stage == ANSWERED else None, entry.attempts, entry.raw, entry.reason)


def stored(ws: Workspace, step: str, judge_identity: str, prompts: Sequence[str]) -> dict[str, Graded]:
    """The stored outcomes of `prompts` under the judge (prompt -> Graded), asking nothing."""
    keys = {cache_key(step, judge_identity, p): p for p in prompts}
    return {keys[k]: _from_cache(e) for k, e in store.cached(ws, list(keys)).items()}


def run_judge(ws: Workspace, step: str, run_id: int) -> str | None:
    """The judge identity that scored the run last under `step`, or None when it never was."""
    entry = store.cached(ws, [_run_key(step, run_id)]).get(_run_key(step, run_id))
    return entry.choice if entry is not None else None


class Grader:
    """Asks a judge `step`'s prompts under VLMEvalKit's temperature schedule; `accept(reply)` says whether a try's
    reply stands (the reference's own test), `max_new_tokens` is the reference's max_tokens."""

    def __init__(
        self,
        ws: Workspace,
        step: str,
        judge: str,
        accept: Callable[[str], str | None],
        *,
        max_new_tokens: int,
        backend_for: Callable[[float], Backend] | None = None,
        tries: int = TRIES,
    ):
        if tries < 1:
            raise InvalidInput("tries must be at least 1")
        try:
            judge = check_spec(judge)
        except BackendError as exc:
            raise InvalidInput(f"judge: {exc}") from None
        self.ws, self.step, self.judge, self.accept = ws, step, judge, accept
        self.identity = run_identity(judge)
        self.max_new_tokens, self.tries = max_new_tokens, tries
        self._backend_for = backend_for
        self._backends: dict[float, Backend] = {}
        self.calls = 0

    def _backend(self, temperature: float) -> Backend:
        if temperature not in self._backends:
            if self._backend_for is not None:
                self._backends[temperature] = self._backend_for(temperature)
            else:
                from evaluator.backends import load_backend

                self._backends[temperature] = load_backend(at_temperature(self.judge, temperature))
        return self._backends[temperature]

    def grade(self, prompts: Sequence[str], *, run_id: int | None = None) -> list[Graded]:
        """Each prompt's outcome, stored ones read and the rest asked (each distinct prompt once), chunk by chunk."""
        keys = [cache_key(self.step, self.identity, p) for p in prompts]
        found = {k: _from_cache(e) for k, e in store.cached(self.ws, keys).items()}
        todo = list(dict.fromkeys((k, p) for k, p in zip(keys, prompts) if k not in found))
        if todo and self.ws.read_only:  # said before a judge is paid for replies that could not be stored
            raise ReadOnlyWorkspace(f"{self.ws.path}: workspace is read-only: {len(todo)} prompt(s) to grade")
        for start in range(0, len(todo), CHUNK):
            chunk = todo[start : start + CHUNK]
            outcomes = self._ask([p for _, p in chunk])
            store.store(
                self.ws,
                [
                    store.CachedExtraction(
                        k,
                        f"{self.step}:{self.identity}",
                        g.reply,
                        ANSWERED if g.reply is not None else GIVEN_UP,
                        g.log,
                        g.replies,
                        g.tries,
                    )
                    for (k, _), g in zip(chunk, outcomes)
                ],
            )
            found.update({k: g for (k, _), g in zip(chunk, outcomes)})
        if run_id is not None and not self.ws.read_only and run_judge(self.ws, self.step, run_id) != self.identity:
            marker = store.CachedExtraction(
                _run_key(self.step, run_id), f"{self.step}:run", self.identity, "judge", "the judge of the run", (), 1
            )
            store.store(self.ws, [marker])
        return [found[k] for k in keys]

    def _ask(self, prompts: list[str]) -> list[Graded]:
        replies: list[list[str]] = [[] for _ in prompts]
        logs = [""] * len(prompts)
        accepted: dict[int, str] = {}
        open_ = list(range(len(prompts)))
        for attempt in range(self.tries):
            if not open_:
                break
            backend = self._backend(attempt * TEMPERATURE_STEP)
            texts = texts_of(backend.generate([Query(prompt=prompts[i]) for i in open_], self.max_new_tokens))
            if len(texts) != len(open_):
                raise BackendError(f"{backend.spec}: {len(texts)} replies to {len(open_)} prompts")
            self.calls += len(open_)
            still = []
            for i, text in zip(open_, texts):
                # VLMEvalKit's API wrappers hand back the message content stripped.
                reply = (text or "").strip()
                replies[i].append(reply)
                why = self.accept(reply)
                if why is None:
                    accepted[i] = reply
                    logs[i] += "Succeed"
                else:
                    logs[i] += f"Try {attempt}: output is {reply[:200]}, {why}.\n"
                    still.append(i)
            open_ = still
        for i in open_:
            logs[i] += f"All {self.tries} retries failed.\n"
        return [Graded(accepted.get(i), len(replies[i]), tuple(replies[i]), logs[i], True) for i in range(len(prompts))]
