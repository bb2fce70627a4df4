"""Real-server test harness: Kafka, Postgres, Redis, kube-apiserver and helm for pytest.

The pytest plugin lives in ``rlstream_testkit.plugin``; tests/conftest.py registers it. The
service stack (``rlstream_testkit.stack``) runs the services as subprocesses. One home for
tests/ and bench/: the editable install (and pytest's ``pythonpath``) put tools/testkit on the path.
"""
