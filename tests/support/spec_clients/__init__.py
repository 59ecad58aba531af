"""
Test-only copies of the clients and tests the specifications ship, ported as literally as possible so that the
contract tests run them unchanged (apart from the base URL and, in ``api_key`` mode, a bearer key).
"""
