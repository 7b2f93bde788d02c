"""A stand-in for Spark's accumulator on one machine, for tests of worker-side code that runs
without a Spark session: ``add`` merges as the driver merges each finished task's updates."""


class Accumulator:
    """``value`` starts at ``param``'s zero; ``add`` merges with ``param.addInPlace``."""

    def __init__(self, param):
        self.param, self.value = param, param.zero(None)

    def add(self, more):
        self.value = self.param.addInPlace(self.value, more)
