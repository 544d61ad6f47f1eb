"""The store contract: tests/store/integration.py, run over every store by test_integration.py."""
