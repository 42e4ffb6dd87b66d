"""Rows held by a cluster's blocks on a persistent grid: only the clusters resident at once,
each looping over rows (Schedule.persistent), and copying its share of the next row into
shared memory while it finishes this one (Schedule.prefetch with cluster > 1). Which held
rows take them (resident_clusters), the tuner's twins, and the prefetch's shared memory."""
from __future__ import annotations

from dataclasses import replace

from .problem import Problem
from .schedules import Schedule, shared_copy_refusal


# A row held by a cluster's blocks of this many threads (one block an SM) goes to a persistent
# grid of clusters, which prefetches its next row where it has one (resident_clusters).
PERSISTENT_CLUSTER_THREADS = 1024


def resident_clusters(p: Problem, held: Schedule) -> Schedule:
    """A row held in the registers of a cluster's blocks of 1024 threads (one block an SM): only
    the clusters resident at once are launched, each looping over rows (persistent), and
    each block copies its share of its next row into shared memory while it reduces and stores
    this one (prefetch; where there are more rows than clusters and the share fits; where the
    compiled kernel then spills, the launcher runs it without: without_spilled_prefetch). A block a
    row, each new cluster waits for 8 SMs to free at once, and an SM loads, waits on the
    exchanges and stores one phase after the other. H100 2026-12-06 14:18
    (scripts/probe_prefetch_rows.py), us, a cluster a row / persistent / persistent and
    prefetching: softmax f32 256x262144 228.6 / 207.2 / 194.6 (0.78x -> 0.92x copy; 15 clusters
    of 8 resident), 1000x262144 841.4 / 741.4 / 723.5 (0.83x -> 0.96x), 64x200000 57.0 / 57.1 /
    46.3, 24x262144 31.7 / 29.8 / 26.7; peeled 300x262147 289.2 / 252.4; rmsnorm f32 300x262144
    275.9 / 229.9 / 274.1 (spilled); layernorm f32 323.9 / 300.7 / 272.3 (17:34: 328.2 / 298.7 /
    269.7; weights crowd no row's registers but rmsnorm f32's of 8 float4 a thread, the one of 60
    prefetching defaults of 11 programs, 3 dtypes and rows of 200000 to 524288 that spilled).
    Rows held by blocks of 512, two an SM, stay as they are: there persistent grids lost as often
    as they won (softmax f32 1024x65536 193.3 / 203.1 / 200.8, f16 512x262144 203.9 / 201.7 /
    200.8, f16 2048x131072 381.3 / 393.7 / 390.3 at 13:58; rmsnorm f16 1024x131072 223.8 / 199.4 /
    217.1): tuner candidates (persistent_cluster_twins)."""
    twins = persistent_cluster_twins(p, held) if held.block >= PERSISTENT_CLUSTER_THREADS else []
    if not twins:
        return held
    if len(twins) == 2 and p.rows > p.sm_count // held.cluster:
        return twins[1]
    return twins[0]


def persistent_cluster_twins(p: Problem, held: Schedule) -> list[Schedule]:
    """A row held by a cluster's blocks on a persistent grid of clusters, and prefetching its
    next row there where that fits (tuner candidates beside `held`: resident_clusters)."""
    if held.kind != "reduce_row" or held.cluster < 2 or not held.items or held.persistent:
        return []
    persistent = replace(held, persistent=True)
    ahead = None if held.peel else replace(persistent, prefetch=True)
    return [persistent] + ([ahead] if ahead and not cluster_prefetch_refusal(p, ahead) else [])


def cluster_prefetches(s: Schedule) -> bool:
    """Whether `s` is a cluster's row whose blocks prefetch their shares of the next row."""
    return s.kind == "reduce_row" and s.cluster > 1 and s.prefetch


def cluster_prefetch_bytes(p: Problem, s: Schedule) -> int:
    """Dynamic shared memory a block of a persistent cluster takes for its share of the next
    row (Schedule.prefetch with cluster > 1): each thread's `items` 16-byte vectors of every
    per-row input (codegen, ahead_slot)."""
    if not cluster_prefetches(s):
        return 0
    return len(p.layout.row_inputs) * s.items * s.block * 16


def cluster_prefetch_refusal(p: Problem, s: Schedule) -> str:
    """'' when a persistent cluster's blocks can copy their shares of the next row into shared
    memory (Schedule.prefetch, cluster > 1), else why not."""
    return shared_copy_refusal(p, s, cluster_prefetch_bytes(p, s), "a row prefetched into shared memory",
                               "the next row's share")


def without_spilled_prefetch(s: Schedule, usage) -> Schedule:
    """A persistent cluster's prefetching row `s` without its prefetch where its compiled kernel
    (`usage`: ptxas's toolchain.ResourceUsage) spills: the copies' addresses leave its row no
    room at the 64 registers of a block of 1024 (rmsnorm f32 300x262144: 16 bytes; prefetching
    and spilling 274.1 us, persistent alone 229.9 on the H100, 2026-12-06). Known only once
    compiled, so the launcher asks (Launcher._prefetch_in_registers)."""
    if cluster_prefetches(s) and usage is not None and usage.spills:
        return replace(s, prefetch=False)
    return s
