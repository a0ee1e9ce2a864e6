"""What CuPy writes for -0.0 and for a NaN with a payload, by the way the array is made (run on a GPU; its output
is cupy-zeros-and-nans.txt beside this file)."""

import struct

import cupy as cp
import numpy as np

NEGATIVE_ZERO = -0.0
NAN = struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000000 | (2 << 44)))[0]  # a quiet NaN with a payload


def bits(a):
    return hex(int(cp.asnumpy(a).reshape(-1)[0:1].view(np.uint32)[0]))


def filled(v):
    a = cp.empty(2, cp.float32)
    a.fill(v)
    return a


for name, make in [
    ("asarray(py, f32)", lambda v: cp.asarray(v, dtype=cp.float32)),
    ("array(py, f32)", lambda v: cp.array(v, dtype=cp.float32)),
    ("asarray(np.float32)", lambda v: cp.asarray(np.float32(v))),
    ("asarray(np 0-d)", lambda v: cp.asarray(np.asarray(v, np.float32))),
    ("asarray(np 1-d)", lambda v: cp.asarray(np.asarray([v], np.float32))),
    ("full((), v, f32)", lambda v: cp.full((), v, cp.float32)),
    ("full((2,), v, f32)", lambda v: cp.full((2,), v, cp.float32)),
    ("empty.fill(v)", filled),
    ("ones*v", lambda v: cp.ones(2, cp.float32) * v),
]:
    print(f"{name:22s} -0.0 -> {bits(make(NEGATIVE_ZERO))}   nan(payload 0x7f900000) -> {bits(make(NAN))}")
print("ones + nan-with-payload array ->", bits(cp.ones(2, cp.float32) + cp.asarray(np.asarray([NAN], np.float32))))
