"""The PromQL of deploy/grafana/nvsmi-fleet.json, for scripts/test-deploy-rules (syntax, with
promtool) and tests/test_fleet.py (data, on a real Prometheus)."""
import re

# What Grafana puts for its own variables, as a test chooses them.
GRAFANA_VARIABLES = {"__rate_interval": "1m", "__interval": "15s", "__range": "5m"}


def _panels(panels):
    for panel in panels:
        yield panel
        yield from _panels(panel.get("panels", []))  # a collapsed row holds its panels


def dashboard_queries(dashboard):
    """[(where, PromQL)]: every panel target's expression, then each query variable's selector
    (label_values(SELECTOR, LABEL) becomes `count by (LABEL) (SELECTOR)`)."""
    queries = []
    for panel in _panels(dashboard.get("panels", [])):
        for target in panel.get("targets", []):
            if target.get("expr"):
                queries.append((f'panel "{panel.get("title")}" {target.get("refId")}',
                                target["expr"]))
    for variable in dashboard.get("templating", {}).get("list", []):
        if variable.get("type") != "query":
            continue
        query = variable.get("query")
        if isinstance(query, dict):
            query = query.get("query", "")
        found = re.fullmatch(r"\s*label_values\((.*),\s*(\w+)\)\s*", query or "")
        if not found:
            raise ValueError(f"variable {variable.get('name')}: not label_values(SELECTOR, LABEL): "
                             f"{query!r}")
        queries.append((f'variable "{variable["name"]}"',
                        f"count by ({found.group(2)}) ({found.group(1)})"))
    return queries


def substitute(expr, values):
    """`expr` with $name, ${name} and [[name]] replaced from `values`, then Grafana's own
    variables ($__rate_interval ...)."""
    every = dict(GRAFANA_VARIABLES)
    every.update(values)

    def value(found):
        name = found.group(1) or found.group(2) or found.group(3)
        if name not in every:
            raise KeyError(f"no value for the variable {name} in {expr!r}")
        return every[name]

    return re.sub(r"\$\{(\w+)(?::\w+)?\}|\[\[(\w+)\]\]|\$(\w+)", value, expr)
