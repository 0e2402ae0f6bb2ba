"""Networks with hand-set outputs, and a Corrector over them made without torch or ONNX.

``FakeNetworks`` is a ``corrector.runtime.sessions.Networks`` as ``corrector.runtime.sessions.OnnxNetworks`` is: it answers
``run(ids, attn, positions, floor)`` (P(replaced) per token, shape (B, T), the generator's ``LogProbs`` at the asked
positions that reach the floor, and which those are) from per-character settings instead of weights: what the discriminator says of each character, and
which characters the generator prefers in its place. Every row's output depends on that row's own tokens only, so
results never depend on the batch around them.

``fake_bundle`` writes what a Corrector reads of a bundle besides the networks (the vocabulary and the similarity
tables of the tiny exported bundle, tests/conftest.py) and ``fake_corrector`` puts the parts together with
``Corrector.from_parts``, as ``Corrector.load`` does. The decoder tests run on it with known answers, in any
environment with the library's own dependencies (no torch, no ONNX graphs).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from corrector import Corrector, CorrectorConfig
from corrector.bundle import SIMILARITY_DIR, VOCAB, Bundle, sha256_file
from corrector.evidence.candidates import CandidateTable
from corrector.evidence.char_lm import CharLM
from corrector.evidence.similarity import PINYIN_FILE, SHAPE_FILE, SimilarityTables
from corrector.manifest import Manifest
from corrector.rank import HEURISTIC, RankerWeights
from corrector.runtime.sessions import LogProbs, suspected
from corrector.text.tokenize import VOCAB_SIZE, read_vocab_list

# The tiny bundle's text: every CJK character of the vocabulary (each with frequency CHAR_FREQ), in vocabulary order.
SAMPLE = (
    "今天天气很好我们去公园散步吧他已经知道自己错了这件事情没有那么简单"
    "未来末日候车侯爵拔草拨打电话精致精制中国人民银行北京上海张三李四汽已巳"
)

# The tiny bundle's similarity tables, as training.evidence.similarity builds them from its vocabulary (readings from
# pypinyin; shapes from the character decompositions alone, no font).
READINGS = (
    "今 jin1|天 tian1|气 qi4|很 hen3|好 hao3,hao4|我 wo3|们 men5|去 qu4|公 gong1|园 yuan2|散 san4,san3|步 bu4|"
    "吧 ba5,ba1|他 ta1|已 yi3|经 jing1|知 zhi1,zhi4|道 dao4|自 zi4|己 ji3|错 cuo4|了 le5,liao3,liao4|这 zhe4|"
    "件 jian4|事 shi4|情 qing2|没 mei2,mo4|有 you3|那 na4|么 me5,yao1|简 jian3|单 dan1,chan2,shan4|未 wei4|"
    "来 lai2|末 mo4|日 ri4|候 hou4|车 che1,ju1|侯 hou2,hou4|爵 jue2|拔 ba2|草 cao3|拨 bo1|打 da3,da2|电 dian4|"
    "话 hua4|精 jing1|致 zhi4|制 zhi4|中 zhong1,zhong4|国 guo2|人 ren2|民 min2|银 yin2|"
    "行 xing2,hang2,heng2,hang4|北 bei3|京 jing1|上 shang4,shang3|海 hai3|张 zhang1|三 san1|李 li3|四 si4|"
    "汽 qi4|巳 si4"
)
SHAPES = {
    "很": "行:0.308", "我": "打:0.467 拔:0.438 拨:0.412", "们": "他:0.308 件:0.308", "园": "四:0.333",
    "散": "致:0.300", "他": "们:0.308", "已": "己:0.600 巳:0.600", "道": "这:0.333", "己": "已:0.600 巳:0.600",
    "错": "银:0.444", "这": "道:0.333", "件": "们:0.308", "事": "日:0.312", "未": "末:0.667 李:0.400",
    "末": "未:0.667 李:0.400", "日": "事:0.312 上:0.308", "候": "侯:0.765", "侯": "候:0.765",
    "拔": "拨:0.471 我:0.438 打:0.438", "拨": "拔:0.471 我:0.412 打:0.412", "打": "我:0.467 拔:0.438 拨:0.412",
    "致": "散:0.300", "银": "错:0.444", "行": "很:0.308", "上": "日:0.308", "李": "末:0.400 未:0.400",
    "四": "园:0.333", "巳": "已:0.600 己:0.600",
}
MAX_SEQ_LEN = 64
CHAR_FREQ = 10  # every SAMPLE character's corpus frequency in the tiny bundle's tables


def tiny_vocab(padded: bool = True) -> list[str]:
    """The tiny bundle's vocabulary: BERT's special tokens and unused slots, ASCII, the SAMPLE characters, and
    unless ``padded`` is False, unused slots up to the networks' vocabulary size (they never match any text)."""
    vocab = ["[PAD]"] + [f"[unused{i}]" for i in range(1, 100)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab += [chr(c) for c in range(33, 127) if not chr(c).isupper()]
    vocab += list(dict.fromkeys(c for c in SAMPLE if c not in vocab))
    vocab += ["##s", "hello", "world"]
    i = 100
    while padded and len(vocab) < VOCAB_SIZE:
        vocab.append(f"[unused{i}]")
        i += 1
    return vocab


FAKE_VOCAB = tiny_vocab(padded=False)  # the fake bundle's vocabulary


class FakeNetworks:
    """Hand-set networks over a vocabulary (default: the fake bundle's), through the interface the Corrector
    uses (``run``, ``rows_alone``).

    Discriminator: P(replaced) of a token is ``rtd[char]``, else ``default_rtd`` (0 on padding).
    Generator, at a token: logit ``own_logit`` for the character as written, the logits of ``prefer[char]``
    (``[(candidate, logit), ...]``) for its preferred replacements, 0 for every other token. The Corrector
    proposes characters within 8 nats of the best (``features.GEN_MARGIN``), ties in vocabulary order, so
    a character with no preference gets the first proposable characters of the vocabulary as candidates.

    ``rows_alone`` is what the Corrector reads to batch: True like dynamically quantised int8 graphs (one
    unpadded row per call: batches are not cut by length), False like float graphs (cut by padding).
    ``calls`` records each run's (rows, width, asked positions).
    """

    provider = "fake"
    precision = "fp32"
    provider_reason = ""

    def __init__(self, rtd: Mapping[str, float] | None = None,
                 prefer: Mapping[str, Sequence[tuple[str, float]]] | None = None, *, vocab: Sequence[str] = FAKE_VOCAB,
                 default_rtd: float = 0.1, own_logit: float = 2.0, rows_alone: bool = False):
        self.vocab = list(vocab)
        self.vocab_size = len(self.vocab)
        self.rows_alone = rows_alone
        ids = {t: i for i, t in enumerate(self.vocab)}
        self._rtd = np.full(self.vocab_size, default_rtd, dtype=np.float32)
        for ch, p in (rtd or {}).items():
            assert 0.0 <= p <= 1.0, (ch, p)
            self._rtd[ids[ch]] = p
        self._own_logit = own_logit
        self._prefer = {ids[ch]: [(ids[c], float(logit)) for c, logit in cands]
                        for ch, cands in (prefer or {}).items()}
        self.calls: list[tuple[int, int, int]] = []
        self._lock = threading.Lock()

    def run(self, ids: np.ndarray, attn: np.ndarray, positions: np.ndarray,
            floor: np.ndarray | None = None) -> tuple[np.ndarray, LogProbs, np.ndarray]:
        assert ids.dtype == attn.dtype == positions.dtype == np.int64, (ids.dtype, attn.dtype, positions.dtype)
        assert ids.shape == attn.shape and positions.shape[0] == ids.shape[0], (ids.shape, positions.shape)
        lengths = attn.sum(1)
        assert (positions < lengths[:, None]).all() and (positions[:, :1] > 0).all(), "positions outside the rows"
        with self._lock:
            self.calls.append((ids.shape[0], ids.shape[1], int(np.count_nonzero(positions))))
        rtd = np.where(attn > 0, self._rtd[ids], np.float32(0.0)).astype(np.float32)
        with np.errstate(divide="ignore"):
            keep = suspected(np.log(rtd) - np.log1p(-rtd), positions, floor)
        rows, cols = np.nonzero(keep)  # row by row, each row's positions in order, as the real networks do
        tokens = ids[rows, positions[rows, cols]]
        logits = np.zeros((len(tokens), self.vocab_size), dtype=np.float32)
        for n, t in enumerate(tokens.tolist()):
            logits[n, t] = self._own_logit
            for c, logit in self._prefer.get(t, ()):
                logits[n, c] = logit
        return rtd, LogProbs.from_logits(logits), keep


def fake_bundle(out: Path) -> Bundle:
    """The parts of the tiny bundle a Corrector reads besides the networks, written under ``out``. The vocabulary
    leaves out the unused slots at its end (``FAKE_VOCAB``): every text has the same tokens and ids, and the
    generator's rows are a few hundred entries long instead of 21128."""
    (out / VOCAB).parent.mkdir(parents=True, exist_ok=True)
    (out / VOCAB).write_text("\n".join(FAKE_VOCAB) + "\n", encoding="utf-8")
    sim = out / SIMILARITY_DIR
    sim.mkdir(exist_ok=True)
    rows = [entry.split(" ") for entry in READINGS.split("|")]
    (sim / PINYIN_FILE).write_text("".join(f"{ch}\t{CHAR_FREQ}\t{r}\n" for ch, r in rows), encoding="utf-8")
    (sim / SHAPE_FILE).write_text("".join(f"{ch}\t{SHAPES.get(ch, '')}\n" for ch, _ in rows), encoding="utf-8")
    manifest = Manifest(name="fake", vocab_sha256=sha256_file(out / VOCAB), vocab_size=len(FAKE_VOCAB),
                        max_seq_len=MAX_SEQ_LEN)
    return Bundle(out, manifest)


def fake_corrector(bundle: Bundle, networks: FakeNetworks | None = None, *, lm: Path | None = None,
                   candidates: CandidateTable | None = None, ranker: RankerWeights = HEURISTIC,
                   **settings: Any) -> Corrector:
    """A Corrector on ``bundle``'s tables and ``networks`` (default: no preferences anywhere), put together by
    ``Corrector.from_parts`` as ``Corrector.load`` does: ``lm`` a training.evidence.char_lm directory, no candidate table
    unless given, the hand-set ranker unless given, ``settings`` the decoding settings (CorrectorConfig fields)."""
    networks = networks if networks is not None else FakeNetworks(vocab=read_vocab_list(bundle.vocab_path))
    fix = Corrector.from_parts(bundle, networks, SimilarityTables.load(bundle.file(SIMILARITY_DIR)),
                               CorrectorConfig.from_dict(settings), candidates=candidates,
                               lm=CharLM.load(lm) if lm is not None else None, ranker=ranker, load_settings=settings)
    assert networks.vocab == fix.vocab, "the networks' vocabulary is not the bundle's"
    return fix

