"""`vlmdesk fetch`: download a catalog benchmark by name (and `vlmdesk import NAME`, which fetches then imports)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from evaluator.formats.importers.catalog import CATALOG_ENV
from evaluator.formats.importers.fetch import CACHE_ENV, DEFAULT_IDLE_S, DEFAULT_TIMEOUT_S, MIRROR_ENV
from vlmdesk.args import float_in

if TYPE_CHECKING:
    from evaluator.formats.importers.catalog import CatalogEntry
    from evaluator.formats.importers.fetch import FetchResult


def register_fetch(add) -> None:
    p = add(
        description="Download a benchmark the catalog names, as VLMEvalKit (TSV + its MD5) or lmms-lab (parquet on "
        "the Hugging Face hub, each shard checked against the hub's SHA-256) publish it. Resumable: an interrupted "
        "download continues where it stopped (HTTP range) unless the file changed on the server. The file is checked "
        "before it takes its name; a second fetch finds it in the cache and downloads nothing. "
        f"Cache: ${CACHE_ENV}, else the user cache directory. Mirror: --mirror or ${MIRROR_ENV} replaces the host "
        f"of every URL (hub files also honour $HF_ENDPOINT); its user:password is never printed. $HF_TOKEN (gated "
        "hub repositories) is sent to https://huggingface.co only, never to a mirror or $HF_ENDPOINT. "
        f"More entries: ${CATALOG_ENV} (a JSON list). "
        "`vlmdesk import NAME` fetches and imports.",
        examples="""
                vlmdesk fetch --list
                vlmdesk fetch --list --json
                vlmdesk fetch MMBench_DEV_EN
                vlmdesk fetch mmbench_en_dev --mirror https://hf-mirror.com
                vlmdesk fetch POPE --to ~/data --timeout 3600
                vlmdesk fetch SEEDBench_IMG --json-progress
                vlmdesk fetch TextVQA_VAL                  # open questions with reference answers (also textvqa_val)
                vlmdesk import MMBench_DEV_EN""",
    )
    p.add_argument("name", nargs="?", help="the benchmark's name in the catalog (vlmdesk fetch --list)")
    p.add_argument("--list", action="store_true", help="print the catalog: name, layout, size, checksum")
    p.add_argument("--json", action="store_true", help="with --list: a JSON array; else the result as JSON")
    p.add_argument("--to", metavar="DIR", help="put the file in DIR instead of the cache")
    add_download_options(p)
    p.add_argument(
        "--json-progress",
        action="store_true",
        help="print progress as JSON lines on stdout: fetch_start, fetch_progress (bytes), fetch_done",
    )
    p.set_defaults(handler=cmd_fetch)


def add_download_options(p) -> None:
    p.add_argument(
        "--mirror", metavar="URL", help=f"a mirror replacing scheme://host of every URL (default: ${MIRROR_ENV})"
    )
    p.add_argument(
        "--timeout",
        type=float_in(1, 7 * 86400, "seconds"),
        default=DEFAULT_TIMEOUT_S,
        metavar="S",
        help=f"give up a download after S seconds in all (default {DEFAULT_TIMEOUT_S:g})",
    )
    p.add_argument(
        "--idle-timeout",
        type=float_in(0.1, 3600, "seconds"),
        default=DEFAULT_IDLE_S,
        metavar="S",
        help=f"a server that sends nothing for S seconds has stalled (default {DEFAULT_IDLE_S:g})",
    )


def _size(n: int | None) -> str:
    if n is None:
        return "?"
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n = n / 1000  # type: ignore[assignment]
    return "?"


def print_list(as_json: bool) -> None:
    from evaluator.formats.importers.catalog import catalog, dumps
    from evaluator.formats.importers.fetch import cache_dir

    entries = catalog()
    if as_json:
        print(dumps(entries))
        return
    print(f"{'name':<22} {'layout':<11} {'size':>9}  {'checksum':<38}  title")
    for e in entries:
        checksum = e.checksum or "sha256 per shard (hub)"
        print(f"{e.name:<22} {e.layout:<11} {_size(e.size):>9}  {checksum[:38]:<38}  {e.title}")
    print(f"\ncache: {cache_dir()}   (vlmdesk fetch NAME; vlmdesk import NAME also imports it)")


class Progress:
    """Where fetch events go: JSON lines on stdout (--json-progress), else a tqdm bar on a terminal's stderr."""

    def __init__(self, json_lines: bool):
        self.json_lines = json_lines
        self.bar = None

    def __call__(self, event: dict) -> None:
        if self.json_lines:
            print(json.dumps(event, ensure_ascii=False), flush=True)
            return
        if not sys.stderr.isatty():
            return
        if event["event"] == "fetch_start" and not event.get("cached"):
            from tqdm import tqdm

            self.close()
            self.bar = tqdm(
                total=event.get("bytes_total"),
                initial=event.get("resume_from") or 0,
                unit="B",
                unit_scale=True,
                desc=f"fetching {event['name']}",
                file=sys.stderr,
                leave=False,
            )
        elif event["event"] == "fetch_progress" and self.bar is not None:
            self.bar.update(event["bytes_done"] - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def fetch_entry(entry: CatalogEntry, args, progress: Progress, to: Path | None = None) -> FetchResult:
    from evaluator.formats.importers.fetch import fetch

    try:
        return fetch(
            entry,
            to=to,
            mirror=args.mirror,
            idle_s=args.idle_timeout,
            timeout_s=args.timeout,
            emit=progress,
        )
    finally:
        progress.close()


def cmd_fetch(args) -> int:
    from evaluator.formats.importers.catalog import entry_or_fail
    from vlmdesk.cli import UsageError

    if args.list:
        print_list(args.json)
        return 0
    if not args.name:
        raise UsageError("name a benchmark (vlmdesk fetch --list shows the catalog)")
    entry = entry_or_fail(args.name)
    progress = Progress(args.json_progress)
    to = Path(args.to).expanduser() if args.to else None
    if to is not None and to.exists() and not to.is_dir():
        raise UsageError(f"--to {args.to}: not a folder")
    try:
        result = fetch_entry(entry, args, progress, to)
    except KeyboardInterrupt:
        print(f"fetch of {entry.name} interrupted; the next fetch resumes it", file=sys.stderr)
        return 130
    if args.json_progress:
        progress(result.to_json())
    elif args.json:
        print(json.dumps(result.to_json(), ensure_ascii=False))
    elif result.cached:
        print(f"{entry.name}: in the cache at {result.path} (checked; nothing downloaded)")
    else:
        print(
            f"{entry.name}: {_size(result.bytes_moved)} downloaded{' (resumed)' if result.resumed else ''}, checked,"
            f" at {result.path}"
        )
    return 0
