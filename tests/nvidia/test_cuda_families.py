"""CUDA from what image tags say (policies/cuda.yaml): NGC releases shared by PyTorch,
TensorFlow and Triton, vLLM and NIM LLM releases, cuNNN/cudaX.Y in any tag; unknown stays
unknown, said once per image and namespace (GPU011 info); user rules in the config."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudrv_check.core.finding import Severity
from gpudrv_check.engine.run import check
from gpudrv_check.model.cuda import builtin_cuda_table, cuda_table
from gpudrv_check.nvidia.cuda import cuda_version_for_image, parse_cuda_table
from gpudrv_check.read.config import parse_config
from tests.conftest import write


@pytest.mark.parametrize(
    ("image", "cuda", "rule"),
    [
        # Triton release notes 24.05 ("based on CUDA 12.4"), 25.08 (13.0.0.044), 25.10 (13.0.2)
        ("nvcr.io/nvidia/tritonserver:24.05-py3", "12.4.1", "ngc-triton"),
        ("nvcr.io/nvidia/tritonserver:24.05-trtllm-python-py3", "12.4.1", "ngc-triton"),
        ("nvcr.io/nvidia/tritonserver:25.08-py3", "13.0.0", "ngc-triton"),
        ("nvcr.io/nvidia/tritonserver:25.10-py3", "13.0.2", "ngc-triton"),
        ("nvcr.io/nvidia/tensorflow:24.05-tf2-py3", "12.4.1", "ngc-tensorflow"),
        ("nvcr.io/nvidia/pytorch:24.07-py3", "12.5.1", "ngc-pytorch"),
        # vllm-project/vllm#5635 (v0.5.0: cuda>=12.4), #18813 (v0.9.0: cuda>=12.8), #2393 (12.1)
        ("vllm/vllm-openai:v0.4.2", "12.1", "vllm-openai-cu121"),
        ("vllm/vllm-openai:v0.5.0", "12.4", "vllm-openai-cu124"),
        ("vllm/vllm-openai:v0.8.5", "12.4", "vllm-openai-cu124"),
        ("vllm/vllm-openai:v0.9.0", "12.8", "vllm-openai-cu128"),
        # NIM for LLMs support matrix 1.3.0: CUDA 12.6.1, driver >= 560
        ("nvcr.io/nim/meta/llama-3.1-8b-instruct:1.3.3", "12.6", "nim-llm"),
        # CUDA named in the tag, on any repository
        ("rayproject/ray-ml:2.9.0-py310-cu118", "11.8", "tag-cu"),
        ("rayproject/ray:2.40.0-py310-cu128", "12.8", "tag-cu"),
        ("ghcr.io/acme/trainer:v3-cu124", "12.4", "tag-cu"),
        ("ghcr.io/acme/trainer:cuda12.5.0-py3", "12.5.0", "tag-cuda"),
        ("ghcr.io/acme/trainer:2.1-cuda-12.4", "12.4", "tag-cuda"),
        ("paddlepaddle/paddle:2.6.1-gpu-cuda12.0-cudnn8.9-trt8.6", "12.0", "tag-cuda"),
        ("registry.local/mirror/cuda:12.4.1-cudnn-runtime-ubuntu22.04", "12.4.1", "tag-cuda-image"),
        ("nvidia/cuda:12.4.1-runtime-ubuntu22.04", "12.4.1", "dockerhub-cuda"),
    ],
)
def test_families_and_tags(image: str, cuda: str, rule: str) -> None:
    found = cuda_version_for_image(builtin_cuda_table(), image)
    assert found is not None and (found[0], found[1].id) == (cuda, rule)


@pytest.mark.parametrize(
    "image",
    [
        "vllm/vllm-openai:v0.12.0",  # no source for it yet: not guessed
        "vllm/vllm-openai:latest",
        "nvcr.io/nvidia/nemo:24.07",
        "nvcr.io/nvidia/pytorch:25.07-py3",
        "nvcr.io/nvidia/tritonserver:24.07-py3-igpu",
        "ghcr.io/acme/app:1.2.3-runtime",  # a version before -runtime is not CUDA's
        "ghcr.io/acme/cucumber:cu",
        "rayproject/ray:2.9.0-gpu",
    ],
)
def test_unknown_is_not_guessed(image: str) -> None:
    assert cuda_version_for_image(builtin_cuda_table(), image) is None


def test_user_rules_use_the_shipped_release_table() -> None:
    config = parse_config(
        {
            "cuda": {
                "images": [
                    {
                        "id": "mirror",
                        "repository_regex": r"registry\.local/nvidia/pytorch",
                        "tag_regex": r"^(?P<release>\d{2}\.\d{2})-py3$",
                        "release_table": "ngc",
                    },
                    {
                        "id": "nemo",
                        "repository": "nvcr.io/nvidia/nemo",
                        "tags": {"24.07": "12.4.1"},
                    },
                ]
            }
        },
        "c.yaml",
    )
    table = cuda_table(config)
    assert cuda_version_for_image(table, "registry.local/nvidia/pytorch:24.05-py3")[0] == "12.4.1"
    assert cuda_version_for_image(table, "nvcr.io/nvidia/nemo:24.07")[0] == "12.4.1"


def test_a_rule_naming_a_missing_release_table_is_reported() -> None:
    data = {
        "images": [
            {
                "id": "x",
                "repository": "a/b",
                "tag_regex": "(?P<release>.+)",
                "release_table": "nope",
            }
        ]
    }
    _, problems = parse_cuda_table(data)
    assert problems == ["x: release_table 'nope' is not in releases"]


NODES = """
apiVersion: gpudrv-check.io/v1alpha1
kind: NodeInventory
nodes:
  - name: gpu-1
    labels: {nvidia.com/gpu.present: "true", nvidia.com/cuda.driver-version.full: "550.90.07",
             nvidia.com/cuda.driver-version.major: "550"}
"""


def test_unknown_cuda_is_said_once_per_image(tmp_path: Path) -> None:
    write(tmp_path, "nodes.yaml", NODES)
    for name in ("a", "b"):
        write(
            tmp_path,
            f"{name}.yaml",
            f"""
            apiVersion: v1
            kind: Pod
            metadata: {{name: {name}}}
            spec:
              containers:
                - name: sidecar
                  image: envoyproxy/envoy:v1.30.0
                - name: llm
                  image: nvcr.io/nvidia/nemo:24.07
                  resources: {{limits: {{nvidia.com/gpu: 1}}}}
            """,
        )
    found = [
        f
        for f in check(tmp_path, parse_config({"matrix": None}, "c")).findings
        if f.rule == "GPU011"
    ]
    assert [(f.severity, f.location.file, f.location.line) for f in found] == [
        (Severity.INFO, "a.yaml", 9)
    ]
    assert "the CUDA version of image nvcr.io/nvidia/nemo:24.07 is not known" in found[0].message
