"""The switch between the reference path and the fast path (dlscratch/engine/switch.py): the default is
fast, ``reference()`` switches for a block, ``DLSCRATCH_REFERENCE`` for a run, every fast version
has its reference's signature, and no reference module imports from the fast package."""

import ast
import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

import dlscratch
from dlscratch.engine import switch

PACKAGE = Path(dlscratch.__file__).resolve().parent
# the modules outside fast/ and bench/ that import from it, and what: the package registers the fast versions, the
# engine takes its own speed pieces, fit its steps on the device and malloc's setting; never an operation, nn or optim
MAY_IMPORT_FAST = {
    "__init__.py": {"dlscratch.fast"},
    "autograd.py": {"dlscratch.fast.graph"},
    "engine/function.py": {"dlscratch.fast.graph", "dlscratch.fast.unshared_grads"},
    "engine/tensor.py": {"dlscratch.fast.kept_arrays"},
    "engine/extensions/operands.py": {"dlscratch.fast.kept_arrays"},
    "training/fit.py": {"dlscratch.fast.fit_capture", "dlscratch.fast.fit_steps", "dlscratch.fast.malloc"},
}


def _imports_fast(path, allowed=()):
    """The lines of ``path`` (a module of the package) that import from ``dlscratch.fast`` other than ``allowed``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    relative_to_package = path.relative_to(PACKAGE).parts[:-1]
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = relative_to_package[: len(relative_to_package) - (node.level - 1)]
                target = ".".join(("dlscratch",) + tuple(base) + ((node.module,) if node.module else ()))
                names = [target + "." + alias.name for alias in node.names]
            else:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        fast = [n for n in names if n == "dlscratch.fast" or n.startswith("dlscratch.fast.")]
        if any(n not in allowed for n in fast if not any(n == a or n.startswith(a + ".") for a in allowed)):
            lines.append(node.lineno)
    return lines


def test_no_reference_module_imports_from_the_fast_package():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).parts
        if parts[0] in ("fast", "bench"):
            continue
        allowed = MAY_IMPORT_FAST.get("/".join(parts), ())
        offenders += [f"{path.relative_to(PACKAGE)}:{line}" for line in _imports_fast(path, allowed)]
    assert not offenders, f"reference modules import from dlscratch.fast: {offenders}"


def test_the_import_scan_sees_relative_and_absolute_imports(tmp_path):
    module = PACKAGE / "operations" / "conv.py"  # a real reference module, then a doctored copy of it
    assert _imports_fast(module) == []
    fake = PACKAGE / "operations" / "_scan_probe.py"
    try:
        fake.write_text("from ..fast import layout\nimport dlscratch.fast.conv\nfrom .. import fast\n")
        assert _imports_fast(fake) == [1, 2, 3]
    finally:
        fake.unlink()


@pytest.fixture
def on_the_fast_path():
    """As a run without DLSCRATCH_REFERENCE starts (the suite may run on the reference path)."""
    with switch.fast_path():
        yield


def test_reference_switches_for_a_block(on_the_fast_path):
    with dlscratch.reference():
        assert not dlscratch.fast_path_enabled()
        with switch.fast_path():
            assert switch.fast_path_enabled()
        assert not switch.fast_path_enabled()
    assert switch.fast_path_enabled()

    @dlscratch.reference()
    def inside():
        return switch.fast_path_enabled()

    assert inside() is False and switch.fast_path_enabled()
    with pytest.raises(KeyError), dlscratch.reference():
        raise KeyError("restored even on an exception")
    assert switch.fast_path_enabled()


def test_pick_follows_the_switch(on_the_fast_path):
    from dlscratch.fast import conv as fast_conv
    from dlscratch.operations import conv as reference_conv

    assert switch.implementation(reference_conv.conv2d) is fast_conv.conv2d
    with dlscratch.reference():
        assert switch.implementation(reference_conv.conv2d) is reference_conv.conv2d.reference


def test_without_leaves_out_one_fast_version_for_a_block(on_the_fast_path):
    from dlscratch.fast import conv as fast_conv
    from dlscratch.fast import pooling as fast_pooling
    from dlscratch.operations import conv as reference_conv
    from dlscratch.operations import pooling as reference_pooling

    with dlscratch.reference(), switch.fast_path_without(reference_conv.conv2d):  # the fast path, but for conv2d
        assert switch.implementation(reference_conv.conv2d) is reference_conv.conv2d.reference
        assert switch.implementation(reference_pooling.max_pool2d) is fast_pooling.max_pool2d
        with switch.fast_path_without(reference_pooling.max_pool2d):  # nested: both left out
            assert switch.implementation(reference_pooling.max_pool2d) is reference_pooling.max_pool2d.reference
            assert switch.implementation(reference_conv.conv2d) is reference_conv.conv2d.reference
        assert switch.implementation(reference_pooling.max_pool2d) is fast_pooling.max_pool2d
    assert switch.implementation(reference_conv.conv2d) is fast_conv.conv2d
    with pytest.raises(ValueError, match="has no fast version"), switch.fast_path_without(test_pick_follows_the_switch):
        pass


def test_every_fast_version_has_the_signature_of_its_reference():
    versions = switch.fast_versions()
    assert len(versions) >= 6
    for reference_function, fast in versions.items():
        assert inspect.signature(fast) == inspect.signature(reference_function), fast.__qualname__


@pytest.mark.parametrize("value, fast", [("1", False), ("yes", False), ("0", True), ("", True)])
def test_the_environment_variable_sets_the_path_of_a_run(value, fast):
    code = "import dlscratch; print(dlscratch.fast_path_enabled())"
    env = dict(os.environ, DLSCRATCH_REFERENCE=value)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(fast)


def test_a_bad_environment_value_is_refused_by_name():
    env = dict(os.environ, DLSCRATCH_REFERENCE="maybe")
    out = subprocess.run([sys.executable, "-c", "import dlscratch"], env=env, capture_output=True, text=True)
    assert out.returncode != 0 and "DLSCRATCH_REFERENCE='maybe' is not a yes/no value" in out.stderr
