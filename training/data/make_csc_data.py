"""Spelling-correction training pairs: synthetic errors in clean corpus sentences, plus real pairs.

    python -m training.data.make_csc_data --sentences runs/data/sentences.txt --similarity runs/similarity \\
        --out runs/csc/train.tsv --n 300000 --seed 1 \\
        --real ../shared/data/csc/sighan_train.tsv ../shared/data/csc/csc_hard_train.tsv --real-repeat 2 \\
        --holdout 1000 --holdout-out runs/csc/dev.tsv

Writes ``source<TAB>target`` lines (always of equal length) in a seeded random order; the same inputs and
seed give a byte-identical file. The synthetic errors copy how real ones happen:

* ``word``: an IME homophone slip. A jieba word (2-4 characters) is swapped for another dictionary word
  with the same toneless pinyin, drawn by word frequency (精致 → 精制, 权利 → 权力); only the characters
  that differ become errors.
* ``fuzzy``: the same with fuzzy pinyin, as an IME set to z/zh, c/ch, s/sh, n/l, an/ang, en/eng, in/ing offers
  (知道 → 资道, 认真 → 仍真): only the words the fuzzy setting adds to the plain homophones.
* ``sound``: one character swapped for a same- or similar-sounding one (pinyin similarity tables).
* ``shape``: one character swapped for a look-alike (glyph-shape similarity tables).
* ``random``: one character swapped for a random frequent character.
* ``prior``: one character swapped as real writers do, drawn from the confusion prior P(written | intended).
* ``lm``: an error the character n-gram LM alone cannot tell apart: a few draws from the prior (or the
  sound table) at a few positions, the one the LM likes best kept if it costs the sentence at most
  ``lm_margin`` nats of LM log-probability. These are the errors the networks must learn to catch.
* ``generator``: one character swapped for one the pretraining generator writes at that position masked (its
  top 30, by probability; ``--generator``): substitutions the context makes plausible, alike or not.
* ``function``: a function word slipped into its homophone, as native writers do whatever the topic (的/地/得,
  在/再, 做/作, 象/像, 已/以, 那/哪, ...: ``corruption.FUNCTION_SLIPS``).

With ``--lm-worse`` an error of any kind is kept only when it lowers the sentence's LM log-probability (CSCD-IME's
filter: a swap the LM reads as well as the original may be no error at all).

A share of sentences (``--clean-share``) is kept untouched so the model learns to leave correct text
alone. Only CJK characters of the vocab are replaced, and only by CJK vocab characters seen in the corpus.
The real pairs of ``--real`` are added ``--real-repeat`` times each; the first ``--holdout`` pairs of the
first file (after a shuffle seeded by ``HOLDOUT_SEED``, never ``--seed``: the same pairs as
``training.data.splits``) go to ``--holdout-out`` instead, as a dev split for threshold tuning.
The SIGHAN 2015 test set (the benchmark) is refused.
"""

from __future__ import annotations

import argparse
import collections
import random
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from corrector.evidence.similarity import SimilarityTables
from corrector.text.chars import is_cjk
from corrector.text.tokenize import read_vocab_list

# The error kinds and the Corrupter live in .corruption; these names are imported from here too.
from .corruption import (
    _NON_CJK,
    DEFAULT_ERROR_COUNTS,
    DEFAULT_MIX,
    KINDS,
    Corrupter,
    CorruptionConfig,
    lm_scorer,
    parse_counts,
    parse_mix,
    writable_chars,
)
from .generator_errors import DEFAULT_GENERATOR, GeneratorProposer
from .homophones import HomophoneIndex
from .pair_files import (  # also imported from here
    BENCHMARK_FILE,
    BenchmarkFileError,
    check_not_benchmark,
    read_pairs,
    split_holdout,
    write_pairs,
)

# ---------------------------------------------------------------------------------------------- sentences


def is_training_sentence(
    s: str, min_chars: int = 8, max_chars: int = 120, min_cjk_share: float = 0.6
) -> bool:
    return min_chars <= len(s) <= max_chars and len(_NON_CJK.findall(s)) <= (1 - min_cjk_share) * len(s)


def sample_sentences(
    path: Path, n: int, rng: random.Random, keep: Callable[[str], bool]
) -> tuple[list[str], int]:
    """Up to n lines of the file that pass ``keep``, drawn uniformly in one pass (reservoir sampling);
    returns them and the number of lines that passed."""
    picked: list[str] = []
    seen = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            s = line.rstrip("\n")
            if not keep(s):
                continue
            if seen < n:
                picked.append(s)
            else:
                j = rng.randrange(seen + 1)
                if j < n:
                    picked[j] = s
            seen += 1
    return picked, seen


# ---------------------------------------------------------------------------------------------- dataset


@dataclass
class Stats:
    synthetic: int = 0
    synthetic_clean: int = 0
    synthetic_clean_hard: int = 0  # of those, sentences with digits, Latin letters or a rare character
    events: collections.Counter[str] = field(default_factory=collections.Counter)  # errors made, by kind
    changed: collections.Counter[str] = field(default_factory=collections.Counter)  # characters, by kind
    error_counts: collections.Counter[int] = field(default_factory=collections.Counter)  # errors per sentence
    lm_rejected: collections.Counter[str] = field(default_factory=collections.Counter)  # undone by --lm-worse
    eligible_sentences: int = 0
    dropped_holdout_overlap: int = 0
    real: dict[str, dict[str, int]] = field(default_factory=dict)
    holdout: int = 0
    written: int = 0
    written_clean: int = 0


RARE_AFTER = 3500  # a character outside the sample's this many most frequent (the size of the 常用字 list)
QUOTING = frozenset("“”「」『』《》·")  # quotations (classical ones too), titles, foreign names' dots


def hard_clean(sentences: list[str]) -> list[bool]:
    """Per sentence: correct text a spelling corrector is tempted to "fix": it holds digits, Latin letters, a
    quotation, title or foreign name's dot (``QUOTING``), or a character outside the sample's RARE_AFTER most
    frequent CJK characters (names, terms, rare words)."""
    counts = collections.Counter(c for s in sentences for c in s if is_cjk(c))
    common = {c for c, _ in counts.most_common(RARE_AFTER)}

    def hard(s: str) -> bool:
        return any(c.isdigit() or (c.isalpha() and (c.isascii() or "\uff21" <= c <= "\uff5a"))  # Latin, full width too
                   or c in QUOTING or (is_cjk(c) and c not in common) for c in s)

    return [hard(s) for s in sentences]


def synthetic_pairs(
    sentences: list[str], n: int, clean_share: float, corrupter: Corrupter, rng: random.Random, stats: Stats,
    hard_share: float = 0.0,
) -> Iterator[tuple[str, str]]:
    """n pairs from the sentences (reused in turn if there are fewer than n); round(n * clean_share) of
    them, at seeded random, are left clean. With ``hard_share``, that share of the clean ones is drawn among
    the ``hard_clean`` sentences (as many as there are), the rest among all."""
    n_clean = round(n * clean_share)
    if hard_share > 0:
        is_hard = hard_clean(sentences)
        hard_idx = [i for i in range(n) if is_hard[i % len(sentences)]]
        clean = set(rng.sample(hard_idx, min(round(n_clean * hard_share), len(hard_idx))))
        rest = [i for i in range(n) if i not in clean]
        clean |= set(rng.sample(rest, n_clean - len(clean)))
        stats.synthetic_clean_hard = sum(is_hard[i % len(sentences)] for i in clean)
    else:
        clean = set(rng.sample(range(n), n_clean))
    for i in range(n):
        sentence = sentences[i % len(sentences)]
        if i in clean:
            yield sentence, sentence
            continue
        source, errors = corrupter.corrupt_positions(sentence)
        for kind, positions in errors:
            stats.events[kind] += 1
            stats.changed[kind] += len(positions)
        stats.error_counts[len(errors)] += 1
        yield source, sentence


def summary(stats: Stats, seconds: float) -> str:
    erroneous = stats.synthetic - stats.synthetic_clean
    n_events = sum(stats.events.values())
    n_changed = sum(stats.changed.values())
    lines = [
        f"synthetic pairs: {stats.synthetic:,} from {stats.eligible_sentences:,} eligible sentences; "
        f"clean {stats.synthetic_clean:,} ({stats.synthetic_clean / max(1, stats.synthetic):.1%}"
        + (f"; {stats.synthetic_clean_hard:,} with digits, Latin or a rare character" if stats.synthetic_clean_hard
           else "") + ")",
        "errors by kind: "
        + ", ".join(f"{k} {stats.events[k]:,} ({stats.events[k] / max(1, n_events):.1%})" for k in KINDS),
        f"per erroneous sentence: {n_events / max(1, erroneous):.2f} errors, {n_changed / max(1, erroneous):.2f} "
        f"changed characters; per synthetic sentence: {n_events / max(1, stats.synthetic):.2f} errors",
        "changed characters by kind: " + ", ".join(f"{k} {stats.changed[k]:,}" for k in KINDS),
        "errors per corrupted sentence: "
        + ", ".join(f"{k}: {v:,}" for k, v in sorted(stats.error_counts.items())),
    ]
    for name, r in stats.real.items():
        lines.append(
            f"real {name}: {r['pairs']:,} pairs, {r['skipped']:,} skipped (bad/unequal length), "
            f"{r['held_out']:,} held out, {r['overlap']:,} dropped (same target as a held-out pair), "
            f"{r['written']:,} written"
        )
    if stats.lm_rejected:
        lines.append("errors undone by --lm-worse (the LM read them as well): "
                     + ", ".join(f"{k} {v:,}" for k, v in stats.lm_rejected.items()))
    if stats.dropped_holdout_overlap:
        lines.append(
            f"synthetic pairs dropped (same target as a held-out pair): {stats.dropped_holdout_overlap:,}"
        )
    lines.append(f"held out: {stats.holdout:,}")
    lines.append(
        f"written: {stats.written:,} pairs, clean {stats.written_clean:,} "
        f"({stats.written_clean / max(1, stats.written):.1%}) in {seconds:.1f}s"
    )
    return "\n".join(lines)


def make_dataset(
    sentences_file: Path,
    tables: SimilarityTables,
    vocab: list[str],
    out: Path,
    n: int,
    seed: int,
    real: Sequence[Path] = (),
    real_repeat: int = 1,
    holdout: int = 0,
    holdout_out: Path | None = None,
    clean_share: float = 0.2,
    clean_hard_share: float = 0.5,
    config: CorruptionConfig | None = None,
    homophones: HomophoneIndex | None = None,
    fuzzy: HomophoneIndex | None = None,
    propose: Callable[[str, int], list[tuple[str, float]]] | None = None,
    min_chars: int = 8,
    max_chars: int = 120,
    min_cjk_share: float = 0.6,
    progress: bool = True,
    prior: dict[str, dict[str, float]] | None = None,
    lm_score: Callable[[list[str]], Sequence[float]] | None = None,
    distinct: int = 0,
    exclude: frozenset[str] = frozenset(),
) -> Stats:
    """Writes the shuffled train pairs to out (and the held-out real pairs to holdout_out); returns stats.
    ``distinct`` > 0 draws at most that many sentences, each then used about n / distinct times, each time with
    fresh errors (a smaller file to carry, the same number of pairs). Sentences in ``exclude`` are never drawn.

    Each random step has its own stream derived from the seed, so e.g. other --real files do not change
    the synthetic pairs."""
    for path in real:
        check_not_benchmark(path)
    if holdout > 0 and (not real or holdout_out is None):
        raise ValueError("a holdout needs --real files and --holdout-out")
    stats = Stats()

    # real pairs first: the held-out targets must not appear in the training file at all
    held: list[tuple[str, str]] = []
    real_train: list[tuple[str, str]] = []
    per_file: list[tuple[Path, list[tuple[str, str]]]] = []
    for k, path in enumerate(real):
        pairs, skipped = read_pairs(path)
        stats.real[path.name] = {"pairs": len(pairs), "skipped": skipped, "held_out": 0, "overlap": 0}
        if k == 0 and holdout > 0:
            held, pairs = split_holdout(pairs, holdout)  # never --seed: one dev split for every file
            stats.real[path.name]["held_out"] = len(held)
        per_file.append((path, pairs))
    held_targets = {t for _, t in held}
    for path, pairs in per_file:
        kept = [p for p in pairs if p[1] not in held_targets]
        stats.real[path.name]["overlap"] = len(pairs) - len(kept)
        stats.real[path.name]["written"] = len(kept) * real_repeat
        real_train += kept * real_repeat
    stats.holdout = len(held)

    keep = lambda s: is_training_sentence(s, min_chars, max_chars, min_cjk_share) and s not in exclude  # noqa: E731
    sentences, stats.eligible_sentences = sample_sentences(
        sentences_file, min(n, distinct) if distinct > 0 else n, random.Random(f"{seed}/sample"), keep
    )
    if n > 0 and not sentences:
        raise ValueError(f"{sentences_file} has no sentences of {min_chars}..{max_chars} characters")
    random.Random(f"{seed}/order").shuffle(sentences)  # the reservoir's order is not random
    corrupter = Corrupter(tables, vocab, random.Random(f"{seed}/corrupt"), homophones, config, prior=prior,
                          lm_score=lm_score, fuzzy=fuzzy, propose=propose)
    synthetic = []
    pairs_iter = synthetic_pairs(sentences, n, clean_share, corrupter, random.Random(f"{seed}/clean"), stats,
                                 clean_hard_share)
    for source, target in tqdm(pairs_iter, total=n, desc="corrupting", disable=not progress, mininterval=2):
        stats.synthetic += 1
        stats.synthetic_clean += source == target
        if target in held_targets:
            stats.dropped_holdout_overlap += 1
            continue
        synthetic.append((source, target))

    stats.lm_rejected = corrupter.lm_rejected
    train = synthetic + real_train
    random.Random(f"{seed}/shuffle").shuffle(train)
    write_pairs(out, train)
    if holdout_out is not None and held:
        write_pairs(holdout_out, held)
    stats.written = len(train)
    stats.written_clean = sum(s == t for s, t in train)
    return stats


# ---------------------------------------------------------------------------------------------- CLI


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--sentences", type=Path, required=True, help="clean sentences, one per line (training.data.prepare)"
    )
    ap.add_argument(
        "--similarity",
        type=Path,
        required=True,
        help="directory with pinyin.tsv and shape.tsv (training.evidence.similarity)",
    )
    ap.add_argument(
        "--vocab", type=Path, help="vocab.txt, one token per line (default: vocab.txt beside --sentences)"
    )
    ap.add_argument("--out", type=Path, required=True, help="output TSV, source<TAB>target per line")
    ap.add_argument("--n", type=int, default=300_000, help="synthetic pairs to make (default 300000)")
    ap.add_argument("--distinct", type=int, default=0,
                    help="draw at most this many sentences and reuse them, each time with fresh errors (0: up to n)")
    ap.add_argument(
        "--seed", type=int, default=1, help="random seed; same inputs + seed = same output (default 1)"
    )
    ap.add_argument(
        "--clean-share",
        type=float,
        default=0.2,
        help="share of synthetic pairs left error-free (default 0.2)",
    )
    ap.add_argument(
        "--clean-hard-share",
        type=float,
        default=0.5,
        help="share of the error-free pairs drawn among sentences with digits, Latin letters or a rare character "
             "(names, terms): correct text the networks must learn to leave alone, the rest at random (default 0.5)",
    )
    ap.add_argument(
        "--mix",
        default=",".join(f"{k}={v}" for k, v in DEFAULT_MIX.items()),
        help="error kind weights: word (IME homophone word), sound, shape, random, prior (needs "
             "--prior-candidates), lm (needs --lm) (default %(default)s)",
    )
    ap.add_argument(
        "--errors",
        default=",".join(str(p) for p in DEFAULT_ERROR_COUNTS),
        help="P(1,2,3,... errors) in a corrupted sentence, capped at one per 8 CJK characters (default %(default)s)",
    )
    ap.add_argument(
        "--min-char-freq",
        type=int,
        default=CorruptionConfig.min_char_freq,
        help="replacement characters must occur this often in the corpus (pinyin.tsv counts; default %(default)s)",
    )
    ap.add_argument("--min-chars", type=int, default=8, help="shortest usable sentence (default 8)")
    ap.add_argument("--max-chars", type=int, default=120, help="longest usable sentence (default 120)")
    ap.add_argument(
        "--min-cjk-share", type=float, default=0.6, help="least share of CJK characters (default 0.6)"
    )
    ap.add_argument(
        "--jieba-dict",
        type=Path,
        help="jieba-format dictionary for the homophone words (default: jieba's own)",
    )
    ap.add_argument(
        "--real",
        type=Path,
        nargs="*",
        default=[],
        help=f"real source<TAB>target files to mix in (never {BENCHMARK_FILE})",
    )
    ap.add_argument("--real-repeat", type=int, default=1, help="times each real pair is written (default 1)")
    ap.add_argument(
        "--holdout",
        type=int,
        default=0,
        help="pairs of the first --real file held out as a dev split (default 0)",
    )
    ap.add_argument("--holdout-out", type=Path, help="where the held-out pairs go (required with --holdout)")
    ap.add_argument("--exclude-targets", type=Path, nargs="*", default=[],
                    help="pair files whose target sentences are never drawn (e.g. the fine-tuning pairs, for pairs the "
                    "ranker is fitted on)")
    ap.add_argument("--prior-candidates", type=Path,
                    help="candidate table dir (training.evidence.candidates) whose real confusions and similarities give the "
                         "'prior' error kind: P(written | intended) as training.data.confusion_prior weighs it")
    ap.add_argument("--lm", type=Path, help="character LM dir (training.evidence.char_lm, or a bundle's lm/) for the 'lm' "
                                            "error kind: substitutions this LM alone cannot tell apart")
    ap.add_argument("--lm-margin", type=float, default=CorruptionConfig.lm_margin,
                    help="'lm' errors cost the sentence at most this many nats of LM log-probability "
                         "(default %(default)s)")
    ap.add_argument("--generator", type=Path, nargs="?", const=DEFAULT_GENERATOR,
                    help="a generator folder (ElectraForMaskedLM + vocab.txt; default data/pretraining/generator) for the "
                         "'generator' error kind; needs the train extra")
    ap.add_argument("--lm-worse", action="store_true",
                    help="keep an error only when it lowers the sentence's --lm log-probability (CSCD-IME's filter)")
    ap.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                    help="a progress bar on stderr (default: when stderr is a terminal)")
    return ap


def main(argv: list[str] | None = None) -> None:
    ap = parser()
    args = ap.parse_args(argv)
    try:
        config = CorruptionConfig(
            mix=parse_mix(args.mix), error_counts=parse_counts(args.errors), min_char_freq=args.min_char_freq,
            lm_margin=args.lm_margin, lm_worse=args.lm_worse,
        )
    except ValueError as e:
        ap.error(str(e))
    for path in args.real:
        try:
            check_not_benchmark(path)
        except BenchmarkFileError as e:
            ap.error(str(e))
    vocab_file = args.vocab or args.sentences.parent / "vocab.txt"
    for path in [args.sentences, vocab_file, *args.real, *([args.jieba_dict] if args.jieba_dict else [])]:
        if not path.is_file():
            ap.error(f"{path} does not exist")
    if args.n < 0 or args.real_repeat < 0 or args.holdout < 0 or args.distinct < 0:
        ap.error("--n, --distinct, --real-repeat and --holdout must be >= 0")
    if not 0 <= args.clean_share <= 1 or not 0 <= args.clean_hard_share <= 1:
        ap.error("--clean-share and --clean-hard-share must be in [0, 1]")
    if args.holdout > 0 and (not args.real or args.holdout_out is None):
        ap.error("--holdout needs --real files and --holdout-out")
    if args.holdout_out is not None and args.holdout_out.resolve() == args.out.resolve():
        ap.error("--holdout-out must differ from --out")
    if config.mix["prior"] > 0 and args.prior_candidates is None:
        ap.error("a mix with prior=... needs --prior-candidates")
    if config.mix["generator"] > 0 and args.generator is None:
        ap.error("a mix with generator=... needs --generator [DIR]")
    uses_lm = config.mix["lm"] > 0 or config.lm_worse
    if uses_lm and (args.lm is None or not (args.lm / "meta.json").is_file()):
        ap.error("a mix with lm=... and --lm-worse need --lm DIR (a character LM from training.evidence.char_lm)")

    t0 = time.perf_counter()
    tables = SimilarityTables.load(args.similarity)
    vocab = read_vocab_list(vocab_file)
    writable = writable_chars(vocab, tables, config.min_char_freq)
    homophones, fuzzy = (HomophoneIndex.from_jieba(writable.__contains__, args.jieba_dict, fuzzy=f)
                         if config.mix[kind] > 0 else None for kind, f in (("word", False), ("fuzzy", True)))
    if homophones is not None or fuzzy is not None:
        print(f"homophone indexes: {time.perf_counter() - t0:.1f}s")
    prior = None
    if args.prior_candidates is not None:
        from corrector.evidence.candidates import CandidateTable

        from .confusion_prior import prior_weights

        prior = prior_weights(CandidateTable.load(args.prior_candidates))
    stats = make_dataset(
        args.sentences, tables, vocab, args.out, args.n, args.seed, real=args.real, real_repeat=args.real_repeat,
        holdout=args.holdout, holdout_out=args.holdout_out, clean_share=args.clean_share,
        clean_hard_share=args.clean_hard_share, config=config, homophones=homophones, fuzzy=fuzzy,
        propose=GeneratorProposer(args.generator).propose if config.mix["generator"] > 0 else None,
        min_chars=args.min_chars,
        max_chars=args.max_chars, min_cjk_share=args.min_cjk_share,
        progress=sys.stderr.isatty() if args.progress is None else args.progress, prior=prior,
        lm_score=lm_scorer(args.lm) if uses_lm else None, distinct=args.distinct,
        exclude=frozenset(t for path in args.exclude_targets for _, t in read_pairs(path)[0]),
    )
    print(summary(stats, time.perf_counter() - t0))
    print(f"→ {args.out}" + (f", held out → {args.holdout_out}" if stats.holdout else ""))


if __name__ == "__main__":
    main()
