"""nn.Conv2d, nn.MaxPool2d and nn.AvgPool2d: shapes, PyTorch's initialisation, forward equal
to the functions, bad arguments, and a small CNN that learns."""

import math

import numpy as np
import pytest

import dlscratch
import dlscratch.functional as F
import dlscratch.nn as nn


def test_conv2d_parameters_have_pytorchs_shapes_and_names():
    conv = nn.Conv2d(3, 8, (3, 2), stride=2, padding=(1, 0))
    assert conv.weight.shape == (8, 3, 3, 2) and conv.bias.shape == (8,)
    assert conv.weight.dtype == np.float32 and conv.weight.requires_grad
    assert [name for name, _ in conv.named_parameters()] == ["weight", "bias"]
    assert conv.num_parameters() == 8 * 3 * 3 * 2 + 8
    assert repr(conv).startswith("Conv2d(3, 8, kernel_size=(3, 2), stride=(2, 2), padding=(1, 0), bias=True)")
    assert nn.Conv2d(3, 8, 3, bias=False).bias is None
    assert [name for name, _ in nn.Conv2d(3, 8, 3, bias=False).named_parameters()] == ["weight"]


def test_conv2d_init_is_pytorchs_uniform_on_one_over_sqrt_fan_in():
    dlscratch.manual_seed(0)
    conv = nn.Conv2d(16, 64, 5)
    bound = 1 / math.sqrt(16 * 5 * 5)  # kaiming_uniform_(a=sqrt(5)) gives the same bound as the bias
    for p in (conv.weight.data, conv.bias.data):
        assert np.abs(p).max() <= bound
    assert np.abs(conv.weight.data).max() > 0.99 * bound
    assert conv.weight.data.std() == pytest.approx(bound / math.sqrt(3), rel=0.02)
    dlscratch.manual_seed(0)
    assert np.array_equal(nn.Conv2d(16, 64, 5).weight.data, conv.weight.data)  # seeded


def test_conv2d_forward_equals_the_function():
    conv = nn.Conv2d(2, 3, 3, stride=2, padding=1)
    x = dlscratch.randn(4, 2, 7, 6)
    assert np.array_equal(conv(x).data, F.conv2d(x, conv.weight, conv.bias, 2, 1).data)
    assert conv(x).shape == (4, 3, 4, 3)


def test_pool_layers_forward_equal_the_functions():
    x = dlscratch.randn(2, 3, 7, 7)
    pool = nn.MaxPool2d(3, stride=2, padding=1)
    assert np.array_equal(pool(x).data, F.max_pool2d(x, 3, 2, 1).data)
    assert repr(pool) == "MaxPool2d(kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))"
    assert nn.MaxPool2d(2).stride == (2, 2)  # stride defaults to the kernel size
    assert np.array_equal(nn.AvgPool2d((2, 3))(x).data, F.avg_pool2d(x, (2, 3)).data)
    assert list(nn.MaxPool2d(2).parameters()) == []


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: nn.Conv2d(0, 4, 3), r"Conv2d: in_channels must be a positive integer, got 0"),
        (lambda: nn.Conv2d(3, 2.5, 3), r"Conv2d: out_channels must be a positive integer, got 2.5"),
        (lambda: nn.Conv2d(3, 4, (3, 3, 3)), r"Conv2d: kernel_size must be an int or a pair of ints"),
        (lambda: nn.Conv2d(3, 4, 3, stride=0), r"Conv2d: kernel_size and stride must be positive"),
        (lambda: nn.MaxPool2d("2"), r"MaxPool2d: kernel_size must be an int or a pair of ints"),
    ],
)
def test_bad_layer_arguments_are_rejected(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_conv2d_rejects_an_input_with_the_wrong_number_of_channels():
    message = r"input of shape \(1, 3, 8, 8\) has 3 channels but weight of shape \(4, 1, 3, 3\) expects 1"
    with pytest.raises(ValueError, match=message):
        nn.Conv2d(1, 4, 3)(dlscratch.randn(1, 3, 8, 8))


def test_a_small_cnn_learns():
    """Conv -> ReLU -> MaxPool -> Flatten -> Linear on two classes of 8x8 images (bright on the
    left half or on the right half), a few plain gradient-descent steps."""
    dlscratch.manual_seed(0)
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 32)
    images = rng.standard_normal((32, 1, 8, 8)).astype(np.float32) * 0.5
    for n, label in enumerate(labels):
        images[n, 0, :, 4 * label : 4 * label + 4] += 1.0
    x, y = dlscratch.tensor(images), dlscratch.tensor(labels)
    model = nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4 * 4 * 4, 2)
    )
    losses = []
    for _ in range(15):
        model.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        for p in model.parameters():
            p.data -= 0.2 * p.grad.data
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]
    assert model[0].weight.grad.shape == (4, 1, 3, 3)


@pytest.mark.gpu
def test_conv2d_moves_to_the_gpu(backend):
    if backend is np:
        pytest.skip("CuPy only")
    conv = nn.Conv2d(2, 3, 3, padding=1, device="cpu")
    x = np.random.default_rng(1).standard_normal((2, 2, 5, 5)).astype(np.float32)
    expected = conv(dlscratch.tensor(x, device="cpu")).data
    conv.to("gpu")
    y = conv(dlscratch.tensor(x, device="gpu"))
    assert y.device == "gpu"
    np.testing.assert_allclose(dlscratch.backend.to_cpu(y.data), expected, rtol=1e-5, atol=1e-5)
