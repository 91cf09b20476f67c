"""The wire format between the re-check worker (inside the sandbox) and the grader: plain JSON data
only.

:func:`encode` runs in the worker and turns a student's answer into numbers, strings, tuples, lists,
dicts, sets, numeric arrays (base64) and dataclasses of the course's own packages (by field values).
:func:`decode` runs in the grader and rebuilds them — never code, never pickle: a class is only ever
looked up in ``gpucourse`` or ``grader``, and its ``__init__`` is not run. What cannot be data comes
back as :class:`Unsupported`, which equals no answer.
"""

from __future__ import annotations

import base64
import dataclasses
import importlib
from typing import Any

ML_DTYPES = (
    "bfloat16",
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e4m3fnuz",
    "float8_e5m2fnuz",
    "int4",
    "uint4",
)


class Unsupported:
    """A value the worker could not turn into plain data (a custom object): never equal to an
    answer."""

    def __init__(self, type_name: str):
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<{self.type_name} object (not a plain number, string, tuple, list or array)>"


def encode(x: Any, depth: int = 0) -> Any:
    """Plain JSON for a result (runs in the worker): numbers, strings, tuples, lists, dicts, numeric
    arrays."""
    import numpy as np

    if depth > 20:
        return {"__unsupported__": "deeply nested"}
    if x is None or isinstance(x, bool):
        return x
    if isinstance(x, np.generic):
        x = x.item()
        if isinstance(x, (bool, int, float, str)):
            return encode(x, depth + 1)
    if isinstance(x, int):
        return int.__int__(x)
    if isinstance(x, float):
        return float.__float__(x)
    if isinstance(x, str):
        return str.__str__(x)[:100_000]
    if isinstance(x, tuple):
        return {"__tuple__": [encode(v, depth + 1) for v in x[:10_000]]}
    if isinstance(x, list):
        return [encode(v, depth + 1) for v in x[:10_000]]
    if isinstance(x, dict):
        return {
            "__map__": [
                [encode(k, depth + 1), encode(v, depth + 1)] for k, v in list(x.items())[:10_000]
            ]
        }
    if isinstance(x, (set, frozenset)):
        return {
            "__set__": [encode(v, depth + 1) for v in list(x)[:10_000]],
            "frozen": isinstance(x, frozenset),
        }
    if (
        getattr(type(x), "__wire__", None) == "state"
        and type(x).__module__.split(".")[0] == "gpucourse"
    ):
        # a stateful course object (a clocked systolic array): its attributes, as data
        cls = type(x)
        return {
            "__obj__": f"{cls.__module__}:{cls.__qualname__}",
            "dict": encode(dict(vars(x)), depth + 1),
        }
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        cls = type(x)
        return {
            "__dc__": f"{cls.__module__}:{cls.__qualname__}",
            "fields": {
                f.name: encode(getattr(x, f.name, None), depth + 1) for f in dataclasses.fields(x)
            },
        }
    if hasattr(x, "__array__") or hasattr(x, "get") and type(x).__module__.split(".")[0] == "cupy":
        try:
            a = np.asarray(x.get() if type(x).__module__.split(".")[0] == "cupy" else x)
        except Exception:
            return {"__unsupported__": type(x).__name__}
        a = np.array(a, copy=True).view(np.ndarray)
        if a.size > 20_000_000:
            return {"__unsupported__": f"array of {a.size} elements"}
        if a.dtype.kind == "V" and a.dtype.name in ML_DTYPES:  # bfloat16 & co. (JAX's ml_dtypes)
            return {
                "__nd__": "ml:" + a.dtype.name,
                "shape": list(a.shape),
                "data": base64.b64encode(a.tobytes()).decode(),
            }
        if a.dtype.kind not in "biufc":
            return {"__unsupported__": f"array of dtype {a.dtype}"}
        return {
            "__nd__": a.dtype.str,
            "shape": list(a.shape),
            "data": base64.b64encode(a.tobytes()).decode(),
        }
    return {
        "__unsupported__": type(x).__name__,
        "course": type(x).__module__.split(".")[0] in ("gpucourse", "grader"),
    }


def decode(x: Any) -> Any:
    """Inverse of :func:`encode`, in the grader: only data comes back, never code."""
    import numpy as np

    if isinstance(x, list):
        return [decode(v) for v in x]
    if isinstance(x, dict):
        if "__tuple__" in x:
            return tuple(decode(v) for v in x["__tuple__"])
        if "__map__" in x:
            try:
                return {decode(k): decode(v) for k, v in x["__map__"]}
            except TypeError:  # an unhashable key
                return Unsupported("dict")
        if "__set__" in x:
            try:
                return (frozenset if x.get("frozen") else set)(decode(v) for v in x["__set__"])
            except TypeError:
                return Unsupported("set")
        if "__dc__" in x:
            return _dataclass(x["__dc__"], {k: decode(v) for k, v in x["fields"].items()})
        if "__obj__" in x and isinstance(x.get("dict"), dict):
            state = decode(x["dict"])
            return (
                _dataclass(x["__obj__"], state, stateful=True)
                if isinstance(state, dict)
                else Unsupported("object")
            )
        if "__nd__" in x and str(x["__nd__"]).startswith("ml:"):
            name = x["__nd__"][3:]
            if name not in ML_DTYPES:
                return Unsupported(f"array of dtype {name}")
            import ml_dtypes

            dt = np.dtype(getattr(ml_dtypes, name))
            return np.frombuffer(base64.b64decode(x["data"]), dtype=dt).reshape(x["shape"]).copy()
        if "__nd__" in x:
            dt = np.dtype(x["__nd__"])
            if dt.kind not in "biufc":
                return Unsupported(f"array of dtype {dt}")
            return np.frombuffer(base64.b64decode(x["data"]), dtype=dt).reshape(x["shape"]).copy()
        return Unsupported(str(x.get("__unsupported__", "dict")))
    return x


def _dataclass(name: str, fields: dict[str, Any], stateful: bool = False) -> Any:
    """Rebuild a dataclass of the course's own packages (gpucourse, grader) from plain data;
    anything else is Unsupported. ``__init__`` is bypassed (frozen classes, init=False fields): only
    the field values matter."""
    module, _, qualname = name.partition(":")
    if module.split(".")[0] not in ("gpucourse", "grader"):
        return Unsupported(qualname or name)
    try:
        cls: Any = importlib.import_module(module)
        for part in qualname.split("."):
            cls = getattr(cls, part)
        ok = (
            getattr(cls, "__wire__", None) == "state" if stateful else dataclasses.is_dataclass(cls)
        )
        if not (isinstance(cls, type) and ok):
            return Unsupported(qualname)
        obj = cls.__new__(cls)
        for k, v in fields.items():
            object.__setattr__(obj, k, v)
        return obj
    except Exception:  # noqa: BLE001 - a class that cannot be rebuilt is an unsupported answer
        return Unsupported(qualname)


def encode_cases(cases: list[Any]) -> list[Any]:
    """The arguments of cases (``Case.args``, ``Case.kwargs``) as plain data, for a sandbox: never
    the expected answers. Raises TypeError for an argument that is not data (a lab whose cases hold
    one cannot be split yet)."""
    out = [encode((c.args, c.kwargs)) for c in cases]
    if has_unsupported(out):
        raise TypeError(f"a case argument is not plain data: {str(out)[:200]}")
    return out


def decode_cases(data: list[Any]) -> list[Any]:
    """Inverse of :func:`encode_cases`: :class:`grader.problem.Case` objects."""
    from .case import Case

    return [Case(tuple(args), dict(kwargs)) for args, kwargs in (decode(d) for d in data)]


def has_unsupported(x: Any) -> bool:
    """Whether an encoded value holds something :func:`encode` could not turn into data."""
    if isinstance(x, list):
        return any(has_unsupported(v) for v in x)
    if isinstance(x, dict):
        return "__unsupported__" in x or any(has_unsupported(v) for v in x.values())
    return False


def has_course_object(x: Any) -> bool:
    """Whether an encoded answer holds an object of the course's own classes that is not plain data
    (e.g. the simulator the student clocked): the lab's comparison may inspect it, so only the
    kernel can judge it."""
    if isinstance(x, list):
        return any(has_course_object(v) for v in x)
    if isinstance(x, dict):
        return bool(x.get("course")) or any(has_course_object(v) for v in x.values())
    return False
