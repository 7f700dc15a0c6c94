#!/usr/bin/env bash
# Builds the fuzz targets with libFuzzer on stable Rust (the coverage
# instrumentation cargo-fuzz uses with `--sanitizer none`, no nightly flag)
# and runs each for FUZZ_SECONDS (default 10) seconds.
#
#   fuzz/run.sh                      # every target, 10 s each (what CI runs)
#   FUZZ_SECONDS=60 fuzz/run.sh elf  # the ELF check of FMU binaries
#   FUZZ_SECONDS=600 fuzz/run.sh archive
#   FUZZ_JOBS=2 FUZZ_SECONDS=3600 fuzz/run.sh scenario
#
# The corpus grows in fuzz/corpus/<target>/ (seeded from fuzz/seeds/, the
# shipped scenarios and small generated archives); a crash, leak or timeout
# leaves its input in fuzz/artifacts/<target>/ and fails the script. Turn
# each one into a regression test in tests/tests/bad_input.rs
# (docs/reliability.md).
set -euo pipefail
cd "$(dirname "$0")"

seconds="${FUZZ_SECONDS:-10}"
jobs="${FUZZ_JOBS:-1}"
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(model_description scenario archive elf)
fi
triple="$(rustc -vV | sed -n 's/^host: //p')"
target_dir="${CARGO_TARGET_DIR:-$PWD/target}"

# --target keeps the flags off build scripts and proc macros.
export RUSTFLAGS="-Cpasses=sancov-module \
 -Cllvm-args=-sanitizer-coverage-level=4 \
 -Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
 -Cllvm-args=-sanitizer-coverage-pc-table \
 -Cllvm-args=-sanitizer-coverage-trace-compares \
 --cfg fuzzing -Cdebug-assertions -Coverflow-checks -Cforce-frame-pointers"
cargo build --release --target "$triple" --bins --quiet

# Seed corpora.
mkdir -p corpus/model_description corpus/scenario corpus/archive corpus/elf
cp seeds/*.xml corpus/model_description/
cp ../scenarios/*.toml corpus/scenario/
python3 - <<'EOF'
import zipfile
md2 = open("seeds/gain_fmi2.xml", "rb").read()
md3 = open("seeds/gain_fmi3.xml", "rb").read()
def archive(path, entries, method=zipfile.ZIP_DEFLATED):
    with zipfile.ZipFile(path, "w", method) as z:
        for name, data in entries:
            z.writestr(name, data)
archive("corpus/archive/fmi2.fmu", [
    ("modelDescription.xml", md2),
    ("binaries/linux64/Gain.so", b"\x7fELF" + bytes(60)),
    ("resources/", b""),
])
archive("corpus/archive/fmi3-stored.fmu", [
    ("modelDescription.xml", md3),
    ("binaries/x86_64-linux/Gain.so", b"\x7fELF"),
], zipfile.ZIP_STORED)
# Two entries of one name (refused whichever entry it is).
import warnings
warnings.simplefilter("ignore")
archive("corpus/archive/dup.fmu", [
    ("modelDescription.xml", md2),
    ("modelDescription.xml", md3),
], zipfile.ZIP_STORED)
archive("corpus/archive/slip.fmu", [
    ("modelDescription.xml", b"<x/>"),
    ("../evil", b"x"),
], zipfile.ZIP_STORED)
EOF

# ELF: a small real shared library exporting the FMI 2 functions, cut
# short, and not ELF at all.
{
    for f in GetTypesPlatform GetVersion SetDebugLogging Instantiate FreeInstance \
        SetupExperiment EnterInitializationMode ExitInitializationMode Terminate \
        Reset GetReal GetInteger GetBoolean GetString SetReal SetInteger \
        SetBoolean SetString DoStep; do
        echo "void fmi2$f(void) {}"
    done
} >corpus/elf/stub.c
cc -shared -fPIC -o corpus/elf/stub.so corpus/elf/stub.c
rm corpus/elf/stub.c
head -c 1000 corpus/elf/stub.so >corpus/elf/stub-cut1000.so
printf 'not a library\n' >corpus/elf/text.so

extra=()
if [ "$jobs" -gt 1 ]; then
    # Parallel workers log to fuzz-<n>.log in the working directory.
    extra=(-jobs="$jobs" -workers="$jobs")
fi
status=0
for t in "${targets[@]}"; do
    mkdir -p "artifacts/$t"
    echo "fuzz: $t for ${seconds} s"
    # The targets' work directories (a TempDir in a static, never dropped:
    # libFuzzer ends with exit) go where the next run removes them.
    work="$target_dir/fuzz-tmp/$t"
    rm -rf "$work" && mkdir -p "$work"
    if ! TMPDIR="$work" "$target_dir/$triple/release/$t" "corpus/$t" \
        -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=1024 \
        -print_final_stats=1 "${extra[@]}" \
        -artifact_prefix="artifacts/$t/" >"artifacts/$t.log" 2>&1; then
        echo "fuzz: $t FAILED; input in fuzz/artifacts/$t/, log in fuzz/artifacts/$t.log"
        tail -n 40 "artifacts/$t.log"
        status=1
    else
        grep -E '^stat::number_of_executed_units|^Done' "artifacts/$t.log" | tail -n 1 || true
    fi
done
exit $status
