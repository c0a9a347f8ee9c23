"""The gateway's configuration file: upstream MCP servers, the roles that see their tools, and who is who.

```yaml
servers:
  files:                                  # a name of your choice; tool ids become files/<tool name>
    command: python                       # launched over stdio ...
    args: [files_server.py]
    permissions: [files.read]             # codes a caller needs for every tool of this server
    tool_permissions: {fs.delete_file: [files.admin]}   # extra codes for single tools
  github:
    url: http://127.0.0.1:9000/mcp        # ... or reached over streamable HTTP
    headers: {Authorization: Bearer ...}  # sent to that server
    timeout: 10                           # seconds to connect, per page and per call (default 30)
roles:                                    # role -> permission codes
  reader: [files.read]
  admin: [files.read, files.admin]
role: reader                              # the role of a caller the connection does not identify
tokens:                                   # HTTP callers: `Authorization: Bearer <token>` -> role
  change-me: admin
```
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from toolrag.catalog.profile import PERMISSION_CODE
from toolrag.errors import SettingsError
from toolrag.files import read_yaml_file
from toolrag.serve.upstream import DEFAULT_TIMEOUT, ServerSpec, UpstreamError
from toolrag.strict import Section, closest

__all__ = ["GatewayConfig"]

_TOP = ("servers", "roles", "role", "tokens", "name")
_SERVER = ("command", "args", "env", "cwd", "url", "headers", "permissions", "tool_permissions", "timeout")


@dataclass(frozen=True)
class GatewayConfig:
    """Upstream servers, roles (name -> permission codes), the default caller ``role`` and bearer ``tokens``.

    ``rules`` says where each ``tool_permissions`` rule is written (``(server, tool name) -> file:line``):
    :meth:`check_rules` refuses, once the servers have listed their tools, a rule that names no tool (it
    would protect nothing, and the tool it meant would be open to every caller)."""

    servers: tuple[ServerSpec, ...]
    roles: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    role: str | None = None
    tokens: Mapping[str, str] = field(default_factory=dict)
    name: str = "toolrag-gateway"
    rules: Mapping[tuple[str, str], str] = field(default_factory=dict)

    @classmethod
    def from_yaml(cls, path: str | Path) -> GatewayConfig:
        """Read a config file; every mistake names the file, its line and the key (unknown keys, values of the
        wrong shape, roles and codes that match nothing, with the closest valid names)."""
        file = Path(path)
        top = Section.of(read_yaml_file(file, "gateway config"), file,
                         what="servers, roles, role and tokens")
        return _parse(top)

    def with_role(self, role: str, *, flag: str = "--role") -> GatewayConfig:
        """This config with another default caller role (a command-line override), checked like the file's."""
        if role not in self.roles:
            raise SettingsError(f"{flag} {role!r} is not a role of the gateway config; "
                                f"{closest(role, self.roles)}")
        return dataclasses.replace(self, role=role)

    def check_rules(self, listed: Mapping[str, Collection[str]]) -> None:
        """Refuse a ``tool_permissions`` rule naming a tool its server does not list (``listed``: server ->
        the names of its tools, for the servers that answered), with the closest names the server lists."""
        for (server, tool), where in self.rules.items():
            names = listed.get(server)
            if names is not None and tool not in names:
                raise SettingsError(
                    f"{where}: servers.{server}.tool_permissions: no tool {tool!r} on server {server!r}, so this "
                    f"rule would protect nothing; {closest(tool, names)} (names as the server lists them)")


def _parse(top: Section) -> GatewayConfig:
    top.check_keys(_TOP)
    servers = top.section("servers", example="{files: {command: python, args: [server.py]}}")
    if servers is None or not servers.names():
        raise top.fail("servers", "give at least one upstream server: servers: {name: {command: ...} or "
                                  "{url: ...}}")
    roles_section = top.section("roles", example="{reader: [files.read]}") or Section({}, top.file, path="roles")
    roles = {name: roles_section.strings(name, example="[files.read]") for name in roles_section.names()}
    specs: list[ServerSpec] = []
    rules: dict[tuple[str, str], str] = {}
    for name, body in servers.sections(example="{command: python, args: [server.py]} or {url: http://...}"):
        spec, where = _server(name, body)
        specs.append(spec)
        rules.update({(name, tool): at for tool, at in where.items()})
    for name, codes in roles.items():
        _codes(codes, roles_section, name)
    used = {c for s in specs for c in (*s.permissions, *(c for v in s.tool_permissions.values() for c in v))}
    for name, codes in roles.items():
        for code in codes:
            if code not in used:
                raise roles_section.fail(name, f"permission code {code!r} is used by no server's permissions or "
                                               f"tool_permissions, so it grants nothing; {closest(code, used)}")
    role = top.text("role", example="reader")
    if role is not None and role not in roles:
        raise top.fail("role", f"unknown role {role!r}; {closest(role, roles)}")
    tokens = top.string_map("tokens", numbers=False, example="{a-long-secret: admin}")
    for token, name in tokens.items():
        if name not in roles:
            raise top.fail("tokens", f"token {token[:4]}... maps to unknown role {name!r}; {closest(name, roles)}")
    return GatewayConfig(tuple(specs), roles, role, tokens, top.text("name") or "toolrag-gateway", rules)


def _server(name: str, body: Section) -> tuple[ServerSpec, dict[str, str]]:
    """One upstream server, and where each of its ``tool_permissions`` rules is written."""
    body.check_keys(_SERVER)
    codes = body.strings("permissions", example="[files.read]")
    _codes(codes, body, "permissions")
    rules = body.section("tool_permissions", example="{fs.delete_file: [files.admin]}")
    tool_codes: dict[str, tuple[str, ...]] = {}
    where: dict[str, str] = {}
    if rules is not None:
        for tool in rules.names():
            tool_codes[tool] = rules.strings(tool, example="[files.admin]")
            if not tool_codes[tool]:
                raise rules.fail(tool, "give the permission codes a caller needs for this tool, e.g. [files.admin] "
                                       "(an empty list would leave it as open as the rest of the server)")
            _codes(tool_codes[tool], rules, tool)
            where[tool] = rules.where(tool)
    try:
        spec = ServerSpec(name, command=body.text("command", example="python"),
                          args=body.strings("args", numbers=True, example="[server.py, --port, 8000]"),
                          env=body.string_map("env", example="{API_KEY: ...}"), cwd=_cwd(body),
                          url=body.text("url", example="http://127.0.0.1:9000/mcp"),
                          headers=body.string_map("headers", example="{Authorization: Bearer ...}"),
                          permissions=codes, tool_permissions=tool_codes,
                          timeout=body.number("timeout", DEFAULT_TIMEOUT, low=0.001, unit="seconds"))
    except UpstreamError as exc:
        raise body.fail(None, str(exc)) from None
    return spec, where


def _codes(codes: tuple[str, ...], section: Section, key: str) -> None:
    for code in codes:
        if not PERMISSION_CODE.match(code):
            raise section.fail(key, f"permission code {code!r} is not valid (no commas or spaces; list several "
                                    "codes as separate items)")


def _cwd(body: Section) -> str:
    """A server's working folder, relative to the config file (so a config can travel with its servers)."""
    folder = body.file.resolve().parent
    value = body.text("cwd", example="servers/files")
    if value is None:
        return str(folder)
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else (folder / path))
