"""The tests of autotune. A package, like each test folder under it, so that every test module
and conftest has a name of its own (``tests.unit.conftest``, ``tests.browser.conftest``, ...) and
the shared helpers import as ``tests.support.X``."""
