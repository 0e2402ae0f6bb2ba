"""Which judged findings are swaps between two dictionary words, and what a swap threshold would keep.

    python benchmarks/lint_precision.py --out runs/lint          # the findings, one TSV a tree
    python benchmarks/lint_swaps.py runs/lint [--list]

For each finding of a ``lint_precision.py --out`` folder: its verdict in the judged list
(``benchmarks/data/lint_judged.tsv``), its confidence, and whether it turns one dictionary word into another
(``corrector.guards.word_swap`` on the finding's context, as the ``swap_threshold`` guard decides). Prints, for each
threshold, the real slips and false alarms it would keep; ``--list`` prints every swap with its context.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import _checkout  # noqa: F401
from lint_precision import JUDGED, read_judged

from corrector.guards import word_swap

BARS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.8, 0.9)


def findings(folder: Path, verdicts: dict[tuple[str, str, int, str, str], str]
             ) -> list[tuple[str, float, tuple[str, str] | None, str]]:
    """(verdict or '?', confidence, the swap or None, what to show) of each finding."""
    rows = []
    for tsv in sorted(folder.glob("*.tsv")):
        with tsv.open(encoding="utf-8") as f:
            for r in csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
                tree, path, line, written, suggested, confidence = r[:6]
                before, after = (r[6:8] + ["", ""])[:2]
                text, i = before + after, len(before)
                swap = (word_swap(list(text), i, suggested)
                        if len(suggested) == 1 and i < len(text) and text[i] == written else None)
                shown = f"{tree} {path}:{line} {before[-8:]}[{written}→{suggested}]{after[1:8]}"
                rows.append((verdicts.get((tree, path, int(line), written, suggested), "?"), float(confidence), swap,
                             shown))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", type=Path, help="a lint_precision.py --out folder")
    ap.add_argument("--judged", type=Path, default=JUDGED)
    ap.add_argument("--list", action="store_true", help="print every swap")
    a = ap.parse_args()
    rows = findings(a.folder, read_judged(a.judged))
    slips, false = (sum(r[0] == v for r in rows) for v in ("slip", "false"))
    swaps = [r for r in rows if r[2] is not None]
    print(f"{len(rows)} findings ({slips} slips, {false} false alarms, {len(rows) - slips - false} not judged); "
          f"{len(swaps)} swaps between two words ({sum(r[0] == 'slip' for r in swaps)} slips, "
          f"{sum(r[0] == 'false' for r in swaps)} false alarms)")
    print("| swap threshold | real slips kept | false alarms kept | precision |\n|---:|---:|---:|---:|")
    for bar in (0.0, *BARS):
        gone = [r for r in swaps if r[1] < bar]
        kept_s = slips - sum(r[0] == "slip" for r in gone)
        kept_f = false - sum(r[0] == "false" for r in gone)
        print(f"| {bar or 'none'} | {kept_s} | {kept_f} | {kept_s / max(1, kept_s + kept_f):.1%} |")
    if a.list:
        for verdict, confidence, swap, shown in sorted(swaps, key=lambda r: (r[0], r[1])):
            print(f"{verdict:5} {confidence:.2f} {swap[0]}→{swap[1]}  {shown}" if swap else shown)


if __name__ == "__main__":
    main()
