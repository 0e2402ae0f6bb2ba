"""F1 against pretraining tokens (or fine-tuning steps, ``--x``), from the JSON reports of ``training.fitting.evaluate``.

    python benchmarks/curve.py "networks alone:10M=runs/snapft/main10.sighan15_nolm.json" \\
        "networks alone:35M=runs/snapft/main35.sighan15_nolm.json" "with the LM:10M=runs/snapft/main10.sighan15.json" \\
        "with the LM:35M=runs/snapft/main35.sighan15.json" --plot docs/f1_vs_pretraining_tokens.png

Each argument is [SERIES:]TOKENS=REPORT (tokens may end in k or M; a ``--sweep`` report gives the row of
the threshold it chose; ``--x "fine-tuning steps"`` with 5k=... points for dev F1 against fine-tuning
steps). Prints a markdown table (sentence-level
correction P/R/F1, detection F1, false-positive rate, threshold) and, with --plot, draws one correction-F1
curve per series (and the detection F1 too when there is one series).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def parse_tokens(text: str) -> float:
    scale = {"k": 1e3, "M": 1e6, "B": 1e9}.get(text[-1:], 1.0)
    return float(text[:-1] if text[-1:] in "kMB" else text) * scale


def parse_point(item: str) -> tuple[str, str, Path]:
    """'[SERIES:]TOKENS=REPORT' -> (series, tokens label, report path)."""
    head, sep, path = item.partition("=")
    if not sep or not path:
        raise SystemExit(f"expected [SERIES:]TOKENS=REPORT, got {item!r}")
    series, _, tokens = head.rpartition(":")
    return series, tokens, Path(path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("points", nargs="+", metavar="[SERIES:]TOKENS=REPORT")
    ap.add_argument("--plot", type=Path, help="PNG to draw")
    ap.add_argument("--ylabel", default="SIGHAN-15 sentence-level F1")
    ap.add_argument("--x", default="pretraining tokens", help="what the points' numbers count (table and axis)")
    args = ap.parse_args()
    rows = []
    for item in args.points:
        series, tokens, path = parse_point(item)
        report = json.loads(path.read_text(encoding="utf-8"))
        if "sweep" in report:  # a --sweep report: the row of the threshold it chose
            report = next(r for r in report["sweep"] if r["threshold"] == report["best"]["settings"]["threshold"])
        rows.append((series, parse_tokens(tokens), tokens, report))
    order = list(dict.fromkeys(s for s, *_ in rows))
    rows.sort(key=lambda r: (order.index(r[0]), r[1]))
    named = any(order)
    print(("| series " if named else "") + f"| {args.x} | sent. cor. P / R / F1 | sent. det. F1 | FPR | threshold |")
    print(("|---" if named else "") + "|---:|---|---:|---:|---:|")
    for series, _, label, r in rows:
        c, d = r["sentence_correction"], r["sentence_detection"]
        print((f"| {series} " if named else "") + f"| {label} | {c['precision']:.3f} / {c['recall']:.3f} / "
              f"{c['f1']:.3f} | {d['f1']:.3f} | {r['false_positive_rate']:.3f} | {r['threshold']:g} |")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        top = max(t for _, t, _, _ in rows)
        scale, unit = (1e6, " (millions)") if top >= 1e6 else (1e3, " (thousands)") if top >= 1e3 else (1.0, "")
        fig, ax = plt.subplots(figsize=(5, 3.2), dpi=110)
        for series in order:
            pts = [(t / scale, r) for s, t, _, r in rows if s == series]
            xs = [x for x, _ in pts]
            name = series or "correction F1"
            ax.plot(xs, [r["sentence_correction"]["f1"] for _, r in pts], "o-", label=name)
            if len(order) == 1:
                ax.plot(xs, [r["sentence_detection"]["f1"] for _, r in pts], "s--", label="detection F1")
        ax.set_xlabel(args.x + unit)
        ax.set_ylabel(args.ylabel)
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        args.plot.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(args.plot)
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
