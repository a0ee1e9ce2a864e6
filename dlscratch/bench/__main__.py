"""``python -m dlscratch.bench SUITE [--repeat R] [--quick] [--device cpu|gpu|auto]``."""

import argparse

from .. import backend
from . import SUITES, load_suite


def _positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def build_parser():
    parser = argparse.ArgumentParser(
        prog="python -m dlscratch.bench",
        description="Run a dlscratch benchmark suite and print its table.",
    )
    parser.add_argument("suite", choices=sorted(SUITES), help="the suite to run: %(choices)s")
    parser.add_argument("--repeat", type=_positive_int, help="timed repeats of each variant (default: the suite's)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke test, not a measurement")
    parser.add_argument(
        "--device", choices=["cpu", "gpu", "auto"],
        help="where to run (default: $DLSCRATCH_DEVICE, else cpu); auto takes the GPU when one is usable",
    )
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.device is not None:
        try:
            backend.use(args.device)
        except RuntimeError as exc:
            parser.error(str(exc))
    print(backend.describe())
    load_suite(args.suite).run(repeat=args.repeat, quick=args.quick)


if __name__ == "__main__":
    main()
