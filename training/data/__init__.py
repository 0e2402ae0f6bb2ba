"""The training data: the corpus made into a vocabulary and uint16 token shards (``prepare``) and the windows
pretraining reads from them (``shards``); the spelling-correction pairs: reading and encoding them (``csc_data``),
the synthetic ones (``make_csc_data``), the held-out dev split and the real training pairs (``splits``); and the
confusion prior of pretraining's spelling-like corruptions (``confusion_prior``)."""
