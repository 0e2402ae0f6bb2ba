#!/usr/bin/env bash
# Dev and SIGHAN-15 figures of one fine-tuned pair (a run folder, or a fine-tuning snapshot from
# training.networks.finetune --snapshot-every): exported with the default bundle's similarity tables, LM, candidates and
# ranker; the threshold chosen on the dev split (best F1 at FPR <= 10%) for the networks alone and with the LM,
# then SIGHAN-15 decoded at each chosen threshold (reported, never used for a choice).
#
#   bash benchmarks/pair_point.sh runs/ft100/snapshots/step005000 ft100_s5000
#
# Needs the dev split (python -m training.data.splits --out runs/dev_split.tsv). Writes runs/snapft/NAME.*
set -euo pipefail
PAIR=$1; NAME=$2
SHARED=${SHARED:-../shared/data}
D=data/electra_models/default
O=runs/snapft/$NAME
TH=0.05,0.1,0.15,0.2,0.25,0.3,0.35,0.4,0.45,0.5,0.55,0.6,0.65,0.7
mkdir -p runs/snapft
python -m training.bundle.export --run "$PAIR" --similarity $D/similarity --out "$O.bundle" --cpu-onnx int8
python -m training.bundle.export --update "$O.bundle" --lm $D/lm --candidates $D/candidates --ranker $D/ranker.json
for MODE in nolm lm; do
    if [ $MODE = nolm ]; then KEEP=use_lm=false; else KEEP=use_lm=true; fi
    python -m training.fitting.evaluate --data runs/dev_split.tsv --model "$O.bundle" --set $KEEP --sweep --thresholds $TH \
        --max-fpr 0.10 --choose "$O.choose_$MODE.json" --report "$O.sweep_$MODE.json"
    T=$(python -c "import json, sys; print(json.load(open(sys.argv[1]))['threshold'])" "$O.choose_$MODE.json")
    python -m training.fitting.evaluate --data "$SHARED/csc/sighan15_test.tsv" --model "$O.bundle" --set $KEEP threshold="$T" \
        --report "$O.sighan15_$MODE.json"
done
