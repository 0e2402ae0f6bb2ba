"""How often the corrector changes text that is already correct.

    python benchmarks/false_positives.py [--model data/electra_models/default] [--data ../shared/data]

Three kinds of correct sentences: the target side of ``csc/wang271k_dev.tsv`` (news-style, many
names), the error-free sentences of the dev split (``training.data.splits.dev_pairs``: the held-out
sighan_train targets), and held-out lines of the professionally edited corpus files (laws and news, cut at sentence
ends): the lines the bundle's character LM never counted. Its build holds out every 200th line counted over the
files it read (``corpus_files`` in its meta.json) in sorted order, so the lines depend on that list: a corpus with
more files holds out other lines. Prints the share of sentences changed and the most frequent changes.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

import _checkout  # noqa: F401  (training/ and service/ are imported from the checkout)

from corrector import Corrector
from training.data.csc_data import read_pairs
from training.data.location import default_data
from training.data.splits import dev_pairs
from training.data.text_files import corpus_files, file_lines

EDITED = ("laws.txt.gz", "news_rss.txt.gz", "news_titles.txt.gz", "news_xwlb.txt.gz")
HOLDOUT_EVERY = 200  # training.evidence.char_lm's default


def corpus_sentences(corpus: Path, limit: int, lm_files: list[str] | None = None) -> list[str]:
    """Sentences of the edited files' lines that an LM built on ``lm_files`` (default: every file of ``corpus``)
    held out: every HOLDOUT_EVERY-th line of them all, counted in sorted file order (training.evidence.char_lm.read_corpus)."""
    files = sorted(lm_files) if lm_files else [f.name for f in corpus_files(corpus)]
    held: dict[str, list[str]] = {name: [] for name in EDITED}
    seen = 0
    for name in files:
        lines = file_lines(corpus / name)
        if name in held:
            first = (HOLDOUT_EVERY - 1 - seen) % HOLDOUT_EVERY
            held[name] = lines[first::HOLDOUT_EVERY]
        seen += len(lines)
    out: list[str] = []
    for name in EDITED:
        sents = [s for line in held[name] for s in re.findall(r"[^。！？]*[。！？]?", line) if 8 <= len(s) <= 80]
        out += sents[: limit // len(EDITED)]
    return out


def parser() -> argparse.ArgumentParser:
    """The command's flags (the recipe checks its commands against them)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, default=None)
    ap.add_argument("--data", type=Path, default=default_data())
    ap.add_argument("--corpus-sentences", type=int, default=2000)
    ap.add_argument("--set", nargs="*", default=[], metavar="NAME=VALUE", help="decoding settings (JSON values)")
    return ap


def main(argv: list[str] | None = None) -> None:
    ap = parser()
    a = ap.parse_args(argv)
    import json

    settings = {k: json.loads(v) for k, v in (x.split("=", 1) for x in a.set)}
    fix = Corrector.load(a.model, device="cpu", **settings)
    sets = {
        "wang271k_dev targets": list(dict.fromkeys(t for _, t in read_pairs(a.data / "csc" / "wang271k_dev.tsv"))),
        "dev split, error-free": [s for s, t in dev_pairs(a.data) if s == t],
        "held-out corpus (laws, news)": corpus_sentences(a.data / "corpus", a.corpus_sentences, lm_files(fix)),
    }
    print("| correct sentences | count | changed | top changes |\n|---|---:|---:|---|")
    for name, texts in sets.items():
        print(row(name, fix.correct_batch(texts) if texts else []), flush=True)


def row(name: str, results: list) -> str:
    """One table row: how many of the corrections changed their text, and the commonest changes ("n/a" for none:
    a data folder without the set's files)."""
    if not results:
        return f"| {name} | 0 | n/a | |"
    changed = sum(1 for r in results if r.edits)
    top = Counter(f"{e.source}→{e.target}" for r in results for e in r.edits).most_common(5)
    return f"| {name} | {len(results):,} | {changed / len(results):.1%} | {', '.join(f'{k} ({v})' for k, v in top)} |"


def lm_files(fix: Corrector) -> list[str] | None:
    """The corpus files the bundle's LM was built on, as its meta.json records them (None: not recorded)."""
    import json

    meta = Path(fix.bundle.path) / "lm" / "meta.json"
    return json.loads(meta.read_text(encoding="utf-8")).get("corpus_files") if meta.is_file() else None


if __name__ == "__main__":
    main()
