#!/usr/bin/env bash
# One run on a GPU machine without network access (docs/training.md), in the repository root there: continued
# pretraining from the copied pair (the committed pretraining state, data/pretraining), then masked fine-tuning on the
# copied native-style pairs; both pairs come back.
#
#   bash training/ops/device_run.sh MINUTES
#
# Unpacks the inputs copied beside the repository (.inputs/data*, .inputs/init, .inputs/csc, packed by training.ops.device_pack),
# goes on with the next unfinished stage for about MINUTES (continued pretraining from the copied pair, then
# fine-tuning on the copied CSC pairs), and leaves in $OUT what is copied back, in few files of bounded size: each
# pair in fp16 (3 files) and logs.tar.gz. Each stage resumes from its checkpoint under runs/gpu/, which stays on the
# machine between runs. With PRE_MIN=M one run does both stages, each with its schedule fitted
# to its minutes (--fit-minutes), for a machine available for a fixed time. DEVICE=cpu CONFIG=debug runs the same sequence
# on the CPU (tests/test_device_run.py).
set -euo pipefail
cd "$(dirname "$0")/../.."
MINUTES=${1:?usage: bash training/ops/device_run.sh MINUTES}
: "${OUT:?OUT must name the folder whose files are copied back}"
PY=${PY:-python3}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
DEVICE=${DEVICE:-cuda}
PRECISION=${PRECISION:-bf16}
CONFIG=${CONFIG:-cpu-g4}        # the copied pair's shape (the CPU campaign's; the bundle's speed rests on it)
BATCH=${BATCH:-512}             # 512 x 64 tokens a step (the CPU campaign: 64 x 64)
SEQ=${SEQ:-64}
LR=${LR:-5e-4}
WARMUP=${WARMUP:-1000}
PRE_STEPS=${PRE_STEPS:-30000}   # the schedule's length: set it from the first run's steps/s (mutable on resume)
EVAL=${EVAL:-1000}
FT_STEPS=${FT_STEPS:-20000}
FT_LR=${FT_LR:-2e-4}
FT_TRAIN=${FT_TRAIN:-native.tsv}  # native-style pairs made with the dev split held out (the recipe's csc_native)
FT_DEV=${FT_DEV:-dev.tsv}         # its held-out pairs (the dev split)
# the corrector on the discriminator's body, masked fine-tuning (20% of the correct characters on 70% of the
# steps, 15% target -> target copies: docs/training.md)
FT_EXTRA=${FT_EXTRA:---generator-body discriminator --mask-prob 0 --mft-rate 0.2 --mft-step-share 0.7 --target-copy-share 0.15}
FT_EVAL=${FT_EVAL:-1000}
EXTRA=${EXTRA:-}                # more training.networks.pretrain flags (e.g. --compile)
PRE_MIN=${PRE_MIN:-}            # one run for both stages: pretrain this many minutes (the schedule fitted to
                                # them, --fit-minutes), then fine-tune with a schedule fitted to what is left
G=${G:-runs/gpu}                # run folders there (kept between runs on the same machine)
INPUTS=${INPUTS:-.inputs}       # the inputs copied beside the repository (git-ignored)
RESERVE=${RESERVE:-1}           # minutes kept for packing

t_end=$(( $(date +%s) + MINUTES * 60 ))
left() { echo $(( (t_end - $(date +%s)) / 60 - RESERVE )); }
left_min() { "$PY" -c "import sys; print(round(max(0.0, (int(sys.argv[1]) - int(sys.argv[2])) / 60 - float(sys.argv[3])), 2))" \
    "$t_end" "$(date +%s)" "$RESERVE"; }
stamp() { echo "== $(date -u +%FT%TZ) $*"; }
# shellcheck source=training/ops/stages.sh
. training/ops/stages.sh  # pretrained DIR, finetuned DIR STEPS (with $PY)

[ "$DEVICE" = cuda ] && { nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true; }
mkdir -p "$G"
for part in "$INPUTS"/data*; do  # parts of the corpus shards, appended in the order they arrive
    [ -f "$part/meta.json" ] || continue
    stamp "unpack $part"
    "$PY" -m training.ops.device_pack unpack-data "$part" "$G/data"
done
if [ -f "$INPUTS/init/pair.tar" ] && [ ! -d "$G/init/discriminator" ]; then
    stamp "unpack $INPUTS/init"
    "$PY" -m training.ops.device_pack unpack-pair "$INPUTS/init" "$G/init"
fi
if [ -d "$INPUTS/csc" ] && [ ! -f "$G/csc/$FT_DEV" ]; then
    stamp "unpack $INPUTS/csc"
    "$PY" -m training.ops.device_pack unpack-files "$INPUTS/csc" "$G/csc"
fi

pack() {
    stamp "pack into \$OUT"
    for run in pre ft; do
        [ -f "$G/$run/discriminator/model.safetensors" ] && "$PY" -m training.ops.device_pack pair "$G/$run" "$OUT/$run"
    done
    "$PY" -m training.ops.device_pack logs "$OUT" "$G/pre" "$G/ft"
    ls -la "$OUT" "$OUT"/*/ 2>/dev/null || true
    for run in pre ft; do
        [ -f "$G/$run/provenance.json" ] && { echo "$run:"; "$PY" -c "import json, sys
p = json.load(open(sys.argv[1])); s = p.get('finetune') or p['pretraining']
print({k: s.get(k) for k in ('step', 'steps', 'tokens_seen', 'finished', 'best_dev_cor_f1_proxy', 'elapsed_s')})" \
            "$G/$run/provenance.json"; }
    done
    true
}
trap pack EXIT  # what is there goes back even when a stage fails

pretrain() {  # the pretraining command of both modes; "$@": its time limits
    local init=()
    [ -d "$G/init/discriminator" ] && init=(--init-from "$G/init")
    # shellcheck disable=SC2086
    "$PY" -m training.networks.pretrain --data "$G/data" --out "$G/pre" --config "$CONFIG" --device "$DEVICE" \
        --precision "$PRECISION" "${init[@]}" --batch-size "$BATCH" --seq-len "$SEQ" --lr "$LR" \
        --warmup-steps "$WARMUP" --max-steps "$PRE_STEPS" --eval-every "$EVAL" --ckpt-every 500 "$@" $EXTRA
}


if [ -n "$PRE_MIN" ] && [ ! -f "$G/pre/discriminator/model.safetensors" ] && [ -f "$G/data/meta.json" ]; then
    stamp "pretrain, the schedule fitted to $PRE_MIN min"
    pretrain --fit-minutes "$PRE_MIN" --max-minutes "$("$PY" -c "print($PRE_MIN * 1.08 + 0.25)")"
fi
if [ -n "$PRE_MIN" ] && [ -f "$G/pre/discriminator/model.safetensors" ] && [ ! -f "$G/ft/provenance.json" ] \
        && [ -f "$G/csc/$FT_TRAIN" ]; then
    ft_min=$("$PY" -c "print(round(max(0.2, $(left_min) - ${FT_STARTUP_MIN:-0.75}), 2))")  # less its start
    stamp "fine-tune, the schedule fitted to $ft_min min"
    # shellcheck disable=SC2086
    "$PY" -m training.networks.finetune --init "$G/pre" --train "$G/csc/$FT_TRAIN" --dev "$G/csc/$FT_DEV" --out "$G/ft" \
        --device "$DEVICE" --precision "$PRECISION" --lr "$FT_LR" --warmup-steps "${FT_WARMUP:-500}" \
        --max-steps "$FT_STEPS" --eval-every "$FT_EVAL" --ckpt-every 1000 --keep last \
        --fit-minutes "$ft_min" --max-minutes "$ft_min" ${FT_BATCH:+--batch-size "$FT_BATCH"} $FT_EXTRA
fi

if [ -z "$PRE_MIN" ] && ! pretrained "$G/pre" && [ -f "$G/data/meta.json" ] && [ "$(left)" -ge 1 ]; then
    stamp "pretrain for $(left) min"
    pretrain --max-minutes "$(left)"
fi

if [ -z "$PRE_MIN" ] && pretrained "$G/pre" && ! finetuned "$G/ft" "$FT_STEPS" && [ -f "$G/csc/$FT_TRAIN" ] && [ "$(left)" -ge 1 ]; then
    stamp "fine-tune for $(left) min"
    # shellcheck disable=SC2086
    "$PY" -m training.networks.finetune --init "$G/pre" --train "$G/csc/$FT_TRAIN" --dev "$G/csc/$FT_DEV" --out "$G/ft" \
        --device "$DEVICE" --precision "$PRECISION" --lr "$FT_LR" --warmup-steps 500 --max-steps "$FT_STEPS" \
        --eval-every "$FT_EVAL" --ckpt-every 1000 --keep last --max-minutes "$(left)" $FT_EXTRA
fi

