# A "vendor" module: runs in one process; after test_b crashes, the driver
# must resume with test_c in a new process.
import os
import signal
import unittest


class Vendor(unittest.TestCase):
    def test_a(self):
        pass

    def test_b(self):
        os.kill(os.getpid(), signal.SIGSEGV)

    def test_c(self):
        raise unittest.SkipTest('not an MLX5 device')
