import pytest

from hayhooks_app import __main__ as entry


@pytest.mark.unit
class TestServeStack:
    def test_run_server_names_uvloop_and_httptools(self, monkeypatch):
        import uvicorn
        from hayhooks.server import logger as hayhooks_logger

        calls = []
        monkeypatch.setattr(hayhooks_logger, "intercept_stdlib_logging", lambda *args, **kwargs: None)
        monkeypatch.setattr(uvicorn, "run", lambda app, **kwargs: calls.append((app, kwargs)))
        app = object()
        entry.run_server(app, "127.0.0.1", 8123)
        assert len(calls) == 1
        served, kwargs = calls[0]
        assert served is app
        assert kwargs["loop"] == "uvloop"
        assert kwargs["http"] == "httptools"
        assert (kwargs["host"], kwargs["port"]) == ("127.0.0.1", 8123)
        assert kwargs["log_config"] is None

    def test_stack_is_installed(self):
        # uvicorn's "auto" would silently fall back to asyncio and h11; naming the stack makes a missing wheel fail.
        import httptools
        import uvloop

        assert uvloop.__version__ and httptools.__version__
