"""Fairness under a maximal request: how long a small request waits while one client sends the largest
request the limits allow (5 texts of 20,000 characters, as in issue 13).

    python benchmarks/fairness.py --model data/electra_models/default [--small 10 --every 0.5]

Starts ``python -m service`` on loopback, sends the maximal request, and 0.5 s later starts sending small
one-sentence requests one after another (``--small`` of them, ``--every`` seconds apart). Prints each small
request's latency, their maximum, and what the maximal request got (200, or 504 at the request timeout:
after which none of its remaining work is run).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from service.spawn import DIRECT, free_port, running

MAXIMAL = {"texts": [("我门一起去吃饭吧。" * 3000)[:20000]] * 5}
SMALL = {"text": "请大家安静，会议马上就要开始了。"}


def post(base: str, body: dict, timeout: float = 120) -> tuple[int, float]:
    req = urllib.request.Request(f"{base}/correct", data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    start = time.perf_counter()
    try:
        with DIRECT.open(req, timeout=timeout) as r:
            r.read()
            status = r.status
    except urllib.error.HTTPError as e:
        status = e.code
    return status, time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=None, help="bundle directory (default: the shipped one)")
    ap.add_argument("--small", type=int, default=10, help="small requests sent during the maximal one")
    ap.add_argument("--every", type=float, default=0.5, help="seconds between small requests")
    ap.add_argument("--server-args", default="", help="extra flags for python -m service, e.g. '--max-batch-chars 1000'")
    args = ap.parse_args(argv)
    port = free_port()
    cmd = [sys.executable, "-m", "service", "--host", "127.0.0.1", "--port", str(port), "--no-access-log",
           *(["--model", args.model] if args.model else []), *args.server_args.split()]
    with tempfile.TemporaryDirectory() as tmp, running(cmd, Path(tmp) / "server.log", port) as srv, \
            ThreadPoolExecutor(1) as pool:
        post(srv.base, SMALL)  # warm-up
        big = pool.submit(post, srv.base, MAXIMAL)
        time.sleep(0.5)
        waits = []
        for _ in range(args.small):
            status, took = post(srv.base, SMALL)
            waits.append(took)
            print(f"small request: {status} in {took * 1000:.0f} ms", flush=True)
            time.sleep(args.every)
        status, took = big.result()
        print(f"maximal request (5 x 20,000 characters): {status} after {took:.1f} s")
        print(f"small requests during it: max {max(waits) * 1000:.0f} ms, "
              f"median {sorted(waits)[len(waits) // 2] * 1000:.0f} ms ({len(waits)} requests)")


if __name__ == "__main__":
    main()
