"""Messages for names a user typed that do not exist (dimensions, variables, channels).

One place for the "did you mean" hint, so the reader, the Loader, ``rechunk`` and the xarray
engine word such errors alike::

    unknown dimension 'tim' (did you mean 'time'?; known: time, latitude, longitude)
"""

from __future__ import annotations

import difflib
from typing import Iterable

# How many known names a message lists before it shortens the list with "...".
_LISTED = 12


def closest(name: str, choices: Iterable[str]) -> str | None:
    """The known name most like ``name`` (case-insensitive), or None when none is close."""
    choices = [str(c) for c in choices]
    by_lower = {c.lower(): c for c in choices}
    if name.lower() in by_lower:
        return by_lower[name.lower()]
    match = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[match[0]] if match else None


def unknown_name(kind: str, name: str, choices: Iterable[str]) -> str:
    """``unknown <kind> '<name>' (did you mean '<x>'?; known: a, b, c)``."""
    choices = [str(c) for c in choices]
    hint = closest(str(name), choices)
    listed = ", ".join(choices[:_LISTED]) + (", ..." if len(choices) > _LISTED else "")
    parts = [f"did you mean '{hint}'?"] if hint is not None else []
    parts.append(f"known: {listed}" if choices else "there are none")
    return f"unknown {kind} '{name}' ({'; '.join(parts)})"
