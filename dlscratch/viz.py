"""Drawing the computation graph: with matplotlib only (``draw_graph``) or as DOT text (``to_dot``).

Tensors and functions are both nodes; edges run from each input tensor to the function that
consumed it and from the function to its output. The walk is iterative, so deep graphs work.

    x = dlscratch.Tensor([1.0, 2.0], requires_grad=True, name="x")
    draw_graph(((x * x) + 1).tanh())
    print(to_dot(((x * x) + 1).tanh()))
"""

import numpy
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch
from matplotlib.path import Path

from . import backend
from .engine.tensor import Tensor

TENSOR_COLOUR = "#dbe9f6"
LEAF_COLOUR = "#d5ecd4"  # leaves that require grad: what backward is for
FUNCTION_COLOUR = "#fbd9a6"
FONT_SIZE = 9
# Sizes in inches at FONT_SIZE; the drawing shrinks its fonts when the axes are smaller.
CHAR_WIDTH, LINE_HEIGHT, PAD = 0.076, 0.17, 0.12
COLUMN_GAP, ROW_GAP = 0.8, 0.3


def graph_nodes(*outputs):
    """The graph behind ``outputs``: ``(tensors, functions, edges)``.

    Nodes come in topological order (inputs before the functions that use them), found by the
    same walk on every call. ``edges`` holds ``(source, target)`` pairs, tensor -> function for
    each input slot (a tensor used twice by one function gives two edges) and function -> tensor.
    """
    return _split(_topological_order(outputs, "graph_nodes"))


def _split(nodes):
    tensors = [n for n in nodes if isinstance(n, Tensor)]
    functions = [n for n in nodes if not isinstance(n, Tensor)]
    return tensors, functions, _edges(nodes)


def _topological_order(outputs, caller):
    """Iterative depth-first walk from ``outputs``; each node is listed after all of its inputs."""
    if not outputs:
        raise ValueError(f"{caller}: give at least one output tensor, e.g. {caller}(loss)")
    for t in outputs:
        if not isinstance(t, Tensor):
            raise TypeError(
                f"{caller}: outputs must be Tensors, got {type(t).__name__}; pass several as separate "
                f"arguments: {caller}(y1, y2)"
            )
    order, seen = [], set()  # ids: Tensor's == compares data, so no `in` on lists of nodes
    stack = [(t, False) for t in reversed(outputs)]
    while stack:
        node, inputs_done = stack.pop()
        if inputs_done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        if isinstance(node, Tensor):
            children = [node.creator] if node.creator is not None else []
        else:
            children = node.inputs
        stack.extend((child, False) for child in reversed(children) if id(child) not in seen)
    return order


def _edges(nodes):
    present = {id(n) for n in nodes}
    edges = []
    for fn in nodes:
        if isinstance(fn, Tensor):
            continue
        edges.extend((x, fn) for x in fn.inputs)
        for ref in fn.outputs:
            y = ref()
            if y is not None and id(y) in present:
                edges.append((fn, y))
    return edges


def _shape(t):
    return str(tuple(t.shape))


def _tensor_label(t, show_values=False):
    lines = [t.name] if t.name else [_shape(t), str(t.dtype)]
    if show_values:
        lines.append("data " + _summary(t.data))
        if t.grad is not None:
            lines.append("grad " + _summary(t.grad.data))
    return "\n".join(lines)


def _summary(a):
    """Small arrays in full, larger ones by their mean: a label must stay short."""
    a = backend.to_cpu(a)
    if a.size <= 4:
        return numpy.array2string(a, precision=3, separator=", ").replace("\n", "")
    return f"mean {float(a.mean()):.3g}"


def _label(node, show_values=False):
    return _tensor_label(node, show_values) if isinstance(node, Tensor) else node.name


def to_dot(*outputs):
    """DOT text (a Graphviz ``digraph``) of the graph behind ``outputs``: tensors as ellipses
    labelled with their name and shape, functions as boxes. Node ids follow the walk order."""
    tensors, functions, edges = _split(_topological_order(outputs, "to_dot"))
    ids = {id(t): f"t{i}" for i, t in enumerate(tensors)}
    ids.update({id(f): f"f{i}" for i, f in enumerate(functions)})
    lines = ["digraph dlscratch {", "  rankdir=LR;", '  node [fontname="Helvetica", fontsize=10];']
    for i, t in enumerate(tensors):
        label = _dot_string(*([t.name] if t.name else []), f"{_shape(t)} {t.dtype}")
        lines.append(f'  t{i} [shape=ellipse, style=filled, fillcolor="{_fill(t)}", label={label}];')
    for i, f in enumerate(functions):
        lines.append(f'  f{i} [shape=box, style=filled, fillcolor="{FUNCTION_COLOUR}", label={_dot_string(f.name)}];')
    lines.extend(f"  {ids[id(a)]} -> {ids[id(b)]};" for a, b in edges)
    lines.append("}")
    return "\n".join(lines) + "\n"


def _dot_string(*lines):
    """A quoted DOT string showing ``lines`` one under another."""
    escaped = (line.replace("\\", "\\\\").replace('"', '\\"') for line in lines)
    return '"' + "\\n".join(escaped) + '"'


def _fill(t):
    """Leaves that require grad (what backward is for) stand out from other tensors."""
    return LEAF_COLOUR if t.creator is None and t.requires_grad else TENSOR_COLOUR


def draw_graph(*outputs, ax=None, show_shapes=True, show_values=False, figsize=None):
    """Draw the graph behind ``outputs`` with matplotlib and return the Axes.

    Tensors are rounded boxes (green: leaves that require grad) labelled with their name, else
    shape and dtype; functions are orange boxes with the op's name. Leaves sit on the left,
    outputs on the right; ``show_shapes`` writes tensor shapes on the edges and ``show_values``
    adds data (and grad, once computed) to the tensor boxes. ``figsize`` applies when ``ax`` is
    None (default: fits the graph, at most 14 x 9 inches); labels shrink to fit smaller axes.
    """
    nodes = _topological_order(outputs, "draw_graph")
    index = {id(n): i for i, n in enumerate(nodes)}
    links = [(index[id(a)], index[id(b)]) for a, b in _edges(nodes)]
    labels = [_label(n, show_values) for n in nodes]
    sizes = [_box_size(text) for text in labels]
    centres, routes, width, height = _layout(sizes, links)
    if ax is None:
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=figsize or (min(width, 14), min(height, 9)))
        fig.subplots_adjust(0, 0, 1, 1)
    scale = _font_scale(ax, width, height)
    boxes = [_draw_node(ax, *args, scale) for args in zip(nodes, labels, sizes, centres)]
    _draw_edges(ax, nodes, links, boxes, routes, show_shapes, scale)
    ax.set_xlim(0, width)
    ax.set_ylim(-height, 0)
    ax.set_axis_off()
    return ax


def _box_size(text):
    lines = text.split("\n")
    return max(map(len, lines)) * CHAR_WIDTH + 2 * PAD, len(lines) * LINE_HEIGHT + PAD


def _font_scale(ax, width, height):
    """Font shrink factor so that labels sized for ``width x height`` inches fit the axes."""
    fig_w, fig_h = ax.figure.get_size_inches()
    box = ax.get_position()
    return min(1.0, box.width * fig_w / width, box.height * fig_h / height)


def _layout(sizes, links):
    """Node centres, the waypoints of long edges, and the drawing's width and height (inches).

    An edge that spans several columns passes through a placeholder in each column between,
    which takes a row there, so the edge never runs through a box. Within a column, nodes and
    placeholders are ordered by the mean row of their neighbours (barycentre: fewer crossings).
    """
    n = len(sizes)
    column = _columns(n, links)
    chains, steps = {}, []
    for a, b in dict.fromkeys(links):  # each distinct edge once
        chains[(a, b)] = list(range(len(column), len(column) + column[b] - column[a] - 1))
        column.extend(range(column[a] + 1, column[b]))
        path = [a, *chains[(a, b)], b]
        steps.extend(zip(path, path[1:]))
    preds, succs = [[] for _ in column], [[] for _ in column]
    for a, b in steps:
        preds[b].append(a)
        succs[a].append(b)
    columns = [[] for _ in range(max(column) + 1)]
    for v, c in enumerate(column):
        columns[c].append(v)
    row = _order_rows(columns, preds, succs)
    row_height = max(h for _, h in sizes) + ROW_GAP
    xs, x = [], COLUMN_GAP / 2
    for col in columns:
        w = max(sizes[v][0] for v in col if v < n)  # every column holds a real node
        xs.append(x + w / 2)
        x += w + COLUMN_GAP
    tallest = max(len(col) for col in columns)

    def centre(v):
        return xs[column[v]], -(row[v] + tallest / 2) * row_height

    routes = {link: [centre(v) for v in chain] for link, chain in chains.items()}
    return [centre(v) for v in range(n)], routes, x - COLUMN_GAP / 2, tallest * row_height


def _columns(n, links):
    """Each node's column: its longest path from a leaf, except that a leaf moves right to just
    before its first consumer, so that constants and parameters sit next to where they are used."""
    preds, succs = [[] for _ in range(n)], [[] for _ in range(n)]
    for a, b in links:
        preds[b].append(a)
        succs[a].append(b)
    column = [0] * n
    for v in range(n):  # topological order: predecessors are done first
        column[v] = max((column[u] + 1 for u in preds[v]), default=0)
    for v in range(n):
        if not preds[v] and succs[v]:
            column[v] = min(column[s] for s in succs[v]) - 1
    return column


def _order_rows(columns, preds, succs, sweeps=4):
    """Row of each node (centred on 0 within its column) after alternating barycentre sweeps."""
    row = {}
    for col in columns:
        _assign_rows(col, row)
    for sweep in range(sweeps):
        neighbours = preds if sweep % 2 == 0 else succs
        for col in columns if sweep % 2 == 0 else reversed(columns):
            keys = {v: _mean([row[u] for u in neighbours[v]], row[v]) for v in col}
            col.sort(key=keys.get)
            _assign_rows(col, row)
    return row


def _assign_rows(col, row):
    for i, v in enumerate(col):
        row[v] = i - (len(col) - 1) / 2


def _mean(values, default):
    return sum(values) / len(values) if values else default


def _draw_node(ax, node, text, size, centre, scale):
    """A box with its label; returns the box (arrows are clipped to it)."""
    (w, h), (x, y) = size, centre
    if isinstance(node, Tensor):
        fill, style = _fill(node), "round,pad=0,rounding_size=0.08"
    else:
        fill, style = FUNCTION_COLOUR, "square,pad=0"
    box = ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle=style, fc=fill, ec="#555555", lw=0.8))
    ax.text(x, y, text, ha="center", va="center", fontsize=FONT_SIZE * scale, family="monospace")
    return box


def _draw_edges(ax, nodes, links, boxes, routes, show_shapes, scale):
    """One arrow per edge, with the tensor's shape written on it once per pair of nodes.

    An edge that spans columns follows its waypoints; repeated edges (``x * x``) bend apart.
    """
    count = {}
    for link in links:
        count[link] = count.get(link, 0) + 1
    drawn = {}
    style = dict(arrowstyle="-|>", mutation_scale=10 * scale, color="#555555", lw=0.8)
    for a, b in links:
        k, total = drawn.get((a, b), 0), count[(a, b)]
        drawn[(a, b)] = k + 1
        if routes[(a, b)]:
            points = [_side(boxes[a], "right"), *routes[(a, b)], _side(boxes[b], "left")]
            ax.add_patch(FancyArrowPatch(path=Path(points), **style))
        else:
            bend = 0.0 if total == 1 else 0.3 * (k / (total - 1) - 0.5)
            ax.add_patch(FancyArrowPatch(_centre(boxes[a]), _centre(boxes[b]), patchA=boxes[a], patchB=boxes[b],
                                         connectionstyle=f"arc3,rad={bend}", **style))
            points = [_side(boxes[a], "right"), _side(boxes[b], "left")]
        if show_shapes and k == 0:
            tensor = nodes[a] if isinstance(nodes[a], Tensor) else nodes[b]
            (x0, y0), (x1, y1) = points[:2]
            ax.text((x0 + x1) / 2, (y0 + y1) / 2, _shape(tensor), ha="center", va="center", color="#444444",
                    fontsize=(FONT_SIZE - 2) * scale, bbox=dict(fc="white", ec="none", pad=0.5))


def _centre(box):
    return box.get_x() + box.get_width() / 2, box.get_y() + box.get_height() / 2


def _side(box, side):
    """The middle of a box's left or right side."""
    x = box.get_x() + (box.get_width() if side == "right" else 0)
    return x, box.get_y() + box.get_height() / 2
