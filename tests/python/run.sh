#!/usr/bin/env bash
# FMPy / libcosim interop tests of the project's FMUs, on their own: runs
# tests/python/test_fmus.py through its cargo test (tests/tests/interop.rs),
# which builds fmus/dist (`cargo xtask fmus`, when stale), CGain, the
# benchmark's C FMU (fmus/cgain), Hostile (tests/data/hostile_fmu) and
# Feedthrough (tests/data/feedthrough_fmu), and
# names the FMUs built outside fmus/dist to the script (COSIM_CGAIN_FMI2,
# COSIM_CGAIN_FMI3, COSIM_HOSTILE_FMU, COSIM_FEEDTHROUGH_FMU). Uses the project's
# Python environment .venv/ (`cargo xtask venv` creates it and installs
# tests/python/requirements.txt into it; PYTHON names another interpreter).
# Prints the script's "ok"/"FAIL" lines and its "N passed, N failed"; exits
# non-zero on any failure. `cargo xtask test` runs these checks too.
set -euo pipefail
cd "$(dirname "$0")/../.."

PYTHON="${PYTHON:-$(cargo xtask venv)}"
export PYTHON

exec cargo test -p cosim-tests --test interop -- --exact --nocapture \
    project_fmus_pass_fmpy_validation_and_run_in_fmpy_and_libcosim
