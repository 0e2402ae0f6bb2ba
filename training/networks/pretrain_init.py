"""Where a pretraining run starts other than from scratch: an A/B arm forked from another run's checkpoint
(``fork``, ``--fork-from``), or another run's pair, the same shape or a shallower one of its width stacked up
(``load_init_pair``, ``--init-from``), whose vocabulary must be the shards' (``check_same_vocab``)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from corrector.text.tokenize import read_vocab_list

from . import loop
from .modeling import tie_embeddings
from .stacking import load_stacked

if TYPE_CHECKING:
    from .pretrainer import ElectraPretrainer

FORK_FILE = "fork.json"  # in an arm's run folder: where it was forked from and what it changed


def fork(source: Path, out: Path) -> bool:
    """Start the A/B arm ``out`` from ``source`` (a snapshot folder, or a run folder, holding ckpt.pt): copy
    the checkpoint in and record where it came from. True when this call made the fork; False when ``out``
    is that same arm already (the same command re-run resumes it). Any other checkpoint in ``out`` is refused."""
    src = source / "ckpt.pt"
    if not src.is_file():
        raise SystemExit(f"--fork-from {source}: no ckpt.pt there (a snapshot folder or a run folder)")
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        raise SystemExit("--fork-from starts an arm in one process: run it once without torchrun "
                         "(--stop-after 1, say), then continue the arm under torchrun without --fork-from")
    here = source.resolve()
    name = f"{here.parent.parent.name}/{here.name}" if here.parent.name == "snapshots" else here.name  # no paths
    record = out / FORK_FILE
    if (out / "ckpt.pt").exists():
        if record.exists() and json.loads(record.read_text(encoding="utf-8"))["from"] == name:
            return False
        raise SystemExit(f"--fork-from {source}: {out} already holds another run's checkpoint; give a new --out")
    out.mkdir(parents=True, exist_ok=True)
    saved = loop.load_checkpoint(src)
    shutil.copyfile(src, out / "ckpt.pt")
    record.write_text(json.dumps({"from": name, "step": saved["step"], "tokens_seen": saved["tokens_seen"]},
                                 indent=1), encoding="utf-8")
    return True


def check_same_vocab(pair_vocab: Path, data_vocab: Path) -> None:
    """SystemExit unless the pair's vocab.txt and the shards' are the same list (the same token at every id)."""
    try:
        a, b = read_vocab_list(pair_vocab), read_vocab_list(data_vocab)
    except OSError as e:
        raise SystemExit(f"cannot compare vocabularies: {e}") from None
    if a != b:
        moved = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
        where = f"id {moved[0]} is {a[moved[0]]!r} to the pair and {b[moved[0]]!r} to the shards" if moved else \
            f"{len(a)} against {len(b)} entries"
        raise SystemExit(f"--init-from: {pair_vocab} and {data_vocab} differ ({len(moved)} ids; {where}): prepare the "
                         f"shards with `python -m training.data.prepare ... --vocab {pair_vocab}`")


def load_init_pair(model: ElectraPretrainer, init: Path, stack: bool = False, vocab: Path | None = None) -> dict:
    """Start from another run's pair (its discriminator/ and generator/ folders): continued pretraining with a
    schedule, batch and rate of its own (a GPU going on from a CPU run, say); with ``stack``, a deeper shape of the
    same width starts from it by progressive stacking (``training.networks.stacking``). ``vocab``: the shards'
    vocab.txt, which must be the pair's (a token id means one token to both). A pair whose generator is not of
    this shape's width (a fine-tuned pair, its corrector a head on the discriminator's body) gives the
    discriminator only, under a new generator. Returns what the provenance records
    of it: its name, tokens seen and ledger, so that ``tokens_seen`` counts from there, and where it came from in
    turn (its own ``init_from``), so that a state advanced run after run keeps every run's ledger."""
    from transformers import ElectraForMaskedLM, ElectraForPreTraining

    if vocab is not None:
        check_same_vocab(init / "discriminator" / "vocab.txt", vocab)
    stacked: dict[str, str] = {}
    new_generator = ""
    try:
        disc = ElectraForPreTraining.from_pretrained(init / "discriminator", dtype=torch.float32)
        gen = ElectraForMaskedLM.from_pretrained(init / "generator", dtype=torch.float32)
        if not stack:
            model.disc.load_state_dict(disc.state_dict())
            if gen.config.hidden_size == model.gen.config.hidden_size:
                model.gen.load_state_dict(gen.state_dict())
            else:  # a fine-tuned pair (its corrector a head on the discriminator's body): a new generator
                new_generator = (f"new: the pair's is {gen.config.hidden_size} wide, this shape's "
                                 f"{model.gen.config.hidden_size}")
        else:
            stacked["discriminator"] = load_stacked(model.disc, disc)
            if gen.config.hidden_size == model.gen.config.hidden_size:
                stacked["generator"] = load_stacked(model.gen, gen)
            else:
                stacked["generator"] = (f"new: the pair's is {gen.config.hidden_size} wide, this shape's "
                                        f"{model.gen.config.hidden_size}")
    except (OSError, RuntimeError, ValueError) as e:
        raise SystemExit(f"--init-from {init}: not a pair of this --config's shape"
                         + (" or a shallower one of its width" if stack else "") + f" ({str(e).splitlines()[0]})") from e
    tie_embeddings(model.gen, model.disc)
    prev = loop.read_provenance(init).get("pretraining", {})
    return {"name": init.resolve().name, "tokens_seen": int(prev.get("tokens_seen", 0)),
            **({"stacked": stacked} if stack else {}), **({"generator": new_generator} if new_generator else {}),
            **({"ledger": prev["ledger"]} if "ledger" in prev else {}),
            **({"hardware": prev["hardware"]} if "hardware" in prev else {}),
            **({"init_from": prev["init_from"]} if "init_from" in prev else {})}
