"""What is fitted or measured on decoded pairs: the ranker over the candidates' features (``ranker``), the vetoed
edit pairs (``pair_veto``), the with-LM threshold (``threshold``), the cross-fitting folds that keep the training
pairs' own counts out of their scores (``crossfit``), and the evaluation of a bundle (``evaluate``, with the CSC
metrics in ``metrics``)."""
