"""Long requests on a real server: is an admitted request answered, or ended early, rather than run into its timeout?

    python benchmarks/long_requests.py                      # both parts, the shipped bundle
    python benchmarks/long_requests.py --busy 2 --long 6    # the shared part beside two spinning processes

1. *Fresh*: a fresh server gets one request of ``--chars`` characters of ordinary text (the source sentences of
   wang271k_dev, in order, as texts of 20,000 characters, the most one text may hold), three times, each on a fresh
   server: the status and time of each.
2. *Shared*: ``--long`` clients each send one text of ``--long-chars`` characters at once, while ``--small`` clients
   send one sentence after another, beside ``--busy`` processes spinning on the cores: each long request's status
   and when it ended (a 413 or 503 early is work saved; a 504 at the timeout is all its work thrown away), and the
   small requests' statuses.

Loopback only; every request is bounded by the server's 30 s timeout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import tempfile
from pathlib import Path
from typing import Any

from load import REQUEST_TIMEOUT_S, exchange, started_server, timed

REPO = Path(__file__).resolve().parents[1]
DEV = REPO.parent / "shared" / "data" / "csc" / "wang271k_dev.tsv"


def ordinary_text(chars: int) -> str:
    lines = [line.split("\t")[0] for line in DEV.read_text(encoding="utf-8").splitlines() if line.strip()]
    text = ""
    while len(text) < chars:
        text += "".join(lines)
    return text[:chars]


def spin() -> None:
    while True:
        pass


async def shared(base: str, long_text: str, longs: int, smalls: int) -> dict[str, Any]:
    host, port = base.removeprefix("http://").split(":")
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    stop = asyncio.Event()
    small_statuses: dict[int, int] = {}

    async def small_client(i: int) -> None:
        reader, writer = await asyncio.open_connection(host, int(port))
        body = json.dumps({"text": f"他以经知道自己错了，第{i}次。"}).encode()
        try:
            while not stop.is_set():
                status, _ = await asyncio.wait_for(exchange(reader, writer, f"{host}:{port}", body), REQUEST_TIMEOUT_S)
                small_statuses[status] = small_statuses.get(status, 0) + 1
        finally:
            writer.close()

    async def long_client() -> tuple[int, float, str]:
        status, answer, _ = await timed(host, int(port), json.dumps({"text": long_text}).encode())
        detail = "" if status == 200 else json.loads(answer).get("detail", "")[:120]
        return status, round(loop.time() - t0, 2), detail

    small = [asyncio.create_task(small_client(i)) for i in range(smalls)]
    await asyncio.sleep(0.5)
    results = await asyncio.gather(*(long_client() for _ in range(longs)))
    stop.set()
    await asyncio.gather(*small, return_exceptions=True)
    return {"long": [{"status": s, "ended_s": t, "detail": d} for s, t, d in results],
            "small_statuses": {str(k): v for k, v in sorted(small_statuses.items())}}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, help="bundle directory (default: the shipped one)")
    ap.add_argument("--chars", type=int, default=100_000, help="the fresh part's request (default 100,000)")
    ap.add_argument("--fresh", type=int, default=3, help="fresh servers for the fresh part (default 3; 0: skip)")
    ap.add_argument("--long", type=int, default=6, help="long clients in the shared part (default 6; 0: skip)")
    ap.add_argument("--long-chars", type=int, default=16_000, help="each long client's text (default 16,000)")
    ap.add_argument("--small", type=int, default=16, help="clients of one sentence in the shared part (default 16)")
    ap.add_argument("--busy", type=int, default=2, help="processes spinning beside the shared part (default 2)")
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args(argv)
    out: dict[str, Any] = {"fresh": [], "shared": None}
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "server.log"
        for _ in range(args.fresh):
            with started_server(args.model, [], log) as (base, _ready):
                host, port = base.removeprefix("http://").split(":")
                text = ordinary_text(args.chars)
                body = json.dumps({"texts": [text[i:i + 20_000] for i in range(0, len(text), 20_000)]}).encode()
                status, answer, seconds = asyncio.run(timed(host, int(port), body))
                detail = "" if status == 200 else json.loads(answer).get("detail", "")[:160]
                out["fresh"].append({"status": status, "seconds": round(seconds, 2), "detail": detail})
                print(f"fresh server, {args.chars:,} characters: {status} in {seconds:.2f} s {detail}", flush=True)
        if args.long:
            with started_server(args.model, [], log) as (base, _ready):
                spinners = [multiprocessing.Process(target=spin, daemon=True) for _ in range(args.busy)]
                for p in spinners:
                    p.start()
                try:
                    out["shared"] = asyncio.run(shared(base, ordinary_text(args.long_chars), args.long, args.small))
                finally:
                    for p in spinners:
                        p.kill()
            print(f"shared: {args.long} x {args.long_chars:,} characters beside {args.small} small clients and "
                  f"{args.busy} spinning processes")
            for r in out["shared"]["long"]:
                print(f"  {r['status']} at {r['ended_s']:.2f} s {r['detail']}")
            print(f"  small requests: {out['shared']['small_statuses']}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
