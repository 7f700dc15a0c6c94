#!/usr/bin/env bash
# What `cosim run`'s progress display costs per macro step (issue 21): the
# release `cosim` on benchmark scenarios, runs alternating without the
# display (--no-progress), with it as a line every 10 % (stderr not a
# terminal) and, where util-linux's `script` is installed, as a bar on a
# pseudo-terminal. The figure is the stepping loop's wall time that
# `cosim run` reports ("done: ... (X s)") per FMU and macro step, in ns,
# the median of the runs of each variant.
#
#   bench/progress.sh                         # chain_3 chain_3_sampled, 3e6 steps, 5 runs each
#   bench/progress.sh chain_10 --runs 9 --steps 1000000
#
# Run it on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=5
steps=3000000
ids=()
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) runs="$2"; shift 2 ;;
        --steps) steps="$2"; shift 2 ;;
        *) ids+=("$1"); shift ;;
    esac
done
[ ${#ids[@]} -gt 0 ] || ids=(chain_3 chain_3_sampled)
cargo build --release --quiet -p cosim-cli
cargo run --release --quiet -p cosim-bench -- --install
cosim="${CARGO_TARGET_DIR:-target}/release/cosim"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
variants=(none lines)
command -v script >/dev/null && variants+=(bar)
echo "| scenario | FMUs | steps | $(printf '%s | ' "${variants[@]}")"
echo "|---|--:|--:|$(printf -- '--:|%.0s' "${variants[@]}")"
for id in "${ids[@]}"; do
    scenario="bench/scenarios/$id.toml"
    n=$(grep -c '^\[\[subsystems\]\]' "$scenario")
    step=$(sed -n 's/^step *= *\([0-9.e+-]*\).*/\1/p' "$scenario" | head -1)
    stop=$(python3 -c "print($steps * $step)")
    declare -A times=()
    for _ in $(seq "$runs"); do
        for v in "${variants[@]}"; do
            args=(run "$scenario" --stop "$stop" --out "$out/$id")
            case "$v" in
                none) line=$("$cosim" "${args[@]}" --no-progress 2>&1 | grep '^done:') ;;
                lines) line=$("$cosim" "${args[@]}" 2>&1 | grep '^done:') ;;
                bar) line=$(script -qec "$cosim ${args[*]}" /dev/null 2>&1 | tr '\r' '\n' | grep -a 'done:') ;;
            esac
            s=$(sed -n 's/.*macro steps (\([0-9.]*\) s).*/\1/p' <<<"$line")
            times[$v]="${times[$v]:-} $s"
        done
    done
    row="| $id | $n | $steps |"
    for v in "${variants[@]}"; do
        row+=" $(python3 -c "import statistics,sys; print('%.1f' % (statistics.median(map(float, sys.argv[1:])) / ($steps * $n) * 1e9))" ${times[$v]}) |"
    done
    echo "$row"
    unset times
done
