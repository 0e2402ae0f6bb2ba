"""Weight averaging of fine-tuned pairs (a "model soup": Wortsman et al., 2022; with the model it was fine-tuned
from, WiSE-FT): each weight of the discriminator and the generator is the weighted mean of that weight in the
given pairs, which must share one shape and one vocabulary (pairs fine-tuned from a common pair).

    python -m training.networks.soup --pairs RUN_A RUN_B --weights 0.7,0.3 --out runs/soup

A pair is a training run folder or a bundle (``discriminator/`` and ``generator/`` as Hugging Face directories).
The result is a run folder that ``training.bundle.export --run`` and ``training.networks.finetune --init`` read:
the first pair's configs and vocab.txt, the averaged weights in float32, and the first pair's provenance with the
soup on record.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from corrector.bundle import sha256_file
from corrector.types import CorrectorError
from training.networks.pretraining_state import NETS, SMALL_FILES

WEIGHTS_FILE = "model.safetensors"


def parse_weights(text: str, n: int) -> list[float]:
    """``"0.7,0.3"`` -> [0.7, 0.3]: one non-negative weight per pair, summing to 1."""
    try:
        weights = [float(w) for w in text.split(",")]
    except ValueError:
        raise CorrectorError(f"--weights must be numbers separated by commas, got {text!r}") from None
    if len(weights) != n:
        raise CorrectorError(f"--weights has {len(weights)} values for {n} pairs")
    if any(w < 0 for w in weights) or abs(sum(weights) - 1.0) > 1e-6:
        raise CorrectorError(f"--weights must be non-negative and sum to 1, got {text!r}")
    return weights


def average(states: Sequence[dict], weights: Sequence[float]) -> dict:
    """The weighted mean of state dicts with the same keys and shapes, in float32."""
    keys = states[0].keys()
    for i, state in enumerate(states[1:], 1):
        if state.keys() != keys:
            raise CorrectorError(f"pair {i + 1} has other weights than pair 1: {sorted(set(state) ^ set(keys))[:3]}")
        for k in keys:
            if state[k].shape != states[0][k].shape:
                raise CorrectorError(f"pair {i + 1}'s {k} is {tuple(state[k].shape)}, pair 1's "
                                     f"{tuple(states[0][k].shape)}")
    return {k: sum(w * s[k].float() for w, s in zip(weights, states)).contiguous() for k in keys}


def soup(pairs: Sequence[Path], weights: Sequence[float], out: Path) -> None:
    from safetensors.torch import load_file, save_file

    from training.networks.loop import read_provenance, write_provenance

    for net in NETS:
        for p in pairs:
            if not (p / net / WEIGHTS_FILE).is_file():
                raise CorrectorError(f"{p} has no {net}/{WEIGHTS_FILE}")
        if len({sha256_file(p / net / "vocab.txt") for p in pairs}) > 1:
            raise CorrectorError(f"the pairs' {net}/vocab.txt differ")
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    for net in NETS:
        mixed = average([load_file(p / net / WEIGHTS_FILE) for p in pairs], weights)
        (tmp / net).mkdir(parents=True)
        for name in SMALL_FILES:
            shutil.copyfile(pairs[0] / net / name, tmp / net / name)
        save_file(mixed, tmp / net / WEIGHTS_FILE, metadata={"format": "pt"})
    provenance = read_provenance(pairs[0])
    provenance["soup"] = {"pairs": [str(p) for p in pairs], "weights": list(weights),
                          "provenance": [read_provenance(p) for p in pairs[1:]]}
    write_provenance(tmp, provenance)
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)


def parser() -> argparse.ArgumentParser:
    """The command's flags (the recipe checks its commands against them)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=Path, nargs="+", required=True, help="run folders or bundles, two or more")
    ap.add_argument("--weights", required=True, help="one weight per pair, comma-separated, summing to 1")
    ap.add_argument("--out", type=Path, required=True, help="the run folder to write (replaced)")
    return ap


def main(argv: list[str] | None = None) -> None:
    ap = parser()
    args = ap.parse_args(argv)
    try:
        if len(args.pairs) < 2:
            raise CorrectorError("--pairs needs two or more pairs")
        weights = parse_weights(args.weights, len(args.pairs))
        soup(args.pairs, weights, args.out)
    except CorrectorError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    print(f"{args.out}: {' + '.join(f'{w:g} x {p}' for w, p in zip(weights, args.pairs))}")


if __name__ == "__main__":
    main()
