"""The model pretraining trains: the generator and the discriminator with shared embeddings, whose ``forward`` is one
replaced-token-detection step (``training.networks.pretrain`` runs it)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from corrector.text.tokenize import SPECIAL_IDS

from .modeling import ModelConfig, build_models, generator_head


class ElectraPretrainer(nn.Module):
    """Generator + discriminator with shared embeddings; ``forward`` is one RTD step."""

    confusions: torch.Tensor  # (vocab, K) neighbour ids, -1 = none; empty when no confusion corruptions

    def __init__(self, cfg: ModelConfig, rtd_weight: float, confusions: torch.Tensor | None = None):
        super().__init__()
        self.gen, self.disc = build_models(cfg)
        self.rtd_weight = rtd_weight
        self.register_buffer("confusions", confusions if confusions is not None else torch.zeros(0, 0, dtype=torch.long),
                             persistent=False)

    def forward(self, ids: torch.Tensor, masked: torch.Tensor, show_mask: torch.Tensor,
                use_confusion: torch.Tensor, details: bool = False) -> dict[str, torch.Tensor]:
        """One RTD step's losses and statistics; with ``details`` also the discriminator's scores, labels and
        hidden states (every layer) at the real tokens, for the held-out health metrics."""
        attn = (ids != SPECIAL_IDS["[PAD]"]).long()
        # 1. mask
        gen_in = torch.where(masked & show_mask, torch.full_like(ids, SPECIAL_IDS["[MASK]"]), ids)
        # 2. generator: vocabulary logits only where a token was masked
        h = self.gen.electra(input_ids=gen_in, attention_mask=attn).last_hidden_state[masked]
        logits = generator_head(self.gen, h).float()
        targets = ids[masked]
        mlm = F.cross_entropy(logits, targets)
        # 3. sample replacements without gradient
        with torch.no_grad():
            sampled = sample_from_logits(logits)
            if self.confusions.numel():
                sampled = self._confuse(targets, sampled, use_confusion[masked])
            fake = ids.clone()
            fake[masked] = sampled
            labels = (fake != ids).float()  # a sample equal to the original counts as real
        # 4. discriminate
        d_out = self.disc(input_ids=fake, attention_mask=attn, output_hidden_states=details)
        d_logits = d_out.logits.float()
        keep = attn.bool()
        rtd = F.binary_cross_entropy_with_logits(d_logits[keep], labels[keep])
        with torch.no_grad():
            pred = (d_logits[keep] > 0).float()
            lab = labels[keep]
            stats = {
                "mlm_acc": (logits.argmax(-1) == targets).float().mean(),
                "rtd_acc": (pred == lab).float().mean(),
                "rtd_recall": (pred * lab).sum() / lab.sum().clamp(min=1),
                "replaced": lab.mean(),
            }
        if details:
            stats["scores"], stats["labels"] = d_logits[keep], lab
            stats["hidden"] = torch.stack([x[keep].float() for x in d_out.hidden_states])  # (layers+1, N, H)
        return {"loss": mlm + self.rtd_weight * rtd, "mlm": mlm, "rtd": rtd, **stats}

    def _confuse(self, targets: torch.Tensor, sampled: torch.Tensor, use: torch.Tensor) -> torch.Tensor:
        table = self.confusions[targets]  # (M, K), -1 = no neighbour
        n_valid = (table >= 0).sum(-1)
        use = use & (n_valid > 0)
        if not use.any():
            return sampled
        pick = (torch.rand(len(targets), device=targets.device) * n_valid.clamp(min=1)).long()
        alt = table.gather(1, pick[:, None]).squeeze(1)
        return torch.where(use, alt, sampled)


def sample_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """One draw per row by inverse CDF (much cheaper on CPU than torch.multinomial over 21k columns)."""
    cdf = F.softmax(logits, -1).cumsum(-1)
    u = torch.rand(len(logits), 1, device=logits.device) * cdf[:, -1:]
    return torch.searchsorted(cdf, u).squeeze(-1).clamp_(max=logits.shape[-1] - 1)
