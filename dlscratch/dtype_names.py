"""PyTorch's names for dtypes, as the NumPy types that dlscratch's arrays hold: ``dlscratch.float`` is
``numpy.float32``, so ``x.dtype == dlscratch.float`` and ``x.to(dlscratch.long)`` read as they do in PyTorch.
bfloat16 and complex32 have no NumPy dtype, and are not here."""

import numpy

float32 = float = numpy.float32  # noqa: A001 (PyTorch's name)
float64 = double = numpy.float64
float16 = half = numpy.float16
int64 = long = numpy.int64
int32 = int = numpy.int32  # noqa: A001
int16 = short = numpy.int16
int8 = numpy.int8
uint8 = numpy.uint8
bool = numpy.bool_  # noqa: A001
complex64 = cfloat = numpy.complex64
complex128 = cdouble = numpy.complex128

__all__ = ["bool", "cdouble", "cfloat", "complex128", "complex64", "double", "float", "float16", "float32",
           "float64", "half", "int", "int16", "int32", "int64", "int8", "long", "short", "uint8"]
