"""Catalog quality warnings: what makes a tool hard to find, before any model runs."""

from __future__ import annotations

from dataclasses import dataclass

from toolrag.catalog.profile import Catalog, ToolProfile

__all__ = ["LintWarning", "lint_catalog", "lint_profile"]

MIN_DESCRIPTION_CHARS = 40
MIN_EXAMPLES = 3


@dataclass(frozen=True)
class LintWarning:
    tool_id: str
    code: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"tool_id": self.tool_id, "code": self.code, "message": self.message}


def lint_profile(tool: ToolProfile) -> list[LintWarning]:
    """Warnings for one profile: short description, few examples, no negatives, undocumented parameters."""
    out: list[LintWarning] = []

    def warn(code: str, message: str) -> None:
        out.append(LintWarning(tool.id, code, message))

    if len(tool.description) < MIN_DESCRIPTION_CHARS:
        warn("short-description", f"description has {len(tool.description)} characters; say what the tool "
                                  f"does, for whom and its limits (at least {MIN_DESCRIPTION_CHARS})")
    if len(tool.examples) < MIN_EXAMPLES:
        warn("few-examples", f"{len(tool.examples)} example queries; add at least {MIN_EXAMPLES} varied ones "
                             "(colloquial, formal, other language)")
    if not tool.negative_examples:
        warn("no-negative-examples", "no negative examples; add requests this tool must not serve")
    properties = tool.parameters.get("properties") or {}
    missing = [name for name, schema in properties.items()
               if not (isinstance(schema, dict) and str(schema.get("description", "")).strip())]
    if missing:
        warn("undocumented-parameters", "parameters without a description: " + ", ".join(missing))
    if tool.deprecated and not tool.replaced_by:
        warn("deprecated-without-successor", "deprecated but replaced_by names no successor")
    return out


def lint_catalog(catalog: Catalog) -> list[LintWarning]:
    return [w for tool in catalog for w in lint_profile(tool)]
