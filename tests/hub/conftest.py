"""The loopback JupyterHub suite is skipped, with the reason, where it cannot run (not root, no
configurable-http-proxy, no JupyterHub); .ci/run installs what it needs."""


def pytest_configure(config):
    config.addinivalue_line("markers", "hub: starts a real JupyterHub with real Linux users (root, npm's proxy)")
