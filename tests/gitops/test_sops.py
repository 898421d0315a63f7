"""SOPS-encrypted manifests: Flux's kustomize-controller decrypts a document whose top-level
`sops` mapping has a non-empty `mac` before applying it (internal/decryptor/decryptor.go,
isSOPSEncryptedResource and DecryptResource), so its `ENC[…]` values are not what the cluster
gets: the document is skipped, said with -v, never a finding."""

from __future__ import annotations

from pathlib import Path

from gpudrv_check.read.manifests import SOPS_SKIPPED, parse_manifest_bytes
from tests.conftest import MATRIX, gpu_node, run_main, write

ENCRYPTED = """\
apiVersion: apps/v1
kind: Deployment
metadata:
    name: secret-app
spec:
    replicas: ENC[AES256_GCM,data:Mg==,iv:abc=,tag:def=,type:int]
    template:
        spec:
            containers:
                - name: c
                  image: ENC[AES256_GCM,data:abcd,iv:abc=,tag:def=,type:str]
                  resources:
                    limits:
                        nvidia.com/gpu: ENC[AES256_GCM,data:MQ==,iv:abc=,tag:def=,type:int]
sops:
    age:
        - recipient: age1xyz
    lastmodified: "2024-01-01T00:00:00Z"
    mac: ENC[AES256_GCM,data:abc,iv:abc=,tag:def=,type:str]
    version: 3.8.1
"""


def test_an_encrypted_document_is_skipped_and_a_plain_one_next_to_it_is_read():
    plain = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n"
    result = parse_manifest_bytes("s.enc.yaml", (ENCRYPTED + "---\n" + plain).encode())
    assert [(m.kind, m.name) for m in result.manifests] == [("ConfigMap", "c")]
    assert [(s.rel, s.reason) for s in result.skipped] == [("s.enc.yaml#0", SOPS_SKIPPED)]
    assert result.problems == []


def test_a_sops_key_without_a_mac_is_no_encryption():
    """Upstream needs `sops.mac`: a `sops:` of another meaning is read as written."""
    text = ENCRYPTED.replace("    mac: ENC[AES256_GCM,data:abc,iv:abc=,tag:def=,type:str]\n", "")
    result = parse_manifest_bytes("d.yaml", text.encode())
    assert [m.name for m in result.manifests] == ["secret-app"]


def test_quiet_by_default_and_said_once_with_verbose(tmp_path: Path):
    write(tmp_path, "support-matrix.csv", MATRIX)
    write(tmp_path, "nodes.yaml", gpu_node("gpu-0"))
    write(tmp_path, "secrets/deploy.enc.yaml", ENCRYPTED)
    done = run_main("check", str(tmp_path), "--no-cache", "--format", "concise")
    assert done.returncode == 0
    assert done.stdout == "2 files, 1 object read; 0 errors, 0 warnings\n"
    verbose = run_main("check", str(tmp_path), "--no-cache", "-v")
    said = [line for line in verbose.stderr.splitlines() if "SOPS" in line]
    assert said == [f"skipped secrets/deploy.enc.yaml#0: {SOPS_SKIPPED}"]
