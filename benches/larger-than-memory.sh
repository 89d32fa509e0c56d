#!/usr/bin/env bash
# A store larger than memory: random batches of 256 records of 784 bytes
# from a store 2.4x the memory limit of a control group (the page cache
# counts against the limit), memory-mapped and with explicit reads, with
# the peak memory of each run and fio's limit on the same file.
#
#   bash benches/larger-than-memory.sh            # needs root (cgroups); fio optional
#
# Knobs (environment): LIMIT_MIB (128), RECORDS (400000: 313 MB), BATCHES (100).
set -euo pipefail
cd "$(dirname "$0")/.."

LIMIT_MIB=${LIMIT_MIB:-128}
RECORDS=${RECORDS:-400000}
BATCHES=${BATCHES:-100}
cargo build --release -q -p zrecord-cli --bin zrecord
zrecord="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/release/zrecord"

work=$(mktemp -d "${TMPDIR:-/var/tmp}/zrecord-ltm.XXXXXX")
trap 'rm -rf "$work"; [ -n "${group:-}" ] && rmdir "$group" 2>/dev/null || true' EXIT

# The store: raw records of random bytes, imported from an .npy file.
python3 - "$work/b.npy" "$RECORDS" <<'PY'
import os, struct, sys
path, n = sys.argv[1], int(sys.argv[2])
header = "{'descr': '|u1', 'fortran_order': False, 'shape': (%d, 28, 28), }" % n
header += " " * (63 - (10 + len(header)) % 64) + "\n"
with open(path, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
    for _ in range(0, n, 10000):
        f.write(os.urandom(784 * min(10000, n)))
PY
truncate -s $((128 + RECORDS * 784)) "$work/b.npy"
"$zrecord" -q import npy --codec raw "$work/b.npy" "$work/store"
rm "$work/b.npy"
size=$(du -sb "$work/store" | cut -f1)
echo "store: $RECORDS records of 784 B, $((size >> 20)) MiB; memory limit $LIMIT_MIB MiB"

if command -v fio >/dev/null; then
  fio --name=limit --filename="$work/store/0.chunk" --rw=randread --bs=4k --iodepth=32 \
    --ioengine=io_uring --direct=1 --runtime=10 --time_based --output-format=terse \
    --terse-version=3 2>/dev/null | awk -F';' '{printf "fio 4 KiB random reads, iodepth 32: %d IOPS\n", $8}' \
    || echo "fio failed"
else
  echo "fio not installed: no limit measured"
fi

# A fresh memory control group per run (v2 where mounted, else v1): page
# cache a run leaves stays charged to its group, and would count in the
# next run's peak.
new_group() {
  if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    group=/sys/fs/cgroup/zrecord-ltm-$$-$1
    mkdir "$group"
    echo $((LIMIT_MIB << 20)) > "$group/memory.max"
    peak_file=memory.peak
  else
    group=/sys/fs/cgroup/memory/zrecord-ltm-$$-$1
    mkdir "$group"
    echo $((LIMIT_MIB << 20)) > "$group/memory.limit_in_bytes"
    peak_file=memory.max_usage_in_bytes
  fi
}

for io in mapped direct auto; do
  new_group "$io"
  # Mapped gathers take seconds per batch here: fewer of them.
  batches=$BATCHES
  [ "$io" = mapped ] && batches=$(( (BATCHES + 4) / 5 ))
  line=$(bash -c 'echo $$ > "$1/cgroup.procs"; shift; exec "$@"' _ "$group" \
    "$zrecord" -q bench "$work/store" --cold --io "$io" --batches "$batches")
  peak=$(( $(cat "$group/$peak_file") >> 20 ))
  echo "$line; peak memory $peak MiB"
  rmdir "$group" 2>/dev/null || true
done
