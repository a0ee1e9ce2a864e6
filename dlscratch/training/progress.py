"""The progress bar that ``fit`` shows: ``tqdm.auto`` picks a notebook widget inside Jupyter and a
text bar in a terminal, so lessons and scripts share one call. The widget needs ``ipywidgets``;
without it tqdm warns and uses the text bar, which also works in a notebook, so the warning is
silenced."""

import warnings

from tqdm import TqdmWarning

with warnings.catch_warnings():
    warnings.simplefilter("ignore", TqdmWarning)
    from tqdm.auto import tqdm


def progress_bar(loader, description, enabled=True):
    """A bar counting the batches of ``loader`` (advanced with ``bar.update()``), labelled
    ``description``; with ``enabled=False`` it is created disabled and prints nothing."""
    total = len(loader) if hasattr(loader, "__len__") else None
    return tqdm(total=total, desc=description, unit="batch", leave=True, disable=not enabled)
