#!/usr/bin/env bash
# A candidate default bundle from one fine-tuned pair, measured: the default bundle's similarity tables, the
# candidate table $CANDIDATES (default runs/candidates, built here when missing: the default bundle's tables plus
# names.npz, the foreign names' characters), the character LM $LM (default: the in-domain LM of docs/training.md,
# runs/lm/kn4_dom10), the ranker refitted on this pair's features with the LM's cross-fitting folds $FOLDS and the
# decoding defaults, the unreliable edit pairs (training.fitting.pair_veto), then the dev split (cross-fitted, and without the
# LM), SIGHAN-15 (reported, never used for a choice) and the false positives on correct text.
#
#   bash benchmarks/bundle_point.sh runs/ft100 ft100        -> runs/bundle_ft100, runs/ft100_*.json, runs/ft100_fp.txt
#   bash benchmarks/bundle_point.sh data/electra_models/default shipped    (a bundle: its networks, the rest as above)
#   RANKER_FLAGS=--blend-on-dev THRESHOLD_FLAGS="--max-changed 0.05" bash benchmarks/bundle_point.sh runs/gpu_ft7k gpu7kt
#                                                                          (the committed default, named "default" after)
#
# Needs the dev split (python -m training.data.splits --out runs/dev_split.tsv) and the LM with its folds
# (python -m training.evidence.char_lm ... --in-domain-folds 5 --fold-out FOLDS, docs/training.md). About 40 min on 2 cores.
set -euo pipefail
PAIR=$1; NAME=$2
SHARED=${SHARED:-../shared/data}
LM=${LM:-runs/lm/kn4_dom10}
FOLDS=${FOLDS:-runs/lm/dom10_folds}
CANDIDATES=${CANDIDATES:-runs/candidates}
RANKER_FLAGS=${RANKER_FLAGS:-}  # more training.fitting.ranker flags (--blend-on-dev: networks fine-tuned on its training pairs)
THRESHOLD_FLAGS=${THRESHOLD_FLAGS:-}  # when set, training.fitting.threshold re-chooses the threshold with these flags (the
                                      # default bundle: --max-changed 0.05, wang271k's targets changed at most 5%)
D=data/electra_models/default
B=runs/bundle_$NAME
P=lm_gain*pinyin,lm_gain*shape,lm_gain*rtd,lm_gain*word,lm_gain*error_rate,gen_lp*rtd,pinyin*shape,rtd*pinyin,rtd*error_rate
rm -rf "$B"
[ -f "$CANDIDATES/candidates.npz" ] || python -m training.evidence.candidates --similarity $D/similarity --data "$SHARED" \
    --out "$CANDIDATES"
if [ -f "$PAIR/manifest.json" ]; then  # a bundle's networks as they are (the shipped ones, for comparison)
    cp -r "$PAIR" "$B"
else
    python -m training.bundle.export --run "$PAIR" --similarity $D/similarity --out "$B" --cpu-onnx int8
fi
# the decoding defaults, in the bundle before the ranker is fitted so that its rows, threshold and calibration are
# what the bundle decodes: foreign names (docs/decoder.md)
echo '{"protect_foreign_names": 0.005}' > "runs/defaults_$NAME.json"
python -m training.bundle.export --update "$B" --lm "$LM" --candidates "$CANDIDATES" --defaults "runs/defaults_$NAME.json"
python -m training.fitting.ranker --model "$B" --data "$SHARED" --holdout 1000 --cache "runs/ranker_cache_$NAME" \
    --fit-lm-folds "$FOLDS" --products $P --out "runs/ranker_$NAME.json" --report "runs/ranker_${NAME}_report.json" \
    --plot "runs/reliability_$NAME.png" $RANKER_FLAGS
python -m training.bundle.export --update "$B" --ranker "runs/ranker_$NAME.json"
# the edit pairs this ranker gets mostly wrong on the training pairs, vetoed; the threshold re-chosen on dev
python -m training.fitting.pair_veto --model "$B" --data "$SHARED" --fit-lm-folds "$FOLDS" --report "runs/${NAME}_veto.json"
# shellcheck disable=SC2086
[ -z "$THRESHOLD_FLAGS" ] || python -m training.fitting.threshold --model "$B" --data "$SHARED" --fit-lm-folds "$FOLDS" \
    --report "runs/${NAME}_threshold.json" $THRESHOLD_FLAGS
python -m training.fitting.evaluate --data runs/dev_split.tsv --model "$B" --lm-folds "$FOLDS" --report "runs/${NAME}_dev_cf.json"
python -m training.fitting.evaluate --data runs/dev_split.tsv --model "$B" --set use_lm=false --report "runs/${NAME}_dev_nolm.json"
python -m training.fitting.evaluate --data "$SHARED/csc/sighan15_test.tsv" --model "$B" --report "runs/${NAME}_sighan15.json"
python -m training.fitting.evaluate --data "$SHARED/csc/sighan15_test.tsv" --model "$B" --set use_lm=false \
    --report "runs/${NAME}_sighan15_nolm.json"
python benchmarks/false_positives.py --model "$B" --data "$SHARED" > "runs/${NAME}_fp.txt"
cat "runs/${NAME}_fp.txt"
du -sh "$B"
