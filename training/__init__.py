"""Training pipeline: corpus → vocab → ELECTRA pretraining → CSC fine-tuning → model bundle."""
