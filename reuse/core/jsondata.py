"""Reading JSON a user (or a broker, or a crashed process) gave us: one-line reasons, no surprises.

:func:`json.loads` turns some bad text into a traceback instead of a
:class:`json.JSONDecodeError`, and some into values no JSON document can hold:

- deep nesting (``[[[[...`` 100,000 levels) raises :class:`RecursionError`, and nesting a little
  shallower parses, then breaks the next recursive walk of the value (canonical JSON, ``repr``,
  a config's canonical form);
- an integer of more than 4,300 digits raises a bare :class:`ValueError`;
- ``NaN``, ``Infinity`` and ``1e999`` parse as floats that JSON cannot write back.

:func:`loads` reads JSON text and raises :class:`JsonError` (a :class:`ValueError` whose text is
one line) for all of them, so a caller turns it into its own one-line error naming the file.
Values are limited to :data:`MAX_DEPTH` levels of nesting, so every later walk of them is safe;
:func:`too_deep` checks a value built in Python (a dict handed to ``submit``) the same way,
without recursing. :func:`short` is a bounded ``repr`` for error messages.
"""

from __future__ import annotations

import json
import math
import reprlib
from typing import Any

__all__ = ["MAX_DEPTH", "JsonError", "loads", "too_deep", "short", "bad_text"]

#: How deeply arrays and objects may nest in a document we read (a dataflow's config is a few
#: levels; 100 leaves room and keeps every recursive walk far from Python's recursion limit).
MAX_DEPTH = 100


class JsonError(ValueError):
    """JSON text that cannot be read as a document; ``str()`` is the one-line reason."""


def _constant(name: str) -> Any:
    raise JsonError(f"not JSON: {name} is not a JSON number")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JsonError(f"not JSON: number {text[:40]} is out of range")
    return value


_DECODER = json.JSONDecoder(parse_constant=_constant, parse_float=_float)


def loads(text: str | bytes) -> Any:
    """Parse JSON text; a :class:`JsonError` (one line) for anything that is not a document we
    can hold: bad syntax, nesting deeper than :data:`MAX_DEPTH`, ``NaN``/``Infinity``, a float
    out of range, an integer too long to convert.

    Examples
    --------
    >>> loads('{"a": [1, 2.5]}')
    {'a': [1, 2.5]}
    >>> loads("[" * 100000)
    Traceback (most recent call last):
    ...
    reuse.core.jsondata.JsonError: not JSON: nested deeper than 100 levels
    >>> loads('{"x": NaN}')
    Traceback (most recent call last):
    ...
    reuse.core.jsondata.JsonError: not JSON: NaN is not a JSON number
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise JsonError("not UTF-8 text") from None
    try:
        value = _DECODER.decode(text)
    except JsonError:
        raise
    except json.JSONDecodeError as exc:
        raise JsonError(f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise JsonError(f"not JSON: nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # an integer too long to convert, as Python limits it
        raise JsonError(f"not JSON: {str(exc).split(':')[0]}") from None
    # a document cannot nest deeper than it has brackets: most skip the walk
    if (text.count("[") + text.count("{") > MAX_DEPTH) and too_deep(value):
        raise JsonError(f"not JSON: nested deeper than {MAX_DEPTH} levels")
    return value


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether lists, tuples and dicts nest in ``value`` more than ``limit`` levels (iterative,
    so it is safe on any depth, and stops on a value that contains itself).

    >>> too_deep([[1]], 2), too_deep([[[1]]], 2)
    (False, True)
    """
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth >= limit:
            return True
        stack.extend((child, depth + 1) for child in children
                     if isinstance(child, (dict, list, tuple)))
    return False


_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxstring = 40
_REPR.maxother = 40
_REPR.maxlong = 40
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 6


def short(value: Any) -> str:
    """A bounded ``repr`` for an error message: a few levels, items and characters, whatever
    the value's size or depth.

    >>> short(list(range(100)))
    '[0, 1, 2, 3, 4, 5, ...]'
    """
    try:
        return _REPR.repr(value)
    except Exception:  # noqa: BLE001 - an object whose repr fails is still named
        return f"<{type(value).__name__}>"


def bad_text(text: str) -> bool:
    """Whether a string holds a lone surrogate (``"\\ud800"`` in JSON parses to one): not
    Unicode text, so it cannot be written as UTF-8, printed or hashed.

    >>> bad_text("caf\\u00e9"), bad_text("\\ud800")
    (False, True)
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
