#!/usr/bin/env bash
# cosim against the raw loop on third-party C FMUs (issue 21): the Modelica
# Reference FMUs (https://github.com/modelica/Reference-FMUs), which the
# project does not ship. Builds their FMI 2.0 FMUs from a checkout you
# give, twice (CMake's Release build, -O3, and its default build, no
# optimisation, as their README builds them), writes chain scenarios on
# them (VanDerPol feeding N Feedthrough FMUs, N = 3, 10, 100, with and
# without a `variables` list; and VanDerPol alone, `ref_vdp`: what cosim
# adds to a macro step of one FMU) and runs cosim-bench on them with
# `--scenario`, beside the CGain chains, in one invocation.
#
#   bench/reference.sh /path/to/Reference-FMUs [cosim-bench options]
#
# Needs cmake and a C compiler. Everything is built and written under
# target/reference-fmus/; the report goes to
# target/reference-fmus/report.md (or --out FILE).
set -euo pipefail
src="${1:?usage: bench/reference.sh /path/to/Reference-FMUs [cosim-bench options]}"
shift
[ -f "$src/CMakeLists.txt" ] || { echo "$src: no CMakeLists.txt (a Reference-FMUs checkout?)" >&2; exit 2; }
cd "$(dirname "$0")/.."
work="$PWD/target/reference-fmus"
mkdir -p "$work/scenarios"

for build in release default; do
    opts=(-DFMI_VERSION=2)
    [ "$build" = release ] && opts+=(-DCMAKE_BUILD_TYPE=Release)
    cmake -S "$src" -B "$work/build-$build" "${opts[@]}" >/dev/null
    cmake --build "$work/build-$build" -j2 >/dev/null
done

# chain <file> <fmus dir> <N> <with variables: 0/1>
chain() {
    local file=$1 dir=$2 n=$3 vars=$4
    {
        echo "# bench/reference.sh: VanDerPol feeding $n Feedthrough FMUs (Reference FMUs, FMI 2.0)."
        printf '[simulation]\nstart = 0.0\nstop = 100.0\n\n'
        printf '[master]\nkind = "fixed-step"\nstep = 1e-3\nscheme = "jacobi"\nextrapolation = 0\nthreads = 1\n\n'
        printf '[[subsystems]]\nname = "vdp"\nfmu = "%s/VanDerPol.fmu"\n\n' "$dir"
        for i in $(seq 1 "$n"); do
            printf '[[subsystems]]\nname = "f%d"\nfmu = "%s/Feedthrough.fmu"\n\n' "$i" "$dir"
        done
        [ "$n" -gt 0 ] && printf '[[connections]]\nfrom = "vdp.x0"\nto = "f1.Float64_continuous_input"\n\n'
        for i in $(seq 2 "$n"); do
            printf '[[connections]]\nfrom = "f%d.Float64_continuous_output"\nto = "f%d.Float64_continuous_input"\n\n' $((i - 1)) "$i"
        done
        printf '[outputs]\n'
        [ "$vars" = 1 ] && printf 'variables = ["vdp.x0", "f%d.Float64_continuous_output"]\n' "$n"
        printf 'trace = false\nenergy_log = false\nstep_log = false\nsummary = false\n'
    } > "$file"
}

args=()
# VanDerPol alone (N = 0): what cosim adds to a macro step of one FMU.
for build in release default; do
    prefix=ref
    [ "$build" = default ] && prefix=refO0
    chain "$work/scenarios/${prefix}_vdp.toml" "$work/build-$build/fmus" 0 0
    args+=(--scenario "$work/scenarios/${prefix}_vdp.toml")
done
for n in 3 10 100; do
    for build in release default; do
        prefix=ref
        [ "$build" = default ] && prefix=refO0
        chain "$work/scenarios/${prefix}_chain_$n.toml" "$work/build-$build/fmus" "$n" 0
        chain "$work/scenarios/${prefix}_chain_${n}_vars.toml" "$work/build-$build/fmus" "$n" 1
        args+=(--scenario "$work/scenarios/${prefix}_chain_$n.toml" --scenario "$work/scenarios/${prefix}_chain_${n}_vars.toml")
    done
done

# The report goes to target/reference-fmus/report.md unless the options
# name another file.
out=(--out "$work/report.md")
for a in "$@"; do
    case "$a" in --out | --out=*) out=() ;; esac
done
cargo run --release --quiet -p cosim-bench -- --no-libcosim --contenders raw,cosim-1 \
    --only chain_3,chain_3_vars,chain_10,chain_10_vars,chain_100,chain_100_vars,kit_chain_10,b1 \
    "${args[@]}" "${out[@]}" "$@"
