"""A document's own terms (corrector/evidence/terms.py): the words it writes again and again, counted over any
number of texts in any order."""

from __future__ import annotations

from collections import Counter

from corrector.evidence.terms import BIGRAM_MIN_COUNT, bigram_counts, bigrams, recurring, term_counts, words


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


def test_bigrams_are_two_chinese_characters_side_by_side_without_de_di_de():
    """Whatever the segmentation (向左 in 都向左试试 is no word), less the pairs holding 的, 地 or 得, whose choice
    depends on the words around them, not on a habit of the author's."""
    assert list(bigrams("都向左试试，认真地学 x 跑得快")) == [(0, "都向"), (1, "向左"), (2, "左试"), (3, "试试"),
                                                          (6, "认真")]
    assert [w for _, w in bigrams("认真地学习")] == ["认真", "学习"]
    assert [w for _, w in bigrams("a向左 b")] == ["向左"]


def test_recurring_bigrams_count_from_their_own_minimum_and_yield_to_a_far_commoner_rival():
    """A bigram written BIGRAM_MIN_COUNT times is kept; one whose sound-alike rival the text writes more than twice
    as often is not (登陆 beside 登录 written 157 times, as in one of the documentation trees)."""
    texts = ["都向左试试。"] * BIGRAM_MIN_COUNT + ["用于登陆系统。"] * 22 + ["登录"] * 157 + ["一次。"] * 3
    kept = recurring(bigram_counts(texts), BIGRAM_MIN_COUNT)
    assert "向左" in kept and "都向" in kept and "登录" in kept
    assert "登陆" not in kept and "一次" not in kept
    assert bigram_counts(texts) == bigram_counts(reversed(texts))
