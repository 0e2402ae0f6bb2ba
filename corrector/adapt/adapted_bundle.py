"""Adapt a bundle to a domain from its plain text, no labels: ``python -m corrector adapt``.

    python -m corrector adapt --text docs/ notes/*.md --out runs/my-bundle [--model BASE]

1. The text: files, directories or globs, as ``corrector batch`` reads them (text and Markdown a line a text,
   JSONL and Parquet by ``--text-field``), and ``.txt.gz`` / ``.txt.xz`` files.
2. The LM: a Kneser-Ney model of the text in the base LM's vocabulary and order, interpolated with the base
   bundle's LM into one table of the same format (``corrector.adapt.interpolate``). Its weight is the one that
   gives held-out lines of the text the lowest perplexity.
3. The domain's words: the text's frequent words that jieba's dictionary lacks (``corrector.adapt.domain_words``),
   kept as written (``protect_domain_words``).
4. The threshold follows the LM: the adapted LM makes the decoder surer of the text as written, so at the base
   threshold it changes less of it. The held-out lines are decoded by the base bundle and by the bundle adapted
   without them; the threshold is the lowest at which it changes fewer of those lines than the base bundle does at
   its own (one fewer, or none when the base changes none). The networks and the ranker's weights stay as they are.

The new bundle loads wherever a bundle does (``--model``, ``CSC_MODEL_DIR``, the service, ``batch``); its manifest
records the text's size and hash, the weight, the words and the threshold (``adapted``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

MAX_HELD_OUT = 2000  # held-out lines at most (every k-th line; at least every second)
THRESHOLD_STEP = 0.01
THRESHOLD_SPAN = 0.25  # thresholds tried either side of the base bundle's


def read_texts(specs: Sequence[str], text_field: str = "text", max_lines: int | None = None,
               max_chars: int | None = None) -> tuple[list[str], list[str]]:
    """The non-empty lines (texts) of every input, in order, and the names of the files read; at most ``max_lines``
    lines and ``max_chars`` characters (the first ones: a line that would pass the cap is not taken)."""
    from corrector.batch.inputs import ReadOptions, find_inputs, plan_shards, read_shard
    from corrector.text.files import open_text

    opts = ReadOptions(text_field=text_field, max_chars=10**9)
    lines: list[str] = []
    names: list[str] = []
    room = [max_lines if max_lines is not None else math.inf, max_chars if max_chars is not None else math.inf]

    def take(texts: Iterable[str]) -> bool:
        """Add ``texts`` until a cap is reached; False once it is."""
        for x in texts:
            x = x.strip()
            if not x:
                continue
            if room[0] < 1 or room[1] < len(x):
                return False
            lines.append(x)
            room[0] -= 1
            room[1] -= len(x)
        return True

    for spec in specs:
        for f in find_inputs(spec):
            names.append(f.name)
            if f.path.endswith((".gz", ".xz")):
                with open_text(Path(f.path), errors="replace") as fh:
                    if not take(fh):
                        return lines, names
                continue
            for shard in plan_shards([f], 1 << 30, opts):
                if not take(r["text"] for r in read_shard(shard, opts) if not r["error"]):
                    return lines, names
    return lines, names


def text_hash(lines: Sequence[str]) -> str:
    h = hashlib.sha256()
    for x in lines:
        h.update(x.encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()


def changed_lines(fixer, lines: Sequence[str], thresholds: Sequence[float | None]) -> list[int]:
    """How many of ``lines`` the Corrector changes at each threshold (None: its own), scored once."""
    from corrector.config import in_force
    from corrector.stages import assemble

    prepared = fixer.prepare(list(lines))
    scored = [s.without_logits() for s in fixer.score(prepared)]
    out = []
    for th in thresholds:
        cfg = in_force(loaded=prepared.settings, call={"threshold": th}) if th is not None else prepared.settings
        fixed = assemble(prepared, [fixer.decide(s, cfg) for s in scored])
        out.append(sum(c.target != s for c, s in zip(fixed, lines)))
    return out


def choose_threshold(base_changed: int, changed: Sequence[int], thresholds: Sequence[float]) -> float:
    """The lowest threshold at which fewer of the held-out lines change than the base bundle changes (one fewer:
    the lowest of many thresholds that pass a noisy count is itself optimistic), or as many when it changes none;
    the highest tried when none passes."""
    allowed = max(0, base_changed - 1)
    for th, n in zip(thresholds, changed):
        if n <= allowed:
            return float(th)
    return float(thresholds[-1])


def adapt_bundle(base: Path, lines: Sequence[str], out: Path, *, prune: Sequence[int] | None = None,
                 min_count: int = 5, weight: float | None = None, files: Sequence[str] = (),
                 log=print) -> dict:
    """Write ``base`` adapted to ``lines`` into ``out``; the facts recorded in its manifest are returned."""
    from corrector import Corrector
    from corrector.adapt.domain_words import counted, kept_words
    from corrector.adapt.interpolate import adapt, split
    from corrector.bundle import DOMAIN_WORDS, LM_DIR, RANKER, Bundle
    from corrector.manifest import finish_bundle

    t0 = time.time()
    bundle = Bundle.load(base)
    if not bundle.file(LM_DIR).is_dir():
        raise SystemExit(f"{base} has no character LM to adapt (lm/)")
    order = int(json.loads((bundle.file(LM_DIR) / "meta.json").read_text(encoding="utf-8"))["order"])
    prune = list(prune) if prune is not None else [0] * order
    lines = [x for x in lines if x.strip()]
    if len(lines) < 2:
        raise SystemExit("adapt needs at least two lines of text")
    every = max(2, math.ceil(len(lines) / MAX_HELD_OUT))
    held = split(lines, every)[1]
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(base, tmp)
    try:
        with tempfile.TemporaryDirectory(prefix="csc-adapt-") as work:
            without = Path(work) / "without"
            shutil.rmtree(tmp / LM_DIR)
            lm_facts = adapt(lines, bundle.file(LM_DIR), tmp / LM_DIR, prune, every, weight, without, log=log)
            log(f"the text's words that jieba's dictionary lacks (at least {min_count} times)")
            # jieba reads the text once: the words of the lines counted for the threshold are all less the held-out
            all_words, all_chars = counted(lines, progress=sys.stderr.isatty())
            held_counts, held_chars = counted(held)
            words = kept_words(all_words, all_chars, min_count)
            counted_words = [w for w, _ in kept_words(all_words - held_counts, all_chars - held_chars, min_count)]
            log(f"  {len(words):,} words" + (f", e.g. {'、'.join(w for w, _ in words[:8])}" if words else ""))
            log(f"the threshold, on {len(held):,} held-out lines")
            fixer = Corrector.load(base)
            t_base = fixer.threshold()
            grid = [round(float(x), 2) for x in np.arange(max(THRESHOLD_STEP, t_base - THRESHOLD_SPAN),
                                                          min(0.99, t_base + THRESHOLD_SPAN) + 1e-9, THRESHOLD_STEP)]
            top = fixer.ranker.pick(True).calibration[1][-1]
            grid = [t for t in grid if t <= top]
            base_changed = changed_lines(fixer, held, [None])[0]
            adapted = fixer.with_lm(without).with_domain_words(counted_words)
            changed = changed_lines(adapted, held, grid)
            threshold = choose_threshold(base_changed, changed, grid)
            at_base = changed[int(np.argmin([abs(t - t_base) for t in grid]))] if grid else 0
            log(f"  {threshold:.2f} (the base bundle's {t_base:.4f} changes {base_changed} of them; the adapted "
                f"LM at that threshold {at_base})")
        (tmp / DOMAIN_WORDS).parent.mkdir(parents=True, exist_ok=True)
        (tmp / DOMAIN_WORDS).write_text("".join(f"{w}\n" for w, _ in words), encoding="utf-8")
        fixer.ranker.with_threshold(True, threshold).save(tmp / RANKER)
        manifest = bundle.manifest
        facts = {
            "base": {"name": manifest.name, "version": manifest.version},
            "text": {"files": [Path(f).name for f in files][:100], "lines": len(lines),
                     "chars": sum(len(x) for x in lines), "sha256": text_hash(lines)},
            "lm": lm_facts,
            "domain_words": {"count": len(words), "min_count": min_count},
            "threshold": {"base": round(t_base, 4), "adapted": threshold, "held_out_lines": len(held),
                          "changed_base": base_changed, "changed_adapted": changed[grid.index(threshold)]},
            "seconds": round(time.time() - t0, 1),
        }
        lm_meta = json.loads((tmp / LM_DIR / "meta.json").read_text(encoding="utf-8"))
        manifest.lm = {**manifest.lm, "ngrams": lm_meta["ngrams"], "size_bytes": lm_meta["size_bytes"],
                       "adapted": lm_facts}
        manifest.ranker = {**manifest.ranker, "threshold": threshold}
        manifest.provenance = {**manifest.provenance, "adapted": facts}
        manifest.name = out.name
        finish_bundle(tmp, out, manifest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return facts


def parse_prune(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated counts, e.g. 0,0,2,2; got {text!r}") from None


def parser(prog: str = "python -m corrector adapt") -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=prog, description="A bundle adapted to a domain from its plain text, no labels: "
                                 "a character LM of the text interpolated with the bundle's, the text's frequent new "
                                 "words kept as written, the threshold following the LM. The networks stay as they "
                                 "are.",
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="example:\n  python -m corrector adapt --text contracts/ --out runs/contracts\n"
                                        "  python -m corrector --model runs/contracts \"本合同自双方签字之日起生效\"")
    ap.add_argument("--text", nargs="+", required=True, metavar="PATH",
                    help="text files, directories or globs (txt, md, jsonl, parquet, txt.gz, txt.xz)")
    ap.add_argument("--out", required=True, type=Path, help="the adapted bundle's directory (replaced if it exists)")
    ap.add_argument("--model", type=Path, help="the bundle to adapt (default: the default bundle)")
    ap.add_argument("--text-field", default="text", help="the field of JSONL and Parquet rows to read")
    ap.add_argument("--prune", type=parse_prune, help="minimum count per order of the text's n-grams (default: "
                                                      "keep all)")
    ap.add_argument("--min-count", type=int, default=5, help="times a new word must occur to be kept as written")
    ap.add_argument("--weight", type=float, help="the text's model's weight (default: chosen on held-out lines)")
    ap.add_argument("--max-lines", type=int, metavar="N", help="read at most the first N lines of the text")
    ap.add_argument("--max-chars", type=int, metavar="N", help="read at most the first N characters of the text "
                    "(measured on 2 cores: about 2 minutes and 1.9 GB at 50,000 characters, 4.5 minutes and 2.6 GB at "
                    "5 million)")
    return ap


def main(argv: Sequence[str] | None = None, prog: str = "python -m corrector adapt") -> int:
    from corrector.model_path import default_model_path

    args = parser(prog).parse_args(argv)
    if args.weight is not None and not 0.0 <= args.weight <= 1.0:
        raise SystemExit("--weight must lie in [0, 1]")
    base = args.model if args.model is not None else default_model_path()
    if args.out.resolve() == Path(base).resolve():
        raise SystemExit("--out must differ from the bundle adapted")
    for name in ("max_lines", "max_chars"):
        if getattr(args, name) is not None and getattr(args, name) < 2:
            raise SystemExit(f"--{name.replace('_', '-')} must be at least 2")
    t0 = time.time()
    steps = _Steps()
    try:
        lines, files = read_texts(args.text, args.text_field, args.max_lines, args.max_chars)
        capped = " (capped by --max-lines / --max-chars)" if args.max_lines or args.max_chars else ""
        steps(f"read {len(lines):,} lines, {sum(len(x) for x in lines):,} characters from {len(files)} file(s){capped}")
        facts = adapt_bundle(Path(base), lines, args.out, prune=args.prune, min_count=args.min_count,
                             weight=args.weight, files=files, log=steps)
        lm = facts["lm"]
        steps(f"wrote {args.out} in {time.time() - t0:.0f}s: weight {lm['weight']:.3f}, held-out perplexity "
              f"{lm['heldout_perplexity_base']:.1f} -> {lm['heldout_perplexity_interpolated']:.1f}, "
              f"{facts['domain_words']['count']:,} domain words, threshold {facts['threshold']['adapted']:.2f}")
    finally:
        steps.close()
    return 0


HEARTBEAT_S = 30.0  # a step that runs longer says so on stderr this often


class _Steps:
    """One progress line per step on stderr (a bar while the steps run, when stderr is a terminal), and, when a step
    runs long, a line every ``HEARTBEAT_S`` naming it and its time so far."""

    def __init__(self, every: float = HEARTBEAT_S) -> None:
        import threading

        from tqdm import tqdm

        self.bar: Any = tqdm(total=7, desc="adapt", file=sys.stderr, leave=False, disable=not sys.stderr.isatty(),
                             bar_format="{desc} {bar} {n}/{total}")
        self.step, self.since, self.every = "reading the text", time.monotonic(), every
        self.done = threading.Event()
        self.beat = threading.Thread(target=self._beat, daemon=True)
        self.beat.start()

    def _write(self, msg: str) -> None:
        if self.bar.disable:
            sys.stderr.write(msg + "\n")
            sys.stderr.flush()
        else:
            self.bar.write(msg, file=sys.stderr)

    def _beat(self) -> None:
        while not self.done.wait(self.every):
            self._write(f"  ... {self.step}: {time.monotonic() - self.since:.0f} s so far")

    def __call__(self, msg: str) -> None:
        self._write(msg)
        if not self.bar.disable:
            self.bar.update(1)
        self.step, self.since = msg.strip().split(" (")[0][:80], time.monotonic()

    def close(self) -> None:
        self.done.set()
        self.bar.close()
