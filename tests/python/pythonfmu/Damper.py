"""A third-party FMU for the interoperability tests: built by PythonFMU
(`python3 -m pythonfmu build -f Damper.py`), an exporter independent of this
project, with its own modelDescription.xml conventions (no variability on
discrete inputs, outputs depending on every input) and its own binary.

    F = -d * gear * v   while enable, else 0   (computed in doStep from the
                                                inputs held over the step)
"""
from pythonfmu import Boolean, Fmi2Causality, Fmi2Slave, Integer, Real


class Damper(Fmi2Slave):
    author = "cosim tests"
    description = "Viscous damper F = -d gear v with a Boolean enable and an Integer gear"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.d = 2.0
        self.v = 0.0
        self.enable = True
        self.gear = 1
        self.F = 0.0
        self.register_variable(Real("d", causality=Fmi2Causality.parameter, variability="fixed"))
        self.register_variable(Real("v", causality=Fmi2Causality.input))
        self.register_variable(Boolean("enable", causality=Fmi2Causality.input))
        self.register_variable(Integer("gear", causality=Fmi2Causality.input))
        self.register_variable(Real("F", causality=Fmi2Causality.output))

    def do_step(self, current_time, step_size):
        self.F = -self.d * self.gear * self.v if self.enable else 0.0
        return True
