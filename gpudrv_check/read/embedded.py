"""YAML written inside a string of an object: Helm values in an Argo CD Application's
`helm.values`, or in the ConfigMap or Secret key a Flux HelmRelease's `valuesFrom` names; the
device-plugin and mig-parted configs in their ConfigMaps' keys.

The engine hands an `EmbeddedYaml` to the model (model/repo.py `Repo.embedded`), which asks it
for the documents it needs: the text is read here, on demand (most ConfigMaps are never named),
and the model only sees data.
"""

from __future__ import annotations

from typing import Any


class EmbeddedYaml:
    """Reads the YAML embedded in strings (each call builds a new tree: the model may keep it)."""

    def mapping(self, text: str) -> dict[str, Any] | None:
        """The first document of `text` when it is a mapping read without any problem, else
        None (a syntax error, a duplicate key, a list, a scalar, nothing at all)."""
        from gpudrv_check.read.yaml_docs import parse_text

        parsed = parse_text(text)
        data = parsed.docs[0].data if parsed.docs else None
        return data if not parsed.problems and isinstance(data, dict) else None

    def documents(self, text: str) -> list[Any] | None:
        """The data of each document of `text` (an empty text has none), or None when it does
        not parse."""
        from gpudrv_check.read.yaml_docs import parse_text

        parsed = parse_text(text)
        return None if parsed.failed else [doc.data for doc in parsed.docs]
