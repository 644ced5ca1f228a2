"""Helpers shared by the test folders (plain code; the fixtures stay in the conftest files):

- :mod:`tests.support.fake_trials`: a fake trial model, throughput and curves as known functions
  of a configuration, without TensorFlow;
- :mod:`tests.support.demo_study`: a small stored study made with a fake runner, for the
  records, report and dashboard tests (unit and browser);
- :mod:`tests.support.reliability`: the sandbox and process helpers of the reliability tests.
"""
