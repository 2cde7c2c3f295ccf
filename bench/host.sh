# shellcheck shell=bash
# host.sh: sourced by the host wrappers (bench/putget, am, copy, ratios, icount, init,
# ftrace, offcpu), each of which boots the one-VM fabric and runs its
# bench/run-NAME in it.
#
# bench_vm NAME NODES PLANES TIMEOUT ARGS...: from the repository's root,
# checks that $TRIAD_BUILD (default build) holds triad-perf, then replaces
# the shell with
#   tests/vm/vm1 --nodes NODES --planes PLANES --timeout TIMEOUT \
#       -- bench/run-NAME --build BUILD ARGS...
# Exit status: 2 when triad-perf is not built; else vm1's (run-NAME's; 124
# on timeout, 125 if the VM or fabric failed).
bench_vm() {
    local name=$1 nodes=$2 planes=$3 timeout=$4 root build
    shift 4
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
    cd "$root" || exit 2
    build=${TRIAD_BUILD:-build}
    if [[ ! -x $build/tools/perf/triad-perf ]]; then
        echo "$name: $build/tools/perf/triad-perf is not built (meson setup $build && ninja -C $build)" >&2
        exit 2
    fi
    exec tests/vm/vm1 --nodes "$nodes" --planes "$planes" --timeout "$timeout" \
        -- "bench/run-$name" --build "$build" "$@"
}
