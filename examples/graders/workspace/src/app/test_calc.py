"""Tests for calc: `python3 src/app/test_calc.py` or `python3 -m unittest` from src/app."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from calc import add, mul  # noqa: E402


class TestCalc(unittest.TestCase):
    def test_add(self):
        assert add(1, 2) == 3
        assert add(-7, 3) == -4
        assert add(0, 0) == 0

    def test_mul(self):
        assert mul(3, 4) == 12
        assert mul(-2, 5) == -10
        assert mul(7, 0) == 0


if __name__ == "__main__":
    unittest.main()
