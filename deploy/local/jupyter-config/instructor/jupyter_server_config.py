"""Instructors' servers: JupyterLab shows Formgrader in an iframe of the same origin; the server's default
`frame-ancestors 'none'` would make it "refuse to connect" under JupyterHub."""

c = get_config()  # noqa: F821
c.ServerApp.tornado_settings = {"headers": {"Content-Security-Policy": "frame-ancestors 'self'"}}
