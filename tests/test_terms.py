"""A document's own terms (corrector/evidence/terms.py): the words it writes again and again, counted over any
number of texts in any order."""

from __future__ import annotations

from collections import Counter

from corrector.evidence.terms import recurring, term_counts, words


def test_words_are_the_multi_character_chinese_words_with_their_offsets():
    text = "二叉树的根结点，root 是 node。"
    assert list(words(text)) == [(0, "二叉树"), (5, "结点")]


def test_new_words_count_too():
    assert "三鸽" in dict((w, 1) for _, w in words("感谢三鸽最可爱"))  # jieba's HMM finds words it does not know


def test_counts_add_up_whatever_the_order():
    texts = ["根结点和父结点。", "叶结点没有子结点。", "移项之后。"]
    counts = term_counts(texts)
    assert counts["结点"] == 4 and counts["移项"] == 1
    assert term_counts(reversed(texts)) == counts
    assert term_counts(texts[:1]) + term_counts(texts[1:]) == counts


def test_recurring_terms_are_sorted_and_counted_from_min_count():
    counts = Counter({"结点": 4, "移项": 2, "以经": 1})
    assert recurring(counts) == ("结点",)
    assert recurring(counts, 2) == ("移项", "结点")
    assert recurring(counts, 0) == ()


def test_a_word_with_a_far_commoner_rival_is_no_term():
    """此事 beside a far commoner 此时 (one sound-alike character away) is more likely a slip of it; 结点 beside 节点
    is a term, and so is 队首 beside 队尾 (首 and 尾 do not sound alike)."""
    counts = Counter({"此事": 3, "此时": 240, "结点": 1452, "节点": 2180, "无须": 46, "无需": 2, "队首": 5, "队尾": 50})
    assert set(recurring(counts)) == {"无须", "结点", "此时", "节点", "队首", "队尾"}  # 无需 (2): too rarely
    assert "此事" in recurring(counts, rival_ratio=100)
