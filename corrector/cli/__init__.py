"""``python -m corrector``: the command line, a thin shell over ``Corrector.correct_batch`` (``main``) and the
decoding options it shares with ``batch`` (``options``)."""
