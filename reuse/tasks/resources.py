"""Readers for the RIoTBench resource files: properties, schemas, metadata maps and ARFF.

The benchmark ships its task parameters as Java ``.properties`` files, its field lists as small
three-line schema files and its training sets as Weka ARFF text. Both the workload builder (which
turns the parameters into task configs) and the tasks themselves (which load metadata and train
models at start-up) read them, so the parsers live here, in one place, with no I/O at import time.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "read_properties",
    "read_schema",
    "read_metadata_map",
    "Arff",
    "read_arff",
]

def read_properties(path: str | os.PathLike[str]) -> dict[str, str]:
    """Parse a Java-style ``key=value`` properties file.

    Only what the RIoTBench files use is supported: ``#`` comments, blank lines, spaces around
    ``=``, and one quirk of ``tasks_FIT.properties`` whose ``VALID_RANGE`` value is broken over two
    lines after a trailing comma; such a line (no ``=``, previous value ends in ``,``) is joined
    to the previous value, which is what the benchmark author meant.

    Parameters
    ----------
    path
        The properties file.

    Returns
    -------
    dict[str, str]
        Keys to stripped string values; a later duplicate key overrides an earlier one.
    """
    props: dict[str, str] = {}
    last_key: str | None = None
    for raw in Path(path).read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            last_key = None
            continue
        if "=" not in line:
            if last_key is not None and props[last_key].endswith(","):
                props[last_key] += line
            continue
        key, value = line.split("=", 1)
        last_key = key.strip()
        props[last_key] = value.strip()
    return props


def read_schema(path: str | os.PathLike[str]) -> list[tuple[str, str, str]]:
    """Read a RIoTBench schema file: names, units and SenML value kinds on three lines.

    Returns
    -------
    list[tuple[str, str, str]]
        ``(name, unit, kind)`` per field, ``kind`` being ``"v"`` (number) or ``"sv"`` (string).
    """
    lines = [ln.strip() for ln in Path(path).read_text(encoding="utf-8").splitlines() if ln.strip()]
    names, units, kinds = (ln.split(",") for ln in lines[:3])
    return [(n.strip(), u.strip(), k.strip()) for n, u, k in zip(names, units, kinds, strict=True)]


def read_metadata_map(path: str | os.PathLike[str]) -> dict[str, list[str]]:
    """Read an annotation file of ``id:value1,value2,...`` lines into a map.

    Used for ``city-metadata.txt`` (sensor -> location, type), ``taxi-metadata-fulldataset.txt``
    (taxi -> company, driver, city) and ``mhealth_annotation_mapping.csv`` (subject -> age, gender).
    """
    out: dict[str, list[str]] = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if ":" not in line:
            continue
        key, rest = line.split(":", 1)
        out[key.strip()] = [v.strip() for v in rest.split(",")]
    return out


@dataclass(frozen=True)
class Arff:
    """A parsed ARFF relation.

    Attributes
    ----------
    names
        Attribute names in order.
    nominal
        For each attribute, its declared nominal values, or ``None`` if numeric.
    rows
        Data rows as strings (the caller converts, since nominal and numeric columns mix).
    """

    names: list[str]
    nominal: list[list[str] | None]
    rows: list[list[str]]


def read_arff(header: str | os.PathLike[str], data: str | os.PathLike[str] | None = None) -> Arff:
    """Read a Weka ARFF file, optionally taking the rows from a separate CSV file.

    RIoTBench ships "header only" ARFF files next to plain CSV training data (for TAXI), so the
    header and the rows may come from two files; with ``data=None`` the rows after ``@DATA`` in the
    header file are used.
    """
    names: list[str] = []
    nominal: list[list[str] | None] = []
    rows: list[list[str]] = []
    in_data = False
    for raw in Path(header).read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("%"):
            continue
        low = line.lower()
        if low.startswith("@attribute"):
            _, name, typ = line.split(None, 2)
            typ = typ.strip()
            if typ.startswith("{"):
                nominal.append([v.strip() for v in typ.strip("{}").split(",")])
            else:
                nominal.append(None)
            names.append(name)
        elif low.startswith("@data"):
            in_data = True
        elif in_data and data is None:
            rows.append([v.strip() for v in line.split(",")])
    if data is not None:
        for raw in Path(data).read_text(encoding="utf-8").splitlines():
            if raw.strip():
                rows.append([v.strip() for v in raw.split(",")])
    rows = [r for r in rows if len(r) == len(names)]
    return Arff(names=names, nominal=nominal, rows=rows)
