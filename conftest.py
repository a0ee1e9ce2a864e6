"""pytest's setup for the whole repository (the library's tests and the lessons run by nbval).

The README's test command, ``python -m pytest``, must finish in minutes on a laptop, so the lessons run in
their quick mode unless ``DLSCRATCH_QUICK`` says otherwise: ``DLSCRATCH_QUICK=0 python -m pytest notebooks``
runs every lesson in full mode, as a learner gets it. The slow checks of the lessons (the exercise proofs and
nbgrader, marked ``exercises`` and ``nbgrader``) are left out by pyproject.toml's ``-m`` and run with
``python -m pytest -m "exercises or nbgrader"``.
"""

import os

os.environ.setdefault("DLSCRATCH_QUICK", "1")  # before nbval starts any kernel: the kernels inherit it
