# Sourced by training/ops/campaign.sh and training/ops/device_run.sh: whether a run folder's stage is done, read from its
# provenance.json with ${PY:-python}.
# pretrained DIR: pretraining finished its schedule; finetuned DIR STEPS: fine-tuning reached STEPS.
pretrained() { [ -f "$1/provenance.json" ] && "${PY:-python}" -c "import json, sys
sys.exit(0 if json.load(open(sys.argv[1]))['pretraining']['finished'] else 1)" "$1/provenance.json"; }
finetuned() { [ -f "$1/provenance.json" ] && "${PY:-python}" -c "import json, sys
sys.exit(0 if json.load(open(sys.argv[1]))['finetune']['steps'] >= int(sys.argv[2]) else 1)" "$1/provenance.json" "$2"; }
