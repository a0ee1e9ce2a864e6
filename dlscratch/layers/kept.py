"""Arrays that never change, made once and kept: what ``seeds.py`` and ``constants.py`` share.

The seed of ``loss.backward()`` and the 0-d array of a scalar operand (``x * 0.5``) hold the same values in every
training step; on a GPU, making each anew would be a launch or a copy to the device every time. Each is kept by a
key that says what it holds and where (array type, device). A kept array is read-only where the array module
allows it (NumPy; CuPy has no such flag), so code that wrote into one would fail loudly rather than change every
later use.
"""


def keep(table, key, array, limit=None):
    """``array`` made read-only where it can be, and kept in ``table`` under ``key`` while ``table`` holds fewer
    than ``limit`` arrays (None: no limit). Returns ``array``."""
    flags = getattr(array, "flags", None)
    if hasattr(flags, "writeable"):
        flags.writeable = False
    if limit is None or len(table) < limit:
        table[key] = array
    return array
