# shellcheck shell=bash disable=SC2034 # variables here are used by the sourcing scripts
# Host-side helpers shared by tests/vm/{mkinitramfs,vm1,vmn,smoke}.
# Sourced, not executed. Callers set PROG (their name, for messages) first.

# C locale: $EPOCHREALTIME and awk must use "." as the decimal point.
export LC_ALL=C

# Absolute path of tests/vm (this file lives in tests/vm/lib/).
VM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
VM_CACHE=${TRIAD_VM_CACHE:-/var/tmp/triad-vm}

# Exit codes of vm1/vmn that are not the guest command's own status.
VM_RC_USAGE=2       # bad command line
VM_RC_TIMEOUT=124   # the run hit --timeout (same code as timeout(1))
VM_RC_HARNESS=125   # the VM did not boot, crashed, or the fabric setup failed

msg() { printf '%s: %s\n' "${PROG:-triad-vm}" "$*" >&2; }
die() { msg "$*"; exit "$VM_RC_HARNESS"; }
usage_die() { msg "$*"; msg "try '$PROG --help'"; exit "$VM_RC_USAGE"; }

# need_cmd CMD [PACKAGE]: fail with a hint when a host tool is missing.
need_cmd() {
    command -v "$1" >/dev/null 2>&1 ||
        die "$1 not found${2:+ (Debian package $2)}; run tests/vm/setup-host"
}

# is_uint VALUE: true when VALUE is a non-negative decimal integer.
is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

# find_kernel: set VM_KVER and VM_KERNEL to a Debian kernel that has rxe.
# TRIAD_VM_KVER picks a version; otherwise the newest installed one wins.
find_kernel() {
    local v best=""
    if [[ -n ${TRIAD_VM_KVER:-} ]]; then
        best=$TRIAD_VM_KVER
    else
        for v in /lib/modules/*; do
            v=${v##*/}
            [[ -r /boot/vmlinuz-$v ]] || continue
            compgen -G "/lib/modules/$v/kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko*" >/dev/null || continue
            if [[ -z $best ]] || [[ $(printf '%s\n%s\n' "$best" "$v" | sort -V | tail -n1) == "$v" ]]; then
                best=$v
            fi
        done
    fi
    [[ -n $best ]] || die "no kernel with rdma_rxe under /lib/modules + /boot; run tests/vm/setup-host (linux-image-amd64)"
    [[ -r /boot/vmlinuz-$best ]] || die "/boot/vmlinuz-$best not readable"
    VM_KVER=$best
    VM_KERNEL=/boot/vmlinuz-$best
}

# prepare_kernel: make VM_KERNEL the uncompressed kernel (ELF with a PVH entry
# point) when possible: under TCG, decompressing the xz bzImage takes seconds
# of every boot. It is extracted once into the cache (found by the compressed
# stream's magic number, decompressed, checked to be ELF) and reused while the
# bzImage is unchanged. TRIAD_VM_BZIMAGE=1 keeps the bzImage.
prepare_kernel() {
    [[ -z ${TRIAD_VM_BZIMAGE:-} ]] || return 0
    grep -qx 'CONFIG_PVH=y' "/boot/config-$VM_KVER" 2>/dev/null || return 0
    local out=$VM_CACHE/vmlinux-$VM_KVER key magic tool off
    key=$(stat -L -c '%s %Y' "$VM_KERNEL")
    mkdir -p "$VM_CACHE"
    (
        flock 9
        [[ -s $out && $(cat "$out.key" 2>/dev/null) == "$key" ]] && exit 0
        for magic in '\xfd7zXZ\x00:xz' '\x28\xb5\x2f\xfd:zstd' '\x1f\x8b\x08:gzip'; do
            tool=${magic##*:}
            command -v "$tool" >/dev/null 2>&1 || continue
            off=$(LC_ALL=C grep -obUaP "${magic%:*}" "$VM_KERNEL" | head -n1 | cut -d: -f1)
            [[ -n $off ]] || continue
            tail -c +"$((off + 1))" "$VM_KERNEL" | "$tool" -dc 2>/dev/null >"$out.tmp.$$"
            if [[ $(head -c4 "$out.tmp.$$" | od -An -tx1 | tr -d ' ') == 7f454c46 ]]; then
                mv -f "$out.tmp.$$" "$out" && echo "$key" >"$out.key"
                exit 0
            fi
        done
        rm -f "$out.tmp.$$"
        exit 1
    ) 9>"$VM_CACHE/.lock-kernel" || { msg "cannot extract the kernel; booting the bzImage (slower)"; return 0; }
    VM_KERNEL=$out
}

# host_cpus: print the host CPUs this process may run on, one per line.
host_cpus() {
    local list
    list=$(taskset -pc $$ 2>/dev/null | sed 's/.*: //') || true
    if [[ -z $list ]]; then seq 0 $(($(nproc) - 1)); return; fi
    local part a b
    IFS=, read -ra parts <<<"$list"
    for part in "${parts[@]}"; do
        if [[ $part == *-* ]]; then a=${part%-*}; b=${part#*-}; seq "$a" "$b"
        else echo "$part"; fi
    done
}

# pin_vcpus PID FIRST: pin QEMU PID's vCPU threads ("CPU i/TCG" or "CPU i/KVM", named thanks to
# -name ...,debug-threads=on) to host CPUs, vCPU i on the (FIRST+i)-th allowed
# CPU, round robin. Pinning keeps latency figures stable (docs/fabric.md, Noise).
# Best effort: waits up to 10 s for the threads, and never fails the run.
pin_vcpus() {
    local pid=$1 first=$2 cpus n tries=0 t comm idx
    command -v taskset >/dev/null 2>&1 || return 0
    mapfile -t cpus < <(host_cpus)
    n=${#cpus[@]}
    ((n > 0)) || return 0
    while ((tries++ < 100)); do
        kill -0 "$pid" 2>/dev/null || return 0
        local found=0
        for t in /proc/"$pid"/task/*; do
            comm=$(cat "$t/comm" 2>/dev/null) || continue
            [[ $comm =~ ^CPU\ ([0-9]+)/(TCG|KVM)$ ]] || continue
            idx=${BASH_REMATCH[1]}
            taskset -pc "${cpus[$(((first + idx) % n))]}" "${t##*/}" >/dev/null 2>&1 || true
            found=1
        done
        ((found)) && return 0
        sleep 0.1
    done
    return 0
}

# watchdog SEC FLAGFILE PID...: after SEC seconds create FLAGFILE and kill the
# PIDs (the VMs). Run it in the background; killing it also ends its sleep.
watchdog() {
    local sec=$1 flag=$2 sleeper
    shift 2
    sleep "$sec" &
    sleeper=$!
    # shellcheck disable=SC2064 # expand now
    trap "kill $sleeper 2>/dev/null; exit 0" TERM INT HUP
    wait "$sleeper" || return 0
    touch "$flag"
    kill "$@" 2>/dev/null
    return 0
}

# run_lock TIMEOUT: one VM run at a time on this machine. TCG guests that share
# oversubscribed host CPUs slow down by 10x or more (measured: a trivial run
# took 70-125 s instead of 7 s next to two other VMs): a vCPU spins on a lock
# whose holder's thread is descheduled. Waits at most TIMEOUT seconds.
# TRIAD_VM_PARALLEL=1 skips the lock.
run_lock() {
    [[ -z ${TRIAD_VM_PARALLEL:-} ]] || return 0
    mkdir -p "$VM_CACHE"
    exec {RUN_LOCK_FD}>>"$VM_CACHE/run.lock"
    flock -n "$RUN_LOCK_FD" && return 0
    msg "waiting for another VM run on this machine to finish (TRIAD_VM_PARALLEL=1 skips this)"
    flock -w "$1" "$RUN_LOCK_FD" ||
        { msg "gave up waiting after $1 s for $VM_CACHE/run.lock"; exit "$VM_RC_TIMEOUT"; }
}

# make_initramfs: build (or reuse) the cached initramfs; sets VM_INITRD.
make_initramfs() {
    VM_INITRD=$("$VM_DIR/mkinitramfs" --kver "$VM_KVER") ||
        die "building the initramfs failed (tests/vm/mkinitramfs)"
}

# qemu_common_args NAME SMP MEM APPEND SHARE: fill the array QEMU_ARGS with the
# options every VM gets: TCG, no default devices, the kernel + initramfs, the
# host / read-only over 9p (tag triadroot), the per-run SHARE writable (tag
# triadsrv), the kernel console (ttyS0) into SHARE/.harness/console-NAME.log
# and ttyS1 (the guest command's stdout+stderr) on QEMU's stdout.
qemu_common_args() {
    local name=$1 smp=$2 mem=$3 append=$4 share=$5 top accel
    # TCG (software emulation) unless TRIAD_VM_ACCEL=kvm asks for hardware
    # virtualisation (docs/fabric.md, section 2).
    # shellcheck disable=SC2054 # the commas belong to QEMU option values
    case ${TRIAD_VM_ACCEL:-tcg} in
    tcg) accel=(-accel tcg,thread=multi -cpu max) ;;
    kvm)
        [[ -r /dev/kvm && -w /dev/kvm ]] ||
            die "TRIAD_VM_ACCEL=kvm: /dev/kvm is missing or not usable here"
        accel=(-accel kvm -cpu host)
        ;;
    *) die "TRIAD_VM_ACCEL: '$TRIAD_VM_ACCEL' is neither tcg nor kvm" ;;
    esac
    # A project tree below a directory the guest mounts its own (a clone in
    # /tmp, say) is shared on its own and mounted over the guest's tmpfs at
    # the same path (triad.top=; guest/init).
    top=$(hidden_top)
    [[ -z $top ]] || append+=" triad.top=$top"
    # The guest script's path travels on the kernel command line.
    [[ $VM_DIR != *[[:space:]]* ]] || die "the path $VM_DIR contains white space; the VM cannot use it"
    share=${share//,/,,} # QEMU option values escape commas by doubling them
    # shellcheck disable=SC2054 # the commas belong to QEMU option values
    QEMU_ARGS=(
        -name "$name,debug-threads=on"
        -machine pc "${accel[@]}" -smp "$smp" -m "$mem"
        -nodefaults -no-user-config -display none -no-reboot
        -kernel "$VM_KERNEL" -initrd "$VM_INITRD"
        -append "console=ttyS0 quiet loglevel=1 panic=-1 random.trust_cpu=on tsc=reliable $append ${TRIAD_VM_APPEND:-}"
        -serial "file:$share/.harness/console-$name.log"
        -serial stdio
        -virtfs "local,path=/,mount_tag=triadroot,security_model=none,readonly=on,multidevs=remap"
        -virtfs "local,path=$share,mount_tag=triadsrv,security_model=none,multidevs=remap"
    )
    if [[ -n $top ]]; then
        QEMU_ARGS+=(-virtfs "local,path=$top,mount_tag=triadtop,security_model=none,readonly=on,multidevs=remap")
    fi
    # tsc=reliable: without it the guest distrusts the emulated TSC and falls
    # back to the HPET, where every clock read is an emulated MMIO access
    # (clock_gettime 2-4 us instead of 1 us; guest time still tracks the host's).
    # TRIAD_VM_APPEND adds kernel parameters.
    # qboot is a tiny, silent firmware that boots a -kernel much faster than
    # SeaBIOS and prints nothing on the serial ports.
    if [[ -r /usr/share/qemu/qboot.rom && -z ${TRIAD_VM_SEABIOS:-} ]]; then
        QEMU_ARGS+=(-bios /usr/share/qemu/qboot.rom)
    fi
}

# is_hidden PATH: true when the guest mounts its own file system over PATH
# (/tmp and /run are tmpfs there; /dev, /proc, /sys are the guest's).
is_hidden() {
    case $1/ in
    /tmp/* | /run/* | /dev/* | /proc/* | /sys/*) return 0 ;;
    esac
    return 1
}

# hidden_top: the project's top directory (the parent of tests/) when it lies
# below /tmp or /run; empty otherwise.  It then gets a 9p share of its own.
hidden_top() {
    local top
    top=$(cd "$VM_DIR/../.." && pwd -P)
    case $top/ in
    /tmp/* | /run/*) [[ $top != *[[:space:],]* ]] && printf '%s\n' "$top" ;;
    esac
}

# guest_cwd: the directory the guest command starts in: the caller's cwd, which
# the guest sees at the same path (the host / is its root, plus the project
# tree when it is below /tmp or /run: hidden_top).  Any other cwd below the
# guest's own /tmp, /run, /dev, /proc or /sys cannot work.
guest_cwd() {
    local cwd top
    cwd=$(pwd -P)
    top=$(hidden_top)
    if is_hidden "$cwd" && [[ -z $top || $cwd/ != "$top"/* ]]; then
        die "the current directory $cwd is hidden inside the VM (the guest mounts its own /tmp /run /dev /proc /sys); run from elsewhere"
    fi
    if [[ -z $top ]] && is_hidden "$VM_DIR"; then
        die "the harness $VM_DIR is below a directory the VM mounts its own; move the tree (no white space or commas in its path)"
    fi
    printf '%s\n' "$cwd"
}

# write_job FILE: write the job description the guest sources (guest/run):
# plain bash assignments, every value quoted with printf %q.
# Uses the caller's globals MODE NODES PLANES CWD CMD ENVS.
write_job() {
    local f=$1 e
    {
        printf '# generated by %s; sourced by tests/vm/guest/run\n' "$PROG"
        printf 'JOB_MODE=%q\n' "$MODE"
        printf 'JOB_NODES=%q\n' "$NODES"
        printf 'JOB_PLANES=%q\n' "$PLANES"
        printf 'JOB_CWD=%q\n' "$CWD"
        printf 'JOB_VM_DIR=%q\n' "$VM_DIR"
        printf 'JOB_CMD=('; printf ' %q' "${CMD[@]}"; printf ' )\n'
        printf 'JOB_ENV=('
        for e in "${ENVS[@]}"; do printf ' %q' "$e"; done
        printf ' )\n'
    } >"$f"
}

# collect_env: fill ENVS with the NAME=VALUE pairs passed to the guest: every
# TRIAD_* variable of the caller's environment (harness-owned ones excepted),
# then the --env options (already in ENVS).
collect_env() {
    local name
    while IFS= read -r name; do
        case $name in
        TRIAD_WORLD | TRIAD_NODES | TRIAD_PLANES | TRIAD_RANK | TRIAD_VM_*) continue ;;
        esac
        ENVS=("$name=${!name}" "${ENVS[@]}")
    done < <(compgen -e | grep '^TRIAD_' || true)
}

# phase_of SHARE NODE: the last phase the guest NODE reported (booted, fabric,
# ready, running, done, fabric-failed), empty if none.
phase_of() {
    local f=$1/.harness/phase.$2
    [[ -s $f ]] && tail -n1 "$f" | cut -d' ' -f1
    return 0
}

# phase_time SHARE NODE PHASE: guest uptime (s) when NODE reached PHASE.
phase_time() {
    local f=$1/.harness/phase.$2
    [[ -s $f ]] && awk -v p="$3" '$1 == p { print $2; exit }' "$f"
    return 0
}

# console_tail SHARE NAME: show the end of a VM's kernel console log.
console_tail() {
    local f=$1/.harness/console-$2.log
    [[ -s $f ]] || return 0
    msg "last lines of $2's console ($f):"
    tail -n 25 "$f" | tr -d '\r' | sed 's/^/    /' >&2
}

# finish_share SHARE OUTDIR KEEP: hand the per-run share to the user: copy it to
# OUTDIR if given; otherwise keep it (and print its path) when KEEP=1 or when
# the command left artifacts in it (any entry whose name does not start with a
# dot, besides the harness's world, fault.ctl and fault.ack); remove it otherwise.
finish_share() {
    local share=$1 out=$2 keep=$3
    if [[ -n $out ]]; then
        mkdir -p "$out" && cp -a "$share"/. "$out"/ &&
            msg "artifacts and logs copied to $out" && rm -rf "$share"
        return 0
    fi
    if ((keep)) || [[ -n $(find "$share" -mindepth 1 -maxdepth 1 ! -name '.*' ! -name world ! -name fault.ctl ! -name fault.ack -print -quit) ]]; then
        msg "artifacts and logs kept in $share"
    else
        rm -rf "$share"
    fi
}
