"""`vlmdesk team sync FOLDER`: a shared folder that syncs (annotation/team_sync.py does the work)."""

from __future__ import annotations

import json


def add_actions(action) -> None:
    q = action(
        "sync",
        "append this workspace's new records to its journal in FOLDER and import every other journal there",
        cmd_sync,
        "vlmdesk team sync /mnt/share/study\nvlmdesk team sync ~/Sync/study --json",
    )
    q.description = (
        "A team folder is any folder that a file-sync tool or a share carries between machines (Syncthing, Dropbox, "
        "an SMB/NFS share, a git repository). Each workspace appends the records made in it (verdicts, notes, "
        "labels, QC decisions, arena votes, open verdicts, plans) to its own journal file there, "
        "vlmdesk-<id>.jsonl, whole lines only, and imports every other journal up to its last complete line, "
        "so a half-synced file is never misread. Importing is idempotent by record id; a bad line in another's "
        "journal (another benchmark, a damaged line) is skipped and counted, never fatal; a workspace never opens "
        "another's SQLite file. Run it again at any time (the app does, every minute)."
    )
    q.add_argument("folder", metavar="FOLDER", help="the team folder (it must exist)")
    q.add_argument("--from-start", action="store_true", help="read every other journal again from its first line")
    q.add_argument("--json", action="store_true", help="print what was appended and imported as JSON")


def cmd_sync(args) -> int:
    from annotation import team_sync
    from vlmdesk.cli import open_from_args

    with open_from_args(args) as ws:
        report = team_sync.sync(ws, args.folder, from_start=args.from_start)
    if args.json:
        print(json.dumps(report.to_json(), ensure_ascii=False))
    else:
        print(report.summary())
    return 0
