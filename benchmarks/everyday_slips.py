"""What the product returns for 30 everyday slips (benchmarks/data/everyday_slips.tsv, written for this table).

    python benchmarks/everyday_slips.py [--model BUNDLE] [--set KEY=VALUE ...]

Prints a markdown table: each slip, what the corrector returns, and the verdict: fixed (exactly the intended text),
missed (left as written), or wrong (some other change); then the counts.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from corrector import Corrector

SLIPS = Path(__file__).resolve().parent / "data" / "everyday_slips.tsv"


def read_slips(path: Path = SLIPS) -> list[tuple[str, str]]:
    rows = [line.rstrip("\n").split("\t") for line in path.read_text(encoding="utf-8").splitlines()
            if line and not line.startswith("#")]
    return [(s, t) for s, t in rows]


def verdict(source: str, target: str, got: str) -> str:
    if got == target:
        return "fixed"
    return "missed" if got == source else "wrong"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=None, help="bundle directory (default: the bundled default)")
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="decoding settings (JSON values)")
    a = ap.parse_args()
    settings = {k: json.loads(v) for k, v in (kv.split("=", 1) for kv in a.set)}
    fix = Corrector.load(a.model, **settings)
    slips = read_slips()
    results = fix.correct_batch([s for s, _ in slips])
    counts: dict[str, int] = {}
    print("| slip | intended | returned | |")
    print("|---|---|---|---|")
    for (source, target), c in zip(slips, results):
        v = verdict(source, target, c.target)
        counts[v] = counts.get(v, 0) + 1
        pos = next(i for i, (x, y) in enumerate(zip(source, target)) if x != y)
        edits = ", ".join(f"{e.source}→{e.target} {e.confidence:.2f}" for e in c.edits) or "—"
        print(f"| {source} | {source[pos]}→{target[pos]} | {edits} | {v} |")
    print()
    print(", ".join(f"{k}: {counts.get(k, 0)}" for k in ("fixed", "missed", "wrong")) + f" (of {len(slips)})")


if __name__ == "__main__":
    main()
