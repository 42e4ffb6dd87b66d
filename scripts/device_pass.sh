#!/usr/bin/env bash
# A whole check-and-benchmark pass on the lent GPU machine, in one call:
#   bash scripts/device_pass.sh gpu memory gemm tune      (carry .whl: `pip download lark -d .whl`)
# Phases: carveout laterows wstart ncurows prefetch splitepi splitloop fullreduce copied depth splitgrid inarow placement lse biaswalk llm vocab heavy longrows gelu l2order shortcols launchmulti fastexp gaps ab (PROBE=script) rowgroups fusedcols pairs pairs_ab waves combine_ab tritoncols colbench coltiles wideclusters staged elemrows elemrows_ab clusterrows midrows gpumem gpumem1 gpumem2 gpurest gpusample moments chan fuzz tail gsweep peel columns f64 inputs rowshare exact oddwarps subwarp survey online ktests across skinny gpuslow shortrows skinnytests facts streamed copyprobe ln16 launch lnprobe smprobe hints normsweep lnpick ringsweep rowtests mmtests memtests gpu sweep probe relu f32sweep splitk tcsplit mmsplit f32 memory launchbench gemm mlp prologue transpose tf32 tunetests tune heldout.
# Everything printed also goes to $OUT/run.log; JSON results to $OUT.
cd "$(dirname "$0")/.."
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD TILEDSL_CACHE_DIR=/tmp/tdslcache PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
for phase in "$@"; do
  echo "=== $phase $(date +%T)"
  case $phase in
    prefetch) timeout 400 python3 scripts/probe_prefetch_rows.py $PREFETCH ;;   # PREFETCH="names to keep"
    launch) timeout 120 python3 scripts/launch_profile.py ;;
    launchmulti) timeout 200 python3 scripts/probe_launch_multi.py 2>&1 | grep " us$" ;;
    facts) python3 -c "from tiledsl.runtime.launcher import hbm_bandwidth, _sm_count; print('peak HBM GB/s', hbm_bandwidth(0), 'SMs', _sm_count(0))" ;;
    skinnytests) timeout 200 python3 -m pytest -q -n 8 -m gpu tests/test_gpu_memory.py -k "skinny or across" -p no:cacheprovider -p no:benchmark 2>&1 | tail -8 ;;
    subwarp) timeout 200 python3 -m pytest -q -n 8 -m gpu tests/test_gpu_memory.py -k rows_shared_by_part -p no:cacheprovider -p no:benchmark 2>&1 | tail -8 ;;
    ktests) timeout 300 python3 -m pytest -q -n 12 -m gpu tests/ -k "$K" -p no:cacheprovider -p no:benchmark 2>&1 | tail -12 ;;   # K="expression"
    oddwarps) timeout 200 python3 -m pytest -q -n 8 -m gpu tests/test_gpu_memory.py -k any_warp_count -p no:cacheprovider -p no:benchmark 2>&1 | tail -8 ;;
    rowtests) timeout 300 python3 -m pytest -q -n 12 -m gpu tests/test_gpu_memory.py -k every_row_reduction -p no:cacheprovider -p no:benchmark 2>&1 | tail -15 ;;
    mmtests) timeout 420 python3 -m pytest -q -n 12 -m gpu tests/test_gpu_matmul.py -p no:cacheprovider -p no:benchmark 2>&1 | tail -8 ;;
    probe) timeout 300 python3 scripts/probe_rows.py ;;
    laterows) timeout 400 python3 scripts/probe_late_rows.py $LATEROWS ;;   # LATEROWS="names to keep"
    wstart) timeout 300 python3 scripts/probe_weights_start.py $WSTART ;;   # WSTART="row counts"
    shortcols) timeout 560 python3 scripts/probe_short_columns.py $SHORTCOLS ;;   # SHORTCOLS="names to keep"
    waves) timeout 400 python3 scripts/probe_waves.py 2>&1 | tail -30 ;;
    rowwaves) timeout 500 python3 scripts/probe_row_waves.py ;;
    clusterrows) timeout 480 python3 scripts/probe_cluster_rows.py $CLUSTERROWS ;;   # CLUSTERROWS="names to keep"
    coltiles) timeout 480 python3 scripts/probe_col_tiles.py $COLTILES ;;   # COLTILES="names to keep"
    wideclusters) timeout 480 python3 scripts/probe_wide_clusters.py $WIDE ;;   # WIDE="names to keep"
    staged) timeout 480 python3 scripts/probe_staged_rows.py $STAGED ;;   # STAGED="names to keep"
    elemrows) timeout 400 python3 scripts/probe_element_rows.py $ELEM ;;   # ELEM="names to keep"
    normrows) timeout 400 python3 scripts/probe_norm_rows.py $NORMS ;;   # NORMS="names to keep"
    # the same in the tree of .whl/abtree.tar (`git archive <commit> tiledsl templates`), then this one: A/B of code generation
    elemrows_ab) rm -rf /tmp/abold && mkdir -p /tmp/abold && tar -c --exclude=./.whl --exclude=./.git . | tar -x -C /tmp/abold \
           && rm -rf /tmp/abold/tiledsl /tmp/abold/templates && tar -xf .whl/abtree.tar -C /tmp/abold || exit 1
         echo "--- the old tree"; (cd /tmp/abold && timeout 280 python3 scripts/probe_element_rows.py $ELEM)
         echo "--- this tree"; timeout 280 python3 scripts/probe_element_rows.py $ELEM ;;
    # A/B: PROBE (a script) in the old tree (.whl/abtree.tar = `git archive OLD tiledsl templates`), then
    # this one, AB_ROUNDS (2) times in turn (combine_ab: PROBE=scripts/probe_combine.py); AB_LIMIT seconds a run (140:
    # too few for the survey's 9 full reductions of 2^26, which printed nothing on 2026-12-03)
    ab|combine_ab) [ "$phase" = combine_ab ] && PROBE=scripts/probe_combine.py
         rm -rf /tmp/abold && mkdir -p /tmp/abold && tar -c --exclude=./.whl --exclude=./.git . | tar -x -C /tmp/abold \
           && rm -rf /tmp/abold/tiledsl /tmp/abold/templates && tar -xf .whl/abtree.tar -C /tmp/abold || exit 1
         for r in $(seq ${AB_ROUNDS:-2}); do echo "--- the old tree"; (cd /tmp/abold && timeout ${AB_LIMIT:-140} python3 $PROBE)
         echo "--- this tree"; timeout ${AB_LIMIT:-140} python3 $PROBE; done ;;
    rowgroups) timeout 400 python3 scripts/probe_row_groups.py $ROWGROUPS ;;   # ROWGROUPS="row counts", GROUPS_KEEP="labels"
    fusedcols) timeout ${FUSED_LIMIT:-560} python3 scripts/probe_fused_columns.py $FUSED ;;   # FUSED="names to keep"
    pairs) timeout 400 python3 scripts/probe_column_pairs.py $PAIRS ;;   # PAIRS="names to keep"
    # Nsight Compute's view of row kernels by tag (ncu_rows.py; and Triton's at the shape), whole report in $OUT/ncu_rows.txt
    ncurows) timeout 300 ncu --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy \
               --section SchedulerStats -k regex:tdsl_ env NCU_CALLS=1 python3 scripts/ncu_rows.py $NCUROWS > $OUT/ncu_rows.txt 2>&1
             grep -E "tdsl_|Duration|DRAM Throughput|Memory Throughput|L1/TEX Hit|Achieved Occupancy|Stall|Eligible|Issued Warp" $OUT/ncu_rows.txt | head -60 ;;   # NCUROWS="layernorm 8192 8192 t512_p_x32"
    ncucols) timeout 300 ncu --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum python3 scripts/ncu_columns.py $NCUCOLS 2>&1 | grep -E "tdsl_|duration|bytes" ;;   # NCUCOLS="1000x1000 4096x4096"
    strips) timeout 480 python3 scripts/probe_column_strips.py $STRIPS ;;   # STRIPS="case names to keep"
    # softmax over M: the defaults in the old tree (.whl/abtree.tar), then every candidate in this one
    pairs_ab) rm -rf /tmp/abold && mkdir -p /tmp/abold && tar -c --exclude=./.whl --exclude=./.git . | tar -x -C /tmp/abold \
           && rm -rf /tmp/abold/tiledsl /tmp/abold/templates && tar -xf .whl/abtree.tar -C /tmp/abold || exit 1
         echo "--- the old tree"; (cd /tmp/abold && DEFAULT_ONLY=1 timeout 200 python3 scripts/probe_column_pairs.py $PAIRS)
         echo "--- this tree"; timeout 400 python3 scripts/probe_column_pairs.py $PAIRS ;;
    midrows) timeout 480 python3 scripts/probe_mid_rows.py $MIDROWS ;;   # MIDROWS="names to keep"
    peel) timeout 400 python3 scripts/probe_peel.py $PEEL ;;   # PEEL="names to keep", PEEL_UNROLLS="0 2 4"
    columns) timeout 300 python3 scripts/probe_columns.py $COLUMNS ;;   # COLUMNS="names to keep"
    lnprobe) timeout 400 python3 scripts/probe_rows.py layernorm ;;
    lateprobe) timeout 400 python3 scripts/probe_rows.py layernorm late ;;
    smprobe) timeout 300 python3 scripts/probe_rows.py softmax ;;
    hints) timeout 400 python3 scripts/probe_hints.py ;;
    f32sweep) timeout 400 python3 scripts/gemm_sweep.py --cases 0,2 --top 12 ;;
    splitk) timeout 300 python3 scripts/gemm_sweep.py --cases 14,15 --top 10 ;;
    gsweep) timeout 400 python3 scripts/gemm_sweep.py --cases "$CASES" --match "$MATCH" --top ${TOP:-12} ;;   # CASES="5,10" MATCH="regex"
    tcsplit) timeout 400 python3 scripts/gemm_sweep.py --cases 19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34 --top 8 ;;
    mmsplit) timeout 300 python3 -m pytest -q -n 12 -m gpu tests/test_gpu_matmul.py -k "split" -p no:cacheprovider -p no:benchmark 2>&1 | tail -8 ;;
    f32) timeout 300 python3 benchmarks/bench_gemm.py --only f32 --no-triton --json $OUT/gemm_f32.json ;;
    ringsweep) for w in layernorm softmax rmsnorm; do timeout 300 python3 benchmarks/sweep.py --widest --only $w --json $OUT/sweep_$w.json; done ;;
    sweep) timeout 400 python3 benchmarks/sweep.py --only norm --json $OUT/sweep_norm.json ;;
    normsweep) timeout 500 python3 benchmarks/sweep.py --widest --only norm --json $OUT/sweep_norm.json ;;
    copyprobe) timeout 120 python3 scripts/probe_copy.py ;;
    streamed) timeout 300 bash scripts/tune_streamed.sh ;;
    lse) timeout ${LSE_LIMIT:-560} python3 scripts/probe_lse.py $LSE ;;   # LSE="case names to keep"
    fastexp) timeout 560 python3 scripts/probe_fastexp.py $FASTEXP ;;   # FASTEXP="labels to keep"
    gaps) timeout 580 python3 scripts/probe_gaps.py $GAPS ;;   # GAPS="names to keep"
    ln16) timeout 300 python3 benchmarks/sweep.py --only layernorm16 --widest --match '_nh(_r40)?_x32|_p_x32|_nh_p_|t(64|256|512)_x32' --json $OUT/sweep_ln16.json ;;
    lnpick) timeout 300 python3 benchmarks/sweep.py --widest --only layernorm --match '_nh(_r40)?_x32|_nh_p_|_t(64|256|512)_p_x32' --json $OUT/sweep_lnpick.json ;;
    memtests) timeout 300 python3 -m pytest -q -n 12 -m "gpu and not slow" tests/test_gpu_memory.py -p no:cacheprovider -p no:benchmark 2>&1 | tail -15 ;;
    relu) timeout 200 python3 benchmarks/bench_gemm.py --only relu --no-triton ;;
    # the GPU suite but its tests over 2^31 elements (about 520 s on 14 workers at 4956 tests, 2026-11-26)
    gpu) timeout 580 python3 -m pytest -q -rfs -n 16 -m "gpu and not slow" tests/ -p no:cacheprovider -p no:benchmark > $OUT/gpu_tests.log 2>&1
         grep -v -E '^[.sFExX]+ +\[ *[0-9]+%\]$' $OUT/gpu_tests.log | tail -22 ;;
    # the same in two calls where one runs past the device's 10 minutes: the memory-bound tests, then the rest
    gpumem) timeout 580 python3 -m pytest -q -rfs -n 16 -m "gpu and not slow" tests/test_gpu_memory.py -p no:cacheprovider -p no:benchmark > $OUT/gpu_tests.log 2>&1
         grep -v -E '^[.sFExX]+ +\[ *[0-9]+%\]$' $OUT/gpu_tests.log | tail -22 ;;
    # the memory-bound tests in two halves (gpumem alone ran past 580 s at 4402 tests, 2026-12-03), or
    # every GPU test's SAMPLE-th share across all files (i/n, default 0/3: 0/3, 1/3, 2/3 are the whole
    # pass in three calls of about 6 minutes on an H100); each failure's report in $OUT/failures.txt the moment it fails
    gpumem1|gpumem2|gpusample) share=${SAMPLE:-0/3} files=tests/
         [ "$phase" != gpusample ] && share=$(( ${phase#gpumem} - 1 ))/2 files=tests/test_gpu_memory.py
         TDSL_TEST_SHARD=$share TDSL_FAILURE_LOG=$OUT/failures.txt \
         timeout ${SAMPLE_LIMIT:-560} python3 -m pytest -q -rfs -n 16 -m "gpu and not slow" $files -p no:cacheprovider -p no:benchmark > $OUT/gpu_tests_$phase.log 2>&1
         grep -v -E '^[.sFExX]+ +\[ *[0-9]+%\]$' $OUT/gpu_tests_$phase.log | tail -12; grep "^FAILED" $OUT/failures.txt 2>/dev/null ;;
    gpurest) timeout 580 python3 -m pytest -q -rfs -n 16 -m "gpu and not slow" tests/ --ignore=tests/test_gpu_memory.py -p no:cacheprovider -p no:benchmark > $OUT/gpu_tests.log 2>&1
         grep -v -E '^[.sFExX]+ +\[ *[0-9]+%\]$' $OUT/gpu_tests.log | tail -22 ;;
    # the tests over 2^31 elements (marked slow), one at a time: beside other workers' memory
    # pools they found too little free memory and skipped
    gpuslow) timeout 160 python3 -m pytest -q -m "gpu and slow" tests/ -p no:cacheprovider -p no:benchmark 2>&1 | tail -4 ;;
    tritoncols) timeout 400 python3 scripts/probe_triton_cols.py ;;
    colbench) timeout 300 python3 benchmarks/bench_memory.py --only "column sum" --skip-launch --skip-compile --json $OUT/colsum.json ;;
    memory) timeout 300 python3 benchmarks/bench_memory.py --json $OUT/memory.json ;;
    launchbench) timeout 300 python3 benchmarks/bench_memory.py --only nothing-at-all --skip-compile --json $OUT/launch.json ;;
    gemm) timeout 300 python3 benchmarks/bench_gemm.py --json $OUT/gemm.json --markdown ;;
    tunetests) timeout 300 python3 -m pytest -q -n 4 -m gpu tests/test_tune_gpu.py -p no:cacheprovider -p no:benchmark 2>&1 | tail -5 ;;
    tune) timeout 590 python3 benchmarks/tune_check.py --max-minutes 8 --json $OUT/tune.json ;;
    heldout) timeout 300 python3 benchmarks/tune_check.py --held-out --shape-budget 15 --json $OUT/tune_heldout.json ;;
    mlp) timeout 200 python3 scripts/probe_mlp.py ;;
    prologue) timeout 300 python3 scripts/probe_prologue.py ;;
    transpose) timeout 300 python3 scripts/probe_transpose.py ;;
    skinny) timeout 300 python3 scripts/probe_transpose.py --skinny ;;
    shortrows) timeout 300 python3 scripts/probe_short_rows.py ;;
    tf32) timeout 300 python3 scripts/probe_tf32.py ;;
    f64) timeout 300 python3 scripts/probe_f64.py ;;
    inputs) timeout 300 python3 scripts/probe_inputs.py ;;
    rowshare) timeout 300 python3 scripts/probe_row_share.py ;;
    exact) timeout 400 python3 scripts/probe_exact_items.py ;;
    across) timeout 300 python3 scripts/probe_across_rows.py ;;
    tail) timeout 300 python3 scripts/probe_tail.py $TAIL ;;   # TAIL="names to keep"
    biaswalk) timeout 500 python3 scripts/probe_bias_walk.py $BIASWALK ;;   # BIASWALK="names to keep"
    survey) timeout ${SURVEY_LIMIT:-300} python3 scripts/probe_survey.py $SURVEY ;;   # SURVEY="names to keep"; every case reported as it is timed (all 88: over 300 s on an H100)
    splitgrid) timeout 560 python3 scripts/probe_split_grid.py $SPLITGRID ;;   # SPLITGRID="names to keep"
    inarow) for dl in 1 0; do TILEDSL_DEPENDENT_LAUNCH=$dl timeout 280 python3 scripts/probe_calls_in_a_row.py $INAROW; done ;;   # INAROW="names to keep"
    placement) timeout 200 python3 scripts/probe_placement.py ;;
    vocab) timeout 500 python3 scripts/probe_vocab.py $VOCAB ;;   # VOCAB="names to keep"; VOCAB_ALL=1: the tuner's fastest too
    llm) timeout 550 python3 -X faulthandler scripts/probe_llm.py $LLM ;;   # LLM="names to keep"; LLM_BEFORE=1: the partition before too
    masked) timeout 550 python3 -X faulthandler scripts/probe_masked.py $MASKED ;;   # MASKED="names to keep": index masks four ways
    heavy) timeout ${HEAVY_LIMIT:-540} python3 scripts/probe_heavy_weights.py $HEAVY ;;   # HEAVY="names to keep"
    fullreduce) timeout ${FULLREDUCE_LIMIT:-240} python3 scripts/probe_full_reduce.py $FULLREDUCE ;;   # FULLREDUCE="names to keep"
    splitloop) timeout ${SPLITLOOP_LIMIT:-300} python3 scripts/probe_split_loop.py $SPLITLOOP ;;   # SPLITLOOP="names to keep"
    carveout) timeout ${CARVEOUT_LIMIT:-300} python3 scripts/probe_carveout.py $CARVEOUT ;;   # CARVEOUT="names to keep"
    splitepi) timeout ${SPLITEPI_LIMIT:-300} python3 scripts/probe_split_epilogue.py $SPLITEPI ;;   # SPLITEPI="names to keep"
    copied) timeout ${COPIED_LIMIT:-560} python3 scripts/probe_copied_rows.py $COPIED ;;   # COPIED="names to keep"
    depth) timeout ${DEPTH_LIMIT:-200} python3 scripts/probe_stream_depth.py $DEPTH ;;   # DEPTH="names to keep"
    longrows) timeout 500 python3 scripts/probe_long_rows.py $LONGROWS ;;   # LONGROWS="names to keep"
    gelu) timeout 300 python3 scripts/probe_gelu.py $GELU ;;   # GELU="names to keep"
    l2order) timeout 300 python3 scripts/probe_l2_order.py $L2ORDER ;;   # L2ORDER="columns": the column softmax too
    online) timeout 400 python3 scripts/probe_online.py $ONLINE ;;   # ONLINE="names to keep"
    moments) timeout 300 python3 scripts/probe_moments.py $MOMENTS ;;   # MOMENTS="layernorm:4096x8192 ..."
    chan) timeout 300 python3 scripts/probe_chan.py ;;
    nchw) timeout 500 python3 scripts/probe_nchw.py $NCHW ;;   # NCHW="--candidates stats apply" (names to keep)
    streamclusters) timeout 300 python3 scripts/probe_streamed_clusters.py ;;
    rowsharetune) bash scripts/rowshare_tune.sh ;;
    fuzz)   # random programs on the GPU: 12 processes with their own seeds, each stopping at its first failure
      for i in $(seq 1 12); do
        TDSL_GPU_FUZZ_EXAMPLES=${FUZZ_EXAMPLES:-60} timeout ${FUZZ_SECONDS:-420} python3 -m pytest -q -x -m gpu \
          tests/test_gpu_fuzz.py -k "random_" -p no:cacheprovider -p no:benchmark --hypothesis-seed=$((1000 * i + RANDOM)) \
          > $OUT/fuzz_$i.log 2>&1 &
      done
      wait
      for i in $(seq 1 12); do echo "-- fuzz $i: $(tail -n 1 $OUT/fuzz_$i.log)"; done
      # every failure's first lines, into one file (the tool brings back a few files only)
      for i in $(seq 1 12); do echo "=== fuzz $i"; grep -A14 "^E  " $OUT/fuzz_$i.log | grep -v "Draw [0-9]" | head -60; done \
        > $OUT/fuzz_failures.txt
      cat $OUT/fuzz_*.log > $OUT/fuzz_all.txt && rm -f $OUT/fuzz_[0-9]*.log
      grep -h -A12 "^E  " $OUT/fuzz_all.txt | grep -v "Draw [0-9]" | head -60
      timeout 200 python3 -m pytest -q -m gpu tests/test_gpu_fuzz.py -k "found or mismatch" -p no:cacheprovider -p no:benchmark 2>&1 | tail -4 ;;
  esac
done 2>&1 | tee -a $OUT/run.log
echo "=== done $(date +%T)"
