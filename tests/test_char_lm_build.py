"""The LM builder in bounded memory (spilled runs merged a key range at a time) and the compact node format: the same
tables as the in-memory estimate, the same scores as the hashed format, the same bytes from the Ray engine."""

from __future__ import annotations

import gzip
import lzma
import random
from pathlib import Path

import numpy as np
import pytest

from corrector.evidence.char_lm import CharLM
from corrector.evidence.char_lm_estimate import estimate_kn, estimate_sb, keep_masks
from corrector.evidence.char_lm_nodes import NodeCharLM, mix, unmix
from training.data.text_files import corpus_files, file_lines
from training.evidence import char_lm as build_lm
from training.evidence.char_lm_external import (
    all_runs,
    count_external,
    estimate_kn_from,
    estimate_sb_from,
    statistics,
    vocab_counts_of,
)

CHARS = "的一是了我不人在他有这个上们来到时大地为子中你说生国年着就那和要她出也得里后自以会"


def write_corpus(d: Path, n: int = 1200) -> list[str]:
    """Lines over a small alphabet (so that 4- and 5-grams repeat) in a .txt, a .txt.gz and a .txt.xz file."""
    rng = random.Random(0)
    lines = ["".join(rng.choice(CHARS[: rng.randint(5, len(CHARS))]) for _ in range(rng.randint(3, 30)))
             for _ in range(n)]
    d.mkdir(parents=True, exist_ok=True)
    third = n // 3
    (d / "a.txt").write_text("\n".join(lines[:third]) + "\n", encoding="utf-8")
    with gzip.open(d / "b.txt.gz", "wt", encoding="utf-8") as f:
        f.write("\n\n".join(lines[third: 2 * third]) + "\n")  # empty lines are not lines
    with lzma.open(d / "c.txt.xz", "wt", encoding="utf-8") as f:
        f.write("\n".join(lines[2 * third:]) + "\n")
    return lines


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    d = tmp_path_factory.mktemp("corpus")
    return d, write_corpus(d)


def test_every_reader_takes_txt_gz_and_xz(corpus: tuple[Path, list[str]]) -> None:
    d, lines = corpus
    files = corpus_files(d)
    assert [f.name for f in files] == ["a.txt", "b.txt.gz", "c.txt.xz"]
    assert [x for f in files for x in file_lines(f)] == lines
    _, held, names = build_lm.read_corpus(d, 0)
    assert names == ["a.txt", "b.txt.gz", "c.txt.xz"] and held == []


@pytest.mark.parametrize("smoothing", ["kn", "sb"])
@pytest.mark.parametrize("prune", [(0, 0, 0, 0, 0), (0, 0, 2, 3, 3)])
def test_bounded_build_gives_the_in_memory_tables(corpus: tuple[Path, list[str]], smoothing: str,
                                                   prune: tuple[int, ...]) -> None:
    """Chunks of 2,000 characters and key ranges of 1,500 run entries (many runs, many ranges): every key, value,
    discount, character count and held-out line as counting everything at once gives."""
    d, lines = corpus
    extra = lines[:30]
    mem = build_lm.count(d, 5, 200, 50, extra, 3)
    tm = (estimate_kn if smoothing == "kn" else estimate_sb)(mem.ngrams, keep_masks(mem.ngrams, list(prune), mem.base),
                                                             mem.base)
    ext = count_external(d, 5, 200, 50, extra, 3, chunk_chars=2000)
    try:
        assert len(ext.runs.files[5]) > 10
        stats = statistics(all_runs(ext), 5, ext.base, list(prune), part_entries=1500)
        te = (estimate_kn_from if smoothing == "kn" else estimate_sb_from)(stats, ext.base)
    finally:
        ext.close()
    assert not ext.work.exists()
    for k in range(5):
        assert np.array_equal(tm.keys[k], te.keys[k])
        assert np.allclose(tm.logp[k], te.logp[k], atol=1e-12, rtol=0)
        assert np.allclose(tm.logbow[k], te.logbow[k], atol=1e-12, rtol=0)
    assert tm.discounts == te.discounts
    assert np.array_equal(mem.vocab_counts, vocab_counts_of(stats, ext))
    assert (mem.n_tokens, mem.held, mem.files) == (ext.n_tokens, ext.held, ext.files)


def test_falling_prune_thresholds_are_refused(corpus: tuple[Path, list[str]]) -> None:
    ext = count_external(corpus[0], 4, 200, 0, chunk_chars=100_000)
    try:
        with pytest.raises(SystemExit, match="must not fall"):
            statistics(all_runs(ext), 4, ext.base, [0, 0, 5, 2])
    finally:
        ext.close()


def test_node_format_scores_as_the_hashed_format_in_half_the_bytes(corpus: tuple[Path, list[str]],
                                                                   tmp_path: Path) -> None:
    d, lines = corpus
    hashed = build_lm.Variant(tmp_path / "hashed", 5, "kn", [0, 0, 2, 2, 2], 8, "hashed")
    nodes = build_lm.Variant(tmp_path / "nodes", 5, "kn", [0, 0, 2, 2, 2], 8, "nodes")
    build_lm.build(d, [hashed, nodes], vocab_size=200, holdout_every=50)
    h, n = CharLM.load(hashed.out), CharLM.load(nodes.out)
    assert isinstance(n, NodeCharLM) and not isinstance(h, NodeCharLM)
    assert n.size_bytes() < 0.6 * h.size_bytes()
    win = np.concatenate([h.windows(h.encode_sentence(s)) for s in lines[:300]])
    other = win.copy()
    other[:, -1] = np.random.default_rng(0).integers(3, h.vocab_size, size=len(win))  # mostly unseen n-grams
    short = win.copy()
    short[:, :2] = -1  # a PAD context
    for w in (win, other, short):
        assert np.array_equal(h.logprob(w), n.logprob(w))
    stored_h, stored_n = h.stored_ngrams(), n.stored_ngrams()
    for k in range(1, 6):
        rows_h = {tuple(r): (p, b) for r, p, b in zip(stored_h[k][0].tolist(), *[x.tolist() for x in stored_h[k][1:]])}
        rows_n = {tuple(r): (p, b) for r, p, b in zip(stored_n[k][0].tolist(), *[x.tolist() for x in stored_n[k][1:]])}
        assert rows_h == rows_n
        some = next(iter(rows_n))
        assert n.entry(list(some)) == h.entry(list(some)) == pytest.approx(rows_n[some])
    assert n.entry([3, 3, 3, 3, 3]) == h.entry([3, 3, 3, 3, 3])


def test_a_hashed_lm_reformatted_into_nodes_scores_exactly_as_before(corpus: tuple[Path, list[str]],
                                                                       tmp_path: Path) -> None:
    """--reformat: every stored value keeps its code in the source's codebooks, so each window scores the same to
    the bit (the shipped bundle's LM changed format this way without one answer changing); the meta keeps the
    source's build record."""
    d, lines = corpus
    hashed = build_lm.Variant(tmp_path / "hashed", 4, "kn", [0, 0, 2, 2], 8, "hashed")
    build_lm.build(d, [hashed], vocab_size=200, holdout_every=50)
    assert build_lm.main(["--reformat", str(hashed.out), "--out", str(tmp_path / "nodes")]) == 0
    h, n = CharLM.load(hashed.out), CharLM.load(tmp_path / "nodes")
    assert isinstance(n, NodeCharLM) and n.size_bytes() < 0.6 * h.size_bytes()
    win = np.concatenate([h.windows(h.encode_sentence(s)) for s in lines[:300]])
    other = win.copy()
    other[:, 1:] = np.random.default_rng(1).integers(0, h.vocab_size, size=(len(win), 3))
    for w in (win, other):
        assert np.array_equal(h.logprob(w), n.logprob(w))
    assert n.meta["heldout_perplexity"] == h.meta["heldout_perplexity"] and n.meta["reformatted_from"] == h.meta["format"]
    assert (tmp_path / "nodes" / "vocab.txt").read_text(encoding="utf-8") == (hashed.out / "vocab.txt").read_text(
        encoding="utf-8")
    floats = build_lm.Variant(tmp_path / "floats", 4, "kn", [0, 0, 2, 2], 0, "hashed")
    build_lm.build(d, [floats], vocab_size=200, holdout_every=50)
    with pytest.raises(SystemExit, match="quantised"):
        build_lm.main(["--reformat", str(floats.out), "--out", str(tmp_path / "bad")])


def test_node_hash_is_a_bijection_of_its_bits() -> None:
    for bits in (5, 26, 37):
        x = np.random.default_rng(bits).integers(0, 1 << bits, size=5000, dtype=np.uint64)
        h = mix(x, bits)
        assert int(h.max()) < 1 << bits
        assert np.array_equal(unmix(h, bits), x)
    small = mix(np.arange(1 << 10, dtype=np.uint64), 10)
    assert np.unique(small).size == 1 << 10


def build_files(corpus: Path, out: Path, engine: str) -> dict[str, bytes]:
    variant = build_lm.Variant(out, 4, "kn", [0, 0, 2, 2], 8, "nodes")
    build_lm.build(corpus, [variant], vocab_size=200, holdout_every=50, engine=engine, chunk_chars=3000)
    return {f.name: f.read_bytes() for f in sorted(out.iterdir()) if f.name != "meta.json"}


@pytest.mark.slow
def test_ray_engine_writes_the_same_files(corpus: tuple[Path, list[str]], tmp_path: Path) -> None:
    pytest.importorskip("ray")
    import json

    local = build_files(corpus[0], tmp_path / "local", "local")
    on_ray = build_files(corpus[0], tmp_path / "ray", "ray")
    assert local == on_ray and "words4.npy" in local
    timing = {"build_seconds", "peak_rss_mb"}
    metas = [json.loads((tmp_path / d / "meta.json").read_text(encoding="utf-8")) for d in ("local", "ray")]
    assert [{k: v for k, v in m.items() if k not in timing} for m in metas][0] == \
        [{k: v for k, v in m.items() if k not in timing} for m in metas][1]
