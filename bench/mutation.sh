#!/usr/bin/env bash
# Mutation testing (cosmic-ray) of the maths the tests must pin: read/ scoring, control/meter.py,
# write/ relations and consolidation. Slow (one test run per mutant); not part of CI.
#
#   bench/mutation.sh                 # every target module, the tests that pin them
#   bench/mutation.sh src/dualmem/read/scoring.py   # only these modules
#
# It works on a throw-away copy of the tracked files (cosmic-ray mutates files in place), prints
# the surviving mutants with their diffs and ends with cosmic-ray's totals ("surviving mutants: N"). Environment: PYTHON (the
# interpreter whose environment has dualmem's dev extra; default: python), MUTATION_TIMEOUT
# (seconds per test run, default 120), MUTATION_TESTS (the pytest selection).
set -euo pipefail

if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  cat <<'USAGE'
usage: bench/mutation.sh [MODULE.py ...]
Mutation testing (cosmic-ray) of the given modules (default: read/scoring, read/route,
control/meter, write/relations, write/candidates, write/consolidate) against the tests that pin
them, on a throw-away copy of the tracked files; prints the surviving mutants with their diffs.
Environment: PYTHON (an interpreter with dualmem's dev extra; default python), MUTATION_TIMEOUT
(seconds per test run, default 120), MUTATION_TESTS (the pytest selection).
USAGE
  exit 0
fi

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

# "X | None" annotations are strings here (from __future__ import annotations): mutating "|" gives
# only equivalent mutants; replacing arithmetic by shift/bit/modulo/power operators on floats only
# gives TypeErrors. Both are left out to keep the run to mutants worth a test run.
[cosmic-ray.filters.operators-filter]
exclude-operators = [
  "core/ReplaceBinaryOperator_BitOr_.*",
  "core/ReplaceBinaryOperator_.*_(RShift|LShift|BitAnd|BitXor|BitOr|FloorDiv|Mod|Pow)",
]
TOML

"$bin/cosmic-ray" init mutation.toml session.sqlite
"$bin/cr-filter-operators" session.sqlite mutation.toml
"$bin/cosmic-ray" baseline mutation.toml
"$bin/cosmic-ray" exec mutation.toml session.sqlite
"$bin/cr-report" --surviving-only --show-diff session.sqlite > survivors.txt || true
"$bin/cr-report" session.sqlite > report.txt || true
cat survivors.txt
tail -n 3 report.txt  # total jobs, complete, surviving mutants
