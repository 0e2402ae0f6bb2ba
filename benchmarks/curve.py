"""F1 against pretraining tokens, from the JSON reports of ``training.evaluate``.

    python benchmarks/curve.py 0=runs/abl/scratch.sighan15.json 4.9M=runs/abl/plain.sighan15.json \\
        13.1M=runs/abl/s13m.sighan15.json --plot docs/f1_vs_pretraining_tokens.png

Each argument is TOKENS=REPORT (tokens may end in k or M). Prints a markdown table (sentence-level
correction P/R/F1, detection F1, false-positive rate, threshold) and, with --plot, draws the curve.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def parse_tokens(text: str) -> float:
    scale = {"k": 1e3, "M": 1e6, "B": 1e9}.get(text[-1:], 1.0)
    return float(text[:-1] if text[-1:] in "kMB" else text) * scale


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("points", nargs="+", metavar="TOKENS=REPORT")
    ap.add_argument("--plot", type=Path, help="PNG to draw")
    args = ap.parse_args()
    rows = []
    for item in args.points:
        tokens, _, path = item.partition("=")
        report = json.loads(Path(path).read_text(encoding="utf-8"))
        rows.append((parse_tokens(tokens), tokens, report))
    rows.sort(key=lambda r: r[0])
    print("| pretraining tokens | sent. cor. P / R / F1 | sent. det. F1 | FPR | threshold |")
    print("|---:|---|---:|---:|---:|")
    for _, label, r in rows:
        c, d = r["sentence_correction"], r["sentence_detection"]
        print(f"| {label} | {c['precision']:.3f} / {c['recall']:.3f} / {c['f1']:.3f} | {d['f1']:.3f} | "
              f"{r['false_positive_rate']:.3f} | {r['threshold']:g} |")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(5, 3.2), dpi=110)
        xs = [t / 1e6 for t, _, _ in rows]
        ax.plot(xs, [r["sentence_correction"]["f1"] for _, _, r in rows], "o-", label="correction F1")
        ax.plot(xs, [r["sentence_detection"]["f1"] for _, _, r in rows], "s--", label="detection F1")
        ax.set_xlabel("pretraining tokens (millions)")
        ax.set_ylabel("SIGHAN-15 sentence-level F1")
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        args.plot.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(args.plot)
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
