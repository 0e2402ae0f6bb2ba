"""The features every choice of every site is scored on, by column, and the constants they are computed with.

Each column is filled by one feature object of this package (``compose.SOURCES`` lists their kinds, each declares
its columns); the ranker's weights (``ranker.json``) name them. Adding evidence means one feature object, its
columns here and its weight in the bundle.
"""

from __future__ import annotations

FEATURES = ("keep", "gen_lp", "rtd", "lm_gain", "pinyin", "shape", "confusions", "error_rate", "freq", "word", "name",
            "custom", "seen", "seen_max", "pair", "kept_word", "word4", "particle")
# seen (keep rows only): log(1 + how often the character's bigrams with its neighbours, as written, were
# written correctly in the real training pairs; the rarer of the two): a form those pairs keep as
# correct (甚么, 报导, 部份 in Taiwan-style text) is evidence against an edit that the corpus LM alone wants.
# seen_max: the same with the commoner of the two, so that a kept word form (甚么: kept 94 times in
# sighan_train, corrected 3) counts whatever stands on its other side
# pair (candidate rows only, with the LM): the LM gain of writing the candidate together with its neighbour's
# counterpart in a frequent dictionary word that sounds like the two characters as written (建缸 → 健康,
# 心腹 → 幸福: an IME slip of a whole word, which neither single-character edit fixes alone); 0 when none
# kept_word (keep rows only): of the two- and three-character words through the character as written that the
# real training pairs counted, the best log((times kept as written + 1) / (times changed + 1)): a word form the
# annotators keep (报导 kept 3 times, changed 0; 甚么 76 and 7) is evidence against changing it; 0 when none
# (corrector/evidence/kept_forms.py)
# word4: as word, of a four-character dictionary word through the choice (set phrases and idioms: 一愁莫展 -> 一筹莫展,
# which no two- or three-character word tells); 0 for a bundle whose dictionary holds none
# particle (candidate rows of a site written 的, 地 or 得 whose choice is another of the three): log P(choice) -
# log P(written) given the words before and after (corrector/evidence/particles.py); 0 without the bundle's table
PAIR_MIN_FREQ = 200  # jieba frequency a word needs to be proposed as a pair (61% of the real training pairs' two-character
# errors are words this frequent; 50: 66%, with twice the candidates)
CHEAP = ("gen_lp", "pinyin", "shape", "confusions", "error_rate", "freq")  # the shortlist's features
# error_rate: log of (times the source was written for the candidate + a) / (times the source was written + b)
# in the real training pairs: a character written correctly thousands of times (著, 甚) earns a low rate
RATE_A, RATE_B = 0.5, 50.0
COL = {name: i for i, name in enumerate(FEATURES)}
GEN_MARGIN = 8.0  # the generator proposes characters within this many nats of its best guess

# common surnames and place-name suffixes, for the name-likeness feature
SURNAMES = set(
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕丁任沈姚卢"
    "姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔向汤"
)
PLACE_SUFFIXES = set("市县省区镇村乡街路巷港湾岛州府寨庄")
