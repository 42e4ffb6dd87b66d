#!/usr/bin/env bash
# Device run: `tiledsl autotune` on streamed reductions (column sums, x @ W, sums, dot
# products, few long rows), to compare the split and unroll defaults with the best of
# their candidates. Run from the repository root with tiledsl importable:
#   bash scripts/tune_streamed.sh
# H100 and H200, 2026-11-22 13:17-13:22 UTC (before the split default moved from 4 to 2
# blocks per SM): the best split count was half or a quarter of the default's on 9 of 10
# shapes (BENCHMARKS.md, "Split reductions").
mkdir -p /tmp/p
echo 'kernel vm(x: f32[K], w: f32[K, N]) -> f32[N] { return x @ w }' > /tmp/p/vm.tdsl
echo 'kernel d(x: f32[N], y: f32[N]) -> f32 { return sum(x * y) }' > /tmp/p/dot.tdsl
echo 'kernel s(x: f32[M, N]) -> f32 { return sum(x) }' > /tmp/p/sum.tdsl
echo 'kernel c(x: f32[M, N]) -> f32[N] { return sum(x, axis=M) }' > /tmp/p/colsum.tdsl
echo 'kernel mm(x: f16[M, N]) -> (f32[N], f16[N]) { return mean(x, axis=M), max(x, axis=M) }' > /tmp/p/meanmax.tdsl
echo 'kernel r(x: f32[M, N]) -> f32[M] { return rsqrt(mean(x * x, axis=N) + 1e-6) }' > /tmp/p/rms.tdsl
echo 'kernel v16(x: f16[K], w: f16[K, N]) -> f32[N] { return x @ w }' > /tmp/p/vm16.tdsl
for job in "/tmp/p/vm.tdsl K=8192,N=8192" "/tmp/p/vm.tdsl K=16384,N=1024" "/tmp/p/dot.tdsl N=67108864" "/tmp/p/dot.tdsl N=4194304" "/tmp/p/sum.tdsl M=4096,N=4096" "/tmp/p/colsum.tdsl M=16384,N=1024" "/tmp/p/colsum.tdsl M=65536,N=4096" "/tmp/p/meanmax.tdsl M=100000,N=64" "/tmp/p/rms.tdsl M=4,N=1000000" "/tmp/p/vm16.tdsl K=8192,N=8192"; do
  set -- $job
  echo "--- autotune $1 $2"
  timeout 150 python3 -m tiledsl.cli autotune $1 --shape $2 --budget 60 --no-db --top 10 --vs "" 2>&1 | sed 's/\r/\n/g' | grep -v "it/s\|s/it\|?it" | tail -16
done
date -u +%T
