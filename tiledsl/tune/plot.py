"""The roofline plot of a tuning run (matplotlib: `pip install tiledsl[tune]`).

Log-log: arithmetic intensity (FLOP/byte, from the IR) against achieved
FLOP/s; the roof is min(peak FLOP/s, intensity x bandwidth). All candidates
of one kernel share its intensity, so they form a column, spread a little
sideways by rank to stay readable; the winner, the default and the peers are
marked.
"""
from __future__ import annotations

from ..errors import TdslRuntimeError
from .roofline import roof


def roofline_plot(report, path: str) -> str:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise TdslRuntimeError("--plot needs matplotlib: pip install matplotlib "
                               "(or pip install tiledsl[tune])") from None
    w = report.work
    if w.flops <= 0 or w.bytes <= 0:
        raise TdslRuntimeError("nothing to plot: the kernel does no work at this shape")
    ai = w.intensity
    bandwidth = report.copy_bandwidth or (report.peak.hbm if report.peak else None)
    fig, ax = plt.subplots(figsize=(8, 5.5))
    xs = [ai / 64, ai * 64]
    if bandwidth:
        compute = None
        if report.peak is not None:
            compute = report.peak.tensor_f16 if w.tensor_cores else report.peak.f32
        ys = [min(x * bandwidth, compute) if compute else x * bandwidth for x in xs]
        if compute:
            knee = compute / bandwidth
            xs = sorted(set(xs + [knee] if xs[0] < knee < xs[1] else xs))
            ys = [min(x * bandwidth, compute) for x in xs]
        ax.plot(xs, ys, "k-", lw=1.5, label="roofline")
    timed = [c for g in report.groups for c in g.candidates if c.status == "timed"]
    timed.sort(key=lambda c: c.median)
    winners = {id(g.winner) for g in report.groups if g.winner is not None}
    for rank, c in enumerate(timed):
        x = ai * (1 + 0.02 * (rank - len(timed) / 2))
        y = w.flops / c.median
        style = dict(marker="o", color="tab:blue", ms=4, alpha=0.6)
        label = None
        if id(c) in winners:
            style, label = dict(marker="*", color="tab:red", ms=14), f"winner {c.tag}"
        elif c.is_default:
            style, label = dict(marker="s", color="tab:orange", ms=7), f"default {c.tag}"
        ax.plot([x], [y], linestyle="none", label=label, **style)
    for p in report.peers:
        if p.seconds:
            ax.plot([ai], [w.flops / p.seconds], marker="D", linestyle="none", ms=7, label=p.name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("achieved FLOP/s")
    bound = roof(w, report.peak, report.copy_bandwidth)
    title = f"{report.kernel} {' '.join(f'{d}={n}' for d, n in report.extents.items())}"
    ax.set_title(f"{title} on {report.device or report.arch}" + ("" if bound else " (no peak known)"))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
