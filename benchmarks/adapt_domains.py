"""``corrector adapt`` measured on the five native dev domains (lemon_dev's four and cscd_ns_dev).

    python benchmarks/adapt_domains.py --out runs/adapt [--domains enc,mec,cot,gam,cscd_ns]
        [--extra cot=../shared/data/corpus/laws.txt.gz ...] [--report runs/adapt/report.json]

Each domain's pairs are split in two halves by position (even and odd lines: the files list their slips first).
The base bundle is adapted to the error-free side (the targets) of the even half, less any sentence that the odd
half also holds, exactly as ``python -m corrector adapt`` does it; both bundles then correct the odd half, each at
its own threshold: strict sentence-level correction F1 and the share of its error-free sentences changed (FPR).
``--extra DOMAIN=PATH`` adapts that domain to other text of the same kind instead (a corpus file, say), as a
user with a body of such text would.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import _checkout  # noqa: F401  (training/ is imported from the checkout)

from corrector import Corrector
from corrector.adapt.adapted_bundle import adapt_bundle, read_texts
from training.data.location import default_data
from training.data.native_dev import DOMAINS, domain_pairs
from training.fitting.evaluate import run

ROOT = Path(__file__).resolve().parents[1]


def halves(pairs: list[tuple[str, str]]) -> tuple[list[str], list[tuple[str, str]]]:
    """(the even half's targets that the odd half does not hold, the odd half's pairs)."""
    odd = pairs[1::2]
    seen = {s for p in odd for s in p}
    return [t for _, t in pairs[0::2] if t not in seen], odd


def figures(r: dict) -> dict:
    sc = r["sentence_correction"]
    return {"f1": round(sc["f1"], 4), "precision": round(sc["precision"], 4), "recall": round(sc["recall"], 4),
            "fpr": round(r["false_positive_rate"], 4)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=None, help="the shared data folder (default: ../shared/data)")
    ap.add_argument("--model", type=Path, default=ROOT / "data/electra_models/default")
    ap.add_argument("--out", type=Path, required=True, help="where the adapted bundles go")
    ap.add_argument("--domains", default=",".join(DOMAINS))
    ap.add_argument("--extra", action="append", default=[], metavar="DOMAIN=PATH",
                    help="adapt DOMAIN to PATH (files, directories or globs, comma-separated) instead of its half")
    ap.add_argument("--report", type=Path)
    a = ap.parse_args()
    data = a.data or default_data()
    extra: dict[str, list[str]] = {}
    for item in a.extra:
        name, _, paths = item.partition("=")
        extra[name] = paths.split(",")
    base = Corrector.load(a.model)
    report: dict = {"model": a.model.name, "domains": {}}
    for name in a.domains.split(","):
        text, odd = halves(domain_pairs(data, (name,))[name])
        files: list[str] = []
        if name in extra:
            text, files = read_texts(extra[name])
        out = a.out / (f"{name}-extra" if name in extra else name)
        facts = adapt_bundle(a.model, text, out, files=files, log=lambda m: print(f"  {m}", file=sys.stderr))
        before = figures(run(base, odd))
        after = figures(run(Corrector.load(out), odd))
        row = {"text_lines": facts["text"]["lines"], "text_chars": facts["text"]["chars"], "files": files,
               "weight": facts["lm"]["weight"], "domain_words": facts["domain_words"]["count"],
               "threshold": facts["threshold"]["adapted"], "adapt_seconds": facts["seconds"], "pairs": len(odd),
               "base": before, "adapted": after}
        report["domains"][name] = row
        print(f"{name:8s} {len(odd):5d} pairs  text {row['text_chars']:>10,} chars  weight {row['weight']:.3f}  "
              f"threshold {row['threshold']:.2f}  F1 {before['f1']:.3f} -> {after['f1']:.3f}  "
              f"FPR {before['fpr']:.1%} -> {after['fpr']:.1%}", flush=True)
    rows = report["domains"].values()
    mean = {k: round(sum(r[k]["f1"] for r in rows) / max(1, len(rows)), 4) for k in ("base", "adapted")}
    report["mean_f1"] = mean
    rel = (mean["adapted"] / mean["base"] - 1) if mean["base"] else float("nan")
    print(f"mean F1 {mean['base']:.3f} -> {mean['adapted']:.3f} ({rel:+.1%})")
    if a.report:
        a.report.parent.mkdir(parents=True, exist_ok=True)
        a.report.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
