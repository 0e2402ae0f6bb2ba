"""How well a pair's generator head puts the right character at real errors, with nothing masked (as the
Corrector runs it): top-1 and top-5 accuracy and the mean log-probability of the right character at every error
position of a ``source<TAB>target`` file, and how often a correct character is its own top-1.

    python benchmarks/generator_on_errors.py runs/trial_gb/own runs/trial_gb/disc --data runs/csc/dev4.tsv

Each PAIR is a folder with generator/ (a Hugging Face ElectraForMaskedLM with its vocab.txt). Needs the 'train'
extra. One thread, so that it can run beside a training job.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import _checkout  # noqa: F401  (training/ and service/ are imported from the checkout)
import numpy as np
import torch
from transformers import ElectraForMaskedLM

from training.data.csc_data import collate, encode_pairs, read_pairs
from training.networks.modeling import generator_head


@torch.no_grad()
def score(pair: Path, data: Path, limit: int, batch: int = 64) -> dict[str, float]:
    gen = ElectraForMaskedLM.from_pretrained(pair / "generator", dtype=torch.float32).eval()
    pairs = encode_pairs(read_pairs(data, limit), pair / "generator" / "vocab.txt", gen.config.max_position_embeddings)
    top1 = top5 = errors = kept = correct = 0
    logp = 0.0
    for s in range(0, len(pairs), batch):
        src, tgt, editable = (torch.as_tensor(a) for a in collate(pairs, np.arange(s, min(s + batch, len(pairs)))))
        h = gen.electra(input_ids=src, attention_mask=(src != 0).long()).last_hidden_state
        wrong = (src != tgt) & editable
        lp = torch.log_softmax(generator_head(gen, h[wrong]).float(), -1)
        gold = tgt[wrong]
        top1 += int((lp.argmax(-1) == gold).sum())
        top5 += int((lp.topk(5, -1).indices == gold[:, None]).any(-1).sum())
        logp += float(lp.gather(1, gold[:, None]).sum())
        errors += len(gold)
        ok = ~wrong & editable
        kept += int((generator_head(gen, h[ok]).argmax(-1) == src[ok]).sum())
        correct += int(ok.sum())
    n = max(errors, 1)
    return {"errors": errors, "top1": top1 / n, "top5": top5 / n, "mean_logp": logp / n,
            "kept_top1": kept / max(correct, 1)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pairs", nargs="+", type=Path)
    ap.add_argument("--data", type=Path, required=True, help="source<TAB>target pairs with real errors")
    ap.add_argument("--limit", type=int, default=2000)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    for pair in args.pairs:
        r = score(pair, args.data, args.limit)
        print(f"{pair}: {r['errors']} errors: top-1 {r['top1']:.3f}, top-5 {r['top5']:.3f}, "
              f"mean log P(right) {r['mean_logp']:.2f}; correct characters kept as top-1 {r['kept_top1']:.3f}")


if __name__ == "__main__":
    main()
