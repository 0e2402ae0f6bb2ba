"""Pair files (``source<TAB>target``, equal lengths): reading and writing them, the one shuffle that defines the dev
split (``split_holdout``: make_csc_data and training.data.splits both call it) and the benchmark refused as training
data."""

from __future__ import annotations

import os
import random
from collections.abc import Iterable
from pathlib import Path

from corrector.text.mainland import mainland_pair

# The held-out real pairs (the dev split, training.data.splits) are drawn with this seed whatever --seed is: on
# 2026-11-26 a training file made with --seed 3 held out other pairs and so trained on 774 of the dev split's 915
# erroneous pairs.
HOLDOUT_SEED = 1


def split_holdout(pairs: list[tuple[str, str]], holdout: int) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(the held-out pairs, the rest) after the one shuffle that defines the dev split: make_dataset and
    training.data.splits both call this, so the two cannot draw different pairs."""
    shuffled = list(pairs)
    random.Random(f"{HOLDOUT_SEED}/holdout").shuffle(shuffled)
    return shuffled[:holdout], shuffled[holdout:]


BENCHMARK_FILE = "sighan15_test.tsv"  # never train on it


class BenchmarkFileError(ValueError):
    """Raised for an attempt to read the benchmark as training data."""


def check_not_benchmark(path: Path) -> None:
    if path.name == BENCHMARK_FILE:
        raise BenchmarkFileError(
            f"{path} is the SIGHAN 2015 test set, the evaluation benchmark: it must never be used for training"
        )


def read_pairs(path: Path) -> tuple[list[tuple[str, str]], int]:
    """``source<TAB>target`` pairs of equal length, and how many lines were skipped (bad or unequal). Targets are
    read in mainland form (``corrector.text.mainland``: SIGHAN's converted targets write the particle 著, mainland
    text 着), so that no model learns to write Taiwan's form into simplified text."""
    check_not_benchmark(path)
    pairs, skipped = [], 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\r\n").split("\t")
            if len(parts) == 2 and parts[0] and len(parts[0]) == len(parts[1]):
                pairs.append(mainland_pair(parts[0], parts[1]))
            elif line.strip():
                skipped += 1
    return pairs, skipped


def write_pairs(path: Path, pairs: Iterable[tuple[str, str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        for source, target in pairs:
            assert len(source) == len(target), (source, target)
            assert "\t" not in source + target and "\n" not in source + target, (source, target)
            f.write(f"{source}\t{target}\n")
    os.replace(tmp, path)
