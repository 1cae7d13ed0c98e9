"""Smoke test of the standalone app, and the measure of its size and start time (docs/adr/0043).

    python packaging/smoke.py            # build (packaging/build.py), then check
    python packaging/smoke.py --reuse    # check the bundle already in dist/vlmdesk/

Everything runs the bundle itself, offscreen, in a throw-away folder (its own workspace, config and caches):
1. its size unpacked (must be <= 300 MB) and that no torch, transformers or accelerate is inside;
2. the first start on a fresh default workspace (the demo is added): seconds from starting the process to the main
   window's first paint (VLMDESK_BUNDLE_HOOK=first-paint, packaging/entry.py), then --starts more starts;
3. a verdict recorded through the app: the workspace passed as the only argument, as a double-click does; the hook
   answers the annotator question and clicks the first review item's "ok" button;
4. `reviews export` from the bundle's CLI holds that verdict; `reviews import` of it into another workspace (made
   by the bundle's `demo`) adds it, and a second import adds nothing;
5. a second annotator's verdict there, and the annotators view drawn offscreen (`gui --screenshot`) with both;
6. `-m vlmdesk run --model baseline:random` (the form the app starts its runs with) scores the demo.
Exit 0 when every check passes; otherwise the first failure in one line, exit 1. Times are printed, never checked.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import build  # noqa: E402 (packaging/build.py, beside this file)

MAX_BYTES = 300 * 10**6  # issue 26's target: the bundle unpacked
TIMEOUT = 120  # seconds any one start of the bundle may take before the smoke test calls it hung


class Failed(Exception):
    pass


def app_path() -> Path:
    name = "vlmdesk.exe" if os.name == "nt" else "vlmdesk"
    return build.DIST / ("vlmdesk.app/Contents/MacOS" if sys.platform == "darwin" else "vlmdesk") / name


def isolated_env(home: Path) -> dict[str, str]:
    """Offscreen, and every per-user path (workspace, preferences, caches) inside `home`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VLMDESK_", "XDG_", "QT_"))}
    env.update(
        QT_QPA_PLATFORM="offscreen",
        VLMDESK_WORKSPACE=str(home / "default.sqlite"),
        VLMDESK_CONFIG_DIR=str(home / "config"),
        XDG_CONFIG_HOME=str(home / "xdg-config"),
        XDG_DATA_HOME=str(home / "xdg-data"),
        XDG_CACHE_HOME=str(home / "xdg-cache"),
        MPLCONFIGDIR=str(home / "mpl"),
    )
    return env


def vlmdesk(env: dict[str, str], *args: str, hook: str | None = None, expect: int = 0) -> str:
    """Run the bundle with `args`; its stdout, or Failed naming the command and its last error line."""
    run_env = dict(env, VLMDESK_BUNDLE_HOOK=hook) if hook else env
    try:
        done = subprocess.run(
            [str(app_path()), *args], env=run_env, capture_output=True, text=True, timeout=TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired:
        raise Failed(f"vlmdesk {' '.join(args)}: no exit after {TIMEOUT} s") from None
    if done.returncode != expect:
        last = (done.stderr.strip().splitlines() or done.stdout.strip().splitlines() or ["(no output)"])[-1]
        raise Failed(f"vlmdesk {' '.join(args)}: exit {done.returncode}, expected {expect}: {last}")
    return done.stdout


def first_paint_seconds(env: dict[str, str], *args: str) -> float:
    """Seconds from starting the bundle to its line saying the main window painted (measured out here)."""
    started = time.monotonic()
    out = vlmdesk(env, *args, hook="first-paint")
    elapsed = time.monotonic() - started
    if "first window painted" not in out:
        raise Failed(f"first start: no first paint reported ({out.strip()!r})")
    return elapsed


def check(reuse: bool, starts: int) -> None:
    if not (reuse and app_path().exists()):
        build.build(onefile=False, venv_dir=build.VENV, install_desktop_entry=False)
    folder = build.DIST / ("vlmdesk.app" if sys.platform == "darwin" else "vlmdesk")
    size = build.size_of(folder)
    print(f"size: {size / 1e6:.0f} MB unpacked ({folder})")
    if size > MAX_BYTES:
        raise Failed(f"the bundle is {size / 1e6:.0f} MB unpacked, over {MAX_BYTES / 1e6:.0f} MB")
    inside = {p.name for p in folder.rglob("*") if p.is_dir()}
    if found := inside & build.HF_ONLY:
        raise Failed(f"the bundle holds {', '.join(sorted(found))}: the `hf` extra's packages")

    with tempfile.TemporaryDirectory(prefix="vlmdesk-smoke-") as tmp:
        home = Path(tmp)
        env = isolated_env(home)
        first = first_paint_seconds(env)
        if not (home / "default.sqlite").exists():
            raise Failed("first start: no default workspace with the demo was made")
        again = [first_paint_seconds(env) for _ in range(starts)]
        load = f"; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs" if hasattr(os, "getloadavg") else ""
        print(
            f"first window: {first:.2f} s on the first start after the build (fresh workspace and config: the demo "
            "is imported and matplotlib's font cache made)"
            + (f"; {statistics.median(again):.2f} s median of {starts} more starts" if again else "")
            + load
        )

        # A verdict through the app, on a workspace given as the only argument (a double-click's form).
        workspace = home / "annotator.sqlite"
        vlmdesk(env, "--workspace", str(workspace), "demo")
        out = vlmdesk(env, str(workspace), hook="verdict:smoke-ana")
        if "Saved #" not in out:
            raise Failed(f"verdict: the app saved nothing ({out.strip()!r})")
        print("verdict: " + next(line for line in out.splitlines() if "Saved #" in line))

        export = home / "smoke-ana.jsonl"
        vlmdesk(
            env, "--workspace", str(workspace), "reviews", "export", "--annotator", "smoke-ana", "--out", str(export)
        )
        records = [json.loads(line) for line in export.read_text(encoding="utf-8").splitlines() if line.strip()]
        if [(r["annotator"], r["verdict"]) for r in records] != [("smoke-ana", "ok")]:
            raise Failed(f"reviews export: expected one 'ok' by smoke-ana, got {records}")

        lead = home / "lead.sqlite"
        vlmdesk(env, "--workspace", str(lead), "demo")
        report = json.loads(vlmdesk(env, "--workspace", str(lead), "reviews", "import", str(export), "--json"))
        again_report = json.loads(vlmdesk(env, "--workspace", str(lead), "reviews", "import", str(export), "--json"))
        if (report["added"], again_report["added"]) != (1, 0):
            raise Failed(f"reviews import: expected 1 record added then 0, got {report} then {again_report}")
        merged = lead.with_suffix(".jsonl")
        vlmdesk(env, "--workspace", str(lead), "reviews", "export", "--out", str(merged))
        if [json.loads(line)["id"] for line in merged.read_text(encoding="utf-8").splitlines()] != [records[0]["id"]]:
            raise Failed("reviews import: the lead's workspace does not hold the exported verdict")
        print(f"reviews: exported {export.name}, imported into {lead.name} (1 added, then 0)")

        # A second annotator's verdict on the lead's copy, then the annotators view, which computes their agreement
        # (scikit-learn's kappa): the trimmed scientific stack works inside the bundle.
        lead_env = dict(env, VLMDESK_CONFIG_DIR=str(home / "config-lead"))
        vlmdesk(lead_env, str(lead), hook="verdict:smoke-lead")
        shot, texts = home / "annotators.png", home / "annotators.txt"
        vlmdesk(
            env,
            "--workspace",
            str(lead),
            "gui",
            "--screenshot",
            str(shot),
            "--view",
            "annotators",
            "--visible-text",
            str(texts),
        )
        seen = texts.read_text(encoding="utf-8")
        if not shot.stat().st_size or "smoke-ana" not in seen or "smoke-lead" not in seen:
            raise Failed(f"annotators view: expected smoke-ana and smoke-lead in {texts}")
        print("annotators view: drawn with both annotators' verdicts")

        vlmdesk(env, "-m", "vlmdesk", "--workspace", str(lead), "run", "--bench", "demo", "--model", "baseline:random")
        print("run: baseline:random on demo, started as the app starts its runs (-m vlmdesk run)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reuse", action="store_true", help="check dist/vlmdesk as it is (build only if missing)")
    parser.add_argument(
        "--starts", type=int, default=4, metavar="N", help="starts measured after the first one (default 4)"
    )
    args = parser.parse_args(argv)
    try:
        check(args.reuse, args.starts)
    except Failed as exc:
        print(f"smoke: FAILED: {exc}", file=sys.stderr)
        return 1
    print("smoke: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
