"""The GPU Operator's configuration as the repo states it.

One of: a `ClusterPolicy` (nvidia.com/v1; its `spec`), the values of a Flux `HelmRelease` of the
`gpu-operator` chart (`spec.values`), or an Argo CD `Application` of that chart
(`spec.source(s)[].helm.valuesObject`, or the `values` string). The ClusterPolicy spec and the
chart values share their shape for everything the rules read (`driver.enabled`,
`driver.upgradePolicy`, `daemonsets.tolerations`, …).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpudrv_check.load.located import Path
from gpudrv_check.model.finding import Location
from gpudrv_check.model.manifest import Manifest

CHART = "gpu-operator"


@dataclass
class OperatorConfig:
    manifest: Manifest
    source: str  # "clusterpolicy" | "helmrelease" | "application"
    values: dict  # ClusterPolicy spec or chart values (located when read from YAML)
    values_path: Path  # where `values` sits inside the manifest
    chart_version: str | None = None
    # when values came from an embedded YAML string, positions inside it are not file positions
    embedded: bool = False
    notes: list[str] = field(default_factory=list)

    def get(self, *path: str) -> Any:
        node: Any = self.values
        for step in path:
            if not isinstance(node, dict):
                return None
            node = node.get(step)
        return node

    def location(self, path: Path = ()) -> Location:
        if self.embedded:
            return self.manifest.location(self.values_path)
        return self.manifest.location((*self.values_path, *path))

    def enabled(self, section: str, default: bool = True) -> bool:
        """`<section>.enabled`; unset means the chart's default."""
        value = self.get(section, "enabled")
        return default if value is None else value is True


def _is_gpu_operator_chart(name: Any) -> bool:
    return isinstance(name, str) and (name == CHART or name.endswith("/" + CHART))


def _from_helmrelease(m: Manifest) -> OperatorConfig | None:
    chart = m.get("spec", "chart", "spec", "chart")
    if not _is_gpu_operator_chart(chart):
        chart_ref = m.get("spec", "chartRef", "name")
        if not _is_gpu_operator_chart(chart_ref):
            return None
    values = m.get("spec", "values")
    version = m.get("spec", "chart", "spec", "version")
    return OperatorConfig(
        manifest=m,
        source="helmrelease",
        values=values if isinstance(values, dict) else {},
        values_path=("spec", "values"),
        chart_version=version if isinstance(version, str) else None,
    )


def _from_application(m: Manifest) -> OperatorConfig | None:
    sources: list[tuple[Path, Any]] = []
    single = m.get("spec", "source")
    if isinstance(single, dict):
        sources.append((("spec", "source"), single))
    many = m.get("spec", "sources")
    if isinstance(many, list):
        sources.extend(
            (("spec", "sources", i), s) for i, s in enumerate(many) if isinstance(s, dict)
        )
    for base, source in sources:
        if not _is_gpu_operator_chart(source.get("chart")):
            continue
        version = source.get("targetRevision")
        helm = source.get("helm") if isinstance(source.get("helm"), dict) else {}
        values_object = helm.get("valuesObject")
        if isinstance(values_object, dict):
            return OperatorConfig(
                m,
                "application",
                values_object,
                (*base, "helm", "valuesObject"),
                version if isinstance(version, str) else None,
            )
        values_text = helm.get("values")
        values: dict = {}
        embedded = False
        if isinstance(values_text, str):
            from gpudrv_check.load.yaml_docs import parse_text

            parsed = parse_text(values_text)
            if parsed.docs and isinstance(parsed.docs[0].data, dict) and not parsed.problems:
                values = parsed.docs[0].data
            embedded = True
        return OperatorConfig(
            m,
            "application",
            values,
            (*base, "helm", "values"),
            version if isinstance(version, str) else None,
            embedded=embedded,
        )
    return None


def find_operator_configs(manifests: list[Manifest]) -> list[OperatorConfig]:
    """Every statement of the operator's configuration in the repo, in file order."""
    found: list[OperatorConfig] = []
    for m in manifests:
        group = m.api_version.split("/", 1)[0]
        if m.kind == "ClusterPolicy" and group == "nvidia.com":
            spec = m.get("spec")
            found.append(
                OperatorConfig(
                    m, "clusterpolicy", spec if isinstance(spec, dict) else {}, ("spec",)
                )
            )
        elif m.kind == "HelmRelease" and group == "helm.toolkit.fluxcd.io":
            config = _from_helmrelease(m)
            if config is not None:
                found.append(config)
        elif m.kind == "Application" and group == "argoproj.io":
            config = _from_application(m)
            if config is not None:
                found.append(config)
    return found
