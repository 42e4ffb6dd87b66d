"""Probe (device run): device-to-device copy bandwidth by size, to tell a kernel's
own cost from what any kernel of that size pays (launch, ramp-up, the last wave).

    python scripts/probe_copy.py

H100, 2026-11-22: 3002 GB/s over 1 GiB, 2963 at 256 MiB, 2880 at 128 MiB, 2750 at
64 MiB (0.92x; 48.8 us: what layernorm 4096x8192 f16 reads), 2525 at 32 MiB."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.common import copy_bandwidth  # noqa: E402

for mib in (1024, 256, 128, 64, 32):
    c = copy_bandwidth(mib << 20, repeats=30, rotate=mib < 1024, warmup_ms=100)
    print(f"copy {mib} MiB: memcpy {c['memcpy_gbps']:.0f} GB/s ({c['memcpy_us']:.1f} us), "
          f"kernel {c['copy_kernel_gbps']:.0f} GB/s ({c['copy_kernel_us']:.1f} us)")
