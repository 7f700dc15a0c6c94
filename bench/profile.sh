#!/usr/bin/env bash
# Instructions per FMU and macro step of cosim's run loop (issue 21),
# counted by valgrind's callgrind: deterministic, unlike timings, so a
# change to the hot path can be judged on a loaded machine.
#
#   bench/profile.sh                      # chain_3 chain_10 chain_10_vars chain_100, 20000 steps
#   bench/profile.sh chain_10 b1_quarter_car --steps 5000
#   bench/profile.sh --annotate chain_10  # also the functions, self cost
#   bench/profile.sh target/reference-fmus/scenarios/ref_chain_10.toml   # any scenario file
#
# The figure: instructions of Execution::run_with_outputs (the whole run
# loop with initialization, which is negligible at these step counts)
# divided by steps x FMUs. The FMUs' own instructions are included (CGain:
# about 35 per FMU step). Needs valgrind; builds the release `cosim`.
set -euo pipefail
cd "$(dirname "$0")/.."
steps=20000
annotate=0
ids=()
while [ $# -gt 0 ]; do
    case "$1" in
        --steps) steps="$2"; shift 2 ;;
        --annotate) annotate=1; shift ;;
        *) ids+=("$1"); shift ;;
    esac
done
[ ${#ids[@]} -gt 0 ] || ids=(chain_3 chain_10 chain_10_vars chain_100)
cargo build --release --quiet -p cosim-cli
cargo run --release --quiet -p cosim-bench -- --install
target="${CARGO_TARGET_DIR:-target}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
for id in "${ids[@]}"; do
    # A benchmark id, or a scenario file (bench/reference.sh writes some).
    case "$id" in
        *.toml) scenario="$id"; id="$(basename "$id" .toml)" ;;
        *) scenario="bench/scenarios/$id.toml" ;;
    esac
    n=$(grep -c '^\[\[subsystems\]\]' "$scenario")
    step=$(sed -n 's/^step *= *\([0-9.e+-]*\).*/\1/p' "$scenario" | head -1)
    stop=$(python3 -c "print($steps * $step)")
    out="$tmp/$id.callgrind"
    valgrind --tool=callgrind --callgrind-out-file="$out" \
        "$target/release/cosim" run "$scenario" --stop "$stop" -q --no-progress --out "$tmp/out" >/dev/null 2>&1
    ir=$(callgrind_annotate --inclusive=yes "$out" 2>/dev/null |
        grep 'Execution::run_with_outputs \[' | head -1 | awk '{gsub(",","",$1); print $1}')
    python3 -c "print('%-16s %3d FMUs %7d steps: %5.0f instructions per FMU and macro step' % ('$id', $n, $steps, $ir / ($steps * $n)))"
    if [ "$annotate" = 1 ]; then
        # Self cost per function, in instructions per FMU and macro step.
        callgrind_annotate "$out" 2>/dev/null | sed -n '/file:function/,$p' | sed 1,2d | head -25 |
            awk -v d="$((steps * n))" '{x = $1; gsub(",", "", x); $1 = ""; $2 = ""; $3 = ""; printf "%7.1f %s\n", x / d, $0}'

    fi
done
