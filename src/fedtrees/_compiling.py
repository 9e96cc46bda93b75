"""Compiled kernels: declared with their types, compiled at install, announced.

Every numba kernel of fedtrees is declared with :func:`kernel` and the argument
types it is called with (scalars such as :data:`i64`, read-only arrays
:func:`ro`, arrays it writes :func:`rw`). At a kernel's first call numba
compiles it for exactly those types, or loads them from its cache on disk
(``__pycache__`` beside the module, keyed by the source file's hash, numba's
version and the CPU); after that it takes no other types.

**Decision:** ``pip install`` compiles every kernel once: the build hook
(``hatch_build.py``) runs :func:`compile_kernels` in fresh processes and ships
the cache with the installed package, so the first run of an installed fedtrees
loads compiled code like every later run (``benchmarks/bench_startup.py``
measures it; ``benchmarks/bench_compile.py`` times every kernel's compile).
A build whose compile fails fails where the environment variable ``CI`` is
set, and warns elsewhere. Where that cache cannot serve (a wheel built on
another CPU, another numba version, an edited kernel, ``NUMBA_CACHE_DIR``
pointing elsewhere) a kernel compiles at its first call, and
:func:`compile_notice` lets a progress bar say why it pauses.

A call with types that no declaration lists is a ``TypeError`` (numba's "No
matching definition"), never a silent compile in the middle of a fit, so every
path the tests exercise proves its declarations complete. A read-only
declaration also accepts a writable array of the same dtype and layout.
"""

from __future__ import annotations

import sys
import threading
import types
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from importlib import import_module
from pathlib import Path
from typing import Any, Final, TypeVar, cast

import numba as nb
from numba.core import event
from numba.core import types as nbt

from fedtrees._compile_time import compiling
from fedtrees._methods import KERNEL_MODULES  # the registry of methods names them

__all__ = [
    "KERNEL_MODULES",
    "NOTICE",
    "boolean",
    "compile_kernels",
    "compile_notice",
    "f64",
    "i8",
    "i64",
    "kernel",
    "kernel_threads",
    "ro",
    "rw",
    "u8",
    "u16",
    "u32",
    "u64",
]

F = TypeVar("F", bound=Callable[..., Any])

NOTICE: Final = "compiling kernels, first run only (they are cached for later runs)"


i64: Final = nb.int64
i8: Final = nb.int8
f64: Final = nb.float64
u64: Final = nb.uint64
u32: Final = nb.uint32
u16: Final = nb.uint16
u8: Final = nb.uint8
boolean: Final = nb.boolean


def ro(dtype: nbt.Type, ndim: int = 1) -> nbt.Array:
    """Return the type of a C-contiguous array the kernel only reads.

    A writable array of the same dtype passes too.

    Examples
    --------
    >>> print(ro(f64, 2))
    readonly array(float64, 2d, C)
    """
    return nbt.Array(dtype, ndim, "C", readonly=True)


def rw(dtype: nbt.Type, ndim: int = 1) -> nbt.Array:
    """Return the type of a C-contiguous array the kernel writes.

    Examples
    --------
    >>> print(rw(i64))
    array(int64, 1d, C)
    """
    return nbt.Array(dtype, ndim, "C")


def kernel(
    *signatures: tuple[nbt.Type, ...], parallel: bool = False, inline: bool = False
) -> Callable[[F], F]:
    """Compile a function with numba for exactly ``signatures``, cached on disk.

    Each signature is the tuple of argument types (the return type is
    inferred); they compile, or load from the cache, together at the first
    call. Without signatures the function is a helper that only other kernels
    call: numba compiles it into them. ``parallel`` runs ``prange`` loops on
    threads; every other kernel releases the GIL, so callers may run it on
    threads of their own. ``inline`` asks numba to inline a helper into its
    callers.

    Examples
    --------
    >>> import numpy as np
    >>> from fedtrees.algorithms.histogram._check_kernels import whole_max
    >>> whole_max(np.array([1.0, 3.0]))
    3.0
    >>> whole_max(np.array([1, 3]))  # int64: no declaration lists it
    Traceback (most recent call last):
    TypeError: No matching definition for argument type(s) array(int64, 1d, C)
    """
    options: dict[str, Any] = {"cache": True}
    if parallel:
        options["parallel"] = True
    else:
        options["nogil"] = True
    if inline:
        options["inline"] = "always"

    def compile_(func: F) -> F:  # a numba dispatcher, called as the function
        dispatcher = nb.njit(**options)(func)
        if signatures:
            declared = _Declared(dispatcher, signatures)
            _DECLARED.setdefault(func.__module__, []).append(declared)
            # numba asks this of a dispatcher that has no code for a call's types
            dispatcher._compile_for_args = declared.compile_for_args
        return cast(F, dispatcher)

    return compile_


class _Declared:
    """A kernel's dispatcher and its declared signatures, compiled once."""

    def __init__(self, dispatcher: Any, signatures: tuple[tuple[nbt.Type, ...], ...]):
        self.dispatcher = dispatcher
        self.signatures = signatures
        self.lock = threading.Lock()

    def compile(self) -> None:
        """Compile (or load) every declared signature, then refuse any other.

        The time it takes (waiting for another thread's compile too) is this
        thread's compile time, which a handler's deadline does not count
        (:mod:`fedtrees._compile_time`).
        """
        with compiling(), self.lock:
            if "_compile_for_args" not in vars(self.dispatcher):
                return  # done, by another thread or an earlier call
            for signature in self.signatures:
                self.dispatcher.compile(signature)
            self.dispatcher.disable_compile()
            del self.dispatcher._compile_for_args

    def compile_for_args(self, *args: Any, **kwargs: Any) -> Any:
        """At the first call: compile, then let numba dispatch the call again."""
        self.compile()
        return self.dispatcher


_DECLARED: Final[dict[str, list[_Declared]]] = {}
"""Every declared kernel, by module, in the order of definition."""


def compile_kernels(modules: Iterable[str] = KERNEL_MODULES) -> None:
    """Compile every kernel of ``modules`` now, or load it from numba's cache.

    Examples
    --------
    >>> compile_kernels(["fedtrees.algorithms.fedgbdt._route_kernel"])
    """
    for name in modules:
        import_module(name)
        for declared in _DECLARED.get(name, []):
            declared.compile()


def _skip_package_inits(modules: Iterable[str]) -> None:
    """Let ``modules`` import without running their packages' ``__init__``.

    For the install step only, in a process of its own that ends after
    compiling: the packages' ``__init__`` modules import scikit-learn and
    pandas, which the build environment does not hold (the build hook
    depends on numpy and numba only). Each package is registered as an empty
    module whose path is its folder.

    **Decision:** a kernel module imports nothing but the standard library,
    numpy, numba, the shared helpers directly under ``fedtrees`` and other
    kernel modules, by their own names (``fedtrees.stats._quantile_kernel``,
    never the face ``fedtrees.stats``, which is empty here): the one exception
    to "no private module across packages". ``tests/test_imports.py`` checks
    the rule on the source, and ``tests/test_compiling.py`` runs this step on
    every kernel module as the build does.
    """
    root = Path(__file__).resolve().parent.parent  # the folder holding fedtrees/
    for module in modules:
        parts = module.split(".")
        for depth in range(2, len(parts)):
            package = ".".join(parts[:depth])
            if package not in sys.modules:
                stub = types.ModuleType(package)
                stub.__path__ = [str(root.joinpath(*parts[:depth]))]
                sys.modules[package] = stub


class _FirstPass(event.Listener):
    """Call ``say(NOTICE)`` at the first compiler pass it hears, once."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self.say = say
        self.said = False
        self.lock = threading.Lock()

    def on_start(self, event: event.Event) -> None:
        with self.lock:
            if self.said:
                return
            self.said = True
        self.say(NOTICE)

    def on_end(self, event: event.Event) -> None:
        pass


@contextmanager
def kernel_threads(n: int | None) -> Iterator[None]:
    """Run the kernels called from this thread on at most ``n`` threads.

    numba's thread count belongs to the calling thread; it is restored on exit.
    None changes nothing (numba's default: every core).

    Examples
    --------
    >>> with kernel_threads(1):
    ...     nb.get_num_threads()
    1
    """
    if n is None:
        yield
        return
    before = nb.get_num_threads()
    most: int = nb.config.NUMBA_NUM_THREADS  # type: ignore[attr-defined]
    nb.set_num_threads(max(1, min(n, most)))
    try:
        yield
    finally:
        nb.set_num_threads(before)


@contextmanager
def compile_notice(say: Callable[[str], None]) -> Iterator[None]:
    """Within the block, ``say`` the notice once if any kernel gets compiled.

    numba runs a compiler pass only when it really compiles, not when it loads
    a kernel from its cache.

    Examples
    --------
    >>> said = []
    >>> with compile_notice(said.append):
    ...     nb.njit(lambda x: x + 1)(1)
    2
    >>> said == [NOTICE]
    True
    """
    with event.install_listener("numba:run_pass", _FirstPass(say)):
        yield


def _share(part: str) -> tuple[str, ...]:
    """Return the kernel modules of part ``"k/n"``: every n-th from the k-th.

    Examples
    --------
    >>> _share("1/4")[0] == KERNEL_MODULES[1]
    True
    """
    k, n = (int(x) for x in part.split("/"))
    return KERNEL_MODULES[k::n]


if __name__ == "__main__":  # the install step: python -m fedtrees._compiling [k/n]
    share = _share(sys.argv[1]) if len(sys.argv) > 1 else KERNEL_MODULES
    _skip_package_inits(KERNEL_MODULES)  # a share may import another's modules
    # The kernels register with the module the package imports, not with this
    # copy of it run as __main__.
    compile_ = import_module("fedtrees._compiling").compile_kernels
    for name in share:
        try:
            compile_([name])
        except Exception as error:  # the build's report names the module
            error.add_note(f"fedtrees: the kernels of {name} did not compile.")
            raise
