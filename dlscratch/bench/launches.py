"""Suite "launches": what one training step asks of the GPU, counted by the launch ledger.

For each of the five workloads of the GPU profile (``workloads.py``): one warm-up step, then a few steps
counted inside ``backend.ledger()``, and per step the kernels, memsets, copies, host waits, allocations and
launches, beside eager PyTorch's CUPTI counts for the same step (one NVIDIA H100, PyTorch 2.11: the profile that
docs/gpu.md describes; the figures are in ``workloads.py``). A launch is any work queued on the device (a kernel,
a memset or a copy); each costs the host 5-25 µs, so a small model's step takes as long as its launches and
waits. Then the call sites of the workload that is furthest from PyTorch, and every workload's launches by name: on
a GPU CUPTI's kernel names, to hold against the stand-in's model of the same step kernel by kernel.

NumPy launches nothing, so on the CPU the suite runs on the strict CuPy stand-in, which counts what CuPy
would launch; on a GPU it counts there. Counts, not times: ``--repeat`` changes nothing.
"""

from .. import backend
from .timing import format_table, on_the_fast_path
from .workloads import COPIES, WORKLOADS, cupti_launches

HEADERS = ["workload", "kernels", "memsets", "copies d2d/to host/to device", "waits", "allocations",
           "launches", "PyTorch kernels/memsets/copies", "x PyTorch"]
TOP_SITES = 10


def run(repeat=None, quick=False):
    """Count every workload's step, print the table and the worst one's call sites; return ``(headers, rows)``."""
    where = choose_device()
    print(f"launches: per training step, counted by backend.ledger() on {where}, fast path; PyTorch: "
          "CUPTI's counts for eager PyTorch on an H100 (docs/gpu.md); "
          "x PyTorch = launches (kernels + memsets + copies) / PyTorch's")
    if quick:
        print("quick mode: tiny sizes, a smoke test: the counts are not the named workloads' (no ratio to PyTorch)")
    rows, ledgers, ratios = [], {}, {}
    for workload in WORKLOADS:
        ledgers[workload.name] = per_step = count(workload.build(quick=quick), workload.counted_steps)
        ratios[workload.name] = per_step.launches / cupti_launches(workload.pytorch)
        rows.append(row(workload, per_step, "-" if quick else f"{ratios[workload.name]:.2f}"))
    print(format_table(HEADERS, rows))
    for workload in WORKLOADS:
        if workload.pytorch_note:
            print(f"{workload.name}: {workload.pytorch_note}")
    worst = max(ratios, key=ratios.get)
    versus = "" if quick else f" ({ratios[worst]:.1f}x PyTorch's)"
    print(f"\nwhere the launches of {worst} come from{versus}, per step:")
    print(ledgers[worst].table(top=TOP_SITES))
    print("\nwhat each step launches, by name, per step:")
    for workload in WORKLOADS:
        print(f"{workload.name}:")
        for category, what, n in ledgers[workload.name].by_name():
            print(f"  {number(n):>6}  {category:<14}  {short_name(what)}")
    return HEADERS, rows


def short_name(name):
    """A kernel's name without C++'s template arguments and parameter list (CUPTI names a cub kernel by its whole
    signature); other names as they are."""
    if not name.startswith("void "):
        return name
    kept, depth = [], 0
    for character in name[len("void "):]:
        depth += (character in "<(") - (character in ">)")
        if depth == 0 and character not in ">)":
            kept.append(character)
    return "".join(kept)


def choose_device():
    """Where the counting runs, in words; on NumPy, switch to the strict stand-in first (for good)."""
    if backend.xp is backend.numpy:
        backend.use_strict_stand_in()
        backend.use("gpu")
        return "the strict CuPy stand-in (no GPU in use: what CuPy would launch, counted on the CPU)"
    if backend.strict_stand_in():
        return "the strict CuPy stand-in"
    return "the GPU"


def count(step, steps):
    """The ledger of ``steps`` calls of ``step`` after one warm-up call, per step."""
    step = on_the_fast_path(step)
    step()  # the first step makes the optimizer's state and fills caches: not a step like the others
    with backend.ledger() as ledger:
        for _ in range(steps):
            step()
    return ledger.per(steps)


def row(workload, per_step, ratio):
    """One table row: ``per_step``'s counts (a ``Ledger``) beside PyTorch's for ``workload``, and ``ratio``."""
    copies = "/".join(number(getattr(per_step, c)) for c in COPIES)
    theirs = workload.pytorch
    pytorch = f"{theirs.get('kernels', 0)}/{theirs.get('memsets', 0)}/{sum(theirs.get(c, 0) for c in COPIES)}"
    return [workload.name, number(per_step.kernels), number(per_step.memsets), copies, number(per_step.waits),
            number(per_step.allocations), number(per_step.launches), pytorch, ratio]


def number(count):
    """A count per step as text: whole counts without a decimal point."""
    return f"{count:.0f}" if float(count).is_integer() else f"{count:.1f}"
