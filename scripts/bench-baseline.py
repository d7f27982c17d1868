#!/usr/bin/env python3
"""Prefill and 16-sequence decode against the engine that issue 18 measured, in the same run.

This machine's speed drifts by a fifth within the hour, so a figure means little next to one
taken at another time. This builds the `ponder` CLI of BASELINE (the commit the issue's figures
came from; its engine is unchanged from the issue's filing) once, in the target directory, and
then runs its `ponder bench` and the current one in turns. It prints each run, then the medians
and their ratios, as JSON.

Usage: scripts/bench-baseline.py CURRENT_PONDER MODEL [ROUNDS]
"""
import json
import os
import statistics
import subprocess
import sys

BASELINE = "b1373d5"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")


def baseline_binary():
    """The baseline's `ponder`, built on first use from `git archive` (no worktree to clean up)."""
    work = os.path.join(TARGET, f"baseline-{BASELINE}")
    binary = os.path.join(work, "target", "release", "ponder")
    if not os.path.exists(binary):
        src = os.path.join(work, "src")
        os.makedirs(src, exist_ok=True)
        archive = subprocess.Popen(["git", "-C", ROOT, "archive", BASELINE], stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", src], stdin=archive.stdout, check=True)
        if archive.wait() != 0:
            sys.exit(f"git archive {BASELINE} failed: this needs the repository's history")
        env = dict(os.environ, CARGO_TARGET_DIR=os.path.join(work, "target"))
        subprocess.run(["cargo", "build", "--release", "-p", "ponder-cli"], cwd=src, env=env, check=True)
    return binary


def bench(binary, model, extra):
    """One `ponder bench` run (medians of 3 inside): prefill and 16-sequence decode rates."""
    cmd = [binary, "--threads", "2", "--model", model, "bench", "--json", "--batch", "16", "--memory-context", "0"]
    out = subprocess.run(cmd + extra, check=True, capture_output=True, text=True).stdout
    report = json.loads(out)
    x16 = next(p["tok_s"] for p in report["aggregate"] if p["sequences"] == 16)
    return {"prefill_tok_s": report["prefill_tok_s"], "x16_tok_s": x16, "single_decode_tok_s": report["single_decode_tok_s"]}


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    current, model = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    base = baseline_binary()
    runs = {"baseline": [], "current": []}
    for r in range(rounds):
        # The current CLI skips what the baseline's did not measure.
        for name, binary, extra in [("baseline", base, []), ("current", current, ["--depths", "0", "--speculative-tokens", "0"])]:
            figures = bench(binary, model, extra)
            print(f"bench-baseline: round {r + 1}, {name}: {json.dumps(figures)}", file=sys.stderr)
            runs[name].append(figures)
    medians = {name: {k: statistics.median(run[k] for run in rs) for k in rs[0]} for name, rs in runs.items()}
    ratios = {k: medians["current"][k] / medians["baseline"][k] for k in medians["current"]}
    print(json.dumps({"baseline_commit": BASELINE, "rounds": rounds, "medians": medians, "current_to_baseline": ratios}))


if __name__ == "__main__":
    main()
