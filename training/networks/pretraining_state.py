"""The pretraining state the repository keeps: the discriminator and its pretraining generator, in fp16.

    python -m training.networks.pretraining_state save runs/pretrain        # replaces data/pretraining
    python -m training.networks.pretrain --data runs/data --out runs/more --config cpu-g4 --init-from data/pretraining

Pretraining runs on one machine and continues on another; run folders do not outlive their machine. So the pair a
pretraining run has reached is kept in git at one path (``STATE``), replaced whenever a run advances it, with its
provenance (tokens, steps, the ledger of hours by hardware, the corpus) beside it. Any run, on a CPU or a GPU
machine, starts from it with ``--init-from``: the fp16 weights load back as fp32. ``save`` refuses a state over
``MAX_BYTES`` (the generator's copy of the tied embeddings included) and a folder that is not a pretraining run.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import numpy as np

NETS = ("discriminator", "generator")
SMALL_FILES = ("config.json", "vocab.txt")
STATE = Path(__file__).resolve().parents[2] / "data" / "pretraining"
MAX_BYTES = 25 * 1000 * 1000


def save_fp16(src: Path, dst: Path) -> None:
    """A safetensors file's float tensors written again in fp16 (the rest as they are)."""
    from safetensors.numpy import load_file, save_file

    weights = load_file(str(src))
    half = {k: (v.astype(np.float16) if v.dtype in (np.float32, np.float64) else v) for k, v in weights.items()}
    save_file(half, str(dst), metadata={"format": "pt"})


def state_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def save(run: Path, out: Path = STATE, max_bytes: int = MAX_BYTES) -> dict:
    """``run``'s pair (a pretraining run folder, or a snapshot of one) into ``out`` in fp16, with its provenance;
    ``out`` is replaced only once the new state is complete and within ``max_bytes``. Returns the provenance."""
    prov_file = run / "provenance.json"
    prov = json.loads(prov_file.read_text(encoding="utf-8")) if prov_file.exists() else {}
    if "pretraining" not in prov or "finetune" in prov:
        raise SystemExit(f"{run}: not a pretraining run (its provenance.json has no 'pretraining', or it was fine-tuned)")
    tmp = out.with_name(out.name + ".new")
    shutil.rmtree(tmp, ignore_errors=True)
    for net in NETS:
        (tmp / net).mkdir(parents=True)
        save_fp16(run / net / "model.safetensors", tmp / net / "model.safetensors")
        for name in SMALL_FILES:
            shutil.copyfile(run / net / name, tmp / net / name)
    p = prov["pretraining"]
    prov["state"] = {"from": run.resolve().name, "dtype": "float16", "tokens_seen": p.get("tokens_seen"),
                     "step": p.get("step"), "finished": p.get("finished")}
    (tmp / "provenance.json").write_text(json.dumps(prov, indent=2, ensure_ascii=False), encoding="utf-8")
    size = state_bytes(tmp)
    if size > max_bytes:
        shutil.rmtree(tmp)
        raise SystemExit(f"the state would be {size / 1e6:.1f} MB, over {max_bytes / 1e6:.0f} MB")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return prov


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    s = sub.add_parser("save", help="replace the state with a pretraining run's pair (fp16)")
    s.add_argument("run", type=Path)
    s.add_argument("--out", type=Path, default=STATE)
    args = ap.parse_args(argv)
    prov = save(args.run, args.out)
    p = prov["pretraining"]
    print(f"{args.out}: {state_bytes(args.out) / 1e6:.1f} MB, {p.get('tokens_seen', 0) / 1e6:.1f}M tokens, "
          f"step {p.get('step')}")


if __name__ == "__main__":
    main()
