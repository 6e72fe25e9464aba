"""Imported from an interactive session (tests/python/test_interactive.py)."""
from ucharm import Chare, Reducer


class Doubler(Chare):
    def run(self, cb):
        self.contribute(2 * self.thisIndex[0], Reducer.gather, cb)
