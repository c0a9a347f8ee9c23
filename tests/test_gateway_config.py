"""The gateway's config file and server targets: every mistake names the file, the line and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolrag.errors import SettingsError
from toolrag.serve.config import GatewayConfig
from toolrag.serve.upstream import ServerSpec, UpstreamError

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
    ("servers: {a: {command: x}}\nrols: {}\n", r"gateway\.yaml:2: rols: unknown key"),
    ("servers: [\n", r"invalid YAML"),
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
