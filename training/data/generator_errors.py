"""The ``generator`` error kind's proposals: what the pretraining generator would write at a masked position.

ELECTRA's generator is trained to fill a masked character from its context, so its top guesses other than the
character written are the substitutions a writer's context makes plausible, whether or not they sound or look
alike (about a fifth of LEMON's errors are in no similarity table). ``GeneratorProposer`` loads a generator
folder (a Hugging Face ``ElectraForMaskedLM`` with its vocab.txt: ``data/pretraining/generator`` by default) and
answers ``propose(text, i)``: its top ``k`` characters at position ``i`` with their probabilities. Needs the
``train`` extra (torch).
"""

from __future__ import annotations

from pathlib import Path

from corrector.text.chars import is_cjk

DEFAULT_GENERATOR = Path(__file__).resolve().parents[2] / "data" / "pretraining" / "generator"
TOP_K = 30


class GeneratorProposer:
    """``propose(text, i)``: [(character, probability)] of the generator's top ``top_k`` CJK characters at
    position ``i`` masked, most probable first, the character written there excluded. One character per token
    (the sentence is tokenised character by character, as the CSC pairs are), at most the model's length."""

    def __init__(self, path: Path = DEFAULT_GENERATOR, top_k: int = TOP_K, threads: int = 1):
        import torch
        from transformers import ElectraForMaskedLM

        from corrector.text.tokenize import read_vocab_list
        from training.networks.modeling import generator_head

        torch.set_num_threads(threads)
        self._torch, self._head = torch, generator_head
        self.model = ElectraForMaskedLM.from_pretrained(path, dtype=torch.float32).eval()
        vocab = read_vocab_list(path / "vocab.txt")
        self.ids = {t: i for i, t in enumerate(vocab)}
        self.chars = vocab
        self.cjk = torch.tensor([is_cjk(t) and len(t) == 1 for t in vocab])
        self.top_k = top_k
        self.max_len = self.model.config.max_position_embeddings - 2

    def _window(self, text: str, i: int) -> tuple[str, int]:
        """The text around position i that fits the model, and i's place in it."""
        start = max(0, min(i - self.max_len // 2, len(text) - self.max_len))
        return text[start : start + self.max_len], i - start

    def propose(self, text: str, i: int) -> list[tuple[str, float]]:
        torch = self._torch
        window, j = self._window(text, i)
        unk, mask = self.ids["[UNK]"], self.ids["[MASK]"]
        ids = [self.ids["[CLS]"]] + [self.ids.get(c, self.ids.get(c.lower(), unk)) for c in window] + \
            [self.ids["[SEP]"]]
        ids[j + 1] = mask
        with torch.no_grad():
            hidden = self.model.electra(input_ids=torch.tensor([ids])).last_hidden_state[0, j + 1]
            probs = torch.softmax(self._head(self.model, hidden[None]).float()[0], -1)
        probs = torch.where(self.cjk, probs, torch.zeros_like(probs))
        written = self.ids.get(text[i])
        if written is not None:
            probs[written] = 0.0
        top = torch.topk(probs, self.top_k)
        return [(self.chars[k], float(p)) for p, k in zip(top.values.tolist(), top.indices.tolist(), strict=True)
                if p > 0]
