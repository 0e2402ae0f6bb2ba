"""The CSC splits every decoder choice is made on: the real training pairs, and the dev split.

The dev split is the 1,000 ``sighan_train.tsv`` pairs that ``training.data.make_csc_data --holdout 1000
--seed 1`` holds out of fine-tuning (same shuffle, so the networks never saw them), plus the correct
target side of each as an error-free sentence, so that false positives count as on SIGHAN-15.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .location import default_data, require
from .pair_files import read_pairs, split_holdout, write_pairs

SIGHAN_TRAIN = "csc/sighan_train.tsv"
CSC_HARD_TRAIN = "csc/csc_hard_train.tsv"
ECSPELL_TRAIN = "csc/ecspell_train"  # real pairs of mainland legal, medical and official text (*.tsv), when present
WANG_DEV = "csc/wang271k_dev.tsv"
HOLDOUT = 1000

Pair = tuple[str, str]


def sighan_holdout(data_dir: Path, holdout: int = HOLDOUT) -> tuple[list[Pair], list[Pair]]:
    """(the rest of sighan_train, the held-out pairs), exactly as make_csc_data splits them."""
    held, rest = split_holdout(read_pairs(Path(data_dir) / SIGHAN_TRAIN)[0], holdout)
    targets = {t for _, t in held}
    return [p for p in rest if p[1] not in targets], held


def dev_pairs(data_dir: Path, holdout: int = HOLDOUT) -> list[Pair]:
    """The held-out pairs, then each distinct target as an error-free pair."""
    _, held = sighan_holdout(data_dir, holdout)
    clean = list(dict.fromkeys(t for _, t in held))
    return held + [(t, t) for t in clean]


def other_train_files(data_dir: Path) -> list[Path]:
    """The real training pair files besides sighan_train (none held out): csc_hard_train, then each
    ecspell_train file there is, by name."""
    return [Path(data_dir) / CSC_HARD_TRAIN, *sorted((Path(data_dir) / ECSPELL_TRAIN).glob("*.tsv"))]


def train_pair_files(data_dir: Path) -> list[str]:
    """The names of the files ``train_pairs`` reads (recorded in the bundle: the model card lists them)."""
    return [Path(SIGHAN_TRAIN).name, *(p.name for p in other_train_files(data_dir))]


def train_pairs(data_dir: Path, holdout: int = HOLDOUT) -> list[Pair]:
    """Real pairs the decoder's statistics and ranker are fitted on (never the dev split or a test)."""
    rest, held = sighan_holdout(data_dir, holdout)
    targets = {t for _, t in held}
    return rest + [p for path in other_train_files(data_dir) for p in read_pairs(path)[0] if p[1] not in targets]


def text_folds(data_dir: Path, folds: int) -> dict[str, int]:
    """Fold (0 .. folds-1) of every target text of the real pairs, for cross-fitting evidence counted from
    those targets (``training.evidence.char_lm --in-domain``): each file is cut into ``folds`` contiguous blocks in
    file order, so sentences of one essay (consecutive lines) fall in one fold. A target is in the fold of
    its first line."""
    out: dict[str, int] = {}
    for path in (Path(data_dir) / SIGHAN_TRAIN, *other_train_files(data_dir)):
        pairs, _ = read_pairs(path)
        for i, (_, t) in enumerate(pairs):
            out.setdefault(t, i * folds // max(len(pairs), 1))
    return out


def split_by_fold(pairs: list[Pair], fold_of: dict[str, int], folds: int) -> list[list[int]]:
    """Indices of ``pairs`` per fold (by the pair's target; a target found in no file goes to fold 0)."""
    out: list[list[int]] = [[] for _ in range(folds)]
    for i, (_, t) in enumerate(pairs):
        out[fold_of.get(t, 0)].append(i)
    return out


def leaked_pairs(data_dir: Path, train_file: Path, holdout: int = HOLDOUT) -> int:
    """How many held-out pairs of the dev split have their target in ``train_file`` (source<TAB>target lines,
    e.g. a training.data.make_csc_data output): anything but 0 means networks trained on it learn the dev split."""
    _, held = sighan_holdout(data_dir, holdout)
    trained = {t for _, t in read_pairs(train_file)[0]}
    return sum(t in trained for _, t in held)


def hold_out_fold(data_dir: Path, train_file: Path, fold: int, folds: int, holdout: int = HOLDOUT
                  ) -> tuple[list[Pair], list[Pair]]:
    """The real training pairs of one essay-level fold (``text_folds``), and ``train_file``'s pairs less every
    pair whose target is one of theirs: networks fine-tuned on the second never saw the first, whose features
    are then what a ranker sees on text it never trained on (``training.fitting.fit --train-pairs``)."""
    fold_of = text_folds(data_dir, folds)
    held = [p for p in train_pairs(data_dir, holdout) if fold_of.get(p[1], 0) == fold]
    targets = {t for _, t in held}
    return held, [p for p in read_pairs(train_file)[0] if p[1] not in targets]


def parser() -> argparse.ArgumentParser:
    """The command's flags (the recipe checks its commands against them)."""
    ap = argparse.ArgumentParser(description="Write the dev split (held-out sighan_train pairs + their targets).")
    ap.add_argument("--data", type=Path, default=default_data(),
                    help="the data folder (default $CSC_DATA or ../shared/data; docs/data.md)")
    ap.add_argument("--out", type=Path, help="TSV to write, e.g. runs/dev_split.tsv")
    ap.add_argument("--check-train", type=Path, metavar="TSV",
                    help="instead: exit 1 if this training file holds any dev-split pair's target")
    ap.add_argument("--holdout", type=int, default=HOLDOUT)
    ap.add_argument("--hold-out-fold", metavar="K/N", help="instead: write fold K of N of the real training pairs "
                    "to --out and --train-file less every pair with one of their targets to --out-train")
    ap.add_argument("--train-file", type=Path, help="with --hold-out-fold: a training.data.make_csc_data output")
    ap.add_argument("--out-train", type=Path, help="with --hold-out-fold: where the rest of --train-file goes")
    return ap


def main(argv: list[str] | None = None) -> int:
    """Write the dev split as ``source<TAB>target`` lines (for ``training.fitting.evaluate --data``), or check that a
    training file holds none of it."""
    import sys

    ap = parser()
    args = ap.parse_args(argv)
    require([args.data / "csc" / "sighan_train.tsv"], args.data)
    if args.hold_out_fold:
        if not (args.train_file and args.out_train and args.out):
            ap.error("--hold-out-fold needs --train-file, --out-train and --out")
        k, n = (int(x) for x in args.hold_out_fold.split("/"))
        held, rest = hold_out_fold(args.data, args.train_file, k, n, args.holdout)
        write_pairs(args.out, held)
        write_pairs(args.out_train, rest)
        print(f"{len(held):,} real pairs of fold {k} of {n} -> {args.out}; {len(rest):,} training pairs -> {args.out_train}")
        return 0
    if args.check_train is not None:
        leaked = leaked_pairs(args.data, args.check_train, args.holdout)
        if leaked:
            print(f"{args.check_train}: {leaked:,} of the dev split's {args.holdout:,} held-out pairs are in it "
                  "(make it again with training.data.make_csc_data --holdout)", file=sys.stderr)
            return 1
        print(f"{args.check_train}: none of the dev split's pairs")
        return 0
    if args.out is None:
        ap.error("give --out (or --check-train)")
    pairs = dev_pairs(args.data, args.holdout)
    write_pairs(args.out, pairs)
    print(f"{len(pairs):,} pairs -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
