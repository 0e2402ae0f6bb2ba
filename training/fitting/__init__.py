"""What is fitted or measured on decoded pairs. ``fit`` fits the decoder's ranker and writes ranker.json, through
its steps: the weights (``ranker``, on the feature tables of ``table`` with ``conditional_logit``), the vetoed edit
pairs (``pair_veto``), the with-LM threshold (``threshold``) and the confidences (``calibrate``, with the maps of
``calibration_map``), each deciding on the sweeps of ``sweep``. ``crossfit`` keeps the training pairs' own counts out
of their scores; ``reliability`` draws a bundle's reliability table; ``evaluate`` measures a bundle, with the CSC
metrics in ``metrics``."""
