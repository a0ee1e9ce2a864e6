"""Learning-rate schedules against hand-computed schedules, bad input, and saving and loading.

Each expected list is the learning rate of epochs 0, 1, 2, ... worked out from the schedule's
formula by hand (PyTorch's documented values), without calling the code under test.
"""

import pytest

import dlscratch
from dlscratch import nn, optim
from dlscratch.optim.lr_scheduler import ExponentialLR, LambdaLR, MultiStepLR, StepLR


def sgd(lr=1.0, second_group_lr=None):
    groups = [{"params": [nn.Parameter([1.0])]}]
    if second_group_lr is not None:
        groups.append({"params": [nn.Parameter([2.0])], "lr": second_group_lr})
    return optim.SGD(groups, lr=lr)


def schedule(scheduler, epochs):
    """The first group's learning rate during each of ``epochs`` epochs (stepping after each)."""
    rates = []
    for _ in range(epochs):
        rates.append(scheduler.optimizer.param_groups[0]["lr"])
        assert scheduler.get_last_lr()[0] == rates[-1]
        scheduler.step()
    return rates


def test_step_lr():
    # lr = 0.5 * 0.1 ** (epoch // 3)
    rates = schedule(StepLR(sgd(0.5), step_size=3, gamma=0.1), 7)
    assert rates == pytest.approx([0.5, 0.5, 0.5, 0.05, 0.05, 0.05, 0.005])


def test_step_lr_default_gamma_is_a_tenth():
    assert schedule(StepLR(sgd(1.0), step_size=1), 3) == pytest.approx([1.0, 0.1, 0.01])


def test_multi_step_lr_with_unsorted_and_repeated_milestones():
    # milestones 2 and 5 (listed twice): x0.5 from epoch 2, x0.25 more from epoch 5
    rates = schedule(MultiStepLR(sgd(1.0), milestones=[5, 2, 5], gamma=0.5), 7)
    assert rates == pytest.approx([1.0, 1.0, 0.5, 0.5, 0.5, 0.125, 0.125])


def test_exponential_lr():
    assert schedule(ExponentialLR(sgd(2.0), gamma=0.5), 4) == pytest.approx([2.0, 1.0, 0.5, 0.25])


def test_lambda_lr_one_function_per_group():
    optimizer = sgd(1.0, second_group_lr=0.1)
    scheduler = LambdaLR(optimizer, [lambda e: 1 / (e + 1), lambda e: 2.0**e])
    scheduler.step()
    scheduler.step()
    # epoch 2: 1.0 * 1/3 and 0.1 * 4
    assert scheduler.get_last_lr() == pytest.approx([1 / 3, 0.4])
    assert [g["lr"] for g in optimizer.param_groups] == pytest.approx([1 / 3, 0.4])
    assert scheduler.last_epoch == 2


def test_every_group_follows_its_own_base_rate():
    optimizer = sgd(1.0, second_group_lr=0.2)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.5)
    assert scheduler.base_lrs == [1.0, 0.2] and scheduler.last_epoch == 0
    scheduler.step()
    assert [g["lr"] for g in optimizer.param_groups] == pytest.approx([0.5, 0.1])
    assert all(isinstance(lr, float) for lr in scheduler.get_last_lr())


def test_the_optimizer_trains_at_the_scheduled_rate():
    p = nn.Parameter([0.0])
    optimizer = optim.SGD([p], lr=1.0)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.1)
    for _ in range(3):  # p -= lr * 1 with lr = 1, 0.1, 0.01
        p.grad = dlscratch.tensor([1.0])
        optimizer.step()
        scheduler.step()
    assert p.detach().numpy()[0] == pytest.approx(-1.11, rel=1e-6)


def test_state_dict_round_trip_resumes_the_schedule():
    first = StepLR(sgd(1.0), step_size=2, gamma=0.1)
    for _ in range(3):
        first.step()
    saved = first.state_dict()
    assert "optimizer" not in saved and saved["last_epoch"] == 3 and saved["step_size"] == 2
    optimizer = sgd(1.0)
    resumed = StepLR(optimizer, step_size=5, gamma=0.5)
    resumed.load_state_dict(saved)
    assert (resumed.last_epoch, resumed.step_size, resumed.gamma) == (3, 2, 0.1)
    resumed.step()  # epoch 4: 1.0 * 0.1 ** 2
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.01)
    saved["base_lrs"][0] = 7.0
    first.state_dict()["base_lrs"][0] = 7.0
    assert resumed.base_lrs == [1.0] and first.base_lrs == [1.0], "a saved state must share no list with a scheduler"


def test_lambda_lr_state_dict_leaves_out_the_functions():
    scheduler = LambdaLR(sgd(1.0), lambda e: 0.9**e)
    scheduler.step()
    saved = scheduler.state_dict()
    assert "lr_lambdas" not in saved and saved["last_epoch"] == 1
    other = LambdaLR(sgd(1.0), lambda e: 0.9**e)
    other.load_state_dict(saved)
    other.step()
    assert other.get_last_lr() == pytest.approx([0.81])


def test_load_state_dict_rejects_another_schedulers_state():
    saved = MultiStepLR(sgd(), milestones=[1]).state_dict()
    with pytest.raises(ValueError, match=r"StepLR.load_state_dict: unknown entries \['milestones'\]"):
        StepLR(sgd(), step_size=1).load_state_dict(saved)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda o: StepLR(o, step_size=0), "StepLR: step_size must be a positive integer"),
        (lambda o: StepLR(o, step_size=1.5), "StepLR: step_size must be a positive integer"),
        (lambda o: StepLR(o, step_size=2, gamma=0), "StepLR: gamma must be a positive number"),
        (lambda o: ExponentialLR(o, gamma="0.9"), "ExponentialLR: gamma must be a positive number"),
        (lambda o: MultiStepLR(o, milestones=[2, -1]), "MultiStepLR: milestones must be non-negative integers"),
        (lambda o: MultiStepLR(o, milestones=[2.5]), "MultiStepLR: milestones must be non-negative integers"),
        (lambda o: LambdaLR(o, [lambda e: 1.0] * 2), "LambdaLR: got 2 lr_lambdas for 1 parameter groups"),
    ],
)
def test_bad_settings_are_rejected_with_a_clear_message(make, message):
    with pytest.raises(ValueError, match=message):
        make(sgd())


def test_bad_optimizer_or_lambda_is_a_type_error():
    with pytest.raises(TypeError, match="StepLR: expected an optimizer such as optim.SGD"):
        StepLR([nn.Parameter([1.0])], step_size=1)
    with pytest.raises(TypeError, match="LambdaLR: lr_lambda must be a function of the epoch"):
        LambdaLR(sgd(), 0.5)


def test_lr_scheduler_is_reachable_as_in_pytorch():
    assert optim.lr_scheduler.StepLR is StepLR
