#!/usr/bin/env bash
# Model Exchange benchmark (issue 41): cosim against fmusim and FMPy on the
# same Model Exchange FMUs at the same tolerance, in one invocation: the
# kit's Robertson, BouncingBallME and TimeEvents (fmus/dist/me/) and the
# Modelica Reference FMUs' VanDerPol, BouncingBall and Dahlquist, FMI 2.0
# and 3.0 builds; time per run (process start to exit, median), solver
# statistics and the error against each model's reference. The project
# does not ship the Reference FMUs or fmusim: they are built here from a
# checkout you give, as bench/reference.sh does.
#
#   bench/model_exchange/run.sh /path/to/Reference-FMUs [bench.py options]
#   (e.g. --runs 7, --rtol 1e-4,1e-6,1e-8, --fmi 2,3, --only VanDerPol,Robertson,
#    --out FILE; see bench/model_exchange/bench.py)
#
# fmusim: the Reference FMUs carried it up to v0.0.39 (it left them in
# commit 7b3fc08, "Remove fmusim and FMI 1.0 FMUs"): give a checkout of
# v0.0.39 (`git -C Reference-FMUs worktree add /tmp/ref-v0.0.39 v0.0.39`, or
# `git archive v0.0.39 ':!fmusim-gui' | tar -x -C DIR`) to compare with it;
# a checkout without fmusim/ runs against FMPy only and the report says so.
# Its own build (-DWITH_FMUSIM=ON) downloads and builds CVODE 7.3.0,
# libxml2 and zlib (build/build_cvode.py, ...), which needs the network;
# here fmusim is compiled from its sources against Debian's packages
# instead:
#
#   apt-get install -y libsundials-dev libxml2-dev libminizip-dev zlib1g-dev
#
# (CVODE 6.4.1: fmusim's one use of the SUNDIALS 7 API, SUN_COMM_NULL, is
# defined as NULL, what SUNDIALS 6's SUNContext_Create takes.) Also needs
# cmake, a C compiler and the project's Python environment with FMPy
# (.venv, `cargo xtask venv`; PYTHON names another interpreter).
#
# Everything is built and written under target/me-bench/; the report goes
# to target/me-bench/report.md (or --out FILE).
set -euo pipefail
src="${1:?usage: bench/model_exchange/run.sh /path/to/Reference-FMUs [bench.py options]}"
shift
[ -f "$src/CMakeLists.txt" ] || { echo "$src: no CMakeLists.txt (a Reference-FMUs checkout?)" >&2; exit 2; }
src="$(cd "$src" && pwd)"
cd "$(dirname "$0")/../.."
work="$PWD/target/me-bench"
mkdir -p "$work"
PYTHON="${PYTHON:-$PWD/.venv/bin/python}"
"$PYTHON" -c "import fmpy" || { echo "$PYTHON has no FMPy: run \`cargo xtask venv\` or set PYTHON" >&2; exit 2; }

# The Reference FMUs' version: their git description where the checkout
# has one (a worktree), else the directory's name (an extracted archive).
ref_version="$(git -C "$src" describe --tags 2>/dev/null || true)"
[ -n "$ref_version" ] || ref_version="$(basename "$src")"

# The FMUs (CMake's Release build, as bench/reference.sh builds them): the
# three models only (v0.0.39's Resource does not build with GCC 12's
# -Werror=stringop-truncation in FMI 3).
for v in 2 3; do
    cmake -S "$src" -B "$work/build-fmi$v" -DFMI_VERSION=$v -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$work/build-fmi$v" -j2 --target VanDerPol BouncingBall Dahlquist >/dev/null
    mkdir -p "$work/ref/fmi$v"
    for m in VanDerPol BouncingBall Dahlquist; do
        cp "$work/build-fmi$v/fmus/$m.fmu" "$work/ref/fmi$v/"
    done
done

fmusim=()
why=""
if [ ! -d "$src/fmusim" ]; then
    why="this checkout of the Reference FMUs ($ref_version) has no fmusim/: it left them in commit 7b3fc08; use v0.0.39"
elif [ ! -f /usr/include/cvode/cvode.h ] || [ ! -f /usr/include/minizip/unzip.h ] \
        || [ ! -f /usr/include/libxml2/libxml/parser.h ] || [ ! -f /usr/include/zlib.h ]; then
    why="CVODE, libxml2, minizip or zlib headers missing: apt-get install -y libsundials-dev libxml2-dev libminizip-dev zlib1g-dev"
else
    mkdir -p "$work/fmusim"
    (
        cd "$src/fmusim"
        sources=(FMI1CSSimulation.c FMI1MESimulation.c FMI2CSSimulation.c FMI2MESimulation.c
                 FMI3CSSimulation.c FMI3MESimulation.c FMIBuildDescription.c FMICVode.c FMIEuler.c
                 FMIModelDescription.c FMIRecorder.c FMISimulation.c FMIStaticInput.c FMIUtil.c FMIZip.c
                 csv.c fmusim.c miniunzip.c
                 ../src/FMI.c ../src/FMI1.c ../src/FMI2.c ../src/FMI3.c
                 ../src/structured_variable_name.yy.c ../src/structured_variable_name.tab.c)
        gcc -O3 -DNDEBUG -w -o "$work/fmusim/fmusim" "-DFMUSIM_VERSION=\"$ref_version\"" -DSUN_COMM_NULL=NULL \
            -I. -I../include -I/usr/include/libxml2 -I/usr/include/minizip "${sources[@]}" \
            -lxml2 -lminizip -lz -lsundials_cvode -lsundials_nvecserial -ldl -lm
    )
    fmusim=(--fmusim "$work/fmusim/fmusim")
fi
[ -z "$why" ] || echo "fmusim: not built ($why); comparing against FMPy only" >&2

# BUILD_ONLY=1: the peers and the FMUs only (bench/whole_run/run.sh uses them).
if [ -n "${BUILD_ONLY:-}" ]; then
    rm -f "$work/fmusim-why"
    [ -z "$why" ] || echo "$why" > "$work/fmusim-why"
    exit 0
fi

cargo build --release --quiet -p cosim-cli
[ -f fmus/dist/.stamp ] || cargo xtask fmus   # as tests/python/cosim_py does

out=(--out "$work/report.md")
for a in "$@"; do
    case "$a" in --out | --out=*) out=() ;; esac
done
exec "$PYTHON" bench/model_exchange/bench.py --cosim target/release/cosim "${fmusim[@]}" \
    --no-fmusim-why "$why" --ref-fmus "$work/ref" --ref-version "$ref_version" --python "$PYTHON" \
    "${out[@]}" "$@"
