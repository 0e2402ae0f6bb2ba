#!/usr/bin/env bash
# One point of the pretraining curve, or one arm of an A/B: the same fine-tuning of a pretraining snapshot, then
# benchmarks/pair_point.sh (the default bundle's evidence, thresholds chosen on the dev split (FPR <= 10%) for the
# networks alone and with the LM, SIGHAN-15 at each chosen threshold).
#
#   bash benchmarks/snapshot_point.sh runs/campaign/snapshots/tok0035.0M main35 [STEPS=2000] [THREADS=1]
#
# Needs runs/csc/train2.tsv and runs/csc/dev.tsv (training.data.make_csc_data, docs/training.md) and the dev split
# (python -m training.data.splits --out runs/dev_split.tsv). Writes runs/snapft/NAME*.
set -euo pipefail
SNAP=$1; NAME=$2; STEPS=${3:-2000}; THREADS=${4:-1}
O=runs/snapft/$NAME
mkdir -p runs/snapft
python -m training.networks.finetune --init "$SNAP" --train runs/csc/train2.tsv --dev runs/csc/dev.tsv --out "$O" \
    --lr 2e-4 --warmup-steps 200 --max-steps "$STEPS" --eval-every 500 --threads "$THREADS" --keep last \
    --precision fp32  # as the curve's first points were fine-tuned (before bf16 autocast on CPU)
bash "$(dirname "$0")/pair_point.sh" "$O" "$NAME"
