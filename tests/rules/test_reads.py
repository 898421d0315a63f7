"""Declared reads: the skim plan and the partition kinds derive from them, and they are true.

- The plan derived from the declarations (rules/plan.py) against the reader's constants of
  today (read/manifests.py SKIM_KINDS, read/yaml_docs.py NODE_STATUS_SKIPPED and
  CONTAINER_SKIPPED) and the partition kinds the cache used before they were derived.
- Each rule, run on documents stripped to what it declares, says exactly what it says on the
  whole documents: a rule that reads a field it did not declare fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpudrv_check.read.policy import catalog
from gpudrv_check.rules.plan import (
    ANY,
    CONTAINER_FIELDS,
    NODE_STATUS_FIELDS,
    declarations,
    partition_kinds,
    skim_plan,
)
from tests.conftest import EXAMPLES, ROOT
from tests.rules.reads import stripped

#: the partition kinds as engine/cache/partition.py listed them by hand, before derivation
LISTED_PARTITION_KINDS = frozenset(
    (
        "CronJob",
        "Deployment",
        "HorizontalPodAutoscaler",  # sets its target's replicas (model/admission.py autoscale)
        "Job",
        "Pod",
        "PodDisruptionBudget",
        "ReplicaSet",
        "ReplicationController",
        "StatefulSet",
    )
)

#: the lists the reader held before they were derived (read/manifests.py SKIM_KINDS,
#: read/yaml_docs.py NODE_STATUS_SKIPPED and CONTAINER_SKIPPED at commit ae9d05a)
BEFORE_KINDS = frozenset(
    "APIService ClusterRole ClusterRoleBinding CustomResourceDefinition Endpoints EndpointSlice "
    "HorizontalPodAutoscaler Ingress IngressClass MutatingWebhookConfiguration NetworkPolicy "
    "PersistentVolume PersistentVolumeClaim Role RoleBinding Service ServiceAccount StorageClass "
    "ValidatingWebhookConfiguration".split()
)
BEFORE_NODE_STATUS = frozenset(
    "addresses config daemonEndpoints features images nodeInfo runtimeHandlers volumesAttached "
    "volumesInUse".split()
)
# `ports` is read since GPU010 says when host ports were not evaluated (model/pending.py)
BEFORE_CONTAINER = frozenset(
    "args command env envFrom lifecycle livenessProbe readinessProbe securityContext "
    "startupProbe volumeDevices volumeMounts".split()
)


def test_derived_skim_kinds_are_todays():
    # Knative's Service is a workload-kinds table entry (issue 18): a kind of that name keeps its
    # content, the core Service's too (kinds are matched by name); a HorizontalPodAutoscaler
    # is read since it sets its target's replicas (model/admission.py autoscale)
    assert skim_plan().kinds == BEFORE_KINDS - {"Service", "HorizontalPodAutoscaler"}


def test_derived_node_status_and_container_skips_are_a_superset_read_by_no_code():
    """A superset: the universe is the upstream field list (NodeStatus, Container), so fields
    today's constants forgot are skipped too. Safe because no declaration reads them, no code
    names them (checked here), and test_skim_identity runs the derived plan against no skim."""
    NODE_STATUS_SKIPPED, CONTAINER_SKIPPED = BEFORE_NODE_STATUS, BEFORE_CONTAINER  # noqa: N806
    plan = skim_plan()
    assert plan.node_status >= NODE_STATUS_SKIPPED
    assert plan.container >= CONTAINER_SKIPPED
    assert plan.node_status <= NODE_STATUS_FIELDS and plan.container <= CONTAINER_FIELDS
    extra = (plan.node_status - NODE_STATUS_SKIPPED) | (plan.container - CONTAINER_SKIPPED)
    code = "\n".join(
        path.read_text()
        for path in (ROOT / "gpudrv_check").rglob("*.py")
        if path.name not in ("plan.py", "yaml_docs.py")
    )
    named = sorted(f for f in extra if re.search(rf"[\"']{f}[\"']", code))
    assert named == [], "code reads a field the plan skips: declare it in the rule's reads"


def test_a_declared_read_takes_a_field_out_of_the_plan(monkeypatch):
    from gpudrv_check.read.policy import Reads
    from gpudrv_check.rules import plan

    extra = Reads(kinds=["workloads", "Node", "Service"], fields=["{podspec}.containers.*.env"])
    node = Reads(kinds=["Node"], fields=["status.images"])
    own = plan.model_reads()
    monkeypatch.setattr(plan, "model_reads", lambda: (*own, extra, node))
    plan.declarations.cache_clear()
    try:
        derived = plan.derived_skim_plan()
        assert "env" not in derived.container and "args" in derived.container
        assert "images" not in derived.node_status and "nodeInfo" in derived.node_status
        assert "Service" not in derived.kinds and "Role" in derived.kinds
        # what rules/plan.json would then hold, and so what a run would skip
        assert plan.derived_plan()["skim"]["container"] == sorted(derived.container)
    finally:
        plan.declarations.cache_clear()


def test_the_plan_a_run_reads_is_the_one_the_declarations_give():
    """A run reads rules/plan.json (tests/test_catalog.py holds its text equal to the
    derivation): here too, so that this file's tests, which read the run's plan, fail on a
    stale one rather than pass on it."""
    from gpudrv_check.rules import plan

    assert plan.compiled_plan() == plan.derived_plan(), (
        "gpudrv_check/rules/plan.json is stale: run "
        '`python -c "from gpudrv_check.rules.plan import write_compiled_plan as w; w()"`'
    )


def test_partition_kinds_are_the_listed_ones():
    """Equal. GPU025 reads the Deployments, StatefulSets, ... of every namespace, but only
    `when:` an endless waitForCompletion selector is configured: such a run reads every
    namespace (test_identity shows the finding a cached run used to lose), so the kinds stay."""
    assert partition_kinds() == LISTED_PARTITION_KINDS


def test_a_conditional_cross_namespace_read_has_its_condition_in_code():
    from gpudrv_check.rules import RULE_MODULES

    conditional = {d.owner for d in declarations() if d.scope == "cluster" and d.when}
    hooked = {m.ID for m in RULE_MODULES if hasattr(m, "reads_all_namespaces")}
    assert conditional == hooked == {"GPU025"}


def test_without_the_condition_cluster_reads_of_a_kind_take_it_out_of_the_partitions(
    monkeypatch,
):
    from gpudrv_check.read.policy import Reads
    from gpudrv_check.rules import plan

    own = plan.model_reads()
    always = Reads(kinds=["Job"], fields=["spec"], scope="cluster")
    monkeypatch.setattr(plan, "model_reads", lambda: (*own, always))
    plan.declarations.cache_clear()
    try:
        assert plan.derived_partition_kinds() == LISTED_PARTITION_KINDS - {"Job"}
        assert plan.derived_plan()["partition_kinds"] == sorted(LISTED_PARTITION_KINDS - {"Job"})
    finally:
        plan.declarations.cache_clear()


def test_every_rule_declares_its_scope_and_reads_known_kinds_and_paths():
    for policy in catalog().values():
        for entry in policy.reads:
            assert entry.kinds, policy.id
            for field in entry.fields:
                assert re.fullmatch(r"(\{podspec\}|\{template\}|\*|[A-Za-z]+)(\.[^.]+)*", field)
    assert any(ANY in d.kinds for d in declarations() if d.owner == "model")


# --- strip to the declared reads ----------------------------------------------------------------


def generated_corpus(out: Path, nodes: int, workloads: int) -> Path:
    """benchmarks/gen_corpus.py's repo (a script, not a package: loaded from its file)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "gen_corpus", ROOT / "benchmarks" / "gen_corpus.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.generate(out, nodes=nodes, workloads=workloads, seed=3, bulk=0.2)
    return out


def _corpora() -> list[Path]:
    return sorted(p for p in EXAMPLES.iterdir() if p.is_dir())


def _realistic() -> list[Path]:
    folder = ROOT / "tests" / "realistic"
    # the repos, not the bytecode a run of this package writes beside them
    return sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))


def _findings(root: Path, monkeypatch, rule: str | None = None) -> list[str]:
    from gpudrv_check.engine import run as engine
    from gpudrv_check.read.config import ConfigError, load_config

    real = engine.one_per_identity
    if rule is not None:
        monkeypatch.setattr(
            engine, "one_per_identity", lambda ms: real([stripped(m, rule) for m in ms])
        )
    try:
        config = load_config(root)
        run = engine.load(root, config, matrix_optional=True)
        engine.evaluate(run)
    except ConfigError as err:  # a corpus about bad configuration: nothing to compare
        return [f"config error: {err}"]
    finally:
        monkeypatch.setattr(engine, "one_per_identity", real)
    return [repr(f.record()) for f in [*run.findings, *run.suppressed]]


def _same_when_stripped(root: Path, monkeypatch) -> None:
    full = _findings(root, monkeypatch)
    for policy in catalog().values():
        if not policy.reads:
            continue  # what the reader says of how files are written: before any model
        mine = [f for f in full if f'"rule":"{policy.id}"' in f]
        alone = [f for f in _findings(root, monkeypatch, policy.id) if f'"rule":"{policy.id}"' in f]
        assert alone == mine, f"{policy.id} reads more than it declares ({root.name})"


@pytest.mark.parametrize("root", _corpora(), ids=lambda p: p.name)
def test_each_rule_sees_only_what_it_declares_on_the_examples(root: Path, monkeypatch):
    _same_when_stripped(root, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("root", _realistic(), ids=lambda p: p.name)
def test_each_rule_sees_only_what_it_declares_on_the_realistic_repos(root: Path, monkeypatch):
    _same_when_stripped(root, monkeypatch)


def test_each_rule_sees_only_what_it_declares_on_its_cases(tmp_path: Path, monkeypatch):
    from tests.rules.cases import case_files, read_case, write_repo

    for index, path in enumerate(case_files()):
        root = tmp_path / str(index)
        write_repo(read_case(path), root)
        _same_when_stripped(root, monkeypatch)


def test_each_rule_sees_only_what_it_declares_on_a_generated_corpus(tmp_path: Path, monkeypatch):
    generated_corpus(tmp_path, nodes=12, workloads=60)
    _same_when_stripped(tmp_path, monkeypatch)
