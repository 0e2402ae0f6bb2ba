"""Fairness figures alone (``benchmarks/load.py --fairness`` without the throughput run): small requests sent one
after another beside the largest request the server admits, and 1,050-character texts while 8 clients keep
sending 300-character texts. See docs/service.md for the bounds these measure.

    python benchmarks/fairness.py --model data/electra_models/default [--duration 10] [--server-arg=--max-batch-chars=500]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

from load import fairness, report_fairness, started_server  # type: ignore[import-not-found]  # run as a script


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, default=None, help="bundle directory (default: the shipped one)")
    ap.add_argument("--duration", type=float, default=10.0, help="seconds of the long-text-under-load part")
    ap.add_argument("--server-arg", action="append", default=[], metavar="ARG", help="extra server argument, repeatable")
    args = ap.parse_args(argv)
    if not 0 < args.duration <= 300:
        ap.error("--duration must be in (0, 300]")
    with tempfile.TemporaryDirectory(prefix="csc-fairness-") as tmp, \
            started_server(args.model, args.server_arg, Path(tmp) / "server.log") as (base, _):
        report_fairness(asyncio.run(fairness(base, args.duration)))


if __name__ == "__main__":
    main()
