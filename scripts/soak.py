#!/usr/bin/env python3
"""Soak test of `ponder serve`: many chat requests at once, some of them streaming clients that
hang up early, and the server's memory before and after.

Passes when every request got a complete answer or an intended 503 (the queue was full), and the
server's resident memory after the run is within 10 % of what it was after the first tenth.
Prints one JSON line of figures. `make soak` runs 1,000 requests; `make test` a bounded count.

    scripts/soak.py --ponder target/release/ponder --model MODEL.gguf [--requests 1000]
"""
import argparse
import http.client
import json
import os
import random
import socket
import subprocess
import sys
import threading
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


QUESTIONS = [
    "What is 17 + 25?",
    "Name a prime number between 20 and 30.",
    "Is 91 prime? Answer briefly.",
    "What is 12 times 12?",
    "Give the square root of 144.",
    "What is 2 to the power 10?",
]


def one_request(port, i, rng, max_tokens):
    """Returns 'ok', 'busy', 'hung-up' or an error string."""
    stream = i % 10 == 0  # a tenth are streaming clients that leave early
    body = {
        "messages": [{"role": "user", "content": rng.choice(QUESTIONS)}],
        "max_tokens": max_tokens,
        "temperature": 0.7,
        "seed": i,
        "stream": stream,
    }
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    try:
        conn.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status == 503:
            resp.read()
            return "busy"
        if resp.status != 200:
            return f"HTTP {resp.status}: {resp.read()[:200]!r}"
        if stream:
            # Read a line or two, then hang up mid-stream.
            for _ in range(rng.randint(1, 3)):
                resp.fp.readline()
            conn.sock.shutdown(socket.SHUT_RDWR)
            return "hung-up"
        reply = json.loads(resp.read())
        choice = reply["choices"][0]
        if choice.get("finish_reason") not in ("stop", "length"):
            return f"bad finish_reason: {choice}"
        if not (choice["message"].get("content") or choice["message"].get("reasoning_content")):
            return f"empty reply: {reply}"
        return "ok"
    except Exception as e:  # noqa: BLE001 - every failure is a finding
        return f"{type(e).__name__}: {e}"
    finally:
        conn.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ponder", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--max-tokens", type=int, default=12)
    ap.add_argument("--threads", default="2")
    args = ap.parse_args()

    port = free_port()
    env = dict(os.environ, PONDER_LOG="warn", PONDER_CONFIG="/nonexistent/ponder-config.toml")
    env.pop("PONDER_API_KEY", None)
    server = subprocess.Popen(
        [args.ponder, "--model", args.model, "--threads", args.threads, "serve", "--port", str(port), "--context", "2048"],
        env=env,
        stdout=subprocess.DEVNULL,
    )
    try:
        deadline = time.time() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.time() > deadline or server.poll() is not None:
                    sys.exit("ponder serve did not start")
                time.sleep(0.1)

        outcomes = {}
        lock = threading.Lock()
        next_i = iter(range(args.requests))
        done = [0]
        tenth = max(1, args.requests // 10)
        rss_after_tenth = [None]

        def worker(seed):
            rng = random.Random(seed)
            while True:
                with lock:
                    i = next(next_i, None)
                if i is None:
                    return
                out = one_request(port, i, rng, args.max_tokens)
                with lock:
                    outcomes[out] = outcomes.get(out, 0) + 1
                    done[0] += 1
                    if done[0] == tenth:
                        rss_after_tenth[0] = rss_kib(server.pid)

        started = time.time()
        threads = [threading.Thread(target=worker, args=(s,)) for s in range(args.concurrency)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.time() - started
        time.sleep(1)  # let the engine reap the streams that hung up
        rss_end = rss_kib(server.pid)
        alive = server.poll() is None
    finally:
        server.kill()
        server.wait()

    errors = {k: v for k, v in outcomes.items() if k not in ("ok", "busy", "hung-up")}
    growth = rss_end / rss_after_tenth[0] - 1
    figures = {
        "requests": args.requests,
        "concurrency": args.concurrency,
        "seconds": round(elapsed, 1),
        "ok": outcomes.get("ok", 0),
        "busy_503": outcomes.get("busy", 0),
        "hung_up": outcomes.get("hung-up", 0),
        "errors": sum(errors.values()),
        "rss_mib_after_first_tenth": round(rss_after_tenth[0] / 1024, 1),
        "rss_mib_at_end": round(rss_end / 1024, 1),
        "rss_growth_percent": round(100 * growth, 1),
        "server_alive": alive,
    }
    print(json.dumps(figures))
    failed = []
    if errors:
        failed.append(f"errors: {errors}")
    if not alive:
        failed.append("the server died")
    if growth > 0.10:
        failed.append(f"resident memory grew {100 * growth:.1f} % after the first tenth (limit 10 %)")
    if failed:
        sys.exit("soak failed: " + "; ".join(failed))


if __name__ == "__main__":
    main()
