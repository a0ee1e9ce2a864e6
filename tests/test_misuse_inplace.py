"""In-place changes after a forward pass: backward refuses to use values that changed since they
were recorded (version counters, as in PyTorch), and in-place writes follow PyTorch's rules."""

import numpy as np
import pytest

import dlscratch
import dlscratch.functional as F
from dlscratch import nn, optim

STALE = "was changed in place after"


def _leaf(values, requires_grad=True):
    return dlscratch.tensor(np.asarray(values, dtype=np.float32), requires_grad=requires_grad)


# ----- the cases that used to give silently wrong gradients -----
def test_augmenting_data_after_the_forward_pass_is_caught():
    w = _leaf([[1.0, 2.0]])
    x = _leaf([[3.0], [4.0]], requires_grad=False)
    y = (w @ x).sum()
    w.data -= 1.0  # the DeZero-style update, between forward and backward
    with pytest.raises(RuntimeError, match=r"backward through matmul: its input 0 \(Tensor of shape \(1, 2\)"):
        y.backward()


def test_a_second_backward_after_an_optimizer_step_is_caught():
    model = nn.Linear(3, 2)
    loss = model(dlscratch.ones(4, 3)).sum()
    loss.backward()
    optim.SGD(model.parameters(), lr=0.1).step()
    with pytest.raises(RuntimeError, match=r"backward through linear: its input 1 \(Parameter of shape \(2, 3\)"):
        loss.backward()


def test_the_error_names_a_named_tensor():
    w = _leaf([2.0])
    w.name = "scale"
    y = (w * w).sum()
    with dlscratch.no_grad():
        w.fill_(3.0)
    with pytest.raises(RuntimeError, match=r"mul: its input 0 \(Tensor 'scale'"):
        y.backward()


def _write(kind, t):
    with dlscratch.no_grad():
        if kind == "setitem":
            t[0] = 5.0
        elif kind == "copy_":
            t.copy_(np.full(t.shape, 5.0))
        elif kind == "fill_":
            t.fill_(5.0)
        elif kind == "zero_":
            t.zero_()
        elif kind == "add_":
            t.add_(1.0)
        elif kind == "mul_":
            t.mul_(3.0)
        elif kind == "data=":
            t.data = t.data + 1
        elif kind == "data-=":
            t.data -= 1


WRITES = ["setitem", "copy_", "fill_", "zero_", "add_", "mul_", "data=", "data-="]
# functions whose backward reads the values of ``x`` to give ``w`` its gradient
READERS = {
    "mul": lambda w, x: w * x,
    "div": lambda w, x: w / x,
    "pow": lambda w, x: w**x,
    "matmul": lambda w, x: w.reshape(1, -1) @ x.reshape(-1, 1),
    "linear": lambda w, x: F.linear(x.reshape(1, -1), w.reshape(1, -1)),
    "a view of x, then mul": lambda w, x: w * x[::-1],
}
# functions whose backward reads their outputs
OUTPUT_READERS = {
    "exp": lambda x: x.exp(),
    "tanh": lambda x: x.tanh(),
    "sigmoid": lambda x: x.sigmoid(),
    "relu": lambda x: x.relu(),
    "sqrt": lambda x: x.abs().sqrt(),
    "softmax": lambda x: x.softmax(0),
}
# how the written tensor relates to the one the function saved
ALIASES = {
    "itself": lambda t: t,
    "a view": lambda t: t.reshape(-1),
    "a slice": lambda t: t[:],
    "detached": lambda t: t.detach(),
}


@pytest.mark.parametrize("write", WRITES)
@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("alias", ALIASES)
def test_every_write_to_a_saved_input_or_its_alias_is_caught(write, reader, alias):
    w = _leaf([1.0, 2.0, 3.0])
    x = _leaf([0.5, 1.5, 2.0], requires_grad=False)
    y = READERS[reader](w, x)
    _write(write, ALIASES[alias](x))
    with pytest.raises(RuntimeError, match=STALE):
        y.sum().backward()


@pytest.mark.parametrize("write", WRITES)
@pytest.mark.parametrize("reader", OUTPUT_READERS)
def test_every_write_to_a_saved_output_is_caught(write, reader):
    x = _leaf([0.5, -1.5, 2.0])
    y = OUTPUT_READERS[reader](x)
    loss = y.sum()  # sum reads no values: the check that fires is the one of the function under test
    _write(write, y)
    with pytest.raises(RuntimeError, match=f"backward through {reader}: its output 0"):
        loss.backward()


@pytest.mark.parametrize("write", WRITES)
def test_writes_that_backward_does_not_read_are_allowed(write):
    x = _leaf([0.5, 1.5, 2.0])
    c = _leaf([1.0, 1.0, 1.0], requires_grad=False)
    y = (x + c).sum()  # add reads no values in its backward, as in PyTorch
    _write(write, c)
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0, 1.0])


@pytest.mark.parametrize("write", WRITES)
def test_writes_to_unrelated_tensors_and_writes_before_the_forward_are_allowed(write):
    x, w = _leaf([0.5, 1.5, 2.0], requires_grad=False), _leaf([1.0, 2.0, 3.0])
    _write(write, w)  # before the forward pass: the graph sees the new values
    expected = x.numpy().copy()
    y = (w * x).sum()
    _write(write, _leaf([9.0, 9.0, 9.0]))
    _write(write, x.clone())  # a clone has memory (and a counter) of its own
    y.backward()
    np.testing.assert_array_equal(w.grad.numpy(), expected)


def test_a_normal_training_loop_never_trips_the_check():
    dlscratch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    for opt in (optim.SGD(model.parameters(), lr=0.1, momentum=0.9), optim.Adam(model.parameters())):
        for _ in range(3):
            opt.zero_grad()
            F.cross_entropy(model(dlscratch.randn(5, 4)), np.array([0, 1, 0, 1, 1])).backward()
            opt.step()


# ----- who counts writes -----
@pytest.mark.parametrize(
    "make",
    [
        lambda ps: optim.SGD(ps, lr=0.1),
        lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.1),
        lambda ps: optim.Adam(ps),
        lambda ps: optim.AdaDelta(ps),
    ],
)
def test_optimizer_steps_count_as_writes(make):
    p = nn.Parameter(np.ones((2, 2)))
    opt = make([p])
    (p * p).sum().backward()
    before = p._version
    opt.step()
    assert p._version == before + 1


def test_initialisers_and_load_state_dict_count_as_writes():
    model = nn.Linear(2, 2)
    w = model.weight
    versions = [w._version]
    nn.init.zeros_(w)
    versions.append(w._version)
    nn.init.normal_(w)
    versions.append(w._version)
    model.load_state_dict({"weight": np.ones((2, 2)), "bias": np.zeros(2)})
    versions.append(w._version)
    assert versions == sorted(set(versions)) and len(versions) == 4
    np.testing.assert_array_equal(w.detach().numpy(), np.ones((2, 2)))


def test_views_and_detached_tensors_share_the_counter():
    x = _leaf([[1.0, 2.0], [3.0, 4.0]], requires_grad=False)
    views = [x.reshape(-1), x.T, x[0], x.detach(), x.unsqueeze(0), x.flatten()]
    with dlscratch.no_grad():
        views[2].fill_(0.0)
    assert x._version == 1 and all(v._version == 1 for v in views)
    np.testing.assert_array_equal(x.numpy(), [[0.0, 0.0], [3.0, 4.0]])
    copy = x * 1.0
    assert copy._version == 0  # a new array has its own counter


# ----- PyTorch's rules for in-place writes -----
def test_in_place_writes_on_a_leaf_that_requires_grad_need_no_grad():
    w = _leaf([1.0, 2.0])
    for write in (lambda: w.fill_(0.0), lambda: w.add_(1.0), lambda: w.__setitem__(0, 1.0), lambda: w.copy_([1, 2])):
        with pytest.raises(RuntimeError, match=r"leaf that requires grad.*no_grad"):
            write()
    np.testing.assert_array_equal(w.detach().numpy(), [1.0, 2.0])
    with dlscratch.no_grad():
        w[0] = 7.0
        w.add_([1.0, 1.0], alpha=2.0)
    np.testing.assert_array_equal(w.detach().numpy(), [9.0, 4.0])


def test_in_place_writes_on_a_recorded_tensor_or_from_a_value_that_requires_grad_are_refused():
    w = _leaf([1.0, 2.0])
    h = w * 2.0
    with pytest.raises(RuntimeError, match="computed by mul in a recorded graph"):
        h[0] = 0.0
    plain = dlscratch.zeros(2)
    with pytest.raises(RuntimeError, match="the value requires grad"):
        plain.copy_(w)
    plain.copy_(w.detach())  # a plain tensor may be written at any time
    plain[1] = 5.0
    np.testing.assert_array_equal(plain.numpy(), [1.0, 5.0])


def test_in_place_write_errors_are_clear_and_change_nothing():
    t = dlscratch.zeros(2, 3)
    with pytest.raises(ValueError, match=r"copy_: a source of shape \(4,\) cannot be broadcast .* \(2, 3\)"):
        t.copy_(np.ones(4))
    with pytest.raises(ValueError, match=r"add_: an operand of shape \(2, 1, 3\) cannot be broadcast"):
        t.add_(np.ones((2, 1, 3)))
    with pytest.raises(ValueError, match=r"item assignment into a tensor of shape \(2, 3\)"):
        t[0] = np.ones(4)
    with pytest.raises(TypeError, match="fill_: the value must be a number"):
        t.fill_(np.ones(3))
    ints = dlscratch.tensor([1, 2])
    with pytest.raises(TypeError, match="add_"):
        ints.add_(0.5)  # as in PyTorch: a float result cannot be written into an integer tensor
    assert t._version == 0 and ints._version == 0
    np.testing.assert_array_equal(t.numpy(), np.zeros((2, 3)))


def test_item_assignment_takes_masks_and_tensors():
    t = dlscratch.tensor([1.0, -2.0, 3.0, -4.0])
    t[t < 0] = 0.0
    t[dlscratch.tensor([0])] = dlscratch.tensor([10.0])
    np.testing.assert_array_equal(t.numpy(), [10.0, 0.0, 3.0, 0.0])
    assert t.dtype == np.float32 and t._version == 2


def test_assigning_data_checks_the_value_and_counts():
    t = dlscratch.zeros(2)
    t.data = dlscratch.ones(3)  # a tensor gives its array, as PyTorch's `p.data = other` does
    assert t.shape == (3,) and t._version == 1
    with pytest.raises(TypeError, match="Tensor.data must be a NumPy or CuPy array, not list"):
        t.data = [1.0, 2.0]


def test_clone_copies_and_passes_the_gradient(backend):
    x = dlscratch.tensor([1.0, 2.0], requires_grad=True)
    c = x.clone()
    with dlscratch.no_grad():
        c.fill_(3.0)  # c is not a leaf, so this needs no_grad; x is untouched
    np.testing.assert_array_equal(x.detach().numpy(), [1.0, 2.0])
    c = x.clone()
    (c * c).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])
    x64 = dlscratch.tensor([0.3, -1.2], dtype=np.float64, requires_grad=True)
    assert dlscratch.gradcheck(lambda t: t.clone() * t, x64)


def test_functions_that_copy_their_input_are_not_affected_by_later_writes():
    w = _leaf([1.0, 2.0])
    x = _leaf([3.0, 4.0], requires_grad=False)
    y = (F.concatenate([w, w]) * F.concatenate([x, x])).sum()  # mul saved a copy of x, not x
    x.fill_(0.0)
    y.backward()
    np.testing.assert_array_equal(w.grad.numpy(), [6.0, 8.0])
