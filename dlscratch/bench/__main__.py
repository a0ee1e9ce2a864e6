"""``python -m dlscratch.bench SUITE [--repeat R] [--quick] [--device cpu|gpu|auto] [--busy N]``, or
``python -m dlscratch.bench gpu-report [...]`` (``gpu_report.py``)."""

import argparse
import sys

from .. import backend
from ..distributed.process_group import launched_rank
from ..fast import malloc
from . import SUITES, load_suite
from .busy import busy_cores


def _positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _count(text):
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def build_parser():
    parser = argparse.ArgumentParser(
        prog="python -m dlscratch.bench",
        description="Run a dlscratch benchmark suite and print its table.",
        epilog="The distributed suite runs under MPI, one BLAS thread per rank: "
               "OMP_NUM_THREADS=1 mpiexec -n 2 python -m dlscratch.bench distributed. "
               "Every suite, the tests and the lessons on a GPU, in one report: python -m dlscratch.bench gpu-report",
    )
    parser.add_argument("suite", choices=sorted(SUITES), help="the suite to run: %(choices)s")
    parser.add_argument("--repeat", type=_positive_int, help="timed repeats of each variant (default: the suite's)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke test, not a measurement")
    parser.add_argument(
        "--device", choices=["cpu", "gpu", "auto"],
        help="where to run (default: $DLSCRATCH_DEVICE, else cpu); auto takes the GPU when one is usable",
    )
    parser.add_argument(
        "--busy", type=_count, default=0, metavar="N",
        help="run beside N processes that each keep one CPU core busy (a shared machine); default 0",
    )
    return parser


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["gpu-report"]:
        from . import gpu_report
        return gpu_report.main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.device is not None:
        try:
            backend.use(args.device)
        except RuntimeError as exc:
            parser.error(str(exc))
    kept = malloc.keep_freed_memory()  # as fit() and the lessons do: each step reuses the last one's memory
    if launched_rank() == 0:  # under mpiexec (the distributed suite), rank 0 speaks for all
        print(backend.describe())
        print("freed memory kept in the process: " + ("yes" if kept else "no (DLSCRATCH_KEEP_MEMORY=0, or not glibc)"))
    if args.busy:
        print(f"busy machine: {args.busy} other process(es) each keep one CPU core busy during the measurements")
    with busy_cores(args.busy):
        load_suite(args.suite).run(repeat=args.repeat, quick=args.quick)


if __name__ == "__main__":
    sys.exit(main())
