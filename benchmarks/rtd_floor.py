"""What a floor on the discriminator's score would save the generator, and what it would cost in edits.

    python benchmarks/rtd_floor.py --data ../shared/data/csc/lemon_dev/enc.tsv runs/dev_split.tsv [--model DIR]

The generator's distribution is asked at every site today, and its vocabulary head is about half the networks' time
(``benchmarks/depth_speed.py``). A graph that ran the head only where the RTD probability reaches a floor would skip
the sites below it, and could not edit them. For each file and each ``--floors`` value: the share of sites below the
floor, and the edits the decoder makes there today (right ones: the target's character). Script edits (a stray
traditional character written simplified) are counted apart: they need no generator.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import _checkout  # noqa: F401  (training/ and service/ are imported from the checkout)
import numpy as np
from candidate_recall import gold_views  # type: ignore[import-not-found]  # run as a script

from training.data.csc_data import read_pairs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, nargs="+", required=True, help="TSV files of source/target pairs")
    ap.add_argument("--model", type=Path, default=None, help="bundle (default: the shipped one)")
    ap.add_argument("--floors", type=float, nargs="+", default=[0.005, 0.01, 0.02, 0.05])
    args = ap.parse_args()
    from corrector import Corrector

    fix = Corrector.load(args.model)
    print("| file | sites | edits (right), script edits apart | " +
          " | ".join(f"below {f}: sites, edits (right)" for f in args.floors) + " |")
    print("|---|---:|---:|" + "---:|" * len(args.floors))
    for path in args.data:
        rtd: list[np.ndarray] = []
        edits: list[tuple[float, bool]] = []  # (the site's RTD probability, right)
        script = 0
        for v in gold_views(fix, read_pairs(path)):
            sites = v.scored.sites
            rtd.append(sites.rtd)
            for s, (row, _) in v.decided.chosen.items():
                target = fix.vocab[int(v.scored.rows.vid[row])]
                if target == sites.src[s]:  # the keep row: a stray character written simplified
                    script += 1
                else:
                    edits.append((float(sites.rtd[s]), v.gold[s] == target))
        p = np.concatenate(rtd) if rtd else np.zeros(0)
        e = np.array(edits, dtype=np.float64).reshape(-1, 2)
        cells = []
        for floor in args.floors:
            below = e[:, 0] < floor
            cells.append(f"{np.mean(p < floor):.0%}, {int(below.sum())} ({int((below & (e[:, 1] == 1)).sum())})")
        print(f"| {path.name} | {len(p):,} | {len(e)} ({int(e[:, 1].sum())}), {script} script | " + " | ".join(cells) + " |",
              flush=True)


if __name__ == "__main__":
    main()
