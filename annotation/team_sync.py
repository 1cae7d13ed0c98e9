"""A team folder: copies of a workspace exchange their human records through a folder any file-sync tool carries.

Each copy of a workspace appends the records made in it — every kind annotation/sync.py carries (sync.KINDS) — to its
own journal in the folder, `vlmdesk-<uuid>.jsonl`, and imports every other journal there. A journal is JSON Lines:
a header line `{"vlmdesk_journal": 1, "id": <uuid>, "by": <login name>, "workspace": <file name>, "created": <time>}`,
then one record per line, `{"kind": <a sync kind>, "record": <the record as export_records writes it>}`.

Writing (crash-safe, kill -9 at any point): the journal is created with O_EXCL and never through a symlink; records
are appended whole, in one write per batch ending in "\\n", then fsync'd. Before the append the workspace notes what
the journal will be (its length and the sha256 of its tail) and the row-id marks it will reach; after it, it commits
them. At the next sync the journal must be what the workspace last wrote: an append noted but not committed is
adopted when it is there whole, cut back to the last whole line when it was torn, forgotten when it never started.
A journal that is anything else — shorter, another tail, longer by bytes this copy did not write (another copy of
this workspace, copied with its database, appends to the same name; a sync tool restored an older version) — is left
to whoever wrote it, and this copy starts a new journal under a new uuid holding every record made here. Records are
never lost; at worst some are in two journals, and importing is idempotent by record id.

What is new: per table, the rows after the last row id journaled (one range seek: a sync's cost grows with what is
new, not with what is stored), less the rows that came in through this folder (team_received), which are never
journaled back to it.

Reading: a journal of another copy is read from the byte offset consumed last time up to its last complete line (a
file a sync tool has copied half-way, cut mid-line, is never misread: its partial tail waits for the rest), within
bounds (line length, bytes and lines per round, the number of journals), and merged through annotation/sync.py's
checks, all journals in one transaction per round. Where it was read to is remembered per journal file under the id
in its header: a file that got shorter, or whose header changed (replaced), is read again from the start. Bad lines
(not JSON, too long, an unknown benchmark item — a copy with other benchmarks) are skipped and counted: another
copy's file must not stop the team; an undo whose target has not arrived yet waits (team_waiting) and is tried at
each sync. Never read: this copy's own journal, dotfiles (Syncthing's `.syncthing.*.tmp`), `~$…`, `*.part`, `*.tmp`,
symlinks, anything not a regular file; SQLite files are never opened (only `vlmdesk-*.jsonl` names, read as text).
"""

from __future__ import annotations

import contextlib
import errno
import getpass
import hashlib
import json
import os
import re
import stat
import uuid as _uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from annotation import sync as exchange
from annotation.names import BadName, annotator_name
from db.catalog import now_iso
from db.errors import EnvironmentFault, UserError
from db.platform_io import open_append, open_no_wait, try_lock_fd
from db.workspace import Workspace, in_use
from evaluator.formats.importers import InputError
from evaluator.formats.importers.common import text_problem

VERSION = 1
PREFIX, SUFFIX = "vlmdesk-", ".jsonl"
MAX_HEADER_BYTES = 4096
MAX_NAME_CHARS = 200  # a journal's file name (a sync tool's conflict copy adds to it)
MAX_ENTRIES = 20_000  # folder entries looked at per sync
MAX_PEERS = 1000  # other journals read per sync
MAX_PEER_BYTES = 2**32  # a journal bigger than this is not read
MAX_ROUND_BYTES = 16 * 2**20  # read from other journals per round (one transaction)
MAX_ROUND_LINES = 20_000
MAX_ROUNDS = 64  # rounds per sync; what is left waits for the next
MAX_APPEND_RECORDS = 5000  # per append (one write, one fsync)
MAX_APPEND_BYTES = 8 * 2**20
MAX_PLAN_LINES = 1_000_000  # lines of one plan read together past a round's bounds
MAX_WAITING = 10_000  # undos waiting for their target, per folder
TAIL_BYTES = 4096  # what the workspace remembers of its journal's end (its sha256)
LISTED = 20  # bad lines listed per journal in a report (all are counted)


class TeamFolderError(UserError):
    """The folder cannot be used as a team folder (missing, not a folder, it holds this workspace)."""


class SyncBusy(EnvironmentFault):
    """Another sync of this workspace with this folder is under way."""


@dataclass
class PeerReport:
    name: str
    by: str  # the header's "by", or the file name when it has none to show
    added: dict[str, int] = field(default_factory=dict)  # kind -> records merged
    present: int = 0
    skipped_count: int = 0
    skipped: list[dict[str, Any]] = field(default_factory=list)
    waiting: int = 0
    reread: bool = False  # read again from the start (replaced or shortened)
    note: str | None = None  # why the file was not read (not a journal, a symlink, too big…)

    @property
    def new(self) -> int:
        return sum(self.added.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.name,
            "by": self.by,
            "added": self.new,
            "by_kind": self.added,
            "present": self.present,
            "skipped_count": self.skipped_count,
            "skipped": self.skipped,
            "waiting": self.waiting,
            "reread": self.reread,
            "note": self.note,
        }


@dataclass
class SyncReport:
    folder: str
    journal: str
    appended: dict[str, int] = field(default_factory=dict)  # kind -> records appended to my journal
    peers: dict[str, PeerReport] = field(default_factory=dict)
    new_journal: str | None = None  # why this sync started a new journal
    waiting: int = 0
    more: bool = False  # bounds reached: the next sync goes on
    synced_at: str = ""

    @property
    def imported(self) -> int:
        return sum(p.new for p in self.peers.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "folder": self.folder,
            "journal": self.journal,
            "appended": sum(self.appended.values()),
            "appended_by_kind": self.appended,
            "imported": self.imported,
            "peers": [p.to_json() for p in self.peers.values()],
            "skipped_count": sum(p.skipped_count for p in self.peers.values()),
            "waiting": self.waiting,
            "new_journal": self.new_journal,
            "more": self.more,
            "synced_at": self.synced_at,
        }

    def summary(self) -> str:
        lines = [f"{self.folder}: appended {sum(self.appended.values())} record(s) to {self.journal}"]
        if self.new_journal:
            lines.append(f"started a new journal: {self.new_journal}")
        for p in self.peers.values():
            if p.note:
                lines.append(f"  {p.name}: not read ({p.note})")
                continue
            kinds = ", ".join(f"{k} {n}" for k, n in p.added.items() if n) or "nothing new"
            extra = f" · {p.skipped_count} bad line(s) skipped" if p.skipped_count else ""
            extra += f" · {p.waiting} waiting" if p.waiting else ""
            lines.append(f"  {p.name} ({p.by}): {kinds}{extra}")
            lines.extend(f"    line {s['line']}: {s['field']}: {s['error']}" for s in p.skipped)
        lines.append(f"imported {self.imported} record(s)" + (" · more at the next sync" if self.more else ""))
        return "\n".join(lines)


@dataclass
class _Mine:
    """This copy's row of team_folders."""

    id: int
    journal: str
    bytes: int
    tail: str | None
    appending: dict[str, Any] | None
    marks: dict[str, int]

    @property
    def name(self) -> str:
        return f"{PREFIX}{self.journal}{SUFFIX}"


def journal_name(uid: str) -> str:
    return f"{PREFIX}{uid}{SUFFIX}"


# ------------------------------------------------------------------------------------------------- the folder
def team_folder(ws: Workspace, folder: str | os.PathLike[str]) -> Path:
    """The folder as stored (absolute, as given: a symlinked folder is the user's choice); raises TeamFolderError."""
    path = Path(os.path.abspath(Path(folder).expanduser()))
    if not path.is_dir():
        raise TeamFolderError(f"{path}: no such folder" if not path.exists() else f"{path}: not a folder")
    try:
        holds_me = path.samefile(Path(ws.path).parent)
    except OSError:
        holds_me = False
    if holds_me:
        # A sync tool copying a live SQLite file hands the others a torn database.
        raise TeamFolderError(f"{path}: holds this workspace; keep the workspace outside the team folder")
    if ws.read_only:
        raise TeamFolderError(f"{ws.path}: opened read-only; a sync writes the records it imports")
    return path


def _row(ws: Workspace, folder: Path) -> _Mine:
    found = ws.conn.execute(
        "SELECT id, journal, journal_bytes, journal_tail, appending, marks FROM team_folders WHERE folder = ?",
        (str(folder),),
    ).fetchone()
    if found is None:
        with ws.db.atomic():
            ws.conn.execute(
                "INSERT OR IGNORE INTO team_folders (folder, journal, created_at) VALUES (?, ?, ?)",
                (str(folder), str(_uuid.uuid4()), now_iso()),
            )
        return _row(ws, folder)
    fid, journal, size, tail, appending, marks = found
    return _Mine(fid, journal, size, tail, json.loads(appending) if appending else None, json.loads(marks))


def synced_folders(ws: Workspace) -> list[tuple[str, str | None]]:
    """(folder, last synced at) of every team folder this workspace has synced with."""
    return [(f, at) for f, at in ws.conn.execute("SELECT folder, synced_at FROM team_folders ORDER BY id")]


# ------------------------------------------------------------------------------------------------ my journal
def _tail_hash(fd: int, end: int) -> str:
    start = max(0, end - TAIL_BYTES)
    return hashlib.sha256(os.pread(fd, end - start, start)).hexdigest()


@contextlib.contextmanager
def _my_journal(ws: Workspace, folder: Path, report: SyncReport) -> Iterator[tuple[int, _Mine]]:
    """This copy's journal, open and locked, checked against what the workspace last wrote (see the module's rule);
    a new one when it is not that. Raises SyncBusy when another sync of it holds the lock."""
    for _ in range(4):
        mine = _row(ws, folder)
        path = folder / mine.name
        try:
            fd = open_append(path, create=False)
        except FileNotFoundError:
            if mine.bytes or mine.appending:
                _start_new(ws, mine, f"{mine.name} is gone from the folder")
                report.new_journal = f"{mine.name} is gone from the folder"
                continue
            try:
                fd = open_append(path, create=True)
            except FileExistsError:  # another sync made it meanwhile
                continue
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EINVAL, errno.ENXIO):  # a symlink, a FIFO: not ours
                why = f"{mine.name} there is not a regular file"
                _start_new(ws, mine, why)
                report.new_journal = why
                continue
            raise EnvironmentFault(f"{path}: {exc.strerror or exc}") from None
        try:
            with try_lock_fd(fd) as held:
                if not held:
                    raise SyncBusy(f"{path}: another sync of this workspace is writing it; try again in a moment")
                again = _row(ws, folder)
                if again.journal != mine.journal:
                    continue
                problem = _check_mine(ws, fd, again)
                if problem is not None:
                    _start_new(ws, again, problem)
                    report.new_journal = problem
                    continue
                yield fd, _row(ws, folder)
                return
        finally:
            os.close(fd)
    raise SyncBusy(f"{folder}: this workspace's journal kept changing while it was opened; try again")


def _check_mine(ws: Workspace, fd: int, mine: _Mine) -> str | None:
    """Resolve an append left half-done by a crash; None when the journal is what this copy wrote, else why not."""
    size = os.fstat(fd).st_size

    def ends_as(end: int, tail: str | None) -> bool:
        return end == 0 or (size >= end and tail == _tail_hash(fd, end))

    pending = mine.appending
    if pending is not None:
        end = int(pending["bytes"])
        if size == end and ends_as(end, pending["tail"]):  # written whole; the commit did not happen
            _commit_append(ws, mine, end, pending["tail"], pending["marks"])
            return None
        if mine.bytes <= size < end and ends_as(mine.bytes, mine.tail):  # not written, or torn: cut the torn part
            if size > mine.bytes:
                os.ftruncate(fd, mine.bytes)
                os.fsync(fd)
            with ws.db.atomic():
                ws.conn.execute("UPDATE team_folders SET appending = NULL WHERE id = ?", (mine.id,))
            return None
    elif size == mine.bytes and ends_as(mine.bytes, mine.tail):
        return None
    if size < mine.bytes:
        return f"{mine.name} is shorter than this workspace wrote it (replaced by an older copy?)"
    return f"{mine.name} is not what this workspace wrote (another copy of this workspace writes it too?)"


def _start_new(ws: Workspace, mine: _Mine, why: str) -> None:
    """A new journal under a new uuid, to hold every record made here (the old file stays whoever's it is)."""
    with ws.db.atomic():
        ws.conn.execute(
            "UPDATE team_folders SET journal = ?, journal_bytes = 0, journal_tail = NULL, appending = NULL, "
            "marks = '{}' WHERE id = ?",
            (str(_uuid.uuid4()), mine.id),
        )


def _commit_append(ws: Workspace, mine: _Mine, end: int, tail: str, marks: dict[str, int]) -> None:
    with ws.db.atomic():
        ws.conn.execute(
            "UPDATE team_folders SET journal_bytes = ?, journal_tail = ?, appending = NULL, marks = ? WHERE id = ?",
            (end, tail, json.dumps(marks, sort_keys=True), mine.id),
        )


def _header(ws: Workspace, mine: _Mine) -> bytes:
    try:
        by = annotator_name(getpass.getuser())
    except (BadName, OSError, KeyError):
        by = "someone"
    head = {"vlmdesk_journal": VERSION, "id": mine.journal, "by": by, "workspace": Path(ws.path).name[:200]}
    return (json.dumps(head | {"created": now_iso()}, ensure_ascii=False) + "\n").encode()


def _new_records(ws: Workspace, mine: _Mine) -> tuple[list[bytes], dict[str, int], dict[str, int], bool]:
    """(lines, new marks, records per kind, whether more are left) of the records made here after the marks: per
    table, the rows after its mark (a range seek), less those received through this folder."""
    lines: list[bytes] = []
    marks, counts = dict(mine.marks), dict[str, int]()
    size, full = 0, False
    for kind, table in _journal_tables():
        room = MAX_APPEND_RECORDS - len(lines)
        if room <= 0 or size >= MAX_APPEND_BYTES:
            return lines, marks, counts, True
        scanned = ws.conn.execute(
            f"SELECT t.id, t.uuid, EXISTS (SELECT 1 FROM team_received r WHERE r.tbl = ? AND r.row_id = t.id "
            f"AND r.folder_id = ?) FROM {table} t WHERE t.id > ? ORDER BY t.id LIMIT ?",
            (table, mine.id, marks.get(table, 0), room),
        ).fetchall()
        full = full or len(scanned) == room
        for row_id, uid, received in scanned:
            marks[table] = row_id
            if received:
                continue
            # A plan is several lines, written together (a reader keeps them together: _read_peer).
            records = exchange.stored_plan(ws, uid) if kind == "plans" else [_stored(ws, table, uid)]
            for record in records:
                if record is None:  # gone meanwhile (a benchmark deleted)
                    continue
                line = (json.dumps({"kind": kind, "record": record}, ensure_ascii=False) + "\n").encode()
                lines.append(line)
                size += len(line)
            counts[kind] = counts.get(kind, 0) + 1
    return lines, marks, counts, full


def _journal_tables() -> list[tuple[str, str]]:
    """(kind, table) of every table whose rows a journal carries: every kind annotation/sync.py carries."""
    return [
        (kind, table)
        for kind in exchange.KINDS
        for table in (("team_plans",) if kind == "plans" else tuple(k.table for k in exchange.tables_of(kind)))
    ]


def _stored(ws: Workspace, table: str, uid: str) -> dict[str, Any] | None:
    kind = next(
        k for kind, _ in _journal_tables() if kind != "plans" for k in exchange.tables_of(kind) if k.table == table
    )
    return exchange.stored_record(ws, kind, uid)


def _append(ws: Workspace, fd: int, folder: Path, report: SyncReport) -> bool:
    """One batch of new records appended to my journal; whether more are left."""
    mine = _row(ws, folder)
    lines, marks, counts, more = _new_records(ws, mine)
    if mine.bytes == 0:
        lines.insert(0, _header(ws, mine))
    if not lines:
        if marks != mine.marks:  # only rows that came in through this folder: nothing to write, the marks move on
            _commit_append(ws, mine, mine.bytes, mine.tail or "", marks)
        return more
    data = b"".join(lines)
    end = mine.bytes + len(data)
    start = max(0, end - TAIL_BYTES)
    before = os.pread(fd, mine.bytes - start, start) if start < mine.bytes else b""
    tail = hashlib.sha256(before + data[max(0, start - mine.bytes) :]).hexdigest()
    with ws.db.atomic():  # noted first: a crash after the write is adopted at the next sync, not repeated
        ws.conn.execute(
            "UPDATE team_folders SET appending = ? WHERE id = ?",
            (json.dumps({"bytes": end, "tail": tail, "marks": marks}, sort_keys=True), mine.id),
        )
    _write_all(fd, data)
    os.fsync(fd)
    _commit_append(ws, mine, end, tail, marks)
    for kind, n in counts.items():
        report.appended[kind] = report.appended.get(kind, 0) + n
    return more


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


# ------------------------------------------------------------------------------------------- others' journals
_SKIPPED_NAME = re.compile(r"^(\.|~\$)|\.(part|tmp)$", re.IGNORECASE)


@dataclass
class _Read:
    """What one round read of one journal."""

    name: str
    path: Path
    journal: str
    label: str
    offset: int  # where it was read to
    lines: int  # lines consumed up to offset
    parsed: list[tuple[int, str, dict[str, Any] | tuple[str, str]]]
    texts: dict[int, str]  # line number -> its text (for an undo that must wait)
    more: bool


def _candidates(folder: Path, mine: str) -> Iterator[os.DirEntry[str]]:
    with os.scandir(folder) as entries:
        for n, entry in enumerate(entries):
            if n >= MAX_ENTRIES:
                return
            name = entry.name
            if name == mine or not (name.startswith(PREFIX) and name.endswith(SUFFIX)) or _SKIPPED_NAME.search(name):
                continue
            yield entry


def _peer_note(entry: os.DirEntry[str]) -> str | None:
    if len(entry.name) > MAX_NAME_CHARS or text_problem(entry.name):
        return "an odd file name"
    if entry.is_symlink():
        return "a symbolic link (never followed)"
    st = entry.stat(follow_symlinks=False)
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if st.st_size > MAX_PEER_BYTES:
        return f"over {MAX_PEER_BYTES:,} bytes"
    if in_use(entry.path):
        return "a workspace open here"
    return None


def _read_header(f: Any) -> tuple[dict[str, Any] | None, int, str | None]:
    """(the header, its length in bytes, why it is not one); (None, 0, None) while its line is not whole yet."""
    raw = f.readline(MAX_HEADER_BYTES + 1)
    if not raw.endswith(b"\n"):
        return None, 0, ("its first line is too long for a journal header" if len(raw) > MAX_HEADER_BYTES else None)
    head = exchange.parse_line(raw)
    if not isinstance(head, dict) or "vlmdesk_journal" not in head:
        return None, 0, "not a vlmdesk journal (its first line is no journal header)"
    if type(head["vlmdesk_journal"]) is not int or head["vlmdesk_journal"] != VERSION:
        return None, 0, f"a journal of version {str(head['vlmdesk_journal'])[:20]} (a newer vlmdesk?)"
    uid = head.get("id")
    try:
        ok = isinstance(uid, str) and str(_uuid.UUID(uid)) == uid
    except ValueError:
        ok = False
    if not ok:
        return None, 0, "its header has no journal id"
    by = head.get("by")
    head["by"] = by if isinstance(by, str) and len(by) <= 100 and not text_problem(by) else None
    return head, len(raw), None


def _journal_line(raw: bytes) -> tuple[str, dict[str, Any] | tuple[str, str]] | None:
    """(kind, record or (field, what)) of one journal line; None for a blank one."""
    obj = exchange.parse_line(raw, depth=exchange.MAX_DEPTH + 1)
    if obj is None:
        return None
    if isinstance(obj, tuple):
        return "", obj
    kind, record = obj.get("kind"), obj.get("record")
    if set(obj) != {"kind", "record"}:
        return "", ("line", 'a journal line is {"kind": …, "record": {…}}')
    if kind not in exchange.KINDS:
        return "", ("kind", f"unknown kind {str(kind)[:40]!r} (a newer vlmdesk wrote it?)")
    if not isinstance(record, dict):
        return "", ("record", "expected a JSON object")
    return str(kind), record


def _read_peer(
    ws: Workspace, folder: Path, folder_id: int, entry: os.DirEntry[str], budget: list[int], report: PeerReport
) -> _Read | None:
    path = Path(entry.path)
    try:
        fd = open_no_wait(path, follow=False)
    except OSError as exc:
        report.note = exc.strerror or str(exc)
        return None
    with os.fdopen(fd, "rb") as f:
        st, seen = os.fstat(fd), entry.stat(follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (seen.st_dev, seen.st_ino):
            report.note = "changed while it was opened"
            return None
        head, head_len, why = _read_header(f)
        if head is None:
            report.note = why or "its header line is not whole yet"
            return None
        report.by = head["by"] or entry.name
        known = ws.conn.execute(
            "SELECT journal, offset, lines FROM team_peers WHERE folder_id = ? AND name = ?", (folder_id, entry.name)
        ).fetchone()
        offset, lines = head_len, 1
        if known is not None:
            if known[0] == head["id"] and known[1] <= st.st_size:
                offset, lines = max(known[1], head_len), max(known[2], 1)
            else:  # replaced or shortened: read again from the start (importing is idempotent)
                report.reread = True
        f.seek(offset)
        read = _Read(entry.name, path, head["id"], report.by, offset, lines, [], {}, False)
        group_left, group_at = 0, (0, 0, 0)  # a plan's lines still to come; where its first line began
        while True:
            if not group_left and (budget[0] <= 0 or budget[1] <= 0):
                read.more = True
                break
            raw = f.readline(exchange.MAX_LINE_BYTES + 1)
            if not raw.endswith(b"\n"):
                if len(raw) <= exchange.MAX_LINE_BYTES:
                    break  # the end, or a partial line a sync tool has not finished: it waits
                skipped = len(raw)  # a line too long: skipped whole, once its end is there
                while raw and not raw.endswith(b"\n"):
                    raw = f.readline(exchange.MAX_LINE_BYTES)
                    skipped += len(raw)
                if not raw:
                    break
                read.lines += 1
                read.offset += skipped
                budget[0] -= skipped
                read.parsed.append((read.lines, "", ("line", f"longer than {exchange.MAX_LINE_BYTES} bytes")))
                continue
            at = (read.offset, read.lines, len(read.parsed))
            read.lines += 1
            read.offset += len(raw)
            budget[0] -= len(raw)
            budget[1] -= 1
            parsed = _journal_line(raw)
            if parsed is None:
                continue
            kind, obj = parsed
            read.parsed.append((read.lines, kind, obj))
            if group_left:
                group_left -= 1
            elif kind == "plans" and isinstance(obj, dict) and obj.get("record") == "plan":
                group_left, group_at = _plan_size(obj), at
            if kind and isinstance(obj, dict) and obj.get("withdraws") is not None:
                read.texts[read.lines] = raw.decode("utf-8", "replace").rstrip("\n")
        if group_left:  # a plan is merged whole: its first line waits until the file holds its last
            read.offset, read.lines = group_at[:2]
            del read.parsed[group_at[2] :]
        return read


def _plan_size(head: dict[str, Any]) -> int:
    """How many lines follow a plan's own (its gold items and assignments, as its writer puts them: together)."""
    n = [head.get("gold"), head.get("assignments")]
    if not all(type(v) is int and 0 <= v for v in n):
        return 0
    return min(sum(n), MAX_PLAN_LINES)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------------------ sync
def sync(ws: Workspace, folder: str | os.PathLike[str], *, from_start: bool = False) -> SyncReport:
    """Append this copy's new records to its journal in `folder`, then import every other journal there."""
    path = team_folder(ws, folder)
    report = SyncReport(str(path), "")
    with _my_journal(ws, path, report) as (fd, mine):
        if from_start:
            with ws.db.atomic():
                ws.conn.execute("DELETE FROM team_peers WHERE folder_id = ?", (mine.id,))
        for _ in range(MAX_ROUNDS):
            if not _append(ws, fd, path, report):
                break
        else:
            report.more = True
        report.journal = _row(ws, path).name
        for _ in range(MAX_ROUNDS):
            if not _import_round(ws, path, mine, report):
                break
        else:
            report.more = True
        report.synced_at = now_iso()
        with ws.db.atomic():
            ws.conn.execute("UPDATE team_folders SET synced_at = ? WHERE id = ?", (report.synced_at, mine.id))
            report.waiting = ws.conn.execute(
                "SELECT count(*) FROM team_waiting WHERE folder_id = ?", (mine.id,)
            ).fetchone()[0]
    return report


def _import_round(ws: Workspace, folder: Path, mine: _Mine, report: SyncReport) -> bool:
    """Read every other journal on from where it was read to (within the round's bounds) and merge what was read,
    in one transaction; whether a bound was reached (another round goes on)."""
    budget = [MAX_ROUND_BYTES, MAX_ROUND_LINES]
    reads: list[_Read] = []
    peers = 0
    for entry in _candidates(folder, mine.name):
        peer = report.peers.setdefault(entry.name, PeerReport(entry.name, entry.name))
        note = _peer_note(entry)
        if note is None and peers >= MAX_PEERS:
            note = f"more than {MAX_PEERS} journals in the folder"
        if note is not None:
            peer.note = note
            continue
        peers += 1
        read = _read_peer(ws, folder, mine.id, entry, budget, peer)
        if read is not None:
            peer.note = None
            reads.append(read)
    waiting_rows = ws.conn.execute(
        "SELECT name, line, text FROM team_waiting WHERE folder_id = ? ORDER BY name, line", (mine.id,)
    ).fetchall()
    if not any(r.parsed for r in reads) and not waiting_rows:
        _save_offsets(ws, mine, reads)
        return any(r.more for r in reads)
    with ws.db.atomic():
        still: list[tuple[str, int, str]] = []
        for read in reads:
            if not read.parsed:
                continue
            waiting: list[int] = []
            others = [line for line in read.parsed if line[1] != "plans"]
            result = exchange.merge_lines(ws, read.path, others, skip_bad=True, waiting=waiting)
            _received(ws, mine, result)
            _tally(report.peers[read.name], result)
            still.extend((read.name, n, read.texts[n]) for n in waiting)
            plans = [(n, obj) for n, kind, obj in read.parsed if kind == "plans"]
            if plans:
                _merge_plans(ws, mine, read.path, plans, report.peers[read.name])
        # Undos that waited for their target: tried again now that every journal's new lines are in.
        ws.conn.execute("DELETE FROM team_waiting WHERE folder_id = ?", (mine.id,))
        retry: dict[str, list[tuple[int, str]]] = {}
        for name, line, text in [*waiting_rows, *still]:
            retry.setdefault(name, []).append((line, text))
        kept = 0
        for name, items in retry.items():
            waiting = []
            texts = dict(items)
            parsed = [(n, *(_journal_line(t.encode()) or ("", ("line", "blank")))) for n, t in items]
            result = exchange.merge_lines(ws, folder / name, parsed, skip_bad=True, waiting=waiting)
            _received(ws, mine, result)
            peer = report.peers.setdefault(name, PeerReport(name, name))
            _tally(peer, result)
            for n in waiting:
                if kept >= MAX_WAITING:
                    peer.skipped_count += 1
                    continue
                kept += 1
                ws.conn.execute(
                    "INSERT OR IGNORE INTO team_waiting (folder_id, name, line, text) VALUES (?, ?, ?, ?)",
                    (mine.id, name, n, texts[n]),
                )
            peer.waiting = len(waiting)
        _save_offsets(ws, mine, reads)
    return any(r.more for r in reads)


def _received(ws: Workspace, mine: _Mine, result: exchange.ImportReport) -> None:
    for table, uid in result.inserted:
        ws.conn.execute(
            f"INSERT OR IGNORE INTO team_received (tbl, row_id, folder_id) SELECT ?, id, ? FROM {table} WHERE uuid = ?",
            (table, mine.id, uid),
        )


def _merge_plans(ws: Workspace, mine: _Mine, path: Path, lines: list[tuple[int, Any]], peer: PeerReport) -> None:
    heads = {obj["id"] for _, obj in lines if isinstance(obj, dict) and obj.get("record") == "plan"}
    heads = {h for h in heads if isinstance(h, str)}

    def stored() -> set[str]:
        return {h for h in heads if ws.conn.execute("SELECT 1 FROM team_plans WHERE uuid = ?", (h,)).fetchone()}

    before = stored()
    result = exchange.merge_plans(ws, path, lines)
    for uid in stored() - before:  # came in through this folder: never journaled back to it
        ws.conn.execute(
            "INSERT OR IGNORE INTO team_received (tbl, row_id, folder_id) SELECT 'team_plans', id, ? FROM team_plans "
            "WHERE uuid = ?",
            (mine.id, uid),
        )
    peer.added["plans"] = peer.added.get("plans", 0) + result.added.get("team_plans", 0)
    peer.present += result.present
    peer.skipped_count += result.skipped_count
    for e in result.skipped:
        if len(peer.skipped) < LISTED:
            peer.skipped.append({"line": e.line, "field": e.field, "error": e.what})
    if not peer.added["plans"]:
        del peer.added["plans"]


def _tally(peer: PeerReport, result: exchange.ImportReport) -> None:
    kinds = {table: kind for kind, table in _journal_tables()}
    for table, n in result.added.items():
        if n:
            peer.added[kinds[table]] = peer.added.get(kinds[table], 0) + n
    peer.present += result.present
    peer.skipped_count += result.skipped_count
    for e in result.skipped:
        if len(peer.skipped) < LISTED:
            peer.skipped.append({"line": e.line, "field": e.field, "error": e.what})


def _save_offsets(ws: Workspace, mine: _Mine, reads: list[_Read]) -> None:
    with ws.db.atomic():
        for r in reads:
            ws.conn.execute(
                "INSERT INTO team_peers (folder_id, name, journal, label, offset, lines) VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (folder_id, name) DO UPDATE SET journal = excluded.journal, label = excluded.label, "
                "offset = excluded.offset, lines = excluded.lines",
                (mine.id, r.name, r.journal, r.label, r.offset, r.lines),
            )


__all__ = ["InputError", "SyncBusy", "SyncReport", "TeamFolderError", "sync", "synced_folders"]
