#!/usr/bin/env bash
# Speed benchmark of issue 10: cosim against libcosim and a raw FFI loop.
#
#   bench/run.sh            # full run (about 5 minutes on 2 cores), report in bench/results/latest.md
#   bench/run.sh --quick    # about 20-30 s, report in bench/results/quick.md
#   bench/run.sh --only chain --no-libcosim   # any option of cosim-bench (--help)
#
# Builds the FMUs (cargo xtask fmus), installs libcosimpy 0.0.6 (libcosim
# 0.11) with pip when it is missing, compiles cosim-bench in release mode
# and runs it. Run it on an otherwise idle machine: the report records the
# load average at the start and at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c "import libcosimpy" 2>/dev/null; then
    echo "installing libcosimpy==0.0.6 for the libcosim contender" >&2
    "$PYTHON" -m pip install --quiet "libcosimpy==0.0.6" || {
        echo "libcosimpy could not be installed: running without libcosim" >&2
        set -- --no-libcosim "$@"
    }
fi

cargo xtask fmus
exec cargo run --release --quiet -p cosim-bench -- --python "$PYTHON" "$@"
