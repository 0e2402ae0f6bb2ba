"""Which synthetic error kinds can make the errors people really make: for every error of real pairs (the character
written where another was meant), whether each kind of ``training.data.make_csc_data`` could have written it.

    python benchmarks/error_reach.py ../shared/data/csc/lemon_dev/*.tsv --generator data/pretraining/generator

Kinds: ``sound`` (a pinyin neighbour of the meant character), ``fuzzy`` (the same toneless syllable once fuzzy
pinyin folds z/zh, c/ch, s/sh, n/l, an/ang, en/eng, in/ing, but not without it), ``shape`` (a look-alike at the
corruption's minimum similarity), ``function`` (``corruption.FUNCTION_SLIPS``), ``generator`` (among the
pretraining generator's top 30 at the position masked in the meant sentence). Prints each kind's share of the
errors, the union, and what only the generator reaches. A measurement on dev data: nothing is fitted to it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import _checkout  # noqa: F401  (training/ is imported from the checkout)

from corrector.evidence.similarity import SimilarityTables
from training.data.corruption import FUNCTION_SLIPS, CorruptionConfig
from training.data.homophones import fuzzy_syllable
from training.data.pair_files import read_pairs

BUNDLE = Path(__file__).resolve().parents[1] / "data" / "electra_models" / "default"


def reach(pairs, tables: SimilarityTables, propose=None) -> dict[str, list[bool]]:
    from pypinyin import Style, pinyin

    def syllables(ch: str) -> set[str]:
        return {s for s in pinyin(ch, style=Style.NORMAL, heteronym=True)[0] if s.isascii()}

    min_shape = CorruptionConfig.min_shape_sim
    hits: dict[str, list[bool]] = {k: [] for k in ("sound", "fuzzy", "shape", "function", "generator")}
    for source, target in pairs:
        for i, (wrote, meant) in enumerate(zip(source, target, strict=True)):
            if wrote == meant:
                continue
            sound = {c for c, _ in tables.pinyin_neighbours(meant, k=1_000_000)}
            exact, other = syllables(meant), syllables(wrote)
            hits["sound"].append(wrote in sound)
            hits["fuzzy"].append(not exact & other and bool({fuzzy_syllable(s) for s in exact}
                                                             & {fuzzy_syllable(s) for s in other}))
            hits["shape"].append(tables.shape_sim(meant, wrote) >= min_shape)
            hits["function"].append(wrote in FUNCTION_SLIPS.get(meant, {}))
            if propose is not None:
                hits["generator"].append(wrote in {c for c, _ in propose(target, i)})
    return hits


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pairs", nargs="+", type=Path, help="source<TAB>target files with real errors")
    ap.add_argument("--similarity", type=Path, default=BUNDLE / "similarity")
    ap.add_argument("--generator", type=Path, help="a generator folder (needs the train extra)")
    args = ap.parse_args(argv)
    tables = SimilarityTables.load(args.similarity)
    propose = None
    if args.generator is not None:
        from training.data.generator_errors import GeneratorProposer

        propose = GeneratorProposer(args.generator).propose
    for path in args.pairs:
        hits = reach(read_pairs(path)[0], tables, propose)
        n = len(hits["sound"])
        kinds = [k for k in hits if hits[k]]
        union = [any(hits[k][j] for k in kinds) for j in range(n)]
        line = ", ".join(f"{k} {sum(hits[k]) / max(n, 1):.1%}" for k in kinds)
        print(f"{path.name}: {n} errors: {line}; any {sum(union) / max(n, 1):.1%}", end="")
        if hits["generator"]:
            only = sum(hits["generator"][j] and not any(hits[k][j] for k in kinds if k != "generator")
                       for j in range(n))
            print(f"; generator only {only / max(n, 1):.1%}", end="")
        print()


if __name__ == "__main__":
    main()
