"""Password hashers for tests: a quick one for the tests that hash in their own process,
and a slow one for parallel log-ins that must overlap in their checks."""

import time

from django.contrib.auth.hashers import PBKDF2PasswordHasher


class QuickPasswordHasher(PBKDF2PasswordHasher):
    """Django's PBKDF2 at 1,000 iterations instead of 1.5 million (~0.6 s of CPU a hash).
    Its hashes name their iterations, so any process with the default hashers checks them."""

    iterations = 1000


class SlowPasswordHasher(PBKDF2PasswordHasher):
    """A quick PBKDF2 that takes as long as the real one (~0.6 s): parallel log-ins are
    all in the middle of their password check together, as they are in production."""

    algorithm = "slow_pbkdf2_for_tests"
    iterations = 1000

    def encode(self, password, salt, iterations=None):  # an unknown name's check
        time.sleep(0.3)
        return super().encode(password, salt, iterations)
