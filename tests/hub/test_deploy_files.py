"""The deploy/ files hold together: the one-machine hub config loads with JupyterHub's own config loader and sets
what the class workflow needs; the Zero-to-JupyterHub values have the course image, a GPU profile and the
exchange on a shared volume at the path nbgrader is told. (The hub config runs for real in test_hub_workflow.)"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def test_local_config_loads_and_sets_the_class_up(monkeypatch, tmp_path):
    from traitlets.config.loader import PyFileConfigLoader

    students = tmp_path / "students.txt"
    students.write_text("alice\nbob\n# comment\n")
    monkeypatch.setenv("GPUCOURSE_STUDENTS", str(students))
    monkeypatch.setenv("GPUCOURSE_INSTRUCTORS", "prof")
    monkeypatch.setenv("GPUCOURSE_VENV", "/opt/v")
    c = PyFileConfigLoader("jupyterhub_config.py", path=str(DEPLOY / "local")).load_config()
    assert c.JupyterHub.spawner_class.endswith("LocalProcessSpawner")
    assert c.Authenticator.allowed_users == {"alice", "bob", "prof"}
    assert c.Authenticator.admin_users == {"prof"}
    assert c.Spawner.cmd == ["/opt/v/bin/python", "-m", "jupyterhub.singleuser"]
    env = c.Spawner.environment
    assert env["PATH"].startswith("/opt/v/bin") and callable(env["JUPYTER_CONFIG_PATH"])


def test_simultaneous_spawns_never_share_a_port(monkeypatch, tmp_path):
    """Every server the hub starts gets a port no other running server holds, even when the OS would hand two
    spawners the same free port (what `random_port` does when a class logs in at once)."""
    from types import SimpleNamespace

    import jupyterhub.utils
    from traitlets.config.loader import PyFileConfigLoader

    monkeypatch.setenv("GPUCOURSE_STUDENTS", str(tmp_path / "none.txt"))
    c = PyFileConfigLoader("jupyterhub_config.py", path=str(DEPLOY / "local")).load_config()
    offered = iter([41000, 41000, 41000, 41001, 41000, 41002])  # the OS offers a port that is free right now
    monkeypatch.setattr(jupyterhub.utils, "random_port", lambda: next(offered))

    def spawner(user):
        return SimpleNamespace(user=SimpleNamespace(name=user), name="", port=0, notebook_dir="")

    a, b, d = spawner("alice"), spawner("bob"), spawner("dan")
    for s in (a, b, d):
        c.Spawner.pre_spawn_hook(s)
    assert (a.port, b.port, d.port) == (41000, 41001, 41002)
    c.Spawner.post_stop_hook(a)  # alice's server stopped: her port can be reused
    offered = iter([41001, 41000, 41002, 41001])
    e = spawner("erin")
    c.Spawner.pre_spawn_hook(e)
    assert e.port == 41000
    c.Spawner.pre_spawn_hook(b)  # bob's server restarts: a fresh port, not one another server holds
    assert b.port not in (d.port, e.port)


def test_role_configs_exist():
    config = DEPLOY / "local" / "jupyter-config"
    assert "Exchange.root" in (config / "all" / "nbgrader_config.py").read_text()
    assert "frame-ancestors 'self'" in (config / "instructor" / "jupyter_server_config.py").read_text()
    assert "formgrader\": False" in (config / "student" / "jupyter_server_config.py").read_text()


def test_kubernetes_values():
    yaml = pytest.importorskip("yaml")
    values = yaml.safe_load((DEPLOY / "kubernetes" / "values.yaml").read_text())
    single = values["singleuser"]
    assert single["image"]["name"] and single["image"]["tag"]
    gpu = [p for p in single["profileList"] if "kubespawner_override" in p]
    assert gpu and gpu[0]["kubespawner_override"]["extra_resource_limits"] == {"nvidia.com/gpu": "1"}
    mounts = {m["name"]: m["mountPath"] for m in single["storage"]["extraVolumeMounts"]}
    volumes = {v["name"]: v for v in single["storage"]["extraVolumes"]}
    assert mounts["nbgrader-exchange"] == single["extraEnv"]["GPUCOURSE_EXCHANGE"]
    claim = volumes["nbgrader-exchange"]["persistentVolumeClaim"]["claimName"]
    pvc = yaml.safe_load((DEPLOY / "kubernetes" / "exchange-pvc.yaml").read_text())
    assert pvc["metadata"]["name"] == claim and pvc["spec"]["accessModes"] == ["ReadWriteMany"]
    compile(values["hub"]["extraConfig"]["gpucourse-roles"], "extraConfig", "exec")
