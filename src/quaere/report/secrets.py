"""Which values are secrets at export time, and scrubbing them from JSON data.

This is the one place of the report package that looks at the environment, and it does so only through
the mapping it is handed (the CLI passes ``os.environ``).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from typing import Any

from quaere.trace import redact

SECRET_NAME_PATTERNS = ("*_KEY", "*_TOKEN", "*SECRET*", "*PASSWORD*")
MIN_SECRET_CHARS = 6
"""Shorter values are not treated as secrets: ``redact`` ignores them (replacing 'true' everywhere would
mangle the bundle), so they are neither scrubbed nor searched for."""


def is_secret_name(name: str) -> bool:
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, pattern) for pattern in SECRET_NAME_PATTERNS)


def secret_values(environ: Mapping[str, str]) -> dict[str, str]:
    """Environment variable name -> value, for names that look like keys, tokens, secrets or passwords."""
    return {
        name: value
        for name, value in sorted(environ.items())
        if is_secret_name(name) and len(value) >= MIN_SECRET_CHARS
    }


def redact_data(data: Any, secrets: tuple[str, ...]) -> Any:
    """``data`` (parsed JSON) with ``quaere.trace.redact`` applied to every string, keys included."""
    if isinstance(data, str):
        return redact(data, secrets)
    if isinstance(data, list):
        return [redact_data(item, secrets) for item in data]
    if isinstance(data, dict):
        return {redact(str(key), secrets): redact_data(value, secrets) for key, value in data.items()}
    return data
