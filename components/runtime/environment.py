"""
Typed environment variables: a bad value raises :class:`ConfigError` naming the variable, never a bare
``ValueError`` from deep inside a store.

Usage:

```python
from components.runtime.environment import env_int, env_number

retention_days = env_int("SOURCEBOUND_RECORDS_RETENTION_DAYS", 30, minimum=0)
cache_seconds = env_number("SOURCEBOUND_KEY_CACHE_SECONDS", 2.0, minimum=0, kind=float)
```
"""

import os

from components.core.errors import SourceboundError


class ConfigError(SourceboundError, ValueError):
    """An environment variable has a value the application cannot use; the message names it."""


def env_number(name: str, default: int | float, minimum: int | float = 0, kind: type = int) -> int | float:
    """
    The number in environment variable ``name`` (``default`` when unset or blank), as ``kind`` (int or float).

    :raises ConfigError: If it is not a number of that kind or is below ``minimum``; the message names the variable.
    """
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError as error:
        noun = "an integer" if kind is int else "a number"
        raise ConfigError(f"{name} must be {noun}, got {raw!r}.") from error
    if value < minimum:
        raise ConfigError(f"{name} must be >= {minimum}, got {value}.")
    return value


def env_int(name: str, default: int, minimum: int = 0) -> int:
    """:func:`env_number` as an integer."""
    return env_number(name, default, minimum, int)


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    """
    The value of ``name`` (``default`` when unset or blank), which must be one of ``choices``.

    :raises ConfigError: Naming the variable and the choices.
    """
    value = os.environ.get(name, "").strip() or default
    if value not in choices:
        raise ConfigError(f"{name} must be one of {', '.join(choices)}; got {value!r}.")
    return value


def env_bool(name: str, default: bool) -> bool:
    """
    ``true``/``false`` (also ``1``/``0``, ``yes``/``no``, ``on``/``off``) in ``name``; ``default`` when unset.

    :raises ConfigError: Naming the variable.
    """
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in {"1", "true", "yes", "on"}:
        return True
    if raw in {"0", "false", "no", "off"}:
        return False
    raise ConfigError(f"{name} must be true or false, got {raw!r}.")
