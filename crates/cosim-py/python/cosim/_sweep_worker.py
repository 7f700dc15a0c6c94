"""A worker process of :func:`cosim.sweep`: ``python -m cosim._sweep_worker``.

It makes the sweep's runs one after the other, as the sweep hands them
over on standard input, so that an FMU that ends its process (``exit()``,
a segfault, an abort) costs that run, not the sweep. It ends the process
itself (no Python finalisation).
"""

from cosim import _cosim

_cosim.sweep_worker()
