"""Per-character perplexity of character LMs on text no LM was built on: lemon_dev's correct sentences.

    python benchmarks/lm_perplexity.py --lm shipped=data/electra_models/default/lm --lm doubled=runs/lm/kn4 \
        [--data ../shared/data] [--report out.json]

For each LM (a directory from ``training.evidence.char_lm``, or a bundle's ``lm/``) and each of the four lemon_dev
domains: the perplexity of the targets of the pairs whose source is already right (the domain's correct
sentences), and of every target (the correct text of all pairs), every character predicted after <s> and </s>
included, as ``meta.json``'s held-out figure is computed. Characters outside an LM's vocabulary are scored as its
<unk>; their share is reported beside, since two LMs built on different text keep different characters.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import _checkout  # noqa: F401  (training/ and service/ are imported from the checkout)
import numpy as np

from corrector.evidence.char_lm import UNK, CharLM, CharLMBase
from corrector.evidence.char_lm_write import heldout_windows, perplexity
from training.data.csc_data import read_pairs
from training.data.location import default_data

DOMAINS = ("enc", "mec", "cot", "gam")


def domain_sets(data: Path) -> dict[str, dict[str, list[str]]]:
    sets = {}
    for d in DOMAINS:
        pairs = read_pairs(data / "csc" / "lemon_dev" / f"{d}.tsv")
        sets[d] = {"correct": [t for s, t in pairs if s == t], "targets": [t for _, t in pairs]}
    return sets


def measure(lm: CharLMBase, lines: list[str]) -> dict[str, float]:
    win = heldout_windows(lines, lm.lut, lm.order)
    unk = float(np.mean(win[:, -1] == UNK))
    return {"perplexity": round(perplexity(lm, win), 3), "chars": int(win.shape[0]), "unk_share": round(unk, 5)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lm", action="append", required=True, metavar="NAME=DIR", help="an LM to measure (repeat)")
    ap.add_argument("--data", type=Path, default=default_data())
    ap.add_argument("--report", type=Path, help="write the figures as JSON here")
    args = ap.parse_args(argv)
    sets = domain_sets(args.data)
    report: dict[str, dict] = {}
    print("| LM | order | MB | " + " | ".join(f"{d} correct / all targets" for d in DOMAINS) + " | mean |")
    print("|---|---:|---:|" + "---:|" * (len(DOMAINS) + 1))
    for spec in args.lm:
        name, _, path = spec.partition("=")
        lm = CharLM.load(Path(path))
        size = sum(f.stat().st_size for f in Path(path).iterdir() if f.is_file()) / 1e6
        rows = {d: {kind: measure(lm, lines) for kind, lines in sets[d].items()} for d in DOMAINS}
        mean = float(np.mean([rows[d]["targets"]["perplexity"] for d in DOMAINS]))
        report[name] = {"path": path, "order": lm.order, "mb": round(size, 1), "domains": rows, "mean_targets": mean}
        cells = " | ".join(f"{rows[d]['correct']['perplexity']:.1f} / {rows[d]['targets']['perplexity']:.1f}"
                           for d in DOMAINS)
        print(f"| {name} | {lm.order} | {size:.1f} | {cells} | {mean:.2f} |")
    if args.report:
        args.report.write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    main()
