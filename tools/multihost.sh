#!/usr/bin/env bash
# tools/multihost.sh: two emulated hosts on this machine, and jobs across them under
# OpenMPI's mpirun. Each host is a set of namespaces held open by one sleeping process:
# network (its own interface and address), UTS (its own hostname), IPC (its own System V
# shared memory) and mount (its own /sys showing its own interfaces, which UCX lists
# devices from, and its own /tmp and /dev/shm). A veth pair joins the two hosts, so UCX
# sees two hosts: TCP between them, shared memory inside each. mpirun's rsh agent is this
# script, which enters the target host's namespaces (nsenter): no ssh.
#
#   tools/multihost.sh up                 make the hosts (idempotent; needs root)
#   tools/multihost.sh down               remove them (idempotent)
#   tools/multihost.sh status             say whether they are up
#   tools/multihost.sh run [-n PES] [mpirun options] [--] program [args...]
#        runs `mpirun` on host 1 with PES ranks per host (default 2), block mapping
#        (ranks 0..PES-1 on host 1); makes the hosts first and removes them at the end
#        unless they were up already; exits with mpirun's code
#   tools/multihost.sh exec HOST command [args...]   run a command on host 1 or 2
#   tools/multihost.sh pids HOST          the pids of processes running on host 1 or 2
#   tools/multihost.sh agent HOST command...         mpirun's rsh agent (internal)
#
# Exit codes: the job's (run), 0 (other commands), 2 usage, 77 no namespaces here (not
# root, or the kernel refuses them: the reason is printed), 1 other failures.
# MULTIHOST_NAME (default ucharm-mh) names a pair of hosts: NAME-h1 and NAME-h2, state in
# /run/NAME. Pairs of other names are independent of each other (tests use their own).
#
# Addresses: 198.18.0.1 and .2/24 (RFC 2544's benchmarking range, never routed). Not
# link-local 169.254.x.y: UCX skips IPv4 link-local addresses when it lists TCP devices
# (ucs_netif_get_addr), so UCX would see no network between the hosts.
set -u

readonly SELF=$(readlink -f "${BASH_SOURCE[0]}")
readonly NAME=${MULTIHOST_NAME:-ucharm-mh}          # state folder, host names, interfaces
readonly STATE=/run/$NAME
readonly HOSTS=("${NAME}-h1" "${NAME}-h2")          # host names (UTS)
readonly ADDRS=(198.18.0.1 198.18.0.2)
readonly IFACE=mhnet                                # the veth end's name in each host
readonly VETH=("${NAME:0:12}-a" "${NAME:0:12}-b")  # the veth ends' names before the move
# The checkout's top folder under /tmp, if it is there (each host gets a fresh /tmp).
ROOT_DIR=$(dirname "$(dirname "$SELF")")
case $ROOT_DIR in /tmp/?*) KEEP=/tmp/$(cut -d/ -f3 <<<"$ROOT_DIR") ;; *) KEEP= ;; esac
readonly ROOT_DIR KEEP

die() { echo "multihost.sh: $*" >&2; exit 1; }
skip() { echo "multihost.sh: SKIP: $*" >&2; exit 77; }

host_index() {  # "1", "2" or a host name -> 0 or 1
  case $1 in
    1 | "${HOSTS[0]}") echo 0 ;;
    2 | "${HOSTS[1]}") echo 1 ;;
    *) echo "multihost.sh: unknown host '$1' (hosts: 1, 2, ${HOSTS[*]})" >&2; return 1 ;;
  esac
}

holder() { cat "$STATE/h$(( $1 + 1 )).pid" 2>/dev/null; }

# A host is up when its holder lives and sits in a network namespace of its own.
host_up() {
  local pid
  pid=$(holder "$1") || return 1
  [ -n "$pid" ] && [ -d "/proc/$pid" ] || return 1
  [ "$(readlink "/proc/$pid/ns/net")" != "$(readlink /proc/self/ns/net)" ] || return 1
  [ "$(nsenter -t "$pid" -u hostname 2>/dev/null)" = "${HOSTS[$1]}" ]
}

is_up() { host_up 0 && host_up 1; }

down() {
  local i pid
  for i in 0 1; do
    pid=$(holder $i) || continue
    # Only a holder of ours: a sleep whose hostname is this host's.
    if [ -n "$pid" ] && [ -d "/proc/$pid" ] &&
       [ "$(nsenter -t "$pid" -u hostname 2>/dev/null)" = "${HOSTS[$i]}" ]; then
      # What still runs on the host goes first, then the holder: the namespaces go with
      # their last process, the veth pair with its network namespace.
      for p in $(host_pids $i); do [ "$p" != "$pid" ] && kill -KILL "$p" 2>/dev/null; done
      kill -KILL "$pid" 2>/dev/null
    fi
  done
  ip link del "${VETH[0]}" 2>/dev/null
  rm -rf "$STATE"
  return 0
}

# Processes whose network namespace is host i's.
host_pids() {
  local pid p
  pid=$(holder "$1") || return 0
  [ -e "/proc/$pid/ns/net" ] || return 0
  for p in /proc/[0-9]*; do
    [ "$p/ns/net" -ef "/proc/$pid/ns/net" ] 2>/dev/null && echo "${p#/proc/}"
  done
}

up() {
  is_up && return 0
  down
  [ "$(id -u)" = 0 ] || skip "making namespaces needs root (uid $(id -u))"
  for tool in unshare nsenter ip; do
    command -v $tool >/dev/null || skip "'$tool' is not installed"
  done
  local err
  err=$(unshare --net --uts --ipc --mount true 2>&1) || skip "cannot create namespaces: $err"
  mkdir -p "$STATE" || die "cannot create $STATE"
  local i
  for i in 0 1; do
    # The holder: private mounts, a /sys of its own network namespace, fresh /tmp and
    # /dev/shm, then sleep until `down`. setsid: no terminal signal reaches it.
    # A subshell: the holder is nobody's job here (no "Killed" notice when `down` ends it).
    # A checkout under /tmp (CI clones there) stays visible: its top folder is kept across
    # the fresh /tmp (bound aside first, moved back after).
    ( setsid unshare --net --uts --ipc --mount --propagation private -- sh -c '
        hostname "$1" && mount -t sysfs sysfs /sys &&
        { [ -z "$2" ] || { mkdir -p "$3" && mount --bind "$2" "$3"; }; } &&
        mount -t tmpfs -o mode=1777 tmpfs /tmp &&
        { [ -z "$2" ] || { mkdir -p "$2" && mount --move "$3" "$2"; }; } &&
        mount -t tmpfs -o mode=1777 tmpfs /dev/shm && ip link set lo up && exec sleep infinity' \
        sh "${HOSTS[$i]}" "$KEEP" "$STATE/keep$((i + 1))" </dev/null >/dev/null 2>"$STATE/h$((i + 1)).err" &
      echo $! >"$STATE/h$((i + 1)).pid" )
  done
  # Ready once the holder has become the sleep (its hostname is set by then).
  for _ in $(seq 100); do
    host_up 0 && host_up 1 && [ "$(readlink /proc/"$(holder 0)"/exe)" = "$(readlink -f "$(command -v sleep)")" ] &&
      [ "$(readlink /proc/"$(holder 1)"/exe)" = "$(readlink -f "$(command -v sleep)")" ] && break
    sleep 0.05
  done
  is_up || { err=$(cat "$STATE"/h*.err 2>/dev/null); down; skip "the hosts did not come up: $err"; }
  ip link add "${VETH[0]}" type veth peer name "${VETH[1]}" || { down; die "cannot create a veth pair"; }
  for i in 0 1; do
    local pid
    pid=$(holder $i)
    ip link set "${VETH[$i]}" netns "$pid" || { down; die "cannot move ${VETH[$i]} to host $((i + 1))"; }
    nsenter -t "$pid" -n -- sh -c "ip link set '${VETH[$i]}' name $IFACE &&
      ip addr add ${ADDRS[$i]}/24 dev $IFACE && ip link set $IFACE up" ||
      { down; die "cannot configure the network of host $((i + 1))"; }
  done
  # The veth answers once both ends are up.
  for _ in $(seq 100); do
    nsenter -t "$(holder 0)" -n -- ip -br link show $IFACE 2>/dev/null | grep -q "UP" &&
      nsenter -t "$(holder 1)" -n -- ip -br link show $IFACE 2>/dev/null | grep -q "UP" && break
    sleep 0.05
  done
}

# Runs a command on host i, in the caller's folder.
on_host() {
  local i=$1
  shift
  exec nsenter -t "$(holder "$i")" -n -u -i -m --wd="$PWD" -- "$@"
}

usage() {
  sed -n '2,/^set -u/p' "$SELF" | sed '$d; s/^# \{0,1\}//'
  exit 2
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
  up) up; echo "multihost.sh: hosts ${HOSTS[0]} (${ADDRS[0]}) and ${HOSTS[1]} (${ADDRS[1]}) are up" ;;
  down) down ;;
  status)
    if is_up; then echo "up: ${HOSTS[0]} (${ADDRS[0]}), ${HOSTS[1]} (${ADDRS[1]})"; else echo "down"; exit 1; fi ;;
  exec)
    [ $# -ge 2 ] || usage
    i=$(host_index "$1") || exit 2
    shift
    is_up || die "the hosts are not up (tools/multihost.sh up)"
    on_host "$i" "$@" ;;
  pids)
    [ $# -eq 1 ] || usage
    i=$(host_index "$1") || exit 2
    host_pids "$i" | grep -vx "$(holder "$i")" ;;
  agent)
    # mpirun calls its rsh agent as `agent [options] HOST command-line`: enter the host
    # and run the command line with a shell there, as sshd would.
    while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done
    [ $# -ge 2 ] || { echo "multihost.sh agent: no host or command" >&2; exit 2; }
    i=$(host_index "$1") || exit 255
    shift
    on_host "$i" /bin/sh -c "$*" ;;
  run)
    pes=2
    if [ "${1:-}" = -n ]; then
      [ $# -ge 2 ] && [ "$2" -ge 1 ] 2>/dev/null || { echo "multihost.sh: -n needs a positive number" >&2; exit 2; }
      pes=$2
      shift 2
    fi
    args=()
    dd=0
    for a in "$@"; do
      if [ "$a" = -- ] && [ $dd = 0 ]; then dd=1; else args+=("$a"); fi
    done
    [ ${#args[@]} -gt 0 ] || usage
    made=0
    if ! is_up; then
      up
      made=1
    fi
    # mpirun runs in the background so that a signal to this script is handled at once
    # (bash runs traps only between commands): mpirun gets it (it stops its job), then
    # the hosts this run made are removed, with whatever still runs on them.
    job=
    stop() {
      [ -n "$job" ] && kill -"$1" "$job" 2>/dev/null && sleep 1
      disown -a  # no "Killed" notice for a job that `down` ends
      [ $made = 1 ] && down
      exit "$2"
    }
    trap 'stop TERM 130' INT
    trap 'stop TERM 143' TERM
    trap 'stop TERM 129' HUP
    # One kernel (and PID namespace) serves both hosts, so UCX's CMA (process_vm_readv)
    # could reach across them, which real hosts cannot: left out unless UCX_TLS says
    # otherwise.
    export UCX_TLS=${UCX_TLS:-^cma}
    # oob/btl over the veth only; the agent enters the other host. The job inherits this
    # environment on both hosts (the agent is a local process, not ssh).
    nsenter -t "$(holder 0)" -n -u -i -m --wd="$PWD" -- \
      mpirun --allow-run-as-root --oversubscribe \
      --mca plm_rsh_agent "$SELF agent" --mca oob_tcp_if_include $IFACE \
      --mca btl_tcp_if_include $IFACE --host "${HOSTS[0]}:$pes,${HOSTS[1]}:$pes" \
      -np $((2 * pes)) "${args[@]}" &
    job=$!
    wait $job
    rc=$?
    job=
    [ $made = 1 ] && down
    exit $rc ;;
  -h | --help | help) usage ;;
  *) usage ;;
esac
