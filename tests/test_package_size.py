"""The line count watched, as tinygrad watches its own: no module of the package and no
template grows past its limit, so a stage that outgrows one file is split by what it
decides (schedule/choose.py held every rule in 2148 lines until 2026-11-27; its rules
now live in pointwise.py, rows.py, shares.py, columns.py and matmul.py)."""
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_MODULE_LINES = 1300     # codegen/cuda.py, the largest, holds 1206 (pointwise walks: codegen/pointwise.py)
MAX_TEMPLATE_LINES = 650    # matmul_wgmma.cu.j2 holds 590


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def test_no_module_outgrows_its_file():
    sizes = {p.relative_to(ROOT).as_posix(): _lines(p) for p in (ROOT / "tiledsl").rglob("*.py")}
    assert sizes and sum(sizes.values()) > 5000       # the package was found and read
    too_big = {name: n for name, n in sizes.items() if n > MAX_MODULE_LINES}
    assert not too_big, f"split these by what they decide: {too_big}"


def test_no_template_outgrows_its_file():
    sizes = {p.name: _lines(p) for p in (ROOT / "templates").iterdir() if p.is_file()}
    assert sizes
    too_big = {name: n for name, n in sizes.items() if n > MAX_TEMPLATE_LINES}
    assert not too_big, f"move helpers into .cuh headers or split: {too_big}"
