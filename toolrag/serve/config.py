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

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolrag.catalog.profile import PERMISSION_CODE
from toolrag.errors import SettingsError
from toolrag.files import read_yaml_file
from toolrag.serve.upstream import DEFAULT_TIMEOUT, ServerSpec, UpstreamError

__all__ = ["GatewayConfig"]

_TOP = ("servers", "roles", "role", "tokens", "name")
_SERVER = ("command", "args", "env", "cwd", "url", "headers", "permissions", "tool_permissions", "timeout")


@dataclass(frozen=True)
class GatewayConfig:
    """Upstream servers, roles (name -> permission codes), the default caller ``role`` and bearer ``tokens``."""

    servers: tuple[ServerSpec, ...]
    roles: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    role: str | None = None
    tokens: Mapping[str, str] = field(default_factory=dict)
    name: str = "toolrag-gateway"

    @classmethod
    def from_yaml(cls, path: str | Path) -> GatewayConfig:
        """Read a config file; every mistake names the file, its line and the key."""
        file = Path(path)
        data = read_yaml_file(file, "gateway config")
        if not isinstance(data, dict):
            raise SettingsError(f"{file}: expected a mapping with servers, roles, role and tokens")
        return _parse(data, file)


def _parse(data: Mapping[str, Any], file: Path) -> GatewayConfig:
    lines: dict[str, int] = getattr(data, "key_lines", {})

    def fail(key: str, message: str, node: Any = data) -> SettingsError:
        at = getattr(node, "key_lines", {}).get(key) or lines.get(key)
        return SettingsError(f"{file}:{at}: {key}: {message}" if at else f"{file}: {key}: {message}")

    for key in data:
        if key not in _TOP:
            raise fail(str(key), f"unknown key; valid keys: {', '.join(_TOP)}")
    servers = data.get("servers")
    if not isinstance(servers, dict) or not servers:
        raise fail("servers", "give at least one upstream server: servers: {name: {command: ...} or {url: ...}}")
    specs = tuple(_server(str(name), body, file, fail, servers) for name, body in servers.items())
    roles = _roles(data.get("roles") or {}, fail)
    role = data.get("role")
    if role is not None and str(role) not in roles:
        raise fail("role", f"unknown role {role!r}; roles: {', '.join(sorted(roles)) or '(none defined)'}")
    tokens_raw = data.get("tokens") or {}
    if not isinstance(tokens_raw, dict):
        raise fail("tokens", "map each bearer token to a role: tokens: {token: role}")
    tokens = {str(t): str(r) for t, r in tokens_raw.items()}
    for token, name in tokens.items():
        if name not in roles:
            raise fail("tokens", f"token {token[:4]}... maps to unknown role {name!r}; roles: "
                                 f"{', '.join(sorted(roles))}")
    return GatewayConfig(specs, roles, None if role is None else str(role), tokens,
                         str(data.get("name") or "toolrag-gateway"))


def _server(name: str, body: Any, file: Path, fail: Any, parent: Any) -> ServerSpec:
    if not isinstance(body, dict):
        raise fail(name, "expected {command: ..., args: [...]} or {url: http://...}", parent)
    for key in body:
        if key not in _SERVER:
            raise fail(name, f"unknown key {key!r}; valid keys: {', '.join(_SERVER)}", parent)

    def strings(key: str) -> tuple[str, ...]:
        value = body.get(key) or []
        if not isinstance(value, list) or not all(isinstance(v, str | int | float) for v in value):
            raise fail(name, f"{key} must be a list of strings", parent)
        return tuple(str(v) for v in value)

    codes = strings("permissions")
    per_tool = body.get("tool_permissions") or {}
    if not isinstance(per_tool, dict):
        raise fail(name, "tool_permissions must map a tool name to a list of codes", parent)
    tool_codes = {str(t): tuple(str(c) for c in (v or [])) for t, v in per_tool.items()}
    for code in [*codes, *(c for v in tool_codes.values() for c in v)]:
        if not PERMISSION_CODE.match(code):
            raise fail(name, f"permission code {code!r} is not valid (no commas or spaces)", parent)
    timeout = body.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise fail(name, f"timeout must be a number of seconds, got {timeout!r}", parent)
    try:
        return ServerSpec(name, command=_opt(body, "command"), args=strings("args"),
                          env={str(k): str(v) for k, v in (body.get("env") or {}).items()},
                          cwd=_cwd(body.get("cwd"), file), url=_opt(body, "url"),
                          headers={str(k): str(v) for k, v in (body.get("headers") or {}).items()},
                          permissions=codes, tool_permissions=tool_codes, timeout=float(timeout))
    except UpstreamError as exc:
        raise fail(name, str(exc), parent) from None


def _opt(body: Mapping[str, Any], key: str) -> str | None:
    value = body.get(key)
    return None if value is None else str(value)


def _cwd(value: Any, file: Path) -> str | None:
    """A server's working folder, relative to the config file (so a config can travel with its servers)."""
    if value is None:
        return str(file.resolve().parent)
    path = Path(str(value)).expanduser()
    return str(path if path.is_absolute() else (file.resolve().parent / path))


def _roles(raw: Any, fail: Any) -> dict[str, tuple[str, ...]]:
    if not isinstance(raw, dict):
        raise fail("roles", "map each role to a list of permission codes: roles: {reader: [files.read]}")
    roles = {}
    for name, codes in raw.items():
        if not isinstance(codes, list | type(None)) or not all(isinstance(c, str) for c in codes or []):
            raise fail("roles", f"role {name!r} must be a list of permission codes")
        roles[str(name)] = tuple(codes or [])
    return roles
