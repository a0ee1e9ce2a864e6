"""Layer: one device per operation. Tensors on the CPU and on the GPU in one operation are refused, naming
where each input is and how to move it, rather than failing deep inside NumPy or CuPy (or copying to the
host unseen). It runs only where CuPy is installed. Attached at the core's ``Function.prepare``.
"""


def check_same_device(fn, inputs):
    devices = [x.device for x in inputs]
    if len(set(devices)) > 1:
        where = ", ".join(f"input {i} is on {d}" for i, d in enumerate(devices))
        raise RuntimeError(
            f"{fn.name}: tensors are on different devices ({where}); move them to one device "
            "first, e.g. x.to('gpu') or x.to('cpu')"
        )
