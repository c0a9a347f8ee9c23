"""The markdown tables ``bench.decision_train`` prints and writes into docs/decisions.md (from
:func:`bench.decision_fit.fit_and_report`'s results)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from bench.common import REPO
from bench.decision_measures import CURVE
from bench.decision_points import DEFAULT_CLEAN, DEFAULT_TARGET

__all__ = ["format_tables", "write_docs"]

DOC = REPO / "docs" / "decisions.md"


def format_tables(results: Mapping[str, Any]) -> str:
    """The markdown tables of docs/decisions.md (percent)."""
    from bench.agent_outcome import AGENT_COLUMNS, agent_row

    def pct(v: Any) -> str:
        return "n/a" if v is None or (isinstance(v, float) and not math.isfinite(v)) else f"{100 * v:.1f}"

    lines = [f"{results['episodes']} episodes; classes {results['classes']}; winner: {results['winner']}", ""]
    for family, r in results["families"].items():
        if family != results["winner"]:  # the others in one line: what decided the choice
            lines += [f"**{family}** (not chosen): mean held-out EXECUTE precision at 60-70% coverage "
                      f"{pct(r['score'])} against the winner's {pct(results['families'][results['winner']]['score'])}; "
                      f"no-tool AUC {pct(r['auc_none'])}", ""]
            continue
        lines += [f"**{family}** (default point: P(right) >= {dict(r['points'])[DEFAULT_TARGET]:.3f} for "
                  f"{100 * DEFAULT_TARGET:.0f}% EXECUTE precision, candidates injected at P(no tool) < "
                  f"{dict(r['clean_points'])[DEFAULT_CLEAN]:.3f} to keep {100 * DEFAULT_CLEAN:.0f}% of requests "
                  f"nothing serves clean; no-tool AUC {pct(r['auc_none'])})", "",
                  "What the agent gets on held-out groups (catalogs of 1-10 tools / all sizes):", "",
                  "| held-out group | episodes | " + " | ".join(t for _, t in AGENT_COLUMNS) + " | ECE of P(right) |",
                  "|---|---|" + "---|" * (len(AGENT_COLUMNS) + 1)]
        for group, both in r["groups"].items():
            for scope in ("small", "all"):
                label = f"{group} ({'1-10' if scope == 'small' else 'all'})"
                ece = f" {pct(r['ece'].get(group))} |" if scope == "all" else " |"
                lines.append(agent_row(label, both[scope]["agent"]) + ece)
        u = r["unread"]
        lines += ["", "The same held-out episodes read as a request in another language than English or Chinese (the "
                  f"English model absent, pooled): a right tool injected {pct(u['reach'])} (top three "
                  f"{pct(u['top3_reach'])}), nothing injected {pct(u['clean'])} where nothing serves, "
                  f"{u['injected']:.2f} tools per request", ""]
        lines += ["", "| held-out group | catalogs | episodes | EXECUTE precision | MiniLM top-cosine at equal coverage | "
                  "coverage (served, EXECUTEd right) | no-tool kept out | CLARIFY recall | decision accuracy |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for group, both in r["groups"].items():
            for scope in ("small", "all"):
                m = both[scope]
                lines.append(f"| {group} | {'1-10 tools' if scope == 'small' else 'all sizes'} | {int(m['n'])} | "
                             f"{pct(m['precision'])} | {pct(m.get('baseline_precision'))} | {pct(m['coverage'])} | "
                             f"{pct(m['kept_out'])} | {pct(m['clarify_recall'])} | {pct(m['accuracy'])} |")
        lines += ["", "Operating points (held-out): EXECUTE precision " + ", ".join(
                  f"{100 * t:.0f}% -> P(right) {v:.3f}" for t, v in r["points"]) + "; kept clean " + ", ".join(
                  f"{100 * t:.0f}% -> P(no tool) {v:.3f}" for t, v in r["clean_points"]),
                  "", "Each point on the pooled held-out predictions (weighted as fitted):", "",
                  "| point | EXECUTE precision | coverage | kept out (not EXECUTEd) | nothing injected | reach of top "
                  "three's | tools injected |", "|---|---|---|---|---|---|---|"]
        for t in r["tradeoff"]:
            label = f"precision {100 * t['target']:.0f}%" if t["kind"] == "precision" else \
                f"clean {100 * t['target']:.0f}%"
            lines.append(f"| {label} | {pct(t['precision'])} | {pct(t['coverage'])} | {pct(t['kept_out'])} | "
                         f"{pct(t['clean'])} | {pct(t['reach_ratio'])} | {t['injected']:.2f} |")
        lines += ["", "Not EXECUTEd, by kind of request that no listed tool serves (1-10 tools): "
                  + "; ".join(f"{g}: " + ", ".join(f"{k} {pct(b['small'][f'kept_out_{k}'])}" for k in
                                                   ("sibling", "foreign", "no_tool") if f"kept_out_{k}" in b["small"])
                              for g, b in r["groups"].items()),
                  "", "EXECUTE precision at equal coverage, P(right) / MiniLM top cosine (1-10 tools):", "",
                  "| held-out group | " + " | ".join(f"{int(100 * c)}%" for c in CURVE) + " |",
                  "|---|" + "---|" * len(CURVE)]
        for group, both in r["groups"].items():
            m = both["small"]
            lines.append(f"| {group} | " + " | ".join(f"{pct(m.get(f'at_{int(100 * c)}'))} / "
                                                     f"{pct(m.get(f'base_at_{int(100 * c)}'))}" for c in CURVE) + " |")
        lines.append("")
    if results.get("shift"):
        shift = results["shift"]
        lines += ["Groups never fitted on (`bench.decision_episodes.SHIFT_GROUPS`): the winner fitted on every group "
                  "above, at the default point, on catalogs it never saw (catalogs of 1-10 tools / all sizes):", "",
                  "| group never fitted on | episodes | " + " | ".join(t for _, t in AGENT_COLUMNS)
                  + " | ECE of P(right) |", "|---|---|" + "---|" * (len(AGENT_COLUMNS) + 1)]
        for group, both in shift.items():
            if group == "ece":
                continue
            for scope in ("small", "all", "turns", "turns_own", "turns_execute"):
                if scope not in both:
                    continue
                label = f"{group} ({_SCOPES[scope]})"
                ece = f" {pct(shift['ece'].get(group))} |" if scope == "all" else " |"
                lines.append(agent_row(label, both[scope]["agent"]) + ece)
        lines.append("")
    held = "(pooled over groups, each predicted by a model fitted on the others; bench/decision_{}.py), at "
    tables = [("images", f"Held-out image episodes {held.format('images')}the default point: fitted with the image "
                         "episodes / on the text episodes alone, as before them:", ("with image episodes",
                                                                                     "text episodes only")),
              ("conversations", f"Held-out episodes with earlier turns {held.format('conversations')}the text "
                                "heads' point: the history heads / the text heads, as before them (stop 53):",
               ("history heads", "text heads"))]
    tables += [("conversations", f"The same {label}: the history heads there / at the text heads' points:",
                (name, "history heads")) for name, label in _OWN.items() if name in results.get("conversations", {})]
    for key, text, names in tables:
        if results.get(key):
            lines += [text, "", "| episodes | rows | right tool injected (served) | top three (served) | nothing "
                      "injected (no tool serves) | tools injected per request | decision accuracy | EXECUTE "
                      "precision |", "|---|---|---|---|---|---|---|---|"]
            fitted, before = (results[key][name] for name in names)
            for kind, m in fitted.items():
                b = before[kind]
                lines.append(f"| {kind} | {m['n']} | {pct(m['reach'])} / {pct(b['reach'])} | {pct(m['top3_reach'])} "
                             f"| {pct(m['clean'])} / {pct(b['clean'])} | {m['injected']:.2f} / {b['injected']:.2f} | "
                             f"{pct(m['accuracy'])} / {pct(b['accuracy'])} | {pct(m.get('precision'))} / "
                             f"{pct(b.get('precision'))} |")
            lines.append("")
    return "\n".join(lines)


#: The labels of a group's scopes in the table of groups never fitted on.
_SCOPES = {"small": "1-10", "all": "all", "turns": "with earlier turns",
           "turns_own": "with earlier turns, the history heads' own points: not shipped",
           "turns_execute": "with earlier turns, the history heads' own EXECUTE point: shipped"}
#: The held-out predictions of the history heads at their own operating points (``bench.decision_fit``), and how
#: the tables say which.
_OWN = {"history heads, their own points": "at the history heads' own operating points (measured, not shipped)",
        "history heads, their own EXECUTE point": "at the history heads' own EXECUTE point (the clean point shared; "
                                                  "shipped)"}


def write_docs(results: Mapping[str, Any]) -> None:
    from bench.report import write_section

    header = [f"Command: `{results['command']}`  ", f"Date: {results['date']}; machine: {results['machine']}", "", ""]
    write_section("decision_train", "\n".join(header) + format_tables(results), doc=DOC)
