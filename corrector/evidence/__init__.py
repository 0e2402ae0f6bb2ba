"""The evidence sources the features read, each loaded from its bundle file: candidate lists, the character LM
(the bundle's or a user's KenLM), pinyin and shape similarity, the word dictionary, kept word forms, foreign names."""
