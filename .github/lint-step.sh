#!/usr/bin/env bash
# The lint step of action.yml: SARIF into $LINT_SARIF, workflow annotations on the log, the count into the step's
# outputs. Exit 0 with findings (the action decides whether they fail the job), 2 on an error.
set -uo pipefail
read -r -a paths <<< "${LINT_PATHS:-.}"
read -r -a extra <<< "${LINT_ARGS:-}"
python -m corrector lint "${paths[@]}" "${extra[@]}" --no-progress --format sarif --output "${LINT_SARIF:-electra-csc.sarif}"
rc=$?
[ "$rc" -le 1 ] || exit "$rc"
python -m corrector lint "${paths[@]}" "${extra[@]}" --no-progress --format github || true  # (from the cache)
count=$(python -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["runs"][0]["results"]))' "${LINT_SARIF:-electra-csc.sarif}")
echo "findings=$count" >> "${GITHUB_OUTPUT:-/dev/null}"
