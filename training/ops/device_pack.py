"""Pack a run for a GPU machine without network access, and unpack what it sends back, within sizes the caller gives.

The inputs are copied to such a machine in parts of bounded size (``--max-mib`` bounds a part), and the results come
back as a few files of bounded size (``RETURN_FILE_LIMIT``). So the corpus shards travel lzma-compressed (the sentence starts are rebuilt
from the [SEP] after every sentence), and a pair of networks travels as two fp16 safetensors files plus one small
tar of its configs, vocab and provenance (3 files; the discriminator of the ``cpu-g4`` shape is 15 MB in fp16).

    python -m training.ops.device_pack data runs/data .inputs/data1 --max-mib 38      # here: a first part ...
    python -m training.ops.device_pack data runs/data .inputs/data2 --start N         # ... the rest (N: its packed_to)
    python -m training.ops.device_pack pair runs/campaign .inputs/init                # the pair to continue from
    python -m training.ops.device_pack files .inputs/csc runs/csc/train4.tsv runs/csc/dev4.tsv
    python -m training.ops.device_pack unpack-data .inputs/data1 runs/gpu/data        # there (training/ops/device_run.sh)
    python -m training.ops.device_pack unpack-pair RETURNED/pre runs/gpu_pre          # here, with what came back

lzma is in Python's standard library on both machines; nothing here needs torch.
"""

from __future__ import annotations

import argparse
import json
import lzma
import shutil
import tarfile
from pathlib import Path

import numpy as np

from corrector.text.tokenize import SPECIAL_IDS
from training.networks.pretraining_state import NETS, SMALL_FILES, save_fp16

MIB = 1 << 20
RETURN_FILE_LIMIT = 16 * MIB  # the largest file copied back


def sentence_starts(tokens: np.ndarray) -> np.ndarray:
    """Where each sentence begins in a shard: at 0 and after every [SEP] but the last (``training.data.prepare``
    writes every sentence followed by one [SEP])."""
    ends = np.flatnonzero(tokens == SPECIAL_IDS["[SEP]"]) + 1
    return np.concatenate([[0], ends[:-1]]).astype(np.int64) if len(ends) else np.zeros(0, np.int64)


def pack_data(src: Path, dst: Path, max_bytes: int, start: int = 0, preset: int = 6,
              chunk_sentences: int = 50_000, standalone: bool = False) -> dict:
    """Compress ``src``'s shards into ``dst`` (train.bin.xz, val.bin.xz, vocab.txt, meta.json) in at most about
    ``max_bytes``, from token ``start`` (a sentence start) on: when the rest of the training shard does not fit,
    whole sentences up to the budget go, and the next part starts where this one ends (its meta.json says where:
    ``packed_from``, ``packed_to``). ``training.data.prepare`` shuffles the sentences, so any part is a uniform sample.
    A ``standalone`` part is a shard folder of its own (its tokens counted from 0; ``source_tokens`` says which
    of ``src``'s it holds): a run that starts from the weights of an earlier one can bring fresh text without the
    parts before it."""
    tokens = np.memmap(src / "train.bin", dtype=np.uint16, mode="r")
    starts = np.load(src / "train_starts.npy")
    if not np.array_equal(sentence_starts(np.asarray(tokens)), starts):
        raise SystemExit(f"{src}: train_starts.npy is not what the [SEP] tokens give; re-run training.data.prepare")
    if start not in set(starts.tolist()) | {len(tokens)}:
        raise SystemExit(f"--start {start}: not a sentence start of {src}/train.bin")
    if start >= len(tokens):
        raise SystemExit(f"--start {start}: nothing left to pack ({len(tokens)} tokens)")
    dst.mkdir(parents=True, exist_ok=True)
    val = np.fromfile(src / "val.bin", dtype=np.uint16)
    (dst / "val.bin.xz").write_bytes(lzma.compress(val.tobytes(), preset=preset))
    shutil.copyfile(src / "vocab.txt", dst / "vocab.txt")
    budget = max_bytes - sum(f.stat().st_size for f in dst.iterdir()) - 64 * 1024  # meta.json and slack
    comp = lzma.LZMACompressor(preset=preset)
    first = int(np.searchsorted(starts, start))
    bounds = [*starts[first::chunk_sentences].tolist()[1:], len(tokens)]
    written, end = 0, start
    with (dst / "train.bin.xz").open("wb") as f:
        for b in bounds:
            piece = comp.compress(np.asarray(tokens[end:b]).tobytes())
            f.write(piece)
            written += len(piece)
            end = b
            # lzma holds back output; count the next two chunks at this part's ratio before going on
            if written + 2 * written / (end - start) * chunk_sentences * 40 > budget:
                break
        f.write(comp.flush())
    meta = json.loads((src / "meta.json").read_text(encoding="utf-8"))
    meta.update(packed_from=start, packed_to=int(end), train_tokens_all=int(len(tokens)))
    if standalone:
        meta.update(packed_from=0, packed_to=int(end) - start, train_tokens_all=int(end) - start,
                    source_tokens=[start, int(end)])
    (dst / "meta.json").write_text(json.dumps(meta, ensure_ascii=False, indent=2), encoding="utf-8")
    total = sum(f.stat().st_size for f in dst.iterdir())
    return {"from": start, "to": int(end), "share": round((end - start) / len(tokens), 4), "mib": round(total / MIB, 1)}


def unpack_data(src: Path, dst: Path) -> dict:
    """Rebuild a ``training.data.prepare`` folder from ``pack_data``'s parts, one call per part in order: a part
    appends its tokens when the folder ends where it starts, and is skipped when the folder already holds it."""
    part = json.loads((src / "meta.json").read_text(encoding="utf-8"))
    lo, hi = part["packed_from"], part["packed_to"]
    dst.mkdir(parents=True, exist_ok=True)
    have = (dst / "train.bin").stat().st_size // 2 if (dst / "train.bin").exists() else 0
    if have >= hi:
        return {"skipped": str(src), "train_tokens": have}
    if have != lo:
        raise SystemExit(f"{src} holds tokens {lo}..{hi} but {dst} ends at {have}: unpack the parts in order")
    tokens = np.frombuffer(lzma.decompress((src / "train.bin.xz").read_bytes()), dtype=np.uint16)
    if len(tokens) != hi - lo:
        raise SystemExit(f"{src}: {len(tokens)} training tokens, meta.json says {hi - lo}")
    with (dst / "train.bin").open("ab") as f:
        f.write(tokens.tobytes())
    before = np.load(dst / "train_starts.npy") if lo else np.zeros(0, np.int64)
    np.save(dst / "train_starts.npy", np.concatenate([before, sentence_starts(tokens) + lo]))
    val = np.frombuffer(lzma.decompress((src / "val.bin.xz").read_bytes()), dtype=np.uint16)
    val.tofile(dst / "val.bin")
    np.save(dst / "val_starts.npy", sentence_starts(val))
    shutil.copyfile(src / "vocab.txt", dst / "vocab.txt")
    meta = {**part, "train_tokens": int(hi)}
    (dst / "meta.json").write_text(json.dumps(meta, ensure_ascii=False, indent=2), encoding="utf-8")
    return {"train_tokens": meta["train_tokens"], "of": part["train_tokens_all"]}


def pack_pair(run: Path, dst: Path) -> list[Path]:
    """A pair folder (discriminator/ and generator/ Hugging Face dirs, provenance.json) as three files:
    ``discriminator.safetensors`` and ``generator.safetensors`` in fp16, and ``pair.tar`` with the rest."""
    dst.mkdir(parents=True, exist_ok=True)
    out = []
    for net in NETS:
        path = dst / f"{net}.safetensors"
        save_fp16(run / net / "model.safetensors", path)
        if path.stat().st_size > RETURN_FILE_LIMIT:
            raise SystemExit(f"{path}: {path.stat().st_size / MIB:.1f} MiB, over the 16 MiB a returned file may hold")
        out.append(path)
    with tarfile.open(dst / "pair.tar", "w") as tar:
        for net in NETS:
            for name in SMALL_FILES:
                tar.add(run / net / name, arcname=f"{net}/{name}")
        if (run / "provenance.json").exists():
            tar.add(run / "provenance.json", arcname="provenance.json")
    return [*out, dst / "pair.tar"]


def unpack_pair(src: Path, run: Path) -> Path:
    """``pack_pair``'s three files back into a pair folder, the weights in fp32 again."""
    from safetensors.numpy import load_file, save_file

    run.mkdir(parents=True, exist_ok=True)
    with tarfile.open(src / "pair.tar") as tar:
        tar.extractall(run, filter="data")
    for net in NETS:
        weights = load_file(str(src / f"{net}.safetensors"))
        full = {k: (v.astype(np.float32) if v.dtype == np.float16 else v) for k, v in weights.items()}
        save_file(full, str(run / net / "model.safetensors"), metadata={"format": "pt"})
    return run


def pack_files(dst: Path, files: list[Path]) -> list[Path]:
    """Each file lzma-compressed into ``dst`` as NAME.xz."""
    dst.mkdir(parents=True, exist_ok=True)
    out = []
    for f in files:
        path = dst / f"{f.name}.xz"
        with f.open("rb") as fin, lzma.open(path, "wb", preset=6) as fout:
            shutil.copyfileobj(fin, fout, 4 * MIB)
        out.append(path)
    return out


def unpack_files(src: Path, dst: Path) -> list[Path]:
    """Every NAME.xz in ``src`` decompressed into ``dst``/NAME."""
    dst.mkdir(parents=True, exist_ok=True)
    out = []
    for path in sorted(src.glob("*.xz")):
        target = dst / path.name[: -len(".xz")]
        with lzma.open(path, "rb") as fin, target.open("wb") as fout:
            shutil.copyfileobj(fin, fout, 4 * MIB)
        out.append(target)
    return out


def pack_logs(dst: Path, runs: list[Path], names: tuple[str, ...] = (
        "metrics.jsonl", "ledger.json", "config.json", "provenance.json", "pretrain.png", "finetune.png")) -> Path:
    """The run folders' logs and plots as one ``logs.tar.gz`` (few files come back)."""
    dst.mkdir(parents=True, exist_ok=True)
    path = dst / "logs.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for run in runs:
            for name in names:
                if (run / name).exists():
                    tar.add(run / name, arcname=f"{run.name}/{name}")
    return path


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("data", help="compress a training.data.prepare folder (a prefix of it if over --max-mib)")
    p.add_argument("src", type=Path)
    p.add_argument("dst", type=Path)
    p.add_argument("--max-mib", type=float, default=56.0,
                   help="size limit of the packed folder (leave room for the repository copied with it)")
    p.add_argument("--start", type=int, default=0, help="first token (the previous part's packed_to)")
    p.add_argument("--standalone", action="store_true",
                   help="a shard folder of its own (tokens from --start on, counted from 0), not a continuation")
    p = sub.add_parser("unpack-data")
    p.add_argument("src", type=Path)
    p.add_argument("dst", type=Path)
    p = sub.add_parser("pair", help="a pair folder as 2 fp16 safetensors files + pair.tar")
    p.add_argument("run", type=Path)
    p.add_argument("dst", type=Path)
    p = sub.add_parser("unpack-pair")
    p.add_argument("src", type=Path)
    p.add_argument("run", type=Path)
    p = sub.add_parser("files", help="lzma-compress files into a folder")
    p.add_argument("dst", type=Path)
    p.add_argument("files", type=Path, nargs="+")
    p = sub.add_parser("unpack-files")
    p.add_argument("src", type=Path)
    p.add_argument("dst", type=Path)
    p = sub.add_parser("logs", help="the logs of run folders as one logs.tar.gz")
    p.add_argument("dst", type=Path)
    p.add_argument("runs", type=Path, nargs="+")
    a = ap.parse_args(argv)
    if a.cmd == "data":
        print(json.dumps(pack_data(a.src, a.dst, int(a.max_mib * MIB), a.start, standalone=a.standalone)))
    elif a.cmd == "unpack-data":
        print(json.dumps(unpack_data(a.src, a.dst)))
    elif a.cmd == "pair":
        print("\n".join(str(p) for p in pack_pair(a.run, a.dst)))
    elif a.cmd == "unpack-pair":
        print(unpack_pair(a.src, a.run))
    elif a.cmd == "files":
        print("\n".join(str(p) for p in pack_files(a.dst, a.files)))
    elif a.cmd == "unpack-files":
        print("\n".join(str(p) for p in unpack_files(a.src, a.dst)))
    else:
        print(pack_logs(a.dst, a.runs))


if __name__ == "__main__":
    main()
