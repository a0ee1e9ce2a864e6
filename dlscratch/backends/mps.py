"""PyTorch's ``torch.backends.mps``: Apple's Metal GPUs. dlscratch runs on NumPy or CuPy, so never on one."""


def is_available():
    return False


def is_built():
    return False
