# bench/lib.sh: helpers shared by the benchmark scripts that run INSIDE the
# VM (run-putget, run-am); sourced, not run.  See bench/README.md.
#
# The caller sets PROG, OUT, PERF (triad-perf, absolute), WORLD,
# DEV0/DEV1 and ADDR0/ADDR1 (client node 0, server node 1), TOOL_TIMEOUT,
# and calls bench_setup_pair and bench_tsc first.
# shellcheck shell=bash

say() { printf '%s: %s\n' "$PROG" "$*" >&2; }
usage_die() { echo "$PROG: $*" >&2; echo "try '$PROG --help'" >&2; exit 2; }

# bench_check_tools TOOL...: every tool is on PATH, and we run in the VM.
bench_check_tools() {
    local t
    for t in "$@" taskset timeout; do
        command -v "$t" >/dev/null || usage_die "$t not found (perftest, util-linux, coreutils)"
    done
    if ! command -v fabric-ctl >/dev/null; then
        usage_die "fabric-ctl not on PATH: run me inside tests/vm/vm1 (see bench/README.md)"
    fi
}

# bench_setup_pair LABEL: the pair (client node 0, server node 1, plane 0)
# and a world of exactly these two ranks, whatever the harness's size.
bench_setup_pair() {
    DEV0=$(fabric-ctl dev 0 0) DEV1=$(fabric-ctl dev 1 0)
    ADDR0=$(fabric-ctl addr 0 0) ADDR1=$(fabric-ctl addr 1 0)
    WORLD=$OUT/world
    printf '# bench/%s: node 0 and node 1, plane 0\nport 7471\n0 %s\n1 %s\n' \
        "$1" "$ADDR0" "$ADDR1" >"$WORLD"
}

# perftest turns TSC cycles into time with a clock rate it estimates against
# gettimeofday; under TCG that estimate is noisy (it may fail: "inf", or be
# off by a few %), so the latency tools report cycles (-C) and we divide by
# the guest kernel's calibrated TSC rate, the "cpu MHz" of /proc/cpuinfo.
# (The bandwidth tools have no such option: their figures keep perftest's
# own estimate.)
bench_tsc() {
    TSC_MHZ=$(awk -F: '/^cpu MHz/ { print $2 + 0; exit }' /proc/cpuinfo)
    awk -v m="${TSC_MHZ:-0}" 'BEGIN { exit !(m > 100) }' ||
        { say "cannot read the CPU clock rate from /proc/cpuinfo"; exit 1; }
}
cycles_to_us() { [[ -n $1 ]] && awk -v c="$1" -v m="$TSC_MHZ" 'BEGIN { printf "%.2f", c / m }'; }

PORT=18515

# BENCH_CLIENT_ENV (an array of NAME=VALUE, unset by default): set for the
# client of every run below and not for its server (e.g. an LD_PRELOAD that
# times the client alone).  cenv: the command prefix that sets it.
client_env() { cenv=(env ${BENCH_CLIENT_ENV[@]+"${BENCH_CLIENT_ENV[@]}"}); }

# pair_run TAG WHAT PAUSE SERVER CLIENT...: the command in the array named
# SERVER in the background (output $OUT/TAG.server), PAUSE seconds for it to
# listen, then the CLIENT command with BENCH_CLIENT_ENV (output $OUT/TAG.out).
# A failed run is not retried here (the callers do, from scratch): a server
# whose client died can hang, so it is killed.  WHAT names the tool.
pair_run() {
    local tag=$1 what=$2 pause=$3 srv rc cenv
    local -n server_cmd=$4
    shift 4
    client_env
    "${server_cmd[@]}" >"$OUT/$tag.server" 2>&1 &
    srv=$!
    sleep "$pause"
    "${cenv[@]}" "$@" >"$OUT/$tag.out" 2>&1
    rc=$?
    ((rc == 0)) || kill "$srv" 2>/dev/null
    wait "$srv" 2>/dev/null
    ((rc == 0)) || say "$tag: $what failed (status $rc); see $OUT/$tag.out and .server"
    return "$rc"
}

# perftest NAME TAG ARGS...: one perftest run (server on node 1, vCPU 1,
# client on node 0, vCPU 0, a fresh port each time); the client's output
# goes to $OUT/TAG.out (pair_run).
perftest() {
    perftest_between "$DEV0" "$ADDR0" 0 "$DEV1" "$ADDR1" 1 "$@"
}
# perftest_between CDEV CADDR CCPU SDEV SADDR SCPU NAME TAG ARGS...: the same
# between any two devices, the client on vCPU CCPU, the server on SCPU.
perftest_between() {
    local cdev=$1 caddr=$2 ccpu=$3 sdev=$4 saddr=$5 scpu=$6 tool=$7 tag=$8 server
    shift 8
    PORT=$((PORT + 1))
    # shellcheck disable=SC2034 # pair_run reads it by name
    server=(timeout "$TOOL_TIMEOUT" taskset -c "$scpu" "$tool" -R -F -d "$sdev"
        --source_ip "$saddr" -p "$PORT" "$@")
    pair_run "$tag" "$tool" 2 server timeout "$TOOL_TIMEOUT" taskset -c "$ccpu" "$tool" -R -F \
        -d "$cdev" --source_ip "$caddr" -p "$PORT" "$@" "$saddr"
}

# ucx TAG ARGS...: one ucx_perftest run, laid out as perftest's: server on
# node 1 (vCPU 1, only DEV1), client on node 0 (vCPU 0, only DEV0), both on
# rc_v: the rc_verbs transport, with ud_verbs only to set the RC connection
# up (UCX wants an auxiliary transport for that; alone, rc_verbs gives
# "no auxiliary transport"); no shared memory, no TCP for data (the
# perftest's own out-of-band exchange goes over TCP to ADDR1).
# The client's output goes to $OUT/TAG.out.
ucx() {
    local tag=$1 server
    shift
    PORT=$((PORT + 1))
    local env=(env UCX_TLS=rc_v UCX_UD_ETH_DGID_CHECK=n UCX_WARN_UNUSED_ENV_VARS=n)
    # shellcheck disable=SC2034 # pair_run reads it by name
    server=("${env[@]}" UCX_NET_DEVICES="$DEV1:1" timeout "$TOOL_TIMEOUT" taskset -c 1
        ucx_perftest -p "$PORT")
    pair_run "$tag" ucx_perftest 2 server "${env[@]}" UCX_NET_DEVICES="$DEV0:1" \
        timeout "$TOOL_TIMEOUT" taskset -c 0 ucx_perftest "$ADDR1" -p "$PORT" "$@"
}
# ucx_col FILE COL: column COL of ucx_perftest's "Final:" line (3: the
# median latency, us; 7: the bandwidth over the whole run, MB/s = MiB/s).
ucx_col() {
    awk -v c="$2" '$1 == "Final:" { v = $c } END { if (v != "") print v }' "$1"
}

# triad TAG ARGS...: one triad-perf run with the same command line on both
# ranks, rank 1 on vCPU 1 in the background, rank 0 on vCPU 0 (BENCH_NO_PIN=1:
# both anywhere); rank 0's JSON goes to $OUT/TAG.out.
triad() {
    local tag=$1 r1 rc rc1 pin0=(taskset -c 0) pin1=(taskset -c 1) cenv
    shift
    client_env
    [[ ${BENCH_NO_PIN:-0} == 1 ]] && pin0=() pin1=()
    TRIAD_WORLD=$WORLD TRIAD_RANK=1 timeout "$TOOL_TIMEOUT" "${pin1[@]}" "$PERF" "$@" \
        --json --timeout 30 >"$OUT/$tag.server" 2>&1 &
    r1=$!
    TRIAD_WORLD=$WORLD TRIAD_RANK=0 "${cenv[@]}" timeout "$TOOL_TIMEOUT" "${pin0[@]}" \
        "$PERF" "$@" --json --timeout 30 >"$OUT/$tag.out" 2>"$OUT/$tag.err"
    rc=$?
    wait "$r1"
    rc1=$?
    ((rc == 0 && rc1 == 0)) && return 0
    say "$tag: triad-perf failed (rank 0 status $rc, rank 1 status $rc1);" \
        "see $OUT/$tag.out, .err, .server"
    return 1
}

# perftest_col FILE SIZE COL: column COL of perftest's result line for SIZE.
perftest_col() {
    awk -v s="$2" -v c="$3" '$1 == s && $2 ~ /^[0-9]+$/ { v = $c } END { if (v != "") print v }' "$1"
}
# json_num FILE KEY: a number from triad-perf's JSON line (the last one).
json_num() {
    sed -n "s/.*\"$2\":\([0-9.eE+-]*\).*/\1/p" "$1" | tail -n1
}
median() {
    printf '%s\n' "$@" | grep -E '^[0-9.]+$' | sort -g |
        awk '{ a[NR] = $1 } END { if (NR == 0) print "NA"; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
# minimum V...: the smallest of the numbers given, or NA.
minimum() {
    printf '%s\n' "$@" | grep -E '^[0-9.]+$' | sort -g | awk 'NR == 1 { v = $1 } END { print (NR ? v : "NA") }'
}
# ---- the machine's speed -------------------------------------------------------
# The VM's vCPUs run at two speeds, for seconds at a time and each on its
# own (1.3-2x apart for a loop through memory, measured 2026-12-04 under
# TCG; docs/measurements.md); bench/speed.c times a
# fixed loop on a vCPU.  bench_speed_setup builds it into $OUT/speed;
# bench_speed prints the slower vCPU's time per step now (ns).  The scripts
# probe before and after each measured run and keep the slower probe as the
# run's speed (speed_probed); a run whose speed is within SPEED_SLACK of the
# boot's fastest probe ran at full speed (bench_speed_limit, at_speed).
SPEED_SLACK=1.25
bench_speed_setup() {
    SPEED_BIN=$OUT/speed
    cc -O2 -o "$SPEED_BIN" "$(dirname "${BASH_SOURCE[0]}")/speed.c" ||
        usage_die "cannot build bench/speed.c (cc)"
}
# slower A B: the larger of two times per step, or NA if either is not one.
slower() {
    awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) print (a > b ? a : b); else print "NA" }'
}
bench_speed() {
    slower "$(taskset -c 0 "$SPEED_BIN")" "$(taskset -c 1 "$SPEED_BIN")"
}
# speed_probed KIND BEFORE: appends to the caller's SPEEDS[KIND] the speed of
# the run just made: the slower of BEFORE (bench_speed before it) and now.
speed_probed() {
    SPEEDS[$1]+="$(slower "$2" "$(bench_speed)") "
}
# bench_speed_limit SPEED...: sets SPEED_MIN (the boot's fastest probe) and
# SPEED_LIM (SPEED_SLACK times it), and prints what "at full speed" means.
bench_speed_limit() {
    SPEED_MIN=$(minimum "$@")
    SPEED_LIM=$(awk -v m="$SPEED_MIN" -v k="$SPEED_SLACK" \
        'BEGIN { if (m + 0 > 0) printf "%.3f", m * k; else print 0 }')
    echo
    echo "at full speed: only the runs whose slower vCPU ran the speed loop within $SPEED_SLACK x"
    echo "of the boot's fastest probe ($SPEED_MIN ns a step; each run's probe is the slower of"
    echo "before and after it; how many runs were kept, of $REPS)"
}
# at_speed RUNS SPEEDS: the figures of RUNS (one per round) whose speed
# (SPEEDS, the same rounds) is a number <= SPEED_LIM; the others as NA, so
# that rounds still line up (rounds_span).
at_speed() {
    awk -v r="$1" -v s="$2" -v lim="$SPEED_LIM" 'BEGIN {
        n = split(r, R, " "); split(s, S, " ")
        for (i = 1; i <= n; i++)
            printf "%s ", (S[i] ~ /^[0-9.]+$/ && S[i] + 0 <= lim + 0) ? R[i] : "NA"
        printf "\n" }'
}
# speed_compare A_RUNS A_SPEEDS B_RUNS B_SPEEDS [OP TARGET]: A over B with
# only their full-speed runs (at_speed): sets SC_RATIO (of the medians),
# SC_VERDICT and SC_TAIL ("runs X and Y; rounds ...": how many runs each
# kept, each round's ratio where both did).
# shellcheck disable=SC2034 # SC_* are read by the callers
speed_compare() {
    local a b
    a=$(at_speed "$1" "$2") b=$(at_speed "$3" "$4")
    # shellcheck disable=SC2086
    SC_RATIO=$(ratio "$(median $a)" "$(median $b)")
    SC_VERDICT=$(verdict "$SC_RATIO" "${5-}" "${6-}")
    # shellcheck disable=SC2086
    SC_TAIL="runs $(count_valid $a) and $(count_valid $b); rounds $(rounds_span "$a" "$b" "${5-}" "${6-}")"
}
# count_valid V...: how many of the words are numbers.
count_valid() {
    printf '%s\n' "$@" | grep -cE '^[0-9.]+$'
}
# valid V: a finite number >= 0 (perftest prints "inf" when its CPU clock
# estimate fails, which happens under TCG); positive unless ZERO_OK=1.
valid() {
    [[ $1 =~ ^[0-9]+(\.[0-9]+)?$ ]] &&
        awk -v v="$1" -v z="${ZERO_OK:-0}" 'BEGIN { exit !(v > 0 || z) }'
}
# ratio A B: A / B with 3 decimals, or NA.
ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.3f", a / b; else print "NA" }'
}
# rounds_span A_RUNS B_RUNS [OP TARGET]: the ratio round by round, A's run
# of round i over B's (the lists hold one figure per round, in round order;
# a round with NA on either side is skipped), as "LO-HI"; with a target
# ", K/N met": K of the N rounds on the target's side.  The runs of one
# boot spread more than some ratios are from their targets, so a ratio of
# medians can land on either side by chance: the span says whether every
# round agrees.  NA when no round has both.
rounds_span() {
    awk -v a="$1" -v b="$2" -v op="${3-}" -v x="${4-}" 'BEGIN {
        na = split(a, A, " "); nb = split(b, B, " "); n = 0; k = 0
        for (i = 1; i <= na && i <= nb; i++) {
            if (A[i] !~ /^[0-9.]+$/ || B[i] !~ /^[0-9.]+$/ || A[i] + 0 <= 0 || B[i] + 0 <= 0)
                continue
            r = A[i] / B[i]
            if (!n || r < lo) lo = r
            if (!n || r > hi) hi = r
            n++
            if (x != "" && ((op == ">=" && r >= x + 0) || (op == "<=" && r <= x + 0))) k++
        }
        if (!n) { print "NA"; exit }
        printf "%.3f-%.3f", lo, hi
        if (x != "") printf ", %d/%d met", k, n
        printf "\n" }'
}
# verdict VALUE OP TARGET: ok, MISSED, NA, or (info) without a target.
verdict() {
    awk -v r="$1" -v op="$2" -v x="$3" 'BEGIN {
        if (x == "") { print "(info)"; exit }
        if (r == "NA") { print "NA"; exit }
        ok = (op == ">=") ? r + 0 >= x + 0 : r + 0 <= x + 0
        print ok ? "ok" : "MISSED" }'
}
