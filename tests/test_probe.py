"""training.networks.probe: zero-shot detection AUC and generator accuracy on hand-built pairs with stub networks."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from conftest import tiny_vocab

from corrector.text.tokenize import MASK, SPECIAL_IDS
from training.networks.probe import probe

VOCAB = tiny_vocab()
ID = {t: i for i, t in enumerate(VOCAB)}
PAIRS = [("今天天汽很好", "今天天气很好"), ("他已经知道", "他已经知道")]  # one error: 汽 for 气


class Disc(torch.nn.Module):
    """RTD logit +5 on 汽 (or -5 with ``flip``), -5 (+5) elsewhere."""

    def __init__(self, flip: bool = False):
        super().__init__()
        self.sign = -1.0 if flip else 1.0

    def forward(self, input_ids, attention_mask):
        return SimpleNamespace(logits=self.sign * torch.where(input_ids == ID["汽"], 5.0, -5.0))


class Gen(torch.nn.Module):
    """Hidden state [is MASK, is not]; the head says 气 for [MASK] and 天 for anything else."""

    def __init__(self):
        super().__init__()
        self.generator_predictions = torch.nn.Identity()
        self.generator_lm_head = torch.nn.Linear(2, len(VOCAB), bias=False)
        with torch.no_grad():
            self.generator_lm_head.weight.zero_()
            self.generator_lm_head.weight[ID["气"], 0] = 1.0
            self.generator_lm_head.weight[ID["天"], 1] = 1.0
        self.electra = self._encode

    def _encode(self, input_ids, attention_mask):
        m = (input_ids == SPECIAL_IDS[MASK]).float()
        return SimpleNamespace(last_hidden_state=torch.stack([m, 1 - m], -1))


@pytest.fixture
def vocab_file(tmp_path):
    p = tmp_path / "vocab.txt"
    p.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return p


def test_probe_scores_detection_and_generator_on_the_erroneous_characters(vocab_file):
    out = probe(Disc(), Gen(), vocab_file, PAIRS)
    assert out == {"dev_detection_auc": 1.0, "gen_top1_masked": 1.0, "gen_top1_as_written": 0.0, "error_chars": 1}
    assert probe(Disc(flip=True), Gen(), vocab_file, PAIRS)["dev_detection_auc"] == 0.0
