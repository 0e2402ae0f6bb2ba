"""Load test for the HTTP service: N concurrent clients on loopback for a bounded time.

    python benchmarks/load.py --url http://127.0.0.1:8000                  # a server that is already running
    python benchmarks/load.py --start --compare --model DIR                # starts it: batching on, then off
    python benchmarks/load.py --start --compare --tiny --duration 10       # the tests' tiny random bundle
    python benchmarks/load.py --start --model DIR --fairness               # and the fairness figures

Each client keeps one HTTP/1.1 connection and sends POST /correct back to back until the time is up
(after a short warm-up that is not counted). Prints throughput, p50/p95/p99 latency, errors, and the
batch-size histogram taken from the server's /metrics (difference over the measured window).

``--fairness`` then measures what docs/service.md bounds: the latency of small requests sent one after
another while the largest request the server admits runs (5 texts of ordinary text, then 5 of random rare
characters without punctuation: the dearest text, every cut a hard one), and the latency of
1,050-character texts while 8 clients keep sending 300-character texts.
Only loopback addresses are accepted; every run stops by itself.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import json
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import _checkout  # noqa: F401  (training/ and service/ are imported from the checkout)

from service.spawn import DIRECT, ServerFailed, free_port, running

REPO = Path(__file__).resolve().parents[1]
MAX_DURATION_S = 300.0
REQUEST_TIMEOUT_S = 30.0
SAMPLE_TEXTS = [
    "今天天汽很好，我们去公园散步吧。",
    "他以经知道自己错了。",
    "这件事情没有那么简单，我们需要从长计议。",
    "中国人民银行在北京，张三和李四在上海。",
    "我想买一个精致的小礼物送给朋友。",
    "请拨打电话联系我们的客服人员。",
    "候车室里的人很多，大家都在等待火车。",
    "未来的路还很长，我们要继续努力学习。",
    "他在会议上发表了重要的讲话，大家都很受鼓舞，纷纷表示要把精神落实到工作中去。",
    "天气预报说明天有雨，出门记得带伞。",
]


@dataclass
class Stats:
    latencies: list[float] = field(default_factory=list)  # seconds, successful requests
    statuses: dict[int, int] = field(default_factory=dict)
    failures: int = 0  # connection errors and timeouts


# ---- a minimal keep-alive HTTP/1.1 client ---------------------------------------------------------------


async def post(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str, body: bytes) -> int:
    return (await exchange(reader, writer, host, body))[0]


async def exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str,
                   body: bytes) -> tuple[int, bytes]:
    """POST /correct on an open connection: status and body."""
    writer.write(b"POST /correct HTTP/1.1\r\nHost: " + host.encode() + b"\r\nContent-Type: application/json\r\n"
                 b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    await writer.drain()
    status_line = await reader.readline()
    if not status_line:
        raise ConnectionError("connection closed")
    status = int(status_line.split()[1])
    length = None
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b""):
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    if length is None:
        raise ConnectionError("response without Content-Length")
    return status, await reader.readexactly(length)


async def client(host: str, port: int, bodies: list[bytes], start: int, measure_from: float, stop_at: float,
                 stats: Stats) -> None:
    loop = asyncio.get_running_loop()
    i = start
    conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
    while loop.time() < stop_at:
        body = bodies[i % len(bodies)]
        i += 1
        t0 = loop.time()
        try:
            if conn is None:
                conn = await asyncio.wait_for(asyncio.open_connection(host, port), REQUEST_TIMEOUT_S)
            status = await asyncio.wait_for(post(*conn, f"{host}:{port}", body), REQUEST_TIMEOUT_S)
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, ValueError, IndexError):
            if t0 >= measure_from:
                stats.failures += 1
            if conn is not None:
                conn[1].close()
            conn = None
            await asyncio.sleep(0.05)
            continue
        t1 = loop.time()
        if t0 >= measure_from and t1 <= stop_at:
            stats.statuses[status] = stats.statuses.get(status, 0) + 1
            if status == 200:
                stats.latencies.append(t1 - t0)
    if conn is not None:
        conn[1].close()


# ---- /metrics --------------------------------------------------------------------------------------------


def scrape_batches(base: str) -> dict[str, float]:
    """csc_batch_size_* series: {'1.0': cumulative count, ..., '+Inf': n, 'sum': s, 'count': n}."""
    with DIRECT.open(f"{base}/metrics", timeout=10) as r:
        text = r.read().decode()
    out: dict[str, float] = {}
    for bucket in re.finditer(r'^csc_batch_size_bucket\{le="([^"]+)"\} (\S+)$', text, re.M):
        out[bucket.group(1)] = float(bucket.group(2))
    for kind in ("sum", "count"):
        total = re.search(rf"^csc_batch_size_{kind} (\S+)$", text, re.M)
        out[kind] = float(total.group(1)) if total else 0.0
    return out


def batch_histogram(before: dict[str, float], after: dict[str, float]) -> tuple[list[tuple[str, int]], float, int]:
    """Per-bucket counts of model calls in the window, mean texts per call, number of calls."""
    bounds = [k for k in after if k not in ("sum", "count")]
    rows = []
    prev_cum, prev_label = 0.0, 0
    for b in bounds:
        cum = after[b] - before.get(b, 0.0)
        label = f"{prev_label + 1}-{b.removesuffix('.0')}" if b != "+Inf" else f">{prev_label}"
        if b != "+Inf" and float(b) == prev_label + 1:
            label = b.removesuffix(".0")
        rows.append((label, int(cum - prev_cum)))
        prev_cum = cum
        if b != "+Inf":
            prev_label = int(float(b))
    calls = int(after["count"] - before.get("count", 0.0))
    mean = (after["sum"] - before.get("sum", 0.0)) / calls if calls else 0.0
    return [(label, n) for label, n in rows if n], mean, calls


# ---- one run ---------------------------------------------------------------------------------------------


def percentile(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))]


async def drive(base: str, clients: int, duration: float, warmup: float, texts: list[str],
                texts_per_request: int) -> dict[str, Any]:
    parts = urlsplit(base)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    bodies = []
    for i in range(len(texts)):
        chunk = [texts[(i + k) % len(texts)] for k in range(texts_per_request)]
        bodies.append(json.dumps({"text": chunk[0]} if texts_per_request == 1 else {"texts": chunk}).encode())
    loop = asyncio.get_running_loop()
    stats = Stats()
    measure_from = loop.time() + warmup
    stop_at = measure_from + duration
    before: dict[str, float] = {}

    async def snapshot() -> None:
        nonlocal before
        await asyncio.sleep(warmup)
        before = await asyncio.to_thread(scrape_batches, base)

    tasks = [client(host, port, bodies, i * 7, measure_from, stop_at, stats) for i in range(clients)]
    await asyncio.wait_for(asyncio.gather(snapshot(), *tasks), warmup + duration + REQUEST_TIMEOUT_S + 10)
    after = await asyncio.to_thread(scrape_batches, base)
    hist, mean_batch, calls = batch_histogram(before, after)
    ok = stats.statuses.get(200, 0)
    lat = stats.latencies
    return {
        "clients": clients, "duration_s": duration, "requests_ok": ok,
        "errors": stats.failures + sum(n for s, n in stats.statuses.items() if s != 200),
        "statuses": {str(k): v for k, v in sorted(stats.statuses.items())}, "failures": stats.failures,
        "throughput_rps": ok / duration, "texts_per_s": ok * texts_per_request / duration,
        "p50_ms": percentile(lat, 50) * 1000, "p95_ms": percentile(lat, 95) * 1000,
        "p99_ms": percentile(lat, 99) * 1000, "max_ms": max(lat, default=float("nan")) * 1000,
        "model_calls": calls, "mean_batch": mean_batch, "batch_histogram": hist,
    }


def report(title: str, r: dict[str, Any]) -> None:
    print(f"== {title}")
    print(f"   {r['clients']} clients, {r['duration_s']:g} s: {r['requests_ok']} ok, {r['errors']} errors "
          f"(statuses {r['statuses']}, connection failures/timeouts {r['failures']})")
    print(f"   throughput {r['throughput_rps']:.1f} req/s ({r['texts_per_s']:.1f} texts/s)")
    print(f"   latency    p50 {r['p50_ms']:.1f} ms   p95 {r['p95_ms']:.1f} ms   p99 {r['p99_ms']:.1f} ms   "
          f"max {r['max_ms']:.1f} ms")
    hist = "  ".join(f"{label}: {n}" for label, n in r["batch_histogram"]) or "(none)"
    print(f"   model calls {r['model_calls']}, mean {r['mean_batch']:.2f} texts/call; texts per call: {hist}")
    sys.stdout.flush()


# ---- fairness ---------------------------------------------------------------------------------------------

def _gb2312(i: int) -> str:
    """The i-th character of GB2312 (6,763 hanzi, the rarer half from 3,755 on: all in the model's vocabulary)."""
    row, cell = divmod(i % (72 * 94), 94)
    try:
        return bytes([0xB0 + row, 0xA1 + cell]).decode("gb2312")
    except UnicodeDecodeError:
        return "的"


ADVERSARIAL = "".join(_gb2312(i * 7919) for i in range(20000))  # scattered hanzi, no punctuation at all
SMALL_BODY = json.dumps({"text": "请大家安静，会议马上就要开始了。"}).encode()
LOAD_TEXT = ("我们去公园散步吧，今天天气很好。" * 20)[:300]
LONG_TEXT = ("今天天汽很好，我们去公园散步吧。他以经知道自己错了。" * 40)[:1050]


async def timed(host: str, port: int, body: bytes) -> tuple[int, bytes, float]:
    loop = asyncio.get_running_loop()
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), REQUEST_TIMEOUT_S)
    try:
        t0 = loop.time()
        status, answer = await asyncio.wait_for(exchange(reader, writer, f"{host}:{port}", body), 120)
        return status, answer, loop.time() - t0
    finally:
        writer.close()


async def beside_maximal(host: str, port: int, text: str) -> dict[str, Any]:
    """Small requests one after another while the largest request of 5 x ``text`` (cut to what the server
    admits, from the numbers in its 413) runs."""
    size = len(text)
    maximal: asyncio.Task[tuple[int, bytes, float]] | None = None
    for _ in range(5):
        maximal = asyncio.create_task(timed(host, port, json.dumps({"texts": [text[:size]] * 5}).encode()))
        await asyncio.sleep(1.0)
        if not maximal.done():
            break
        status, answer, _ = maximal.result()
        message = answer.decode("utf-8", "replace")
        budget = re.search(r"that is ([\d,]+) cost characters", message)
        slow = re.search(r"about ([\d,]+) characters per second.* of the ([\d.]+) s timeout", message)
        if status != 413 or not (budget or slow):
            break
        if budget:  # room for the context of cuts without punctuation
            size = min(size, int(budget.group(1).replace(",", "")) * 2 // 3 // 5)
        else:
            assert slow is not None
            speed, timeout = int(slow.group(1).replace(",", "")), float(slow.group(2))
            size = min(size * 2 // 3, int(speed * timeout * 0.4) // 5)
        size = max(1, size)
    assert maximal is not None
    small: list[float] = []
    statuses: dict[int, int] = {}
    while not maximal.done():
        status, _, took = await timed(host, port, SMALL_BODY)
        statuses[status] = statuses.get(status, 0) + 1
        if status == 200:
            small.append(took)
    big_status, _, big_took = maximal.result()
    return {"texts": f"5 x {size:,}", "status": big_status, "seconds": big_took, "n": len(small),
            "statuses": {str(k): v for k, v in statuses.items()}, "p50_ms": percentile(small, 50) * 1000,
            "p99_ms": percentile(small, 99) * 1000, "max_ms": max(small, default=float("nan")) * 1000}


async def fairness(base: str, duration: float) -> dict[str, Any]:
    parts = urlsplit(base)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    loop = asyncio.get_running_loop()
    ordinary = await beside_maximal(host, port, (LONG_TEXT * 20)[:20000])
    adversarial = await beside_maximal(host, port, ADVERSARIAL)
    # 1,050-character texts while 8 clients keep sending 300-character texts
    load_stats = Stats()
    stop_at = loop.time() + duration
    load_body = json.dumps({"text": LOAD_TEXT}).encode()
    clients = [asyncio.create_task(client(host, port, [load_body], 0, loop.time(), stop_at, load_stats))
               for _ in range(8)]
    await asyncio.sleep(min(1.0, duration / 4))
    long_lat: list[float] = []
    long_statuses: dict[int, int] = {}
    while loop.time() < stop_at:
        status, _, took = await timed(host, port, json.dumps({"text": LONG_TEXT}).encode())
        long_statuses[status] = long_statuses.get(status, 0) + 1
        if status == 200:
            long_lat.append(took)
    await asyncio.gather(*clients)
    return {
        "beside_ordinary_maximal": ordinary, "beside_adversarial_maximal": adversarial,
        "long_under_load": {"n": len(long_lat), "statuses": {str(k): v for k, v in long_statuses.items()},
                            "p50_ms": percentile(long_lat, 50) * 1000, "p99_ms": percentile(long_lat, 99) * 1000,
                            "max_ms": max(long_lat, default=float("nan")) * 1000,
                            "load_rps": load_stats.statuses.get(200, 0) / duration},
    }


def report_fairness(f: dict[str, Any]) -> None:
    for key, what in (("beside_ordinary_maximal", "ordinary text"),
                      ("beside_adversarial_maximal", "random rare characters without punctuation")):
        m = f[key]
        print(f"== fairness: small requests beside the largest admitted request of {what} ({m['texts']} "
              f"characters: {m['status']} in {m['seconds']:.1f} s)")
        print(f"   {m['n']} small requests (statuses {m['statuses']}): p50 {m['p50_ms']:.0f} ms   "
              f"p99 {m['p99_ms']:.0f} ms   max {m['max_ms']:.0f} ms")
    lo = f["long_under_load"]
    print(f"== fairness: 1,050-character texts while 8 clients send 300-character texts ({lo['load_rps']:.1f} req/s)")
    print(f"   {lo['n']} long texts (statuses {lo['statuses']}): p50 {lo['p50_ms']:.0f} ms   p99 {lo['p99_ms']:.0f} ms"
          f"   max {lo['max_ms']:.0f} ms")
    sys.stdout.flush()


# ---- starting a server -----------------------------------------------------------------------------------


@contextlib.contextmanager
def started_server(model: Path | None, extra: list[str], log: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    port = free_port()
    cmd = [sys.executable, "-m", "service", "--host", "127.0.0.1", "--port", str(port), "--no-access-log",
           "--log-level", "warning", *(["--model", str(model)] if model else []), *extra]
    try:
        with running(cmd, log, port) as r:
            yield r.base, r.ready
    except ServerFailed as e:
        raise SystemExit(str(e)) from None


def build_tiny(out_dir: Path) -> Path:
    sys.path.insert(0, str(REPO / "tests"))
    from conftest import build_tiny_bundle  # type: ignore[import-not-found]  # the tests' random bundle ('train' extra)

    return build_tiny_bundle(out_dir / "tiny")


def read_texts(path: Path, limit: int) -> list[str]:
    rows = [line.split("\t")[0] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return rows[:limit] if limit else rows


def check_loopback(url: str) -> str:
    host = urlsplit(url).hostname or ""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise SystemExit(f"refusing to load-test {host!r}: only loopback addresses (127.0.0.1, ::1, localhost)")
    return url.rstrip("/")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", help="base URL of a running server (loopback only)")
    ap.add_argument("--start", action="store_true", help="start `python -m service` for the run")
    ap.add_argument("--compare", action="store_true", help="with --start: run with micro-batching, then without")
    ap.add_argument("--no-batching", action="store_true", help="with --start: the server runs without batching")
    ap.add_argument("--model", type=Path, help="with --start: bundle directory (default: the server's default)")
    ap.add_argument("--tiny", action="store_true", help="with --start: build and serve the tests' tiny bundle")
    ap.add_argument("--server-arg", action="append", default=[], metavar="ARG",
                    help="extra argument for the server, repeatable (e.g. --server-arg=--max-wait-ms=10)")
    ap.add_argument("--clients", type=int, default=16, help="concurrent connections (default 16)")
    ap.add_argument("--duration", type=float, default=20.0, help=f"measured seconds (default 20, max {MAX_DURATION_S:g})")
    ap.add_argument("--warmup", type=float, default=2.0, help="seconds of load before measuring (default 2)")
    ap.add_argument("--texts", type=Path, help="file of texts, one per line (first TSV column), default: built-in")
    ap.add_argument("--limit", type=int, default=1000, help="at most this many texts from --texts")
    ap.add_argument("--texts-per-request", type=int, default=1, help="1 = {'text': ...}; more = {'texts': [...]}")
    ap.add_argument("--fairness", action="store_true",
                    help="then measure the fairness figures (small requests beside a maximal one; long texts under load)")
    ap.add_argument("--json", type=Path, help="also write the results here as JSON")
    args = ap.parse_args(argv)
    if not 0 < args.duration <= MAX_DURATION_S:
        ap.error(f"--duration must be in (0, {MAX_DURATION_S:g}]")
    if not 1 <= args.clients <= 1024 or not 0 <= args.warmup <= 60 or args.texts_per_request < 1:
        ap.error("--clients in [1, 1024], --warmup in [0, 60], --texts-per-request >= 1")
    if bool(args.url) == bool(args.start):
        ap.error("give --url or --start")
    texts = read_texts(args.texts, args.limit) if args.texts else SAMPLE_TEXTS

    def run(base: str) -> dict[str, Any]:
        out = asyncio.run(drive(base, args.clients, args.duration, args.warmup, texts, args.texts_per_request))
        if args.fairness:
            out["fairness"] = asyncio.run(fairness(base, args.duration))
        return out

    results: dict[str, dict[str, Any]] = {}
    if args.url:
        results["server"] = run(check_loopback(args.url))
        report(f"{args.url}", results["server"])
        if args.fairness:
            report_fairness(results["server"]["fairness"])
    else:
        modes = [True, False] if args.compare else [not args.no_batching]
        with tempfile.TemporaryDirectory(prefix="csc-load-") as tmp:
            model = build_tiny(Path(tmp)) if args.tiny else args.model
            for batching in modes:
                name = "micro-batching on" if batching else "micro-batching off"
                extra = [*args.server_arg, *([] if batching else ["--no-batching"])]
                with started_server(model, extra, Path(tmp) / "server.log") as (base, info):
                    results[name] = r = run(base)
                report(f"{name} · model {info.get('model')} on {info.get('provider')} · server args {extra}", r)
                if args.fairness:
                    report_fairness(r["fairness"])
        if args.compare:
            on, off = results["micro-batching on"], results["micro-batching off"]
            ratio = on["throughput_rps"] / off["throughput_rps"] if off["throughput_rps"] else float("inf")
            print(f"== batching on/off: throughput x{ratio:.2f}, p50 {on['p50_ms']:.1f} vs {off['p50_ms']:.1f} ms, "
                  f"p99 {on['p99_ms']:.1f} vs {off['p99_ms']:.1f} ms")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    if os.environ.get("CSC_LOAD_FAIL_ON_ERRORS") and any(r["errors"] for r in results.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
