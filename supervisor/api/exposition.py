"""The Prometheus text exposition format, version 0.0.4, written by hand."""

from __future__ import annotations

import math

from supervisor.core.queries.metrics import Family

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def label_value(text: str) -> str:
    """A label value as the format quotes it: backslash, double quote and newline escaped."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def number(value: float) -> str:
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def render(families: list[Family]) -> str:
    lines: list[str] = []
    for family in families:
        lines.append(f"# HELP {family.name} {_help(family.help)}")
        lines.append(f"# TYPE {family.name} {family.type}")
        for labels, value in family.samples:
            pairs = ",".join(f'{key}="{label_value(str(v))}"' for key, v in labels.items())
            lines.append(
                f"{family.name}{{{pairs}}} {number(value)}"
                if pairs
                else f"{family.name} {number(value)}"
            )
    return "\n".join(lines) + "\n"
