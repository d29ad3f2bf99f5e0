#!/usr/bin/env bash
# The engine differential under valgrind (memcheck): invalid reads or writes in durable_rules' C code
# would show here. Python's own allocator is switched to malloc so that memcheck sees every block.
set -u
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
n=${1:-300}
log=$(mktemp)
PYTHONMALLOC=malloc valgrind --tool=memcheck --error-limit=no --log-file="$log" "$py" bench/differential.py "$n" 120
echo "valgrind: $(grep -c 'Invalid read' "$log") invalid reads, $(grep -c 'Invalid write' "$log") invalid writes; $(grep 'ERROR SUMMARY' "$log" | tail -1 | sed 's/==[0-9]*== //')"
echo "log: $log"
