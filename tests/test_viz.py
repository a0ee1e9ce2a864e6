"""Graph drawing: the walk (nodes, edges, order), DOT text, and the matplotlib drawing."""

import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

from dlscratch import Tensor  # noqa: E402
from dlscratch.viz import _layout, draw_graph, graph_nodes, to_dot  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def expression():
    """``tanh(a * b + c)`` with named leaves: 6 tensors, 3 functions, 8 edges."""
    a = Tensor([1.0, 2.0], requires_grad=True, name="a")
    b = Tensor([3.0, 4.0], requires_grad=True, name="b")
    c = Tensor([0.5, 0.5], name="c")
    return ((a * b) + c).tanh()


def boxes_and_arrows(ax):
    boxes = [p for p in ax.patches if isinstance(p, FancyBboxPatch)]
    arrows = [p for p in ax.patches if isinstance(p, FancyArrowPatch)]
    return boxes, arrows


def test_tensor_used_twice_is_one_node_with_two_edges():
    a = Tensor([1.0, 2.0], requires_grad=True)
    y = a * a
    tensors, functions, edges = graph_nodes(y)
    mul = y.creator
    assert [t is a for t in tensors] == [True, False] and tensors[1] is y
    assert functions == [mul]
    assert len(edges) == 3
    assert [(src is a, dst is mul) for src, dst in edges[:2]] == [(True, True), (True, True)]
    assert edges[2][0] is mul and edges[2][1] is y


def test_diamond_lists_each_node_once_in_topological_order():
    a = Tensor([1.0, 2.0], requires_grad=True)
    b, c = a.exp(), a.tanh()
    d = b * c
    tensors, functions, edges = graph_nodes(d)
    assert [id(t) for t in tensors] == [id(a), id(b), id(c), id(d)]
    assert [f.name for f in functions] == ["exp", "tanh", "mul"]
    pairs = [(src.name if hasattr(src, "inputs") else id(src), dst.name if hasattr(dst, "inputs") else id(dst))
             for src, dst in edges]
    assert pairs == [(id(a), "exp"), ("exp", id(b)), (id(a), "tanh"), ("tanh", id(c)),
                     (id(b), "mul"), (id(c), "mul"), ("mul", id(d))]


def test_several_outputs_share_their_graph():
    a = Tensor([1.0, 2.0], requires_grad=True)
    b = a.exp()
    tensors, functions, edges = graph_nodes(b * 2, b.tanh(), b)
    assert len(tensors) == 5  # a, b (listed once), the constant 2, b * 2, tanh(b)
    assert [f.name for f in functions] == ["exp", "mul", "tanh"]
    assert len(edges) == 7


def test_a_leaf_is_a_graph_of_one_node():
    a = Tensor([1.0])
    tensors, functions, edges = graph_nodes(a)
    assert tensors[0] is a and len(tensors) == 1 and functions == [] and edges == []
    assert to_dot(a).count("->") == 0 and "t0 [shape=ellipse" in to_dot(a)


def test_outputs_must_be_tensors():
    with pytest.raises(TypeError, match=r"graph_nodes: outputs must be Tensors, got list; .* graph_nodes\(y1, y2\)"):
        graph_nodes([Tensor([1.0])])
    with pytest.raises(TypeError, match="draw_graph: outputs must be Tensors, got ndarray"):
        draw_graph(Tensor([1.0]).data)
    with pytest.raises(ValueError, match=r"to_dot: give at least one output tensor, e.g. to_dot\(loss\)"):
        to_dot()


def test_dot_text_names_nodes_and_edges_in_walk_order():
    dot = to_dot(expression())
    lines = dot.splitlines()
    assert lines[0] == "digraph dlscratch {" and lines[-1] == "}"
    assert 't0 [shape=ellipse, style=filled, fillcolor="#d5ecd4", label="a\\n(2,) float32"];' in dot
    assert 'label="c\\n(2,) float32"' in dot
    assert 't2 [shape=ellipse, style=filled, fillcolor="#dbe9f6", label="(2,) float32"];' in dot
    for i, op in enumerate(["mul", "add", "tanh"]):
        assert f'f{i} [shape=box, style=filled, fillcolor="#fbd9a6", label="{op}"];' in dot
    edges = [line.strip() for line in lines if "->" in line]
    assert edges == ["t0 -> f0;", "t1 -> f0;", "f0 -> t2;", "t2 -> f1;", "t3 -> f1;", "f1 -> t4;", "t4 -> f2;",
                     "f2 -> t5;"]


def test_dot_text_is_the_same_for_the_same_graph():
    first = expression()
    assert to_dot(first) == to_dot(first) == to_dot(expression())


def test_dot_quotes_names():
    a = Tensor([1.0], name='say "hi"\\')
    assert 'label="say \\"hi\\"\\\\\\n(1,) float32"' in to_dot(a)


def test_dot_of_a_long_chain_needs_no_recursion():
    x = Tensor([0.5], requires_grad=True)
    y = x
    for _ in range(1000):
        y = y.tanh()
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)  # a recursive walk of 2001 nodes would fail here
    try:
        dot = to_dot(y)
    finally:
        sys.setrecursionlimit(limit)
    assert dot.count("[shape=box") == 1000 and dot.count("[shape=ellipse") == 1001
    assert dot.count("->") == 2000
    assert "  t0 -> f0;" in dot and "  f999 -> t1000;" in dot


def test_draw_graph_draws_a_box_per_node_and_an_arrow_per_edge():
    ax = draw_graph(expression())
    boxes, arrows = boxes_and_arrows(ax)
    assert len(boxes) == 9 and len(arrows) == 8
    texts = [t.get_text() for t in ax.texts]
    assert len(texts) == 9 + 8  # node labels, then one shape label per edge
    assert {"a", "b", "c", "mul", "add", "tanh"} <= set(texts)
    assert texts.count("(2,)\nfloat32") == 3 and texts.count("(2,)") == 8


def test_draw_graph_without_shapes_writes_only_node_labels():
    ax = draw_graph(expression(), show_shapes=False)
    assert len(ax.texts) == 9


def test_draw_graph_puts_leaves_left_and_the_output_right():
    ax = draw_graph(expression(), show_shapes=False)
    x = {t.get_text(): t.get_position()[0] for t in ax.texts}
    assert x["a"] == x["b"] < x["mul"] < x["add"] < x["tanh"]
    assert x["mul"] < x["c"] < x["add"]  # the constant sits just before its consumer


def test_draw_graph_of_a_reused_tensor():
    a = Tensor([1.0, 2.0], requires_grad=True, name="a")
    ax = draw_graph(a * a)
    boxes, arrows = boxes_and_arrows(ax)
    assert len(boxes) == 3 and len(arrows) == 3
    assert len(ax.texts) == 3 + 2  # the two edges a -> mul share one shape label


def test_draw_graph_of_a_leaf():
    ax = draw_graph(Tensor([[1.0, 2.0, 3.0]]))
    boxes, arrows = boxes_and_arrows(ax)
    assert len(boxes) == 1 and arrows == []
    assert [t.get_text() for t in ax.texts] == ["(1, 3)\nfloat32"]


def test_draw_graph_shows_values_and_gradients():
    x = Tensor([1.0, -2.0], requires_grad=True, name="x")
    y = (x * x).sum()
    y.backward()
    texts = [t.get_text() for t in draw_graph(y, show_values=True).texts]
    assert "x\ndata [ 1., -2.]\ngrad [ 2., -4.]" in texts
    assert "()\nfloat32\ndata 5." in texts


def test_draw_graph_into_a_given_axes_shrinks_fonts_to_fit():
    fig, (left, right) = plt.subplots(1, 2, figsize=(3, 1))
    assert draw_graph(expression(), ax=right) is right
    assert len(left.texts) == 0
    sizes = {t.get_fontsize() for t in right.texts}
    assert max(sizes) < 9
    big = draw_graph(expression(), figsize=(30, 6))
    assert max(t.get_fontsize() for t in big.texts) == 9
    assert tuple(big.figure.get_size_inches()) == (30, 6)


def test_long_edges_are_routed_around_the_columns_they_cross():
    # 0 -> 1 -> 2 -> 3 and a skip edge 0 -> 3: the skip edge passes columns 1 and 2 in rows of its own.
    sizes = [(1.0, 0.4)] * 4
    centres, routes, width, height = _layout(sizes, [(0, 1), (1, 2), (2, 3), (0, 3)])
    assert [x for x, _ in centres] == sorted(x for x, _ in centres)
    assert routes[(0, 1)] == [] and len(routes[(0, 3)]) == 2
    for (x, y), node in zip(routes[(0, 3)], (1, 2)):
        assert x == centres[node][0] and y != centres[node][1]
    assert all(0 < x < width and -height < y < 0 for x, y in centres + routes[(0, 3)])
