#!/usr/bin/env bash
# FMPy / libcosim interop tests of the project's FMUs, on their own.
# Builds fmus/dist with `cargo xtask fmus`, then runs tests/python/test_fmus.py
# (under pytest if it is installed, else as a plain script) with the
# project's Python environment .venv/ (`cargo xtask venv` creates it and
# installs tests/python/requirements.txt into it; PYTHON names another
# interpreter). Exits non-zero on any failure; the last line is
# "N passed, N failed" either way. `cargo xtask test` runs these checks too
# (tests/tests/interop.rs).
set -euo pipefail
cd "$(dirname "$0")/../.."

PYTHON="${PYTHON:-$(cargo xtask venv)}"

cargo xtask fmus

if "$PYTHON" -c "import pytest" 2>/dev/null; then
    exec "$PYTHON" -m pytest -q tests/python/test_fmus.py
else
    exec "$PYTHON" tests/python/test_fmus.py
fi
