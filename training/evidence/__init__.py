"""The evidence the decoder weighs beside the networks, each built into the bundle from the corpus and the real
training pairs: the character n-gram LM (``char_lm``, with ARPA conversion in ``char_lm_arpa``), the candidate
table, bigrams and kept words (``candidates``), the pinyin and glyph-shape similarity tables (``similarity``) and
the characters of foreign names (``foreign_names``)."""
