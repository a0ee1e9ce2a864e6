"""The library's yes/no environment variables (``DLSCRATCH_REFERENCE``, ``DLSCRATCH_KEEP_MEMORY``), read one way."""

import os

TRUE_WORDS, FALSE_WORDS = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def env_flag(variable, default):
    """The boolean value of the environment variable ``variable`` (``default`` when unset or empty).

    Accepts ``TRUE_WORDS`` and ``FALSE_WORDS`` in any case; raises ``ValueError`` on anything else.
    """
    value = os.environ.get(variable, "").strip().lower()
    if not value:
        return default
    if value in TRUE_WORDS or value in FALSE_WORDS:
        return value in TRUE_WORDS
    raise ValueError(
        f"{variable}={os.environ[variable]!r} is not a yes/no value: use one of "
        f"{', '.join(map(repr, TRUE_WORDS))} to turn it on or {', '.join(map(repr, FALSE_WORDS))} to turn it off"
    )
