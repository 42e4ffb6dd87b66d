#!/usr/bin/env bash
# Device phase `rowsharetune`: the tuner's whole space for the rows whose default
# row_share_fits had to change (scripts/probe_row_share.py), to find the fastest
# schedule that does not spill.
set -u
mkdir -p /tmp/rs
cat > /tmp/rs/softmax.tdsl <<'T'
kernel f(x: f32[M, N]) -> f32[M, N] {
    e = exp(x - max(x, axis=N))
    return e / sum(e, axis=N)
}
T
cat > /tmp/rs/three.tdsl <<'T'
kernel f(x: f32[M, N], y: f32[M, N], z: f32[M, N]) -> f32[M, N] {
    return x * y + z + sum(x * z, axis=N)
}
T
for job in "softmax M=4096,N=12001" "softmax M=2048,N=8193" "three M=4096,N=4097"; do
  set -- $job
  echo "--- $1 $2"
  timeout 150 python3 -m tiledsl autotune /tmp/rs/$1.tdsl --shape $2 --no-db --vs '' --top 12 --workers 12 2>&1 | tail -16
done
