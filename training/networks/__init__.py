"""The networks and their training: the ELECTRA generator and discriminator (``modeling``), the loop shared by
pretraining and fine-tuning (``loop``: devices, checkpoints, schedules, provenance), replaced-token-detection
pretraining (``pretrain``), the corrector's fine-tuning (``finetune``), and the checks of a pretrained pair: its
zero-shot probe (``probe``) and the detector's health during pretraining (``rtd_health``)."""
