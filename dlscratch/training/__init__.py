"""Training helpers for after a lesson has written the loop by hand: ``fit``, ``evaluate``,
``History`` and ``plot_history``.

    from dlscratch.training import fit, plot_history

    history = fit(model, F.cross_entropy, optimizer, train_loader, epochs=5, val_loader=test_loader)
    plot_history(history)
"""

from .fit import METRICS, TrainingDiverged, TrainingInterrupted, correct_count, evaluate, fit
from .history import History, plot_history

__all__ = [
    "METRICS", "History", "TrainingDiverged", "TrainingInterrupted", "correct_count", "evaluate", "fit", "plot_history",
]
