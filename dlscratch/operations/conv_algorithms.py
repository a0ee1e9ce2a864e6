"""The algorithms that ``conv2d(algorithm=...)`` chooses among (cuDNN's word), by name.

``"im2col"``, the default, is the convolution of lesson 4 (``conv.py``), which each path builds its own way.
The others come from lesson 12 and register themselves here when their module is imported: ``"fft"``
(``fft_conv.py``), ``"winograd2"`` and ``"winograd4"`` (``winograd.py``). So ``conv.py`` imports none of them.
Every registered algorithm convolves with stride 1.
"""

_registered = {}  # name -> (make: padding (ph, pw) -> its Function, the one kernel size it takes or None)


def register_algorithm(name, make, kernel=None):
    """Offer ``name`` to ``conv2d``: ``make(padding)`` returns the ``Function`` that convolves by it, stride 1.
    ``kernel``: the one ``(kh, kw)`` it takes (Winograd's ``(3, 3)``), or None for any."""
    _registered[name] = make, kernel


def algorithm_names():
    """Every name ``conv2d(algorithm=...)`` takes, ``"im2col"`` first."""
    return ("im2col", *_registered)


def check_algorithm(algorithm, kernel, stride, im2col_method=None):
    """Refuse an unknown ``algorithm``, or a registered one that does not fit ``kernel`` and ``stride``
    (``(height, width)`` pairs) or that is given an ``im2col_method``. ``ValueError`` naming what does not fit."""
    if algorithm not in algorithm_names():
        choices = ", ".join(map(repr, algorithm_names()))
        raise ValueError(f"conv2d: unknown algorithm {algorithm!r}; choose one of {choices}")
    if algorithm == "im2col":
        return
    if im2col_method is not None:
        raise ValueError(
            f"conv2d: im2col_method={im2col_method!r} picks how im2col copies its windows; algorithm={algorithm!r} "
            "uses no im2col, so leave im2col_method=None"
        )
    if tuple(stride) != (1, 1):
        raise ValueError(f"conv2d: algorithm={algorithm!r} needs stride 1, got stride {tuple(stride)}; use 'im2col'")
    size = _registered[algorithm][1]
    if size is not None and tuple(kernel) != size:
        raise ValueError(
            f"conv2d: algorithm={algorithm!r} is for {size[0]} x {size[1]} kernels; got {kernel[0]} x {kernel[1]}; "
            "use 'im2col'"
        )


def registered_algorithm(algorithm, padding):
    """The ``Function`` that convolves by ``algorithm``, a registered one (any but ``"im2col"``), checked
    with ``check_algorithm`` first; ``padding``: ``(ph, pw)``."""
    make, _ = _registered[algorithm]
    return make(tuple(padding))
