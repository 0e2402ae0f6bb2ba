#!/usr/bin/env bash
# One pair's pipeline with a ranker refitted on its own features: a copy of BUNDLE (from benchmarks/pair_point.sh,
# which decodes with the default bundle's ranker) gets training.fitting.ranker on LIMIT training pairs (thresholds chosen on
# the dev split), then the dev split and SIGHAN-15 (reported, never used for a choice), with and without the LM.
#
#   bash benchmarks/refit_point.sh runs/snapft/gb_disc.bundle gb_disc [LIMIT=5000]
#
# Needs the dev split (python -m training.data.splits --out runs/dev_split.tsv). Writes runs/refit/NAME*.
set -euo pipefail
BUNDLE=$1; NAME=$2; LIMIT=${3:-5000}
SHARED=${SHARED:-../shared/data}
P=lm_gain*pinyin,lm_gain*shape,lm_gain*rtd,lm_gain*word,lm_gain*error_rate,gen_lp*rtd,pinyin*shape,rtd*pinyin,rtd*error_rate
O=runs/refit/$NAME
mkdir -p runs/refit
rm -rf "$O.bundle"
cp -r "$BUNDLE" "$O.bundle"
python -m training.fitting.ranker --model "$O.bundle" --data "$SHARED" --holdout 1000 --cache "$O.cache" --limit "$LIMIT" \
    --products $P --out "$O.ranker.json" --report "$O.ranker_report.json"
python -m training.bundle.export --update "$O.bundle" --ranker "$O.ranker.json"
for MODE in lm nolm; do
    if [ $MODE = nolm ]; then KEEP=use_lm=false; else KEEP=use_lm=true; fi
    python -m training.fitting.evaluate --data runs/dev_split.tsv --model "$O.bundle" --set $KEEP --report "$O.dev_$MODE.json"
    python -m training.fitting.evaluate --data "$SHARED/csc/sighan15_test.tsv" --model "$O.bundle" --set $KEEP \
        --report "$O.sighan15_$MODE.json"
done
