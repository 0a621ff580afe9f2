#!/usr/bin/env bash
# Measures what a restart of "ohbloom serve" costs, the table of
# docs/server.md ("What a restart costs"): for 0.2, 1 and 2 GB of filters,
# empty (one item a key) and filled (to capacity, BF.MADD over the
# protocol), the time from the process's start to its first correct
# BF.EXISTS of every key, its CPU time to then, and its RSS then and at its
# peak, against the bytes of the filters (INFO used_memory_filters) and the
# RSS of the server that saved them. Medians of the rounds; see
# bench/cmd/serverrestart for how each figure is taken.
#
#   flock /tmp/ohbloom-bench.lock bench/server_restart.sh [rounds] [sizes]
#
# rounds defaults to 3, sizes (GB, comma-separated) to 0.2,1,2. Filling
# 3.2 GB of filters through the protocol takes most of the run (about 15
# minutes on 2 cores), so it runs under the shared lock. It needs 2.5 GB
# of disk in $TMPDIR, and 4 GB of memory and as much page cache for the
# 2 GB rows.
#
# OHBLOOM_BASELINE="name=/path/to/ohbloom" restarts another build too, on
# copies of the same directories, in turn with this tree's within each
# round (the baseline fills them). To measure a commit beside this tree:
#   git worktree add /tmp/old <commit>
#   (cd /tmp/old/tools && go build -o /tmp/ohbloom-old ./cmd/ohbloom)
#   OHBLOOM_BASELINE="<commit>=/tmp/ohbloom-old" flock /tmp/ohbloom-bench.lock bench/server_restart.sh
# Port: OHBLOOM_BENCH_PORT (default 29420). OHBLOOM_RESTART_COLD=1 evicts
# the files from the page cache before each start (posix_fadvise), to
# restart at the disk's speed.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
sizes=${2:-0.2,1,2}
work=$(mktemp -d "${TMPDIR:-/tmp}/ohbloom-server-restart.XXXXXX")
trap 'rm -rf "$work"' EXIT

(cd tools && go build -o "$work/ohbloom" ./cmd/ohbloom)
(cd bench && go build -o "$work/serverrestart" ./cmd/serverrestart)
servers="ohbloom=$work/ohbloom"
# The first server fills the directories: the baseline, an older build,
# whose records this tree's reads (and rewrites in its own version when it
# saves its copy).
if [ -n "${OHBLOOM_BASELINE:-}" ]; then servers="$OHBLOOM_BASELINE,$servers"; fi
cold=()
if [ -n "${OHBLOOM_RESTART_COLD:-}" ]; then cold=(-cold); fi
echo "# $(git rev-parse --short HEAD), $(date -u +%Y-%m-%d), load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
"$work/serverrestart" -serve "$servers" -rounds "$rounds" -sizes "$sizes" \
  -port "${OHBLOOM_BENCH_PORT:-29420}" -work "$work" "${cold[@]}"
echo "# load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
