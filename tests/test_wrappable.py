"""dlscratch/engine/wrappable.py: a later lesson's feature wraps an operation's calls without importing it there."""

import pytest

from dlscratch.engine.wrappable import wrap_calls, wrappable


def test_calls_run_through_the_wrappers_the_last_registered_outermost():
    @wrappable
    def double(x):
        return 2 * x

    def plus_one(function):
        return lambda x: function(x) + 1

    def times_ten(function):
        return lambda x: function(x) * 10

    assert double(3) == 6  # no wrapper yet: the operation itself
    wrap_calls(double, plus_one)
    wrap_calls(double, times_ten)
    wrap_calls(double, plus_one)  # registered again: nothing changes
    assert double(3) == (2 * 3 + 1) * 10
    assert double.operation(3) == 6


def test_only_an_entry_point_can_be_wrapped():
    with pytest.raises(TypeError, match="'sorted' is not marked @wrappable"):
        wrap_calls(sorted, lambda function: function)
