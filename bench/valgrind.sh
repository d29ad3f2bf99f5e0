#!/usr/bin/env bash
# The engine differential under valgrind (memcheck): invalid reads or writes in durable_rules' C code
# would show here. Python's own allocator is switched to malloc so that memcheck sees every block;
# bench/valgrind-python.supp silences CPython's own reports (lifetime allocations, the loader).
#
#   bash bench/valgrind.sh [DECISIONS]        PYTHON=path/to/python picks the interpreter
#
# The interpreter must have the engine (durable_rules) and the advisor: by default the worktree's
# .venv, else python3 on PATH; it is checked first, so a pyenv shim or a bare python3 is refused
# with a message instead of valgrind silently checking the shim.
set -u
cd "$(dirname "$0")/.."
if [ -n "${PYTHON:-}" ]; then py=$PYTHON
elif [ -x .venv/bin/python ]; then py=.venv/bin/python
else py=python3
fi
if ! command -v valgrind >/dev/null 2>&1; then
  echo "valgrind.sh: valgrind is not installed (apt-get install valgrind)" >&2; exit 2
fi
if ! "$py" -c 'import durable.engine, advisor' >/dev/null 2>&1; then
  echo "valgrind.sh: $py cannot import durable_rules and the advisor; install the advisor into it or set PYTHON=.venv/bin/python" >&2
  exit 2
fi
# valgrind must run the interpreter itself, not a shell wrapper (pyenv's shim is a bash script)
real=$("$py" -c 'import sys; print(sys.executable)')
if head -c 2 "$real" | grep -q '#!'; then
  echo "valgrind.sh: $real is a script, not an interpreter; set PYTHON to the real python" >&2; exit 2
fi
n=${1:-300}
log=$(mktemp)
PYTHONMALLOC=malloc valgrind --tool=memcheck --error-limit=no --suppressions=bench/valgrind-python.supp \
  --log-file="$log" "$real" bench/differential.py "$n" 120
status=$?
echo "valgrind: $(grep -c 'Invalid read' "$log") invalid reads, $(grep -c 'Invalid write' "$log") invalid writes; $(grep 'ERROR SUMMARY' "$log" | tail -1 | sed 's/==[0-9]*== //')"
echo "log: $log"
exit $status
