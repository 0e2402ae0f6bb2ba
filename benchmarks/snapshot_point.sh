#!/usr/bin/env bash
# One point of the pretraining curve, or one arm of an A/B: the same fine-tuning of a pretraining snapshot,
# exported with the default bundle's evidence (similarity, LM, candidates, ranker), thresholds chosen on the dev
# split (FPR <= 10%) for the networks alone and with the LM, then SIGHAN-15 at each chosen threshold.
#
#   bash benchmarks/snapshot_point.sh runs/campaign/snapshots/tok0035.0M main35 [STEPS=2000] [THREADS=1]
#
# Needs runs/csc/train2.tsv and runs/csc/dev.tsv (training.make_csc_data, README) and the dev split
# (python -m training.splits --out runs/dev_split.tsv). Writes runs/snapft/NAME*.
set -euo pipefail
SNAP=$1; NAME=$2; STEPS=${3:-2000}; THREADS=${4:-1}
SHARED=${SHARED:-../shared/data}
D=data/electra_models/default
O=runs/snapft/$NAME
TH=0.05,0.1,0.15,0.2,0.25,0.3,0.35,0.4,0.45,0.5,0.55,0.6,0.65,0.7
mkdir -p runs/snapft
python -m training.finetune --init "$SNAP" --train runs/csc/train2.tsv --dev runs/csc/dev.tsv --out "$O" \
    --lr 2e-4 --warmup-steps 200 --max-steps "$STEPS" --eval-every 500 --threads "$THREADS" --keep last
python -m training.export --run "$O" --similarity $D/similarity --out "$O.bundle" --cpu-onnx int8
python -m training.export --update "$O.bundle" --lm $D/lm --candidates $D/candidates --ranker $D/ranker.json
for MODE in nolm lm; do
    if [ $MODE = nolm ]; then KEEP=use_lm=false; else KEEP=use_lm=true; fi
    python -m training.evaluate --data runs/dev_split.tsv --model "$O.bundle" --set $KEEP --sweep --thresholds $TH \
        --max-fpr 0.10 --choose "$O.choose_$MODE.json" --report "$O.sweep_$MODE.json"
    T=$(python -c "import json, sys; print(json.load(open(sys.argv[1]))['threshold'])" "$O.choose_$MODE.json")
    python -m training.evaluate --data "$SHARED/csc/sighan15_test.tsv" --model "$O.bundle" --set $KEEP threshold="$T" \
        --report "$O.sighan15_$MODE.json"
done
