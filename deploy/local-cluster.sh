#!/usr/bin/env bash
# Starts the topology of deploy/compose.yaml from local processes, for a
# machine without Docker: three nats-server processes in one JetStream
# cluster, two airouter replicas on that cluster, and a stand-in upstream
# (cmd/stubupstream), all on 127.0.0.1. Every PID goes into $DIR/pids;
# `stop` ends exactly those.
#
#   deploy/local-cluster.sh start   # returns once both replicas are ready
#   deploy/local-cluster.sh stop
#
# Environment (defaults in brackets):
#   AIROUTER_CLUSTER_DIR  state, logs, configs, PIDs [${TMPDIR:-/tmp}/airouter-local-cluster]
#   AIROUTER_BIN          an airouter binary [built from this checkout]
#   NATS_BIN              a nats-server binary [nats-server on PATH, else built from the module cache]
#   NATS_PORTS            client ports of the three servers ["14222 14223 14224"]
#   NATS_ROUTE_PORTS      cluster ports ["16222 16223 16224"]
#   NATS_HTTP_PORTS       monitoring ports ["18222 18223 18224"]
#   ROUTER_PORTS          the replicas' HTTP ports ["18080 18081"]
#   UPSTREAM_PORT         the stand-in upstream's port [18090]
#   AIROUTER_MASTER_KEY   the replicas' master key [sk-local-cluster-master]
set -Eeuo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=${AIROUTER_CLUSTER_DIR:-${TMPDIR:-/tmp}/airouter-local-cluster}
read -r -a NATS_PORTS <<<"${NATS_PORTS:-14222 14223 14224}"
read -r -a ROUTE_PORTS <<<"${NATS_ROUTE_PORTS:-16222 16223 16224}"
read -r -a HTTP_PORTS <<<"${NATS_HTTP_PORTS:-18222 18223 18224}"
read -r -a ROUTER_PORTS <<<"${ROUTER_PORTS:-18080 18081}"
UPSTREAM_PORT=${UPSTREAM_PORT:-18090}
export AIROUTER_MASTER_KEY=${AIROUTER_MASTER_KEY:-sk-local-cluster-master}
PIDS=$DIR/pids
READY_TIMEOUT=${READY_TIMEOUT:-40}

say() { echo "local-cluster: $*" >&2; }
die() { say "$*"; exit 1; }

# build_tools sets AIROUTER_BIN, NATS_BIN and STUB_BIN, building what is
# missing into $DIR/bin.
build_tools() {
	mkdir -p "$DIR/bin"
	command -v go >/dev/null || [[ -n ${AIROUTER_BIN:-} && -n ${NATS_BIN:-} ]] ||
		die "go is needed to build the binaries (or set AIROUTER_BIN and NATS_BIN)"
	if [[ -z ${AIROUTER_BIN:-} ]]; then
		say "building airouter"
		(cd "$ROOT" && go build -o "$DIR/bin/airouter" ./cmd/airouter)
		AIROUTER_BIN=$DIR/bin/airouter
	fi
	if [[ -z ${NATS_BIN:-} ]]; then
		if NATS_BIN=$(command -v nats-server); then
			say "using $NATS_BIN"
		else
			say "building nats-server from the module cache"
			(cd "$ROOT" && go build -o "$DIR/bin/nats-server" github.com/nats-io/nats-server/v2)
			NATS_BIN=$DIR/bin/nats-server
		fi
	fi
	say "building stubupstream"
	(cd "$ROOT" && go build -o "$DIR/bin/stubupstream" ./cmd/stubupstream)
	STUB_BIN=$DIR/bin/stubupstream
}

# spawn NAME CMD... starts CMD in the background, its output in
# $DIR/logs/NAME.log, and records its PID.
spawn() {
	local name=$1
	shift
	"$@" >"$DIR/logs/$name.log" 2>&1 </dev/null &
	echo "$! $name" >>"$PIDS"
}

# wait_ok URL NAME polls URL with `airouter probe` until it answers 2xx,
# and gives up when the process NAME has exited or READY_TIMEOUT passed.
wait_ok() {
	local deadline=$((SECONDS + READY_TIMEOUT)) pid
	pid=$(awk -v n="$2" '$2 == n {print $1}' "$PIDS")
	until "$AIROUTER_BIN" probe -timeout 1s "$1" >/dev/null 2>&1; do
		if gone "$pid" || ((SECONDS >= deadline)); then
			say "$2 is not ready ($1; exited or ${READY_TIMEOUT}s passed); its log:"
			tail -n 30 "$DIR/logs/$2.log" >&2 || true
			return 1
		fi
		sleep 0.2
	done
}

nats_conf() {
	local i=$1 routes="" p
	for p in "${ROUTE_PORTS[@]}"; do routes+="nats://127.0.0.1:$p, "; done
	cat <<CONF
server_name: n$((i + 1))
listen: 127.0.0.1:${NATS_PORTS[$i]}
http: 127.0.0.1:${HTTP_PORTS[$i]}
jetstream { store_dir: "$DIR/nats-$((i + 1))" }
cluster {
  name: airouter-local
  listen: 127.0.0.1:${ROUTE_PORTS[$i]}
  routes: [${routes%, }]
}
CONF
}

start() {
	[[ -s $PIDS ]] && die "already started ($PIDS exists); run stop first"
	((${#NATS_PORTS[@]} == 3 && ${#ROUTE_PORTS[@]} == 3 && ${#HTTP_PORTS[@]} == 3)) ||
		die "NATS_PORTS, NATS_ROUTE_PORTS and NATS_HTTP_PORTS need three ports each"
	((${#ROUTER_PORTS[@]} == 2)) || die "ROUTER_PORTS needs two ports"
	mkdir -p "$DIR/logs"
	build_tools
	: >"$PIDS"
	trap 'say "start failed; stopping what started"; stop' ERR
	local i urls=""
	for i in 0 1 2; do
		nats_conf "$i" >"$DIR/nats-$((i + 1)).conf"
		spawn "nats-$((i + 1))" "$NATS_BIN" -c "$DIR/nats-$((i + 1)).conf"
		urls+="nats://127.0.0.1:${NATS_PORTS[$i]},"
	done
	spawn upstream "$STUB_BIN" -port "$UPSTREAM_PORT" -model gpt-local
	for i in 0 1 2; do
		# /healthz answers 200 once JetStream is up and the cluster has a leader.
		wait_ok "http://127.0.0.1:${HTTP_PORTS[$i]}/healthz" "nats-$((i + 1))"
	done
	export AIROUTER_NATS_URL=${urls%,}
	export AIROUTER_UPSTREAM_URL=http://127.0.0.1:$UPSTREAM_PORT
	"$AIROUTER_BIN" check -config "$ROOT/deploy/local-cluster/airouter.yaml" >/dev/null
	# Both replicas at once: whichever comes first creates the streams,
	# and each waits for a new stream's leader to be elected.
	for i in 0 1; do
		AIROUTER_PORT=${ROUTER_PORTS[$i]} spawn "airouter-$((i + 1))" \
			"$AIROUTER_BIN" serve -config "$ROOT/deploy/local-cluster/airouter.yaml"
	done
	for i in 0 1; do
		wait_ok "http://127.0.0.1:${ROUTER_PORTS[$i]}/readyz" "airouter-$((i + 1))"
	done
	trap - ERR
	say "ready: airouter on http://127.0.0.1:${ROUTER_PORTS[0]} and http://127.0.0.1:${ROUTER_PORTS[1]}" \
		"(master key \$AIROUTER_MASTER_KEY), NATS on $AIROUTER_NATS_URL, PIDs in $PIDS"
}

# gone PID: the process has exited (a zombie nobody reaped counts as gone).
gone() {
	local state
	state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 0
	[[ -z $state || $state == Z ]]
}

# stop sends SIGTERM to every recorded PID, newest first, waits up to 15 s
# for each, then SIGKILLs what is left.
stop() {
	[[ -f $PIDS ]] || { say "nothing started ($PIDS is missing)"; return 0; }
	local pid name deadline
	while read -r pid name; do
		gone "$pid" && continue
		kill -TERM "$pid" 2>/dev/null || continue
		deadline=$((SECONDS + 15))
		until gone "$pid" || ((SECONDS >= deadline)); do sleep 0.1; done
		if ! gone "$pid"; then
			say "$name ($pid) did not stop in 15s; killing it"
			kill -KILL "$pid" 2>/dev/null || true
		fi
		say "stopped $name ($pid)"
	done < <(tac "$PIDS")
	rm -f "$PIDS"
}

case ${1:-} in
start) start ;;
stop) stop ;;
*) die "usage: $0 start|stop" ;;
esac
