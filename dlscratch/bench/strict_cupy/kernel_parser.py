"""The C that the strict stand-in's kernels may use, read into a tree (``kernels.py`` runs it).

A kernel body or preamble becomes nested tuples: statements such as ``("if", condition, then, else, line)``,
expressions such as ``("binary", "+", left, right)``. The subset (anything else raises
``UnsupportedKernelCode`` naming it):

- declarations (``const``, arrays with ``{...}`` initialisers, ``auto``) and assignments (``= += -= *= /=
  %= &= |= ^= <<= >>=``, ``++``/``--``); the types ``bool char short int long``, their ``unsigned`` forms,
  ``long long``, ``ptrdiff_t size_t float double`` and the kernel's type placeholders (``T``);
- comparisons, ``&& || !``, ``?:``, bit operations, casts ``(T)x``, ``T(x)`` and ``static_cast<T>(x)``;
- ``if``/``else``, ``for``, ``while``, ``break``, ``continue``, ``return``, blocks;
- indexing, calls (the CUDA math functions, ``atomicAdd(&a[k], v)``, the preamble's functions), ``_ind.size()``;
- ``__device__`` functions in the preamble, also ``template <typename T>`` ones.

C's types are NumPy dtypes here: ``int`` is int32, ``ptrdiff_t`` int64, ``float`` float32, ``double`` float64.
"""

import functools
import re

import numpy


class UnsupportedKernelCode(NotImplementedError):
    """A kernel uses C the stand-in does not translate."""


# --- types ------------------------------------------------------------------------------------------------------

_C_TYPES = {
    "bool": "bool", "char": "int8", "signed char": "int8", "unsigned char": "uint8",
    "short": "int16", "unsigned short": "uint16", "int": "int32", "signed": "int32", "signed int": "int32",
    "unsigned": "uint32", "unsigned int": "uint32", "long": "l", "unsigned long": "L", "long int": "l",
    "long long": "q", "unsigned long long": "Q", "long long int": "q",
    "ptrdiff_t": "l", "size_t": "L", "float": "float32", "double": "float64",
}
# 64-bit integers come in two C types of one width, told apart by NumPy's type codes: ``long`` (``l``, which
# ``ptrdiff_t`` and the thread index ``i`` are) and ``long long`` (``q``, which CuPy writes for int64 arrays and
# parameters). CUDA overloads ``max``/``min`` for each, so mixing them is ambiguous there.
_C_NAMES = {"?": "bool", "b": "signed char", "B": "unsigned char", "h": "short", "H": "unsigned short", "i": "int",
            "I": "unsigned int", "l": "long", "L": "unsigned long", "q": "long long", "Q": "unsigned long long",
            "e": "float16", "f": "float", "d": "double"}


def c_name(dtype):
    """The C type a dtype stands for here (``long long`` for an int64 argument, ``long`` for ``ptrdiff_t``)."""
    return _C_NAMES.get(dtype.char, dtype.name)


def as_cupy_writes(dtype):
    """The C type CuPy declares for an array or parameter of ``dtype``: a 64-bit integer is ``long long``."""
    if dtype.kind in "iu" and dtype.itemsize == 8:
        return numpy.dtype("q" if dtype.kind == "i" else "Q")
    return dtype
_TYPE_WORDS = {"bool", "char", "short", "int", "long", "unsigned", "signed", "float", "double", "ptrdiff_t",
               "size_t", "void", "auto"}
_QUALIFIERS = {"const", "volatile", "static", "inline", "__device__", "__forceinline__", "__host__", "register"}


def _dtype(name):
    return numpy.dtype(name)


def promote_integer(dtype):
    """C's integer promotion: anything narrower than ``int`` computes as ``int``."""
    return numpy.dtype("int32") if dtype.kind in "biu" and dtype.itemsize < 4 or dtype.kind == "b" else dtype


def arithmetic_type(a, b):
    """C's usual arithmetic conversions for two operand types."""
    return _arithmetic_type(a.char, b.char)


@functools.cache  # an interpreted kernel asks millions of times, for a handful of types (by code: l and q are equal
def _arithmetic_type(a, b):  # dtypes to NumPy, different types to C)
    a, b = numpy.dtype(a), numpy.dtype(b)
    if "float64" in (a.name, b.name):
        return numpy.dtype("float64")
    if "float32" in (a.name, b.name):
        return numpy.dtype("float32")
    if "float16" in (a.name, b.name):  # CuPy's float16 class: its own operators, else its conversion to float
        return numpy.dtype("float16" if a == b else "float32")
    a, b = promote_integer(a), promote_integer(b)
    if a.char == b.char:
        return a
    if a.kind == b.kind:
        if a.itemsize == b.itemsize:  # long and long long: long long has the higher rank
            return numpy.dtype("q" if a.kind == "i" else "Q")
        return a if a.itemsize > b.itemsize else b
    signed, unsigned = (a, b) if a.kind == "i" else (b, a)
    if unsigned.itemsize > signed.itemsize:
        return unsigned
    if unsigned.itemsize == signed.itemsize:  # the unsigned type of the higher rank
        return as_cupy_writes(unsigned) if "q" in (a.char, b.char) else unsigned
    return signed  # the signed type holds every value of the narrower unsigned one


# --- tokens -----------------------------------------------------------------------------------------------------

_TOKEN = re.compile(r"""
    (?P<space>\s+|//[^\n]*|/\*.*?\*/)
  | (?P<number>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[fFuUlL]*|0[xX][0-9a-fA-F]+[uUlL]*)
  | (?P<name>[A-Za-z_]\w*)
  | (?P<op><<=|>>=|\+\+|--|\+=|-=|\*=|/=|%=|&=|\|=|\^=|==|!=|<=|>=|&&|\|\||<<|>>|->|::|[-+*/%<>=!~&|^?:;,.()\[\]{}])
  | (?P<other>.)
""", re.VERBOSE | re.DOTALL)


class _Token:
    __slots__ = ("kind", "text", "line")

    def __init__(self, kind, text, line):
        self.kind, self.text, self.line = kind, text, line


def _tokens(source):
    line, found = 1, []
    for match in _TOKEN.finditer(source):
        kind, text = match.lastgroup, match.group()
        if kind == "other":
            raise UnsupportedKernelCode(f"line {line}: the character {text!r} ({_what_is(text)})")
        if kind != "space":
            found.append(_Token(kind, text, line))
        line += text.count("\n")
    found.append(_Token("end", "", line))
    return found


def _what_is(text):
    return {"#": "preprocessor directives such as #define and #include", '"': "strings", "'": "characters"}.get(
        text, "not part of the C subset")


# --- parser: C text -> nested tuples ----------------------------------------------------------------------------

_BINARY = [("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", "<=", ">", ">="), ("<<", ">>"),
           ("+", "-"), ("*", "/", "%")]
_ASSIGN = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="}
_NOT_IN_SUBSET = {"goto", "switch", "case", "do", "struct", "class", "union", "enum", "typedef", "new", "delete",
                  "sizeof", "__syncthreads", "__shared__", "threadIdx", "blockIdx", "blockDim", "printf",
                  "operator", "namespace", "using", "asm", "extern"}


class Parser:
    def __init__(self, source, type_names):
        self.tokens, self.at = _tokens(source), 0
        self.type_names = set(type_names)

    # token helpers
    def peek(self, ahead=0):
        return self.tokens[min(self.at + ahead, len(self.tokens) - 1)]

    def next(self):
        token = self.peek()
        self.at += 1
        return token

    def accept(self, text):
        if self.peek().text == text and self.peek().kind in ("op", "name"):
            self.at += 1
            return True
        return False

    def expect(self, text):
        token = self.next()
        if token.text != text:
            raise UnsupportedKernelCode(f"line {token.line}: expected {text!r}, found {token.text or 'the end'!r}")
        return token

    def refuse(self, token, what=None):
        raise UnsupportedKernelCode(f"line {token.line}: {what or repr(token.text)} is not in the C subset "
                                    "the stand-in translates")

    # types
    def starts_type(self, ahead=0):
        token = self.peek(ahead)
        return token.kind == "name" and (token.text in _TYPE_WORDS or token.text in _QUALIFIERS
                                         or token.text in self.type_names)

    def parse_type(self):
        words = []
        while self.peek().kind == "name" and self.peek().text in _QUALIFIERS:
            self.next()
        while self.peek().kind == "name" and (self.peek().text in _TYPE_WORDS or
                                              (not words and self.peek().text in self.type_names)):
            words.append(self.next().text)
            if words[-1] in self.type_names or words[-1] in ("float", "double", "bool", "void", "auto",
                                                             "ptrdiff_t", "size_t"):
                break
        while self.peek().kind == "name" and self.peek().text in _QUALIFIERS:
            self.next()
        if not words:
            self.refuse(self.peek(), f"{self.peek().text!r} as a type")
        name = " ".join(words)
        if name in self.type_names or name in ("void", "auto"):
            return name
        if name not in _C_TYPES:
            self.refuse(self.peek(), f"the type {name!r}")
        return _C_TYPES[name]

    # statements
    def statements_until(self, end):
        body = []
        while True:
            token = self.peek()
            if token.kind == "end":
                if end:
                    raise UnsupportedKernelCode(f"line {token.line}: missing {end!r}")
                return body
            if end and token.kind == "op" and token.text == end:
                return body
            body.append(self.statement())

    def statement(self):
        token = self.peek()
        if token.kind == "name" and token.text in _NOT_IN_SUBSET:
            self.refuse(token)
        if self.accept("{"):
            body = self.statements_until("}")
            self.expect("}")
            return ("block", body)
        if self.accept(";"):
            return ("block", [])
        if self.accept("if"):
            self.expect("(")
            condition = self.expression()
            self.expect(")")
            then = self.statement()
            otherwise = self.statement() if self.accept("else") else ("block", [])
            return ("if", condition, then, otherwise, token.line)
        if self.accept("for"):
            self.expect("(")
            start = self.simple_statement() if self.peek().text != ";" else ("block", [])
            self.expect(";")
            condition = self.expression() if self.peek().text != ";" else ("literal", True, _dtype("bool"))
            self.expect(";")
            step = self.expression_statement() if self.peek().text != ")" else ("block", [])
            self.expect(")")
            return ("for", start, condition, step, self.statement(), token.line)
        if self.accept("while"):
            self.expect("(")
            condition = self.expression()
            self.expect(")")
            return ("for", ("block", []), condition, ("block", []), self.statement(), token.line)
        if self.accept("break") or self.accept("continue"):
            self.expect(";")
            return (token.text,)
        if self.accept("return"):
            value = None if self.peek().text == ";" else self.expression()
            self.expect(";")
            return ("return", value, token.line)
        statement = self.simple_statement()
        self.expect(";")
        return statement

    def simple_statement(self):
        if self.starts_type() and not (self.peek(1).text == "(" and self.peek().text in self.type_names):
            return self.declaration()
        return self.expression_statement()

    def expression_statement(self):
        return ("expression", self.expression(), self.peek().line)

    def declaration(self):
        line = self.peek().line
        const = any(self.peek(k).text == "const" for k in range(3))
        type_name = self.parse_type()
        names = []
        while True:
            name = self.next()
            if name.kind != "name":
                self.refuse(name, f"{name.text!r} as a variable name")
            if self.accept("["):
                size = None if self.peek().text == "]" else self.expression()
                self.expect("]")
                values = None
                if self.accept("="):
                    self.expect("{")
                    values = [self.expression()]
                    while self.accept(","):
                        values.append(self.expression())
                    self.expect("}")
                names.append(("array", name.text, size, values))
            else:
                names.append(("scalar", name.text, self.expression() if self.accept("=") else None))
            if not self.accept(","):
                break
        return ("declare", type_name, names, line, const)

    # expressions, lowest precedence first
    def expression(self):
        return self.assignment()

    def assignment(self):
        target = self.conditional()
        if self.peek().kind == "op" and self.peek().text in _ASSIGN:
            operator = self.next().text
            return ("assign", operator, target, self.assignment())
        if self.peek().text == ",":
            pass  # a separator in calls and declarations; the comma operator is not in the subset
        return target

    def conditional(self):
        condition = self.binary(0)
        if self.accept("?"):
            yes = self.assignment()
            self.expect(":")
            return ("select", condition, yes, self.conditional())
        return condition

    def binary(self, level):
        if level == len(_BINARY):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek().kind == "op" and self.peek().text in _BINARY[level]:
            operator = self.next().text
            left = ("binary", operator, left, self.binary(level + 1))
        return left

    def unary(self):
        token = self.peek()
        if token.kind == "op" and token.text in ("-", "+", "!", "~"):
            self.next()
            return ("unary", token.text, self.unary())
        if token.kind == "op" and token.text in ("++", "--"):
            self.next()
            return ("assign", token.text[0] + "=", self.unary(), ("literal", 1, _dtype("int32")))
        if token.text == "&":
            self.refuse(token, "'&' (taking an address) outside atomicAdd(&a[k], v)")
        if token.text == "(" and self.starts_type(1):
            self.next()
            type_name = self.parse_type()
            self.expect(")")
            return ("cast", type_name, self.unary())
        if token.text == "static_cast":
            self.next()
            self.expect("<")
            type_name = self.parse_type()
            self.expect(">")
            self.expect("(")
            value = self.expression()
            self.expect(")")
            return ("cast", type_name, value)
        return self.postfix()

    def postfix(self):
        value = self.primary()
        while True:
            token = self.peek()
            if self.accept("["):
                index = self.expression()
                self.expect("]")
                value = ("index", value, index, token.line)
            elif token.text in ("++", "--") and token.kind == "op":
                self.next()
                value = ("postfix", token.text[0] + "=", value)
            elif token.text in (".", "->", "::"):
                self.refuse(token, f"{token.text!r} (members)")
            else:
                return value

    def primary(self):
        token = self.next()
        if token.kind == "number":
            return _literal(token)
        if token.text == "(":
            value = self.expression()
            self.expect(")")
            return value
        if token.kind == "name":
            if token.text in ("true", "false"):
                return ("literal", token.text == "true", _dtype("bool"))
            if token.text in _NOT_IN_SUBSET:
                self.refuse(token)
            if token.text == "_ind" and self.peek().text == ".":
                self.next()
                self.expect("size")
                self.expect("(")
                self.expect(")")
                return ("size",)
            if (token.text in self.type_names or token.text in _C_TYPES) and self.peek().text == "(":
                self.expect("(")
                value = self.expression()
                self.expect(")")
                return ("cast", token.text if token.text in self.type_names else _C_TYPES[token.text], value)
            if self.accept("("):
                if token.text == "atomicAdd":
                    self.expect("&")
                arguments = []
                if not self.accept(")"):
                    arguments.append(self.expression())
                    while self.accept(","):
                        arguments.append(self.expression())
                    self.expect(")")
                return ("call", token.text, arguments, token.line)
            return ("name", token.text, token.line)
        self.refuse(token, f"{token.text or 'the end of the code'!r} here")

    # the preamble: __device__ functions
    def functions(self):
        found = {}
        while self.peek().kind != "end":
            template = []
            if self.accept("template"):
                self.expect("<")
                while True:
                    if not (self.accept("typename") or self.accept("class")):
                        self.refuse(self.peek(), "a template parameter that is not a type")
                    template.append(self.next().text)
                    if not self.accept(","):
                        break
                self.expect(">")
            self.type_names.update(template)
            returns = self.parse_type()
            name = self.next().text
            self.expect("(")
            parameters = []
            while not self.accept(")"):
                kind = self.parse_type()
                parameters.append((kind, self.next().text))
                self.accept(",")
            self.expect("{")
            body = self.statements_until("}")
            self.expect("}")
            self.type_names.difference_update(template)
            found[name] = (template, returns, parameters, body)
        return found


def _literal(token):
    text = token.text.lower()
    if text.startswith("0x"):
        digits = text.rstrip("ul")
        return ("literal", int(digits, 16), _integer_literal_type(int(digits, 16), text[len(digits):]))
    is_float = any(c in text for c in ".e") and not text.startswith("0x")
    if is_float:
        single = text.endswith("f")
        return ("literal", float(text.rstrip("fl")), _dtype("float32" if single else "float64"))
    digits = text.rstrip("ul")
    if len(digits) > 1 and digits.startswith("0"):
        raise UnsupportedKernelCode(f"line {token.line}: the octal literal {token.text!r}")
    return ("literal", int(digits), _integer_literal_type(int(digits), text[len(digits):]))


def _integer_literal_type(value, suffix):
    unsigned, long = "u" in suffix, "l" in suffix
    if not long and value < 2 ** 31 and not unsigned:
        return _dtype("int32")
    if not long and unsigned and value < 2 ** 32:
        return _dtype("uint32")
    if "ll" in suffix:
        return _dtype("Q" if unsigned else "q")
    return _dtype("L" if unsigned else "l")
