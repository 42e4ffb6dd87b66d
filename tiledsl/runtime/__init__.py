"""Runtime: compile (cached), bind and launch on the GPU through CuPy."""


def launcher_for(kernel):
    from .launcher import Launcher
    return Launcher(kernel)
