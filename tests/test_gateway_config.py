"""The gateway's config file and server targets: every mistake names the file, the line and the key; a
``tool_permissions`` rule that names no tool of its server refuses to start (``toolrag serve`` exits 2 before
serving, with the closest names the server lists)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT

from toolrag.errors import SettingsError
from toolrag.serve.config import GatewayConfig
from toolrag.serve.upstream import ServerSpec, UpstreamError

DEMO = ROOT / "tests" / "mcp_servers" / "demo_server.py"

GOOD = """\
servers:
  files:
    command: python
    args: [server.py, --name, files]
    permissions: [files.read]
    tool_permissions: {fs.delete_file: [files.admin]}
  web: {url: "http://127.0.0.1:9000/mcp", timeout: 5, headers: {Authorization: Bearer x}}
roles: {reader: [files.read], admin: [files.read, files.admin]}
role: reader
tokens: {s3cret: admin}
"""


def write(tmp_path: Path, text: str) -> Path:
    file = tmp_path / "gateway.yaml"
    file.write_text(text, encoding="utf-8")
    return file


def test_a_good_config(tmp_path: Path) -> None:
    config = GatewayConfig.from_yaml(write(tmp_path, GOOD))
    files, web = config.servers
    assert files.command == "python" and files.args == ("server.py", "--name", "files")
    assert files.cwd == str(tmp_path.resolve())  # relative commands run beside the config file
    assert files.tool_permissions == {"fs.delete_file": ("files.admin",)} and files.permissions == ("files.read",)
    assert web.url == "http://127.0.0.1:9000/mcp" and web.timeout == 5.0
    assert web.headers == {"Authorization": "Bearer x"}
    assert config.role == "reader" and config.tokens == {"s3cret": "admin"}
    assert config.roles["admin"] == ("files.read", "files.admin")


@pytest.mark.parametrize(("text", "message"), [
    ("servers: {}\n", r"gateway\.yaml:1: servers: give at least one upstream server"),
    ("servers: {a: {command: x}}\nrole: boss\n", r"gateway\.yaml:2: role: unknown role 'boss'"),
    ("servers: {a: {command: x, url: 'http://h/mcp'}}\n", r"a: MCP server 'a': give either a command"),
    ("servers: {a: {url: 'ftp://h'}}\n", r"must start with http:// or https://"),
    ("servers: {a: {command: x, timeot: 3}}\n", r"a: unknown key 'timeot'"),
    ("servers: {a: {command: x}}\ntokens: {t: nobody}\n", r"tokens: token t\.\.\. maps to unknown role 'nobody'"),
    ("servers: {a: {command: x, permissions: ['a b']}}\n", r"permission code 'a b' is not valid"),
    ("servers: {a: {command: x}}\nrols: {}\n", r"gateway\.yaml:2: unknown key 'rols'; did you mean 'roles'"),
    ("servers: [\n", r"invalid YAML"),
    # Values of the wrong shape are errors, never split or guessed.
    ("servers:\n  a:\n    command: x\n    tool_permissions: {db.drop_table: files.admin}\nroles: {r: [files.admin]}\n",
     r"gateway\.yaml:4: servers\.a\.tool_permissions\.db\.drop_table: expected a list .*got text 'files\.admin'"),
    ("servers: {a: {command: x, tool_permissions: {t: []}}}\n", r"tool_permissions\.t: give the permission codes"),
    ("servers: {a: {command: x, tool_permissions: [t]}}\n", r"servers\.a\.tool_permissions: expected a mapping"),
    ("servers: {a: {command: x, args: 'server.py --port 1'}}\n", r"servers\.a\.args: expected a list"),
    ("servers: {a: {command: x, permissions: files.read}}\n", r"servers\.a\.permissions: expected a list"),
    ("servers: {a: {command: [x]}}\n", r"servers\.a\.command: expected text"),
    ("servers: {a: {command: x, env: [A=1]}}\n", r"servers\.a\.env: expected a mapping"),
    ("servers: {a: {command: x, timeout: '3'}}\n", r"servers\.a\.timeout: expected a number"),
    ("servers: {a: {command: x, tool_permisions: {}}}\n", r"did you mean 'tool_permissions'"),
    ("servers: {a: {command: x}}\nroles: {r: files.read}\n", r"gateway\.yaml:2: roles\.r: expected a list"),
    ("servers: {a: {command: x}}\ntokens: {t: [r]}\n", r"tokens\.t: expected a text value"),
    # Names that match nothing: the closest valid ones are named.
    ("servers: {a: {command: x, permissions: [files.read]}}\nroles: {r: [files.raed]}\n",
     r"roles\.r: permission code 'files\.raed' is used by no server.*did you mean 'files\.read'"),
    ("servers: {a: {command: x}}\nroles: {reader: []}\nrole: raeder\n",
     r"unknown role 'raeder'; did you mean 'reader'"),
])
def test_config_mistakes_name_file_line_and_key(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        GatewayConfig.from_yaml(write(tmp_path, text))


def test_server_targets_from_the_command_line() -> None:
    assert ServerSpec.from_target(["http://127.0.0.1:8000/mcp"]).url == "http://127.0.0.1:8000/mcp"
    spec = ServerSpec.from_target(["npx -y @modelcontextprotocol/server-everything"])
    assert spec.command == "npx" and spec.args == ("-y", "@modelcontextprotocol/server-everything")
    assert ServerSpec.from_target(["python", "s.py", "--flag"]).args == ("s.py", "--flag")
    with pytest.raises(UpstreamError, match="which MCP server"):
        ServerSpec.from_target([])


def test_a_rule_naming_no_listed_tool_is_refused_with_its_line_and_the_closest_names(tmp_path: Path) -> None:
    text = GOOD.replace("fs.delete_file", "fs.delet_file")
    config = GatewayConfig.from_yaml(write(tmp_path, text))
    assert config.rules == {("files", "fs.delet_file"): f"{tmp_path / 'gateway.yaml'}:6"}
    with pytest.raises(SettingsError, match=r"gateway\.yaml:6: servers\.files\.tool_permissions: no tool "
                                            r"'fs\.delet_file' on server 'files'.*did you mean 'fs\.delete_file'"):
        config.check_rules({"files": ["fs.read_file", "fs.delete_file"], "web": []})
    config.check_rules({"web": ["x"]})  # a server that did not answer is not checked (none of its tools is served)
    GatewayConfig.from_yaml(write(tmp_path, GOOD)).check_rules({"files": ["fs.delete_file"]})
    with pytest.raises(SettingsError, match=r"--role 'admn' is not a role of the gateway config; did you mean 'admin'"):
        config.with_role("admn")
    assert config.with_role("admin").role == "admin"


@pytest.mark.slow
def test_serve_refuses_a_misspelt_rule_before_serving(tmp_path: Path) -> None:
    """The probe's case: ``tool_permissions: {fs.delet_file: [files.admin]}`` would leave fs.delete_file callable
    by anyone. ``toolrag serve --gateway`` exits 2 with one line naming the line and the right name, having
    loaded no model and written nothing in its data folder."""
    file = write(tmp_path, f"""\
servers:
  files:
    command: {json.dumps(sys.executable)}
    args: [{json.dumps(str(DEMO))}, --name, files]
    tool_permissions:
      fs.read_file: [files.read]
      fs.delet_file: [files.admin]
roles: {{reader: [files.read], admin: [files.read, files.admin]}}
role: reader
""")
    data = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLRAG_")}
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "toolrag", "serve", "--gateway", str(file), "--data-dir", str(data)],
                          cwd=ROOT, env=env, capture_output=True, encoding="utf-8", timeout=120,
                          stdin=subprocess.DEVNULL)
    elapsed = time.monotonic() - start
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "gateway.yaml:7: servers.files.tool_permissions: no tool 'fs.delet_file' on server 'files'" in lines[0]
    assert "did you mean 'fs.delete_file'" in lines[0]
    assert not data.exists() and proc.stdout == ""  # nothing indexed, nothing served
    assert elapsed < 60  # no model loaded (about 2 s: the upstream's start and listing)
