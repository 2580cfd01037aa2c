"""`contextmanager` and `suppress` as contextlib has them, without contextlib's imports:
it brings `collections`, `functools` and `types` along, ~2.7 ms of a command's start-up
(measured), and the locks and files of every command are held in `with` blocks.

A leaf: it imports nothing. The type checker sees contextlib's own (same signatures,
same behaviour); tests/test_model.py holds these to contextlib's behaviour.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from contextlib import contextmanager, suppress
else:

    def contextmanager(function):
        """A generator function that yields once, as a context manager (contextlib's rules)."""

        def scope(*args, **kwargs):
            return _Scope(function(*args, **kwargs))

        scope.__name__, scope.__qualname__, scope.__doc__ = function.__name__, function.__qualname__, function.__doc__
        scope.__wrapped__ = function
        return scope

    class _Scope:
        def __init__(self, generator):
            self._generator = generator

        def __enter__(self):
            try:
                return next(self._generator)
            except StopIteration:
                raise RuntimeError("generator didn't yield") from None

        def __exit__(self, kind, exc, trace):
            if kind is None:
                try:
                    next(self._generator)
                except StopIteration:
                    return False
                raise RuntimeError("generator didn't stop")
            if exc is None:
                exc = kind()
            try:
                self._generator.throw(exc)
            except StopIteration as stop:
                return stop is not exc  # the generator caught it: suppressed
            except RuntimeError as raised:
                if raised is exc:
                    return False
                if isinstance(exc, StopIteration) and raised.__cause__ is exc:
                    return False  # a StopIteration from the block, which the generator turned into this
                raise
            except BaseException as raised:
                if raised is not exc:
                    raise
                return False
            raise RuntimeError("generator didn't stop after throw()")

    class suppress:  # noqa: N801  # contextlib's name, for the same thing
        """Leave a `with` block quietly when one of these exceptions ends it."""

        def __init__(self, *kinds):
            self._kinds = kinds

        def __enter__(self):
            return None

        def __exit__(self, kind, exc, trace):
            return kind is not None and issubclass(kind, self._kinds)


__all__ = ["contextmanager", "suppress"]
