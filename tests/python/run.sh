#!/usr/bin/env bash
# FMPy / libcosim interop tests of the project's FMUs.
# Builds fmus/dist with `cargo xtask fmus`, then runs tests/python/test_fmus.py
# (under pytest if it is installed, else as a plain script). Exits non-zero
# on any failure; the last line is "N passed, N failed" either way.
set -euo pipefail
cd "$(dirname "$0")/../.."

PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c "import fmpy, libcosimpy, numpy" 2>/dev/null; then
    "$PYTHON" -m pip install --quiet fmpy libcosimpy numpy
fi

cargo xtask fmus

if "$PYTHON" -c "import pytest" 2>/dev/null; then
    exec "$PYTHON" -m pytest -q tests/python/test_fmus.py
else
    exec "$PYTHON" tests/python/test_fmus.py
fi
