"""Zero-shot CSC probe of a pretrained generator/discriminator pair on the dev split (no fine-tuning).

    python -m training.networks.probe --run runs/pretrain_main/snapshots/tok0020.0M [--data ../shared/data]

Prints one JSON line: the discriminator's detection AUC (its RTD score of the erroneous characters of the
held-out sighan_train pairs against their correct characters: real typos are replaced tokens, so a
pretrained discriminator detects them before any fine-tuning) and the generator's top-1 accuracy at the
erroneous characters, shown as [MASK] and as written. Cheap (forward passes over 1,000 sentences), so it
can follow a pretraining run or compare shapes where a fine-tune is too costly.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch
from transformers import ElectraForMaskedLM, ElectraForPreTraining

from corrector.text.tokenize import MASK, SPECIAL_IDS, build_tokenizer, encode_batch

from ..data.location import default_data
from ..data.splits import dev_pairs
from .modeling import generator_head
from .rtd_health import rtd_auc


@torch.no_grad()
def probe(disc: ElectraForPreTraining, gen: ElectraForMaskedLM, vocab: Path, pairs: list[tuple[str, str]],
          max_tokens: int = 128) -> dict[str, float]:
    disc.eval()
    gen.eval()
    tok = build_tokenizer(vocab)
    scores, labels = [], []
    hits = {"masked": 0, "as_written": 0}
    n_err = 0
    for e_s, e_t in zip(encode_batch(tok, [s for s, _ in pairs], max_tokens),
                        encode_batch(tok, [t for _, t in pairs], max_tokens)):
        if len(e_s.ids) != len(e_t.ids):
            continue
        ids = torch.tensor([e_s.ids])
        attn = torch.ones_like(ids)
        src, tgt = np.array(e_s.ids), np.array(e_t.ids)
        editable = np.array([p >= 0 for p in e_s.char_pos])
        err = (src != tgt) & editable
        p = torch.sigmoid(disc(input_ids=ids, attention_mask=attn).logits[0].float())
        scores.append(p[torch.from_numpy(editable)])
        labels.append(torch.from_numpy(err[editable]))
        if not err.any():
            continue
        pos, gold = torch.from_numpy(np.flatnonzero(err)), torch.from_numpy(tgt[err])
        masked = ids.clone()
        masked[0, pos] = SPECIAL_IDS[MASK]
        for name, x in (("masked", masked), ("as_written", ids)):
            h = gen.electra(input_ids=x, attention_mask=attn).last_hidden_state[0, pos]
            hits[name] += int((generator_head(gen, h).argmax(-1) == gold).sum())
        n_err += int(err.sum())
    auc = rtd_auc(torch.cat(scores), torch.cat(labels)) if scores else float("nan")
    return {"dev_detection_auc": round(auc, 4), "gen_top1_masked": round(hits["masked"] / max(n_err, 1), 4),
            "gen_top1_as_written": round(hits["as_written"] / max(n_err, 1), 4), "error_chars": n_err}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", type=Path, required=True, help="folder with discriminator/ and generator/")
    ap.add_argument("--data", type=Path, default=default_data())
    ap.add_argument("--threads", type=int, default=0)
    a = ap.parse_args(argv)
    if a.threads:
        torch.set_num_threads(a.threads)
    disc = ElectraForPreTraining.from_pretrained(a.run / "discriminator")
    gen = ElectraForMaskedLM.from_pretrained(a.run / "generator")
    pairs = [(s, t) for s, t in dev_pairs(a.data) if s != t]
    print(json.dumps({"run": a.run.name, **probe(disc, gen, a.run / "discriminator" / "vocab.txt", pairs)}))


if __name__ == "__main__":
    main()
