"""The events of a run in progress: what `vlmdesk run --json-progress` prints, one JSON object per line, and what
the app reads back from that process.

`to_json()` keeps the documented lines exactly (keys in this order); `read_event` turns a line's object back into
its event, or None for anything else (the app reads another process's output: it never trusts it blindly).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, ClassVar

from evaluator.backends.base import RetryWait
from evaluator.types import ProgressEventName


@dataclass(frozen=True)
class StartEvent:
    """Before the first batch: how much of the run is done already (a resumed run starts above zero)."""

    event: ClassVar[ProgressEventName] = "start"
    run_id: int
    resumed: bool
    benchmark_id: int
    items_total: int
    passes_done: int

    def to_json(self) -> dict[str, Any]:
        return {"event": self.event, **asdict(self)}


@dataclass(frozen=True)
class Progress:
    """After each stored batch. `eta_s` is an upper bound: early termination only shortens it."""

    event: ClassVar[ProgressEventName] = "progress"
    run_id: int
    wave: int
    passes_done: int
    items_done: int
    items_total: int
    calls: int
    calls_per_s: float
    eta_s: float | None

    def to_json(self) -> dict[str, Any]:
        return {"event": self.event, **asdict(self)}


@dataclass(frozen=True)
class WaitEvent:
    """A request waiting before it is retried (a rate limit, a server error, a timeout): what for and how long, so a
    run that seems stuck says why. `retry_after_s` is what the server asked for (null when it did not); `wait_s`
    what is waited (capped: docs/adr/0024); `message` the line the app and the terminal show."""

    event: ClassVar[ProgressEventName] = "wait"
    run_id: int
    server: str
    reason: str
    retry_after_s: float | None
    wait_s: float
    attempt: int
    attempts: int
    message: str

    @classmethod
    def of(cls, run_id: int, wait: RetryWait) -> WaitEvent:
        return cls(
            run_id, wait.server, wait.error, wait.retry_after_s, wait.wait_s, wait.attempt, wait.attempts, wait.line()
        )

    def to_json(self) -> dict[str, Any]:
        return {"event": self.event, **asdict(self)}


@dataclass(frozen=True)
class DoneEvent:
    """The run finished: how many prompts the model answered in this process."""

    event: ClassVar[ProgressEventName] = "done"
    run_id: int
    model_calls: int

    def to_json(self) -> dict[str, Any]:
        return {"event": self.event, **asdict(self)}


RunEvent = StartEvent | Progress | WaitEvent | DoneEvent
_EVENTS: dict[str, type[RunEvent]] = {
    "start": StartEvent,
    "progress": Progress,
    "wait": WaitEvent,
    "done": DoneEvent,
}
_NUMBER = (int, float)


def read_event(obj: object) -> RunEvent | None:
    """The event a `--json-progress` line holds, or None when it is not one (another JSON line, a missing or
    mistyped field)."""
    if not isinstance(obj, dict):
        return None
    kind = _EVENTS.get(obj.get("event"))  # type: ignore[arg-type]
    if kind is None:
        return None
    values: dict[str, Any] = {}  # each checked below against its field's type
    for f in fields(kind):
        value = obj.get(f.name)
        expected = f.type if isinstance(f.type, str) else f.type.__name__
        if expected == "bool":
            ok = isinstance(value, bool)
        elif expected == "int":
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif expected == "str":
            ok = isinstance(value, str)
        elif expected == "float":
            ok = isinstance(value, _NUMBER) and not isinstance(value, bool)
        else:  # float | None
            ok = value is None or (isinstance(value, _NUMBER) and not isinstance(value, bool))
        if not ok:
            return None
        values[f.name] = value
    return kind(**values)
