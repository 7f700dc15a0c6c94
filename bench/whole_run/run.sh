#!/usr/bin/env bash
# The whole run's cost (issue 42), in one invocation: a short run of one
# FMU against fmusim's whole process, a sweep of 200 short runs against
# FMPy reusing one instance, the initialization of a chain of 2000 FMUs,
# a traced run against outputs off, every FMU isolated against
# in-process; each with its goal (bench/whole_run/bench.py says what is
# measured and how).
#
#   bench/whole_run/run.sh /path/to/Reference-FMUs [bench.py options]
#   (e.g. --runs 9, --only sweep,init, --out FILE)
#
# The Reference FMUs (VanDerPol, BouncingBall) and fmusim are built from
# the checkout you give, as bench/model_exchange/run.sh builds them (same
# directory, target/me-bench/; fmusim needs v0.0.39 and Debian's CVODE,
# libxml2, minizip and zlib headers: see there). The chains use the
# benchmark's C FMU CGain (fmus/dist/c, built by cosim-bench --install).
# Needs the project's Python environment with FMPy (.venv, `cargo xtask
# venv`; PYTHON names another interpreter). Report: target/whole-run.md
# (or --out FILE). Run it on an otherwise idle machine.
set -euo pipefail
src="${1:?usage: bench/whole_run/run.sh /path/to/Reference-FMUs [bench.py options]}"
shift
cd "$(dirname "$0")/../.."
PYTHON="${PYTHON:-$PWD/.venv/bin/python}"
export PYTHON
BUILD_ONLY=1 bash bench/model_exchange/run.sh "$src"
work="$PWD/target/me-bench"
fmusim=()
if [ -x "$work/fmusim/fmusim" ] && [ ! -s "$work/fmusim-why" ]; then
    fmusim=(--fmusim "$work/fmusim/fmusim")
fi
cargo build --release --quiet -p cosim-cli
cargo build --release --quiet -p cosim-isolation --example round_trip
cargo run --release --quiet -p cosim-bench -- --install
out=(--out "$PWD/target/whole-run.md")
for a in "$@"; do
    case "$a" in --out | --out=*) out=() ;; esac
done
exec "$PYTHON" bench/whole_run/bench.py --cosim target/release/cosim \
    --cgain fmus/dist/c/fmi2/CGain.fmu --ref-fmus "$work/ref" "${fmusim[@]}" \
    --python "$PYTHON" --round-trip target/release/examples/round_trip "${out[@]}" "$@"
