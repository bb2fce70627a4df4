"""Real-server test harness: Kafka, Postgres, Redis, kube-apiserver and helm for pytest.

The pytest plugin lives in ``harness.plugin``; tests/conftest.py registers it.
"""
