#!/usr/bin/env bash
# Mutation testing (cosmic-ray) of the maths the tests must pin: read/ scoring, control/meter.py,
# write/ relations and consolidation. Slow (one test run per mutant); not part of CI.
#
#   bench/mutation.sh                 # every target module, the tests that pin them
#   bench/mutation.sh src/dualmem/read/scoring.py   # only these modules
#
# It works on a throw-away copy of the tracked files (cosmic-ray mutates files in place), prints
# the cosmic-ray report and ends with "surviving mutants: N of M". Environment: PYTHON (the
# interpreter whose environment has dualmem's dev extra; default: python), MUTATION_TIMEOUT
# (seconds per test run, default 120), MUTATION_TESTS (the pytest selection).
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
python="${PYTHON:-python}"
bin="$(dirname "$(command -v "$python")")"
modules=("$@")
if [ ${#modules[@]} -eq 0 ]; then
  modules=(
    src/dualmem/read/scoring.py
    src/dualmem/read/route.py
    src/dualmem/control/meter.py
    src/dualmem/write/relations.py
    src/dualmem/write/candidates.py
    src/dualmem/write/consolidate.py
  )
fi
tests="${MUTATION_TESTS:-tests/test_scoring.py tests/test_pinned_maths.py tests/test_states.py tests/test_route.py tests/test_meter.py tests/test_write_path.py tests/test_lifecycle.py}"

work="$(mktemp -d "${TMPDIR:-/tmp}/dualmem-mutation.XXXXXX")"
trap 'rm -rf "$work"' EXIT
(cd "$repo" && git ls-files -z | xargs -0 cp --parents -t "$work")
cd "$work"

module_list=$(printf '"%s", ' "${modules[@]}")
cat > mutation.toml <<TOML
[cosmic-ray]
module-path = [${module_list%, }]
timeout = ${MUTATION_TIMEOUT:-120}
excluded-modules = []
test-command = "env PYTHONPATH=$work/src:$work/tests $python -m pytest -x -q -p no:cacheprovider --no-cov $tests"

[cosmic-ray.distributor]
name = "local"
TOML

"$bin/cosmic-ray" init mutation.toml session.sqlite
"$bin/cosmic-ray" baseline mutation.toml session.sqlite
"$bin/cosmic-ray" exec mutation.toml session.sqlite
"$bin/cr-report" --show-pending session.sqlite | tee report.txt | grep -v "^\[job-id\]\|^---\|^$" | tail -n 40 || true
total=$(grep -c "^\[job-id\]" report.txt || true)
survived=$(grep -c "^test outcome: TestOutcome.SURVIVED" report.txt || true)
echo "surviving mutants: ${survived} of ${total}"
