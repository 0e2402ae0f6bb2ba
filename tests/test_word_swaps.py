"""swap_threshold: an edit between two dictionary words needs that confidence (corrector.guards.WordSwaps)."""

from __future__ import annotations

from corrector.config import CorrectorConfig
from corrector.guards import NAMED, Proposal, word_swap
from corrector.stages import Chunk


def vetoed(text: str, i: int, target: str, confidence: float, swap_threshold: float,
           made: dict[int, str] | None = None) -> str | None:
    chunk = Chunk(0, 0, text, None, {}, None, True)
    return NAMED["swap_threshold"].veto(Proposal(chunk, i, target, made or {}, {}, confidence),
                                        CorrectorConfig(swap_threshold=swap_threshold))


def test_a_swap_is_both_words_as_jieba_segments_the_corrected_text():
    assert word_swap(list("所以适用场景是"), 2, "使") == ("适用", "使用")
    assert word_swap(list("接下来的小节"), 5, "姐") == ("小节", "小姐")
    assert word_swap(list("他以经走了"), 1, "已") is None  # 以经 is no word: a slip repaired
    assert word_swap(list("今天天气很好"), 5, "号") is None  # 号 alone: no word of two characters


def test_a_swap_below_the_bar_is_kept_as_written_and_says_why():
    why = vetoed("所以适用场景是", 2, "使", 0.55, 0.7)
    assert why == "适用 and 使用 are both words (confidence 0.55 < 0.7)"
    assert vetoed("所以适用场景是", 2, "使", 0.75, 0.7) is None  # above the bar
    assert vetoed("所以适用场景是", 2, "使", 0.55, 0.0) is None  # the library's default: off
    assert vetoed("他以经走了", 1, "已", 0.3, 0.7) is None  # not a swap: the threshold alone decides


def test_the_earlier_rounds_edits_are_read():
    """With 以 already made 已 in an earlier round, 经 -> 经 is no question; 已经 -> 已往 would be a swap."""
    assert vetoed("他以经走了", 2, "往", 0.5, 0.7, made={1: "已"}) == "已经 and 已往 are both words (confidence 0.50 < 0.7)"
