# One test per outcome the driver must tell apart.
import atexit
import os
import signal
import time
import unittest

from args_parser import parser


class Outcomes(unittest.TestCase):
    def test_pass(self):
        cfg = parser.get_config()
        # The driver must hand the device options through to the suite.
        self.assertEqual((cfg['dev'], cfg['port'], cfg['gid']), ('fakedev0', 1, 0))

    def test_fail(self):
        self.assertEqual(1, 2, 'one is not two')

    def test_error(self):
        raise OSError(95, 'Failed to frobnicate. Errno: 95, Operation not supported')

    def test_skip(self):
        raise unittest.SkipTest('Frobnicator is not supported')

    def test_skip_with_cause(self):
        # The suite's idiom: a verb fails with EOPNOTSUPP, the test skips.
        try:
            raise OSError(95, 'Failed to create widget. Errno: 95, Operation not supported')
        except OSError:
            raise unittest.SkipTest('Create widget is not supported')

    def test_subtest_fail(self):
        for i in range(3):
            with self.subTest(i=i):
                self.assertLess(i, 2)

    def test_abort(self):
        os.abort()

    def test_exit(self):
        os._exit(3)

    def test_hang(self):
        time.sleep(600)

    def test_fork_helper(self):
        # A helper left running after the test passes must not survive the run.
        pid = os.fork()
        if pid == 0:
            time.sleep(600)
            os._exit(0)
        with open(os.environ['FAKE_HELPER_PID_FILE'], 'w') as f:
            f.write(str(pid))


    def test_crash_at_exit(self):
        # Passes, then the process aborts while exiting.
        atexit.register(os.abort)


class SkippedClass(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        raise unittest.SkipTest('class-level skip')

    def test_never_runs(self):
        pass


class SignalKill(unittest.TestCase):
    def test_segv(self):
        os.kill(os.getpid(), signal.SIGSEGV)
