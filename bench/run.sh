#!/usr/bin/env bash
# Speed benchmark of issue 10: cosim against libcosim and a raw FFI loop.
#
#   bench/run.sh            # full run (about 5 minutes on 2 cores), report in bench/results/latest.md
#   bench/run.sh --quick    # about 20-30 s, report in bench/results/quick.md
#   bench/run.sh --only chain --no-libcosim   # any option of cosim-bench (--help)
#
# Builds the FMUs (cargo xtask fmus), makes sure of the project's Python
# environment with libcosimpy 0.0.6 (libcosim 0.11), compiles cosim-bench in release mode
# and runs it. Run it on an otherwise idle machine: the report records the
# load average at the start and at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

# The libcosim contender runs in the project's Python environment .venv/
# (`cargo xtask venv` creates it with tests/python/requirements.txt, which
# pins libcosimpy; PYTHON names another interpreter).
if [ -z "${PYTHON:-}" ]; then
    PYTHON="$(cargo xtask venv)" || {
        echo "the Python environment could not be made: running without libcosim" >&2
        PYTHON=python3
        set -- --no-libcosim "$@"
    }
fi
if ! "$PYTHON" -c "import libcosimpy" 2>/dev/null; then
    echo "$PYTHON has no libcosimpy: running without libcosim" >&2
    set -- --no-libcosim "$@"
fi

cargo xtask fmus
exec cargo run --release --quiet -p cosim-bench -- --python "$PYTHON" "$@"
