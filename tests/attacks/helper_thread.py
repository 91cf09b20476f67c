"""The ninth independent attack's helper thread, shared by the attack files of the labs that lock XLA."""

# the ninth attack's helper thread, started when the answer cell runs (before any lock): it keeps XLA's entry points
# as they are then and, asked from inside the locked call, puts them back for one count, then puts the wires back
HELPER_THREAD = '''import importlib, queue, builtins
from grader.xla_lock import XLA_ANALYSES, XLA_INTERNALS
_T = importlib.import_module("thr" + "eading")
_put = getattr(builtins, "set" + "attr")


def _owner(dotted):
    parts = dotted.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            o = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for p in parts[i:-1]:
            o = getattr(o, p)
        return o, parts[-1]
    raise ImportError(dotted)


_KEEP = []
for _d in XLA_ANALYSES + XLA_INTERNALS:
    try:
        _o, _a = _owner(_d)
        _KEEP.append((_o, _a, getattr(_o, _a)))
    except Exception:
        pass
_ASK, _ANS = queue.Queue(), queue.Queue()


def _serve():
    while True:
        job = _ASK.get()
        now = [(o, a, getattr(o, a)) for o, a, _ in _KEEP]
        try:
            for o, a, v in _KEEP:
                _put(o, a, v)
            _ANS.put(("ok", job()))
        except Exception as e:
            _ANS.put(("err", e))
        finally:
            for o, a, v in now:
                _put(o, a, v)


_T.Thread(target=_serve, daemon=True).start()


def xla(f, *shapes):
    _ASK.put(lambda: gc.xla.compiled(f, *shapes))
    kind, v = _ANS.get()
    if kind == "err":
        raise v
    return v
'''
