"""Post-training int8 quantisation (B. Jacob et al., "Quantization and Training of Neural Networks for Efficient
Integer-Arithmetic-Only Inference", CVPR 2018): weights as int8 with a scale per output channel, activations as
int8 with a scale and a zero point calibrated on held-out data, matrix products in integers with int32 sums."""

from .affine import activation_params, dequantize, quantize, weight_scales
from .int_gemm import INT8_MATMUL_METHODS, int8_matmul
from .modules import QuantizedConv2d, QuantizedLinear, quantize_model, stored_bytes

__all__ = ["INT8_MATMUL_METHODS", "QuantizedConv2d", "QuantizedLinear", "activation_params", "dequantize",
           "int8_matmul", "quantize", "quantize_model", "stored_bytes", "weight_scales"]
