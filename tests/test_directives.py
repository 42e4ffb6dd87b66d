"""The schedule directives each kind of kernel part reads, as `tiledsl check` tells users
(frontend.advice.DIRECTIVE_READERS), against what the scheduler does with them
(schedule/choose.py and its rules): a directive changes the default schedule of some
part of every kind that reads it (or is refused there, which reads it too), and of no
part of any other kind. A directive added to a rule, or a reader dropped, fails here until the
table says so."""
import pytest

import tiledsl
from tiledsl.errors import TdslError
from tiledsl.frontend.advice import DIRECTIVE_READERS
from tiledsl.schedule.choose import default
from tiledsl.schedule.problem import problem
from tiledsl.schedule.layout import plan_layout
from tiledsl.schedule.partition import partition

# programs of one part each, by the kind advice names it; shapes where rules differ
PROGRAMS = {
    "pointwise": [
        ("kernel k(x: f32[M, N], y: f32[N]) -> f32[M, N] { return relu(x + y) }", dict(M=4096, N=4096)),
        ("kernel k(x: f16[M, N]) -> f16[N, M] { return x.T * 2.0 }", dict(M=4096, N=4096)),
    ],
    "reduce": [
        ("kernel k(x: f32[M, N]) -> f32[M, N] { return exp(x - max(x, axis=N)) }", dict(M=16384, N=1024)),
        ("kernel k(x: f16[M, N]) -> f32[M] { return sum(x, axis=N) }", dict(M=256, N=200003)),
        ("kernel k(x: f32[M, N]) -> f32[M, N] { return x / sum(x, axis=N) }", dict(M=1024, N=65536)),
        ("kernel k(x: f16[M, N]) -> f32[N] { return mean(x, axis=M) }", dict(M=65536, N=768)),
        ("kernel k(x: f32[M, N]) -> f32[N] { return sum(x, axis=M) }", dict(M=4096, N=100000)),
    ],
    "matmul": [
        ("kernel k(a: f16[M, K], b: f16[K, N]) -> f16[M, N] { return a @ b }", dict(M=4096, N=4096, K=4096)),
        ("kernel k(a: f32[M, K], b: f32[K, N]) -> f32[M, N] { return a @ b }", dict(M=1024, N=1024, K=8192)),
    ],
}

# values for each directive (one of them, at least, differs from what a rule would choose);
# dims a program lacks are left out of tile() and microtile()
VALUES = {
    "tile": [dict(M=64, N=64, K=32), dict(M=128, N=128, K=64)],
    "microtile": [dict(M=4, N=4), dict(M=8, N=8)],
    "split_k": ["split_k(4)"],
    "group": ["group(4)"],
    "tf32": ["tf32(true)"],
    "stages": ["stages(2)", "stages(4)"],
    "warps": ["warps(2)", "warps(8)"],
    "threads": ["threads(64)", "threads(512)"],
    "vector": ["vector(1)", "vector(2)"],
    "cluster": ["cluster(2)", "cluster(4)"],
}


def _block(directive: str, value, extents: dict) -> str:
    if isinstance(value, str):
        return value
    return f"{directive}({', '.join(f'{d}={n}' for d, n in value.items() if d in extents)})"


def _defaults(src: str, extents: dict, block: str = ""):
    """The default schedules of the program's parts (with a schedule block of `block`), or
    the error they raise (a refusal reads the directive as much as a change does)."""
    k = tiledsl.compile(src + (f"\nschedule k {{ {block} }}" if block else ""))
    try:
        return [(g.kind, default(problem(g, plan_layout(g, k.graph), extents, frozenset(), 132, "sm_90a"), k.hints))
                for g in partition(k.graph)]
    except TdslError as e:
        return f"refused: {e}"


def test_every_directive_is_in_the_table():
    assert set(VALUES) == set(DIRECTIVE_READERS)
    assert {k for readers in DIRECTIVE_READERS.values() for k in readers} <= set(PROGRAMS)


@pytest.mark.parametrize("directive", sorted(VALUES))
def test_a_directive_changes_the_parts_that_read_it_and_no_other(directive):
    readers = set()
    for kind, programs in PROGRAMS.items():
        for src, extents in programs:
            assert [g.kind for g in partition(tiledsl.compile(src).graph)] == [kind], src
            plain = _defaults(src, extents)
            assert not isinstance(plain, str), plain
            if any(_defaults(src, extents, _block(directive, v, extents)) != plain for v in VALUES[directive]):
                readers.add(kind)
    assert readers == DIRECTIVE_READERS[directive], (
        f"{directive}() changes the default schedule of {sorted(readers) or 'no part'}; "
        f"advice.DIRECTIVE_READERS says {sorted(DIRECTIVE_READERS[directive])}")
