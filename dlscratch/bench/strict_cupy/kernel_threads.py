"""A kernel's tree (``kernel_parser.py``) run for many threads at once, with C's arithmetic.

Each variable holds one value per thread in a NumPy array (a constant that every thread shares is one 0-d
array). A statement runs for a set of threads, given as their sorted positions in the block, and returns
the threads that carry on after it: an ``if`` runs its branches for the threads that take each, a loop runs
until its last thread leaves, ``break``, ``continue`` and ``return`` take threads out. Expressions return
``(values, C type)``; operations convert their operands by C's usual arithmetic conversions first, so float
arithmetic rounds to float32 after every operation, integer division rounds towards zero, and the literal
``0.5`` makes a ``float`` expression ``double``, as on the GPU.

What a thread does that a GPU would not report (an access outside a raw array, an integer division by
zero, two threads writing one element without ``atomicAdd``) raises ``KernelFault`` naming the thread.
"""

import math

import numpy

from .kernel_parser import UnsupportedKernelCode, arithmetic_type, as_cupy_writes, c_name, promote_integer


class KernelFault(RuntimeError):
    """A kernel thread did something the GPU would not catch: an out-of-bounds access, a race, ..."""


class AmbiguousForCuda(UnsupportedKernelCode):
    """C that NumPy's type rules would run but CUDA's compiler (NVRTC) rejects as ambiguous: a ``?:`` whose
    branches are float16 and another type (CuPy's float16 converts to and from each), ``min``/``max`` of two
    integer types that no CUDA overload takes (``max(ptrdiff_t, int)``). Found at the first launch, when the
    types are known, as CuPy compiles a kernel at its first call for the types of that call."""


#: the mixed integer pairs (NumPy type codes) that CUDA declares ``min``/``max`` for: same type, one unsigned
_MIXED_MIN_MAX = {frozenset("iI"), frozenset("lL"), frozenset("qQ")}


# --- execution: every thread at once ----------------------------------------------------------------------------

_MATH = {  # name -> (NumPy function, number of arguments)
    "exp": (numpy.exp, 1), "log": (numpy.log, 1), "log1p": (numpy.log1p, 1), "expm1": (numpy.expm1, 1),
    "sqrt": (numpy.sqrt, 1), "tanh": (numpy.tanh, 1), "sinh": (numpy.sinh, 1), "cosh": (numpy.cosh, 1),
    "sin": (numpy.sin, 1), "cos": (numpy.cos, 1), "tan": (numpy.tan, 1), "atan": (numpy.arctan, 1),
    "atan2": (numpy.arctan2, 2), "pow": (numpy.power, 2), "fabs": (numpy.abs, 1), "fmin": (numpy.fmin, 2),
    "fmax": (numpy.fmax, 2), "floor": (numpy.floor, 1), "ceil": (numpy.ceil, 1), "trunc": (numpy.trunc, 1),
    "fmod": (numpy.fmod, 2), "copysign": (numpy.copysign, 2),
    "round": (lambda x: numpy.where(x >= 0, numpy.floor(x + x.dtype.type(0.5)), numpy.ceil(x - x.dtype.type(0.5))), 1),
    "rsqrt": (lambda x: x.dtype.type(1) / numpy.sqrt(x), 1),
    "erf": (None, 1),
}
_COMPARE = {"==": numpy.equal, "!=": numpy.not_equal, "<": numpy.less, "<=": numpy.less_equal,
            ">": numpy.greater, ">=": numpy.greater_equal}
_BITWISE = {"&": numpy.bitwise_and, "|": numpy.bitwise_or, "^": numpy.bitwise_xor}
_TESTS = {"isnan": numpy.isnan, "isinf": numpy.isinf, "isfinite": numpy.isfinite}


def _erf(x):
    return numpy.vectorize(math.erf, otypes=[x.dtype])(x) if x.size else x.copy()


class _Loop:
    """Threads that left the current loop by ``break`` and those that jumped to its next turn by ``continue``."""

    def __init__(self):
        self.broke, self.continued = [], []


class _Frame:
    """One kernel run or one helper-function call: its threads' variables, loops and return values."""

    def __init__(self, lanes, types):
        self.lanes, self.width, self.types = lanes, len(lanes), types
        self.scopes = [{}]
        self.loops = []
        self.returned = []  # (threads, values)


class Variable:
    """A scalar per thread (``values: (width,)``), a small array per thread (``values: (width, k)``), or a
    constant that every thread shares (``values``: 0-d; a scalar argument, ``const T half = 0.5``)."""

    __slots__ = ("dtype", "values", "const", "name")

    def __init__(self, name, dtype, values, const=False):
        self.name, self.dtype, self.values, self.const = name, dtype, values, const

    def read(self, threads):
        """The values of ``threads`` (sorted thread numbers; all of them read without a copy)."""
        if self.values.ndim == 0 or threads.size == len(self.values):
            return self.values
        return self.values[threads]

    def write(self, threads, new):
        if threads.size == len(self.values):
            self.values[...] = new
        else:
            self.values[threads] = new


class Raw:
    """A ``raw`` parameter: the whole array, indexed by the threads."""

    __slots__ = ("name", "array", "writable")

    def __init__(self, name, array, writable):
        self.name, self.array, self.writable = name, array, writable


def _concat(parts):
    """The union of disjoint sets of threads, in increasing order (so "all threads" is ``arange(width)``)."""
    parts = [p for p in parts if p.size]
    if not parts:
        return numpy.empty(0, dtype=numpy.intp)
    return parts[0] if len(parts) == 1 else numpy.sort(numpy.concatenate(parts))


class Run:
    """Executes a parsed kernel for a block of threads (``lanes``: their numbers ``i``) of ``size``."""

    def __init__(self, kernel, types, lanes, size):
        self.kernel, self.functions = kernel, kernel.functions
        self.size = size
        self.frame = _Frame(lanes, types)

    def thread(self, threads, k):
        """The number ``i`` of the ``k``-th of ``threads``."""
        return int(self.frame.lanes[threads[k]])

    # variables
    def lookup(self, name, line):
        for scope in reversed(self.frame.scopes):
            if name in scope:
                return scope[name]
        raise UnsupportedKernelCode(f"{self.where(line)}: {name!r} is not declared (a parameter, a local "
                                    "variable or i)")

    def where(self, line):
        return f"kernel {self.kernel.name!r}, line {line}"

    # statements: each takes the threads that run it and returns those that carry on after it
    def block(self, statements, threads):
        self.frame.scopes.append({})
        try:
            for statement in statements:
                if threads.size == 0:
                    break
                threads = self.statement(statement, threads)
        finally:
            self.frame.scopes.pop()
        return threads

    def statement(self, node, threads):
        kind = node[0]
        if kind == "expression":
            self.value(node[1], threads)
            return threads
        if kind == "declare":
            self.declare(node, threads)
            return threads
        if kind == "block":
            return self.block(node[1], threads)
        if kind == "if":
            condition = self.truth(node[1], threads)
            yes = self.block([node[2]], threads[condition])
            no = self.block([node[3]], threads[~condition])
            return _concat([yes, no])
        if kind == "for":
            return self.loop(node, threads)
        if kind in ("break", "continue"):
            if not self.frame.loops:
                raise UnsupportedKernelCode(f"kernel {self.kernel.name!r}: {kind} outside a loop")
            loop = self.frame.loops[-1]
            (loop.broke if kind == "break" else loop.continued).append(threads)
            return threads[:0]
        if kind == "return":
            value = None if node[1] is None else self.value(node[1], threads)
            self.frame.returned.append((threads, value))
            return threads[:0]
        raise AssertionError(kind)

    def loop(self, node, threads):
        _, start, condition, step, body, line = node
        self.frame.scopes.append({})
        finished = []
        try:
            threads = self.statement(start, threads)
            turns = 0
            while threads.size:
                going = self.truth(condition, threads)
                finished.append(threads[~going])
                threads = threads[going]
                if threads.size == 0:
                    break
                loop = _Loop()
                self.frame.loops.append(loop)
                try:
                    rest = self.block([body], threads)
                finally:
                    self.frame.loops.pop()
                finished.extend(loop.broke)
                threads = _concat([rest] + loop.continued)
                threads = self.statement(step, threads)
                turns += 1
                if turns > 10_000_000:
                    raise KernelFault(f"{self.where(line)}: a loop ran 10 million turns; it does not end")
        finally:
            self.frame.scopes.pop()
        return _concat(finished)

    def declare(self, node, threads):
        _, type_name, names, line, const = node
        scope = self.frame.scopes[-1]
        for entry in names:
            if entry[0] == "scalar":
                _, name, initial = entry
                value = None if initial is None else self.value(initial, threads)
                dtype = value[1] if type_name == "auto" else self.resolve(type_name, line)
                if const and value is not None and numpy.ndim(value[0]) == 0:
                    variable = Variable(name, dtype, numpy.asarray(convert(value, dtype)), const=True)
                else:
                    variable = Variable(name, dtype, numpy.zeros(self.frame.width, dtype), const=const)
                    if value is not None:
                        variable.write(threads, convert(value, dtype))
            else:
                _, name, size, initial = entry
                dtype = self.resolve(type_name, line)
                count = len(initial) if initial is not None else self.constant(size, line)
                variable = Variable(name, dtype, numpy.zeros((self.frame.width, count), dtype))
                for k, item in enumerate(initial or []):
                    variable.values[threads, k] = convert(self.value(item, threads), dtype)
            scope[name] = variable

    def constant(self, node, line):
        if node is None or node[0] != "literal":
            raise UnsupportedKernelCode(f"{self.where(line)}: a local array's size must be a number")
        return int(node[1])

    def resolve(self, type_name, line):
        if type_name in self.frame.types:
            return self.frame.types[type_name]
        if type_name in ("void", "auto"):
            raise UnsupportedKernelCode(f"{self.where(line)}: a variable of type {type_name!r} here")
        return numpy.dtype(type_name)

    # expressions: each returns (values for the threads given, C type)
    def truth(self, node, threads):
        values, _ = self.value(node, threads)
        return numpy.broadcast_to(values != 0, threads.shape).copy()

    def value(self, node, threads):
        kind = node[0]
        if kind == "literal":
            return numpy.asarray(node[1], node[2]), node[2]
        if kind == "name":
            return self.read(node, threads)
        if kind == "size":
            return numpy.asarray(self.size, numpy.int64), numpy.dtype("l")  # ptrdiff_t
        if kind == "index":
            return self.read(node, threads)
        if kind == "binary":
            return self.binary(node, threads)
        if kind == "unary":
            return self.unary(node, threads)
        if kind == "select":
            condition = self.truth(node[1], threads)
            yes, yes_type = self.value(node[2], threads[condition])
            no, no_type = self.value(node[3], threads[~condition])
            if yes_type != no_type and "float16" in (yes_type.name, no_type.name):
                raise AmbiguousForCuda(
                    f"kernel {self.kernel.name!r}: ambiguous \"?\" operation: its branches are {yes_type.name} and "
                    f"{no_type.name}, and CuPy's float16 converts to and from the other, so NVRTC rejects it; cast "
                    "one branch (T(x)) or write if/else")
            dtype = arithmetic_type(yes_type, no_type)
            values = numpy.empty(threads.shape, dtype)
            values[condition], values[~condition] = convert((yes, yes_type), dtype), convert((no, no_type), dtype)
            return values, dtype
        if kind == "cast":
            values, dtype = self.value(node[2], threads)
            target = self.resolve(node[1], 0)
            return convert((values, dtype), target), target
        if kind == "assign":
            return self.assign(node[1], node[2], node[3], threads)
        if kind == "postfix":
            old, old_type = self.value(node[2], threads)
            old = old.copy()  # the variable's own array when every thread runs
            self.assign(node[1], node[2], ("literal", 1, numpy.dtype("int32")), threads)
            return old, old_type
        if kind == "call":
            return self.call(node, threads)
        raise AssertionError(kind)

    def binary(self, node, threads):
        _, operator, left, right = node
        if operator in ("&&", "||"):
            first = self.truth(left, threads)
            result = first.copy()
            undecided = first if operator == "&&" else ~first
            result[undecided] = self.truth(right, threads[undecided])
            return result, numpy.dtype("bool")
        return self.apply(operator, self.value(left, threads), self.value(right, threads), threads)

    def apply(self, operator, left, right, threads):
        """``left operator right`` for two ``(values, type)`` pairs, with C's conversions."""
        (a, a_type), (b, b_type) = left, right
        if operator in ("<<", ">>"):
            _integers_only(operator, a_type, b_type, self.kernel.name)
            dtype = promote_integer(a_type)
            a, b = convert((a, a_type), dtype), convert((b, b_type), dtype)
            return (numpy.left_shift(a, b) if operator == "<<" else numpy.right_shift(a, b)), dtype
        dtype = arithmetic_type(a_type, b_type)
        a, b = convert((a, a_type), dtype), convert((b, b_type), dtype)
        if operator in _COMPARE:
            return _COMPARE[operator](a, b), numpy.dtype("bool")
        if operator in _BITWISE:
            _integers_only(operator, a_type, b_type, self.kernel.name)
            return _BITWISE[operator](a, b), dtype
        return _arithmetic(operator, a, b, dtype, self, threads), dtype

    def unary(self, node, threads):
        _, operator, operand = node
        values, dtype = self.value(operand, threads)
        if operator == "!":
            return values == 0, numpy.dtype("bool")
        dtype = promote_integer(dtype)
        values = convert((values, None), dtype)
        if operator == "-":
            return numpy.negative(values), dtype
        if operator == "~":
            _integers_only("~", dtype, dtype, self.kernel.name)
            return numpy.invert(values), dtype
        return values, dtype

    def read(self, node, threads):
        if node[0] == "name":
            variable = self.lookup(node[1], node[2])
            if isinstance(variable, Raw):
                raise UnsupportedKernelCode(f"{self.where(node[2])}: the raw array {node[1]!r} used without "
                                            "an index")
            if variable.values.ndim == 2:
                raise UnsupportedKernelCode(f"{self.where(node[2])}: the local array {node[1]!r} used as a "
                                            "value (index it, or use it as a raw array's index)")
            return variable.read(threads), variable.dtype
        _, target, index, line = node
        if target[0] != "name":
            raise UnsupportedKernelCode(f"{self.where(line)}: indexing something that is not a named array")
        variable = self.lookup(target[1], line)
        if isinstance(variable, Raw):
            where = self.element(variable, index, threads, line)
            return variable.array[where], as_cupy_writes(variable.array.dtype)
        if variable.values.ndim == 2:
            k = self.constant(index, line)
            return variable.values[threads, k], variable.dtype
        raise UnsupportedKernelCode(f"{self.where(line)}: indexing {target[1]!r}, which is not an array")

    def element(self, raw, index, threads, line):
        """The NumPy index of the elements of raw array ``raw`` that ``threads`` address with ``index``."""
        array = raw.array
        if index[0] == "name":
            local = self.lookup(index[1], line)
            if isinstance(local, Variable) and local.values.ndim == 2:
                coordinates = local.read(threads)
                if coordinates.shape[1] != array.ndim:
                    raise KernelFault(f"{self.where(line)}: {raw.name}[{index[1]}] gives {coordinates.shape[1]} "
                                      f"indices for an array of {array.ndim} dimensions {array.shape}")
                coordinates = [coordinates[:, d].astype(numpy.int64, copy=False) for d in range(array.ndim)]
                self.check_bounds(raw, coordinates, threads, line)
                return tuple(coordinates)
        flat, dtype = self.value(index, threads)
        if dtype.kind not in "biu":
            raise KernelFault(f"{self.where(line)}: {raw.name}[...] indexed with a {dtype} value")
        flat = numpy.broadcast_to(flat, threads.shape).astype(numpy.int64)
        self.check_bounds(raw, [flat], threads, line, flat=True)
        return numpy.unravel_index(flat, array.shape) if array.ndim != 1 else flat

    def check_bounds(self, raw, coordinates, threads, line, flat=False):
        limits = [raw.array.size] if flat else raw.array.shape
        for values, limit in zip(coordinates, limits):
            bad = (values < 0) | (values >= limit)
            if bad.any():
                k = int(numpy.argmax(bad))
                address = (f"[{int(values[k])}]" if flat else
                           "[{" + ", ".join(str(int(c[k])) for c in coordinates) + "}]")
                raise KernelFault(f"{self.where(line)}: thread i={self.thread(threads, k)} reads or writes "
                                  f"{raw.name}{address}, outside the array (shape {raw.array.shape}): on a GPU "
                                  "that is an out-of-bounds access, silent or a crash")

    def assign(self, operator, target, source, threads):
        value, value_type = self.value(source, threads)
        if target[0] == "index" and target[1][0] == "name":
            variable = self.lookup(target[1][1], target[3])
            if isinstance(variable, Raw):
                return self.store_raw(variable, operator, target, (value, value_type), threads)
        if target[0] not in ("name", "index"):
            raise UnsupportedKernelCode(f"kernel {self.kernel.name!r}: assigning to something that is not a variable")
        line = target[2] if target[0] == "name" else target[3]
        variable = self.lookup(target[1] if target[0] == "name" else target[1][1], line)
        if variable.const:
            raise UnsupportedKernelCode(f"{self.where(line)}: assigning to {variable.name!r}, which is const")
        column = None if target[0] == "name" else self.constant(target[2], line)
        old = variable.read(threads) if column is None else variable.values[threads, column]
        if operator != "=":
            value, value_type = self.combine(operator, (old, variable.dtype), (value, value_type), threads)
        new = convert((value, value_type), variable.dtype)
        if column is None:
            variable.write(threads, new)
        else:
            variable.values[threads, column] = new
        return new, variable.dtype

    def combine(self, operator, old, value, threads):
        """``old OP= value``: the operation in C's common type (the caller converts back)."""
        return self.apply(operator[:-1], old, value, threads)

    def store_raw(self, raw, operator, target, value, threads):
        line = target[3]
        if not raw.writable:
            raise UnsupportedKernelCode(f"{self.where(line)}: writing to {raw.name!r}, an input (make it an "
                                        "output parameter)")
        where = self.element(raw, target[2], threads, line)
        dtype = as_cupy_writes(raw.array.dtype)
        if operator != "=":
            value = self.combine(operator, (raw.array[where], dtype), value, threads)
        new = numpy.broadcast_to(convert(value, dtype), threads.shape)
        self.check_race(raw, where, new, threads, line, operator)
        raw.array[where] = new
        return new, dtype

    def check_race(self, raw, where, new, threads, line, operator):
        flat = numpy.ravel_multi_index(where, raw.array.shape) if isinstance(where, tuple) else where
        order = numpy.argsort(flat, kind="stable")
        same = flat[order][1:] == flat[order][:-1]
        if operator == "=":
            same &= new[order][1:] != new[order][:-1]
        if same.any():
            k = order[int(numpy.argmax(same))]
            raise KernelFault(f"{self.where(line)}: two threads write different values to {raw.name} element "
                              f"{int(flat[k])} (thread i={self.thread(threads, k)} and another) without "
                              "atomicAdd: on a GPU the result would depend on timing (a data race)")

    def call(self, node, threads):
        _, name, arguments, line = node
        if name == "atomicAdd":
            return self.atomic_add(arguments, threads, line)
        values = [self.value(argument, threads) for argument in arguments]
        if name in self.functions:
            return self.call_function(name, values, threads, line)
        if name in _TESTS:
            (x, dtype), = values
            return _TESTS[name](x), numpy.dtype("bool")
        if name in ("min", "max", "abs"):
            return self.min_max_abs(name, values, line)
        base = name[:-1] if name.endswith("f") and name[:-1] in _MATH else name
        if base not in _MATH:
            raise UnsupportedKernelCode(f"{self.where(line)}: the function {name!r} (neither a CUDA math function "
                                        "the stand-in knows nor a __device__ function of the preamble)")
        function, count = _MATH[base]
        if len(values) != count:
            raise UnsupportedKernelCode(f"{self.where(line)}: {name} takes {count} argument(s)")
        dtype = numpy.dtype("float32") if base != name else _float_type([v[1] for v in values])
        arrays = [convert(v, dtype) for v in values]
        with numpy.errstate(all="ignore"):
            result = _erf(arrays[0]) if base == "erf" else function(*arrays)
        return numpy.asarray(result).astype(dtype, copy=False), dtype

    def min_max_abs(self, name, values, line):
        if name == "abs":
            (x, dtype), = values
            dtype = promote_integer(dtype)
            return numpy.abs(convert((x, None), dtype)), dtype
        if len(values) != 2:
            raise UnsupportedKernelCode(f"{self.where(line)}: {name} takes 2 arguments")
        first, second = (promote_integer(v[1]) for v in values)
        if (first.kind in "iu" and second.kind in "iu" and first.char != second.char
                and frozenset(first.char + second.char) not in _MIXED_MIN_MAX):
            raise AmbiguousForCuda(f"{self.where(line)}: {name}({c_name(first)}, {c_name(second)}): no CUDA overload "
                                   "takes these two integer types, so NVRTC rejects the call as ambiguous; cast one "
                                   "argument")
        dtype = arithmetic_type(values[0][1], values[1][1])
        a, b = (convert(v, dtype) for v in values)
        return (numpy.fmin if name == "min" else numpy.fmax)(a, b), dtype

    def atomic_add(self, arguments, threads, line):
        if len(arguments) != 2 or arguments[0][0] != "index":
            raise UnsupportedKernelCode(f"{self.where(line)}: atomicAdd(&a[k], v) on a raw array")
        target = arguments[0]
        raw = self.lookup(target[1][1], line)
        if not isinstance(raw, Raw) or not raw.writable:
            raise UnsupportedKernelCode(f"{self.where(line)}: atomicAdd on something that is not a raw output")
        where = self.element(raw, target[2], threads, line)
        old = raw.array[where]
        added = numpy.broadcast_to(convert(self.value(arguments[1], threads), raw.array.dtype), threads.shape)
        numpy.add.at(raw.array, where, added)
        return old, as_cupy_writes(raw.array.dtype)

    def call_function(self, name, values, threads, line):
        template, returns, parameters, body = self.functions[name]
        if len(values) != len(parameters):
            raise UnsupportedKernelCode(f"{self.where(line)}: {name} takes {len(parameters)} argument(s)")
        deduced = {}
        for (kind, _), (_, dtype) in zip(parameters, values):
            if kind in template:
                if deduced.setdefault(kind, dtype) != dtype:
                    raise UnsupportedKernelCode(f"{self.where(line)}: {name}'s {kind} is deduced as both "
                                                f"{deduced[kind]} and {dtype}")
        types = {**self.frame.types, **deduced}
        outer = self.frame
        self.frame = _Frame(outer.lanes[threads], types)
        try:
            for (kind, parameter), value in zip(parameters, values):
                dtype = self.resolve(kind, line)
                values = numpy.broadcast_to(convert(value, dtype), threads.shape).copy()
                self.frame.scopes[0][parameter] = Variable(parameter, dtype, values)
            inner = numpy.arange(threads.size)
            left = self.block(body, inner)
            if returns == "void":
                return numpy.zeros(threads.shape), numpy.dtype("int32")
            if left.size:
                raise KernelFault(f"{self.where(line)}: {name} ends without returning a value")
            dtype = self.resolve(returns, line)
            result = numpy.zeros(threads.size, dtype)
            for lanes, value in self.frame.returned:
                result[lanes] = convert(value, dtype)
            return result, dtype
        finally:
            self.frame = outer


def _float_type(types):
    """The precision a math function runs in: double if any argument is double (or an integer), else float."""
    return numpy.dtype("float32") if all(t.name == "float32" for t in types) else numpy.dtype("float64")


def _integers_only(operator, a, b, kernel):
    if a.kind not in "biu" or b.kind not in "biu":
        raise UnsupportedKernelCode(f"kernel {kernel!r}: {operator!r} on a floating-point value (C refuses it)")


def convert(value, dtype):
    """C's implicit conversion of ``(values, type)`` to ``dtype`` (float to integer truncates towards zero)."""
    values = value[0]
    if values.dtype == dtype:
        return values
    if dtype.kind == "b":
        return values != 0
    with numpy.errstate(all="ignore"):
        return values.astype(dtype)


def _arithmetic(operator, a, b, dtype, run, threads):
    if operator == "+":
        return a + b
    if operator == "-":
        return a - b
    if operator == "*":
        return a * b
    if dtype.kind == "f":
        if operator == "%":
            raise UnsupportedKernelCode(f"kernel {run.kernel.name!r}: '%' on floating-point values (use fmod)")
        with numpy.errstate(all="ignore"):
            return a / b
    zero = b == 0
    if zero.any():
        k = int(numpy.argmax(zero))
        raise KernelFault(f"kernel {run.kernel.name!r}: thread i={run.thread(threads, k)} divides an integer by zero "
                          f"({operator!r}): on a GPU the result is undefined")
    if dtype.kind == "u" or (numpy.min(b, initial=1) > 0 and numpy.min(a, initial=0) >= 0):
        return a // b if operator == "/" else a % b
    quotient = numpy.abs(a) // numpy.abs(b)  # C rounds towards zero; Python's // rounds down
    quotient = numpy.where((a < 0) != (b < 0), -quotient, quotient).astype(dtype)
    return quotient if operator == "/" else (a - quotient * b).astype(dtype)
