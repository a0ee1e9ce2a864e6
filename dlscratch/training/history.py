"""``History``: what ``fit`` measured, epoch by epoch and step by step, and ``plot_history``.

    history = fit(model, F.cross_entropy, optimizer, train_loader, epochs=3, val_loader=test_loader)
    history["loss"]          # training loss of each epoch, e.g. [0.41, 0.18, 0.12]
    history.val_accuracy     # the same values by attribute
    history.step_losses      # the training loss of every optimizer step
    plot_history(history)    # loss curves and accuracy, with matplotlib
"""

import numpy


class History:
    """Per-epoch lists of values by name (``"loss"``, ``"accuracy"``, ``"val_loss"``, ...), plus
    ``step_losses`` (the loss of every step) and ``epoch_steps`` (the number of steps in each epoch).
    When ``fit`` stopped inside an epoch (interrupted, or diverged), ``step_losses`` ends with the
    complete steps of that unfinished epoch, which has no entry in the per-epoch lists."""

    def __init__(self):
        self.metrics = {}
        self.step_losses = []
        self.epoch_steps = []

    def record_step(self, loss):
        self.step_losses.append(float(loss))

    def record_epoch(self, steps, **values):
        """Close an epoch of ``steps`` steps that measured ``values`` (name -> number)."""
        self.epoch_steps.append(int(steps))
        for name, value in values.items():
            self.metrics.setdefault(name, []).append(float(value))

    def keys(self):
        return self.metrics.keys()

    def __contains__(self, name):
        return name in self.metrics

    def __getitem__(self, name):
        try:
            return self.metrics[name]
        except KeyError:
            raise KeyError(f"History has no {name!r}; it recorded {sorted(self.metrics)}") from None

    def __getattr__(self, name):
        # Only called when normal lookup fails: the recorded metrics read as attributes.
        metrics = self.__dict__.get("metrics", {})
        if name in metrics:
            return metrics[name]
        raise AttributeError(f"History has no attribute {name!r}; it recorded {sorted(metrics)}")

    def __len__(self):
        """The number of epochs recorded."""
        return len(self.epoch_steps)

    def __repr__(self):
        head = f"History({len(self)} epochs, {len(self.step_losses)} steps)"
        if not self.metrics:
            return head
        names = list(self.metrics)
        widths = [max(len(n), 8) for n in names]
        lines = [head, "  epoch  " + "  ".join(n.rjust(w) for n, w in zip(names, widths))]
        for e in range(len(self)):
            values = "  ".join(f"{self.metrics[n][e]:{w}.4f}" for n, w in zip(names, widths))
            lines.append(f"  {e + 1:5d}  {values}")
        return "\n".join(lines)


def plot_history(history, ax=None):
    """Plot the loss (every step, and per epoch for training and validation) and, when recorded,
    the accuracy per epoch, against the epoch number.

    ax: None for a new figure with one panel per quantity; one matplotlib Axes (the loss panel
    only); or a sequence of two Axes (loss, accuracy). Returns the list of Axes drawn on
    (the figure is ``axes[0].figure``).
    """
    import matplotlib.pyplot as plt  # imported here: matplotlib is slow to import and only plots need it

    if not len(history):
        raise ValueError("plot_history: the history is empty; train for at least one epoch first")
    accuracy = [n for n in ("accuracy", "val_accuracy") if n in history]
    if ax is None:
        _, axes = plt.subplots(1, 2 if accuracy else 1, figsize=(9 if accuracy else 4.5, 3.2), squeeze=False,
                               layout="constrained")
        axes = list(axes[0])
    else:
        axes = [ax] if hasattr(ax, "plot") else list(numpy.ravel(ax))
    _plot_loss(axes[0], history)
    if len(axes) > 1 and accuracy:
        _plot_epochs(axes[1], history, accuracy, "accuracy")
    return axes


def _plot_loss(ax, history):
    ax.plot(_step_positions(history), history.step_losses, color="0.75", linewidth=0.8, label="loss (step)")
    _plot_epochs(ax, history, [n for n in ("loss", "val_loss") if n in history], "loss")


def _plot_epochs(ax, history, names, ylabel):
    for name in names:
        values = history[name]
        ax.plot(range(1, len(values) + 1), values, marker="o", label=name)
    ax.set_xlabel("epoch")
    ax.set_ylabel(ylabel)
    ax.legend()


def _step_positions(history):
    """Step k of an epoch of n steps that ends at epoch number e sits at e - 1 + k / n. The steps of
    an unfinished last epoch (fit interrupted, or diverged) go on at the spacing of the epoch before."""
    positions = []
    for e, n in enumerate(history.epoch_steps):
        positions += [e + (k + 1) / n for k in range(n)]
    unfinished, n = len(history.step_losses) - len(positions), history.epoch_steps[-1]
    positions += [len(history) + (k + 1) / n for k in range(unfinished)]
    return positions
