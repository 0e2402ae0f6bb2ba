"""``python -m corrector adapt``: a bundle adapted to a domain's plain text (``adapted_bundle``): its LM interpolated with
the text's own (``interpolate``), its words kept as written (``domain_words``) and its threshold following the LM."""
