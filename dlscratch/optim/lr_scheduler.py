"""Learning-rate schedules: change each parameter group's ``lr`` from epoch to epoch (PyTorch's names).

    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=8, gamma=0.1)
    for epoch in range(10):
        train_one_epoch(model, optimizer)
        scheduler.step()          # epochs 0-7 at 1e-3, then 1e-4

A scheduler remembers each group's learning rate when it was built (``base_lrs``) and counts the
epochs in ``last_epoch`` (0 after construction). ``step()`` adds one and sets every group's ``lr`` to
``base_lr * factor(last_epoch)``, the closed form of the schedule, so the learning rate of an epoch
depends only on its number. (PyTorch multiplies the current ``lr`` instead; the two agree unless
something else changes ``lr`` in between, or two schedulers are chained.)
"""

import bisect
import numbers

from .optimizer import Optimizer


class LRScheduler:
    """The base: subclasses define ``factor(epoch)``, the multiplier of the base learning rates."""

    _not_saved = ("optimizer",)  # state_dict() leaves these out

    def __init__(self, optimizer):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(
                f"{type(self).__name__}: expected an optimizer such as optim.SGD(model.parameters(), lr=0.1), "
                f"got {type(optimizer).__name__}"
            )
        self.optimizer = optimizer
        self.base_lrs = [group["lr"] for group in optimizer.param_groups]
        self.last_epoch = -1
        self.step()  # epoch 0: the learning rates of the first epoch

    def factor(self, epoch):
        raise NotImplementedError(f"{type(self).__name__} must define factor(epoch)")

    def get_lr(self):
        """The learning rate of each group at epoch ``last_epoch``."""
        return [base_lr * self.factor(self.last_epoch) for base_lr in self.base_lrs]

    def step(self):
        """Move to the next epoch and set each parameter group's ``lr``; call it once per epoch, after
        that epoch's ``optimizer.step()`` calls."""
        self.last_epoch += 1
        self._last_lr = [float(lr) for lr in self.get_lr()]
        for group, lr in zip(self.optimizer.param_groups, self._last_lr):
            group["lr"] = lr

    def get_last_lr(self):
        """The learning rates that the last ``step()`` set, one per parameter group."""
        return list(self._last_lr)

    def state_dict(self):
        """Everything but the optimizer (``last_epoch``, ``base_lrs``, the schedule's settings)."""
        return {key: _copy(value) for key, value in self.__dict__.items() if key not in self._not_saved}

    def load_state_dict(self, state_dict):
        """Restore what ``state_dict()`` saved. The optimizer's ``lr`` values are restored by the
        optimizer's own ``load_state_dict``, as in PyTorch."""
        unknown = set(state_dict) - set(self.state_dict())
        if unknown:
            raise ValueError(
                f"{type(self).__name__}.load_state_dict: unknown entries {sorted(unknown)}; "
                f"was the state saved from a {type(self).__name__}?"
            )
        self.__dict__.update({key: _copy(value) for key, value in state_dict.items()})

    def __repr__(self):
        return f"{type(self).__name__}(last_epoch={self.last_epoch}, lr={self.get_last_lr()})"


class StepLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` every ``step_size`` epochs:
    ``lr = base_lr * gamma ** (epoch // step_size)``."""

    def __init__(self, optimizer, step_size, gamma=0.1):
        _check_positive_int("StepLR", "step_size", step_size)
        _check_gamma("StepLR", gamma)
        self.step_size, self.gamma = int(step_size), float(gamma)
        super().__init__(optimizer)

    def factor(self, epoch):
        return self.gamma ** (epoch // self.step_size)


class MultiStepLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` at each epoch in ``milestones``:
    ``lr = base_lr * gamma ** (number of milestones <= epoch)``; a milestone listed twice counts twice."""

    def __init__(self, optimizer, milestones, gamma=0.1):
        milestones = list(milestones) if isinstance(milestones, (list, tuple, range)) else [milestones]
        for m in milestones:
            if isinstance(m, bool) or not isinstance(m, numbers.Integral) or m < 0:
                raise ValueError(f"MultiStepLR: milestones must be non-negative integers (epochs), got {milestones}")
        _check_gamma("MultiStepLR", gamma)
        self.milestones, self.gamma = sorted(int(m) for m in milestones), float(gamma)
        super().__init__(optimizer)

    def factor(self, epoch):
        return self.gamma ** bisect.bisect_right(self.milestones, epoch)


class ExponentialLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` every epoch: ``lr = base_lr * gamma ** epoch``."""

    def __init__(self, optimizer, gamma):
        _check_gamma("ExponentialLR", gamma)
        self.gamma = float(gamma)
        super().__init__(optimizer)

    def factor(self, epoch):
        return self.gamma**epoch


class LambdaLR(LRScheduler):
    """``lr = base_lr * lr_lambda(epoch)``. ``lr_lambda``: a function of the epoch, or a list of
    them, one per parameter group. The functions are not saved by ``state_dict()``."""

    _not_saved = ("optimizer", "lr_lambdas")

    def __init__(self, optimizer, lr_lambda):
        groups = len(getattr(optimizer, "param_groups", []))
        lambdas = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else [lr_lambda] * groups
        if len(lambdas) != groups:
            raise ValueError(
                f"LambdaLR: got {len(lambdas)} lr_lambdas for {groups} parameter groups; give one per group"
            )
        if not all(callable(f) for f in lambdas):
            raise TypeError("LambdaLR: lr_lambda must be a function of the epoch, e.g. lambda epoch: 0.95 ** epoch")
        self.lr_lambdas = lambdas
        super().__init__(optimizer)

    def get_lr(self):
        return [base_lr * f(self.last_epoch) for base_lr, f in zip(self.base_lrs, self.lr_lambdas)]


def _copy(value):
    """Lists (``base_lrs``, ``milestones``) copied, so that a saved state and a scheduler share nothing."""
    return list(value) if isinstance(value, list) else value


def _check_positive_int(name, key, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name}: {key} must be a positive integer (epochs), got {value!r}")


def _check_gamma(name, gamma):
    if isinstance(gamma, bool) or not isinstance(gamma, numbers.Real) or not gamma > 0:
        raise ValueError(f"{name}: gamma must be a positive number (the factor per decay, such as 0.1), got {gamma!r}")
