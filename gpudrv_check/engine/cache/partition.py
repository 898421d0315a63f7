"""One changed file, one namespace checked again: the partition cache of `check`.

What a finding about a namespaced workload or a PodDisruptionBudget says depends on that object,
on the other such objects of its namespace (which budgets cover which pods), and on the
cluster-wide objects: nodes, the support matrix, the operator configuration, DaemonSets,
Namespaces, as long as no rule reads that kind across namespaces, and on the other namespaces'
workloads only through the nodes' capacity they share (model/occupancy.py). Which kinds
qualify is derived from the rules' declarations (`partition_kinds`, rules/plan.py): read at
`scope: namespace` and by nothing at `scope: cluster`. A rule may read them across namespaces
only `when:` a condition holds (GPU025: an endless waitForCompletion selector, over the
Deployments, StatefulSets, ... of every namespace); in a run where it holds, the engine reads every
namespace (engine/run.py `load`), so the cache never hides an object from such a rule.

Shared capacity: a partition's findings read the nodes' shared capacity only through its own
workloads' `Replicas.outcome` (model/occupancy.py: how many pods, which stay Pending, the
scheduler's message), and that outcome depends on every other workload's demand. So the key does
not digest anyone's demand (a `replicas:` edit is planned like an image edit: its partition
alone); instead each partition's entry holds, with its findings, the outcome they were found
with, and the `occupancy` entry holds, per partition under its key, what the simulation needs of
its workloads (model/occupancy.py `Demand`: order, pods, eligible nodes, requests, anti-affinity
domains, the static reasons of the nodes it can never use; exact by construction, since they
depend only on the partition's files and the shared inputs its key covers). A partial run
simulates the capacity over fresh demands for the workloads it decoded and the cached ones for
the others, exactly as a full run does, and compares every clean partition's outcome with the
stored one (engine/run.py `load`, `verify`): a partition whose outcome differs is read and
evaluated again (a second reading, with those partitions taken out of the cache), and cached
inputs that do not decode against this run's nodes make the run a full one. The `occupancy`
entry also holds the last simulation's outcomes under the digest of all its inputs
(`Plan.inputs_key`): a run whose demands are the same takes them without simulating. A run
whose every partition is clean under the key the stored inputs name for it, and that has no
other, knows its inputs are that simulation's (`Plan.known_outcomes`): its own workloads take
their outcomes from it, no cached demand is decoded, and the cached outcomes are compared with
it from the records alone (the storing run verified or evaluated every partition against it).
So does a run whose other partitions are clean so, when the demands it makes of the partitions
it read again encode as the records stored for them and the memo's digest of every demand as
stored (the shared files' made again) holds (`Plan.outcomes_if_same`: an edit of what the
simulation does not read, an image, an environment variable); it stores the inputs again as
they were, under its keys (10k workloads: a workload edit 6,654M -> 6,215M instructions).

So a file whose objects are all of those kinds and all in one namespace belongs to that
namespace's *partition*; every other file (nodes, DaemonSets, ConfigMaps, files mixing kinds or
namespaces, files that did not parse) is *shared*. A namespace is shared as a whole when it has
a DaemonSet (a budget there may cover DaemonSet pods, which the operand rules also read) or when
any of its workloads or budgets sits in a shared file (that file is evaluated on every run, and
what it says may involve the namespace's other objects: a budget covering them, an ignore
annotation on an object of the same identity).

The key of a partition is the digest of the run's context (tool version, arguments, config,
matrix, policies: everything but the manifest files), of every shared file, and of the
partition's own files (a partition is clean when its findings and its simulation inputs are
stored under that key). A run reads (decodes) the shared files and the files of partitions whose
key changed, evaluates every rule on them exactly as a full run would, and takes the findings
of the other partitions from the cache. Any change to a shared file or to the context changes
every key, and the run is a full one, with one exception: a file of Node objects counts by its
view (`node_view`: its trees as read, every position, key and other value, but its string
label values apart) and the values of the label keys the last storing run read
(core/label_reads.py records them as the model and the rules read a node's labels; they are
kept with the simulation's inputs, `Plan.reads`). An edit of a label value no rule read (a
zone no workload selects by, a node's hostname) keeps every key: evaluated on the same values
of the keys they read, the rules read the same keys and find the same (the premise is tested
on every rule case, the examples and a generated fleet, tests/performance/test_node_views.py).
A run that reads a value by any other way than its key (comparing two definitions of a node
whole, a custom policy reading the tree) keys every node file by all of it. The findings of
the rules at `scope: cluster` (`ClusterFindings`) are kept likewise, with the label keys they
were found reading and the base made with them: they point into node files at positions the
view holds, and read labels by key (a label value's validity, which no reading records, is
GPU040's, at `scope: namespace`, found on every run).
What a run takes without evaluating it again (a clean partition, the cluster-wide findings,
the last simulation's outcomes) was found under the keys the plan was made with: a run that
takes any keeps them with what it read (`_reads_now`). Findings are cached after severities
and exemptions were applied, and merged back in the order a full run sorts them (see
tests/performance).
"""

from __future__ import annotations

import marshal
from dataclasses import field
from operator import itemgetter
from typing import Any, NamedTuple

from gpudrv_check.core.records import record
from gpudrv_check.engine.cache.inputs import outside_holds, valid_outside


def partition_kinds() -> frozenset[str]:
    """The kinds whose findings depend only on their own namespace (and the shared objects):
    derived from what the rules declare they read, and at which scope (rules/plan.py)."""
    from gpudrv_check.rules.plan import partition_kinds as declared

    return declared()


#: a namespace holding one of these is shared as a whole
SHARED_NAMESPACE_KINDS = frozenset(("DaemonSet",))
CACHE_KIND = "partitions"
#: in every key's base: entries stored before a change of what they hold or when are not taken
#: (2: a namespace with a workload in a shared file is never stored; the files read outside
#: the key are stored with the entries; 3: node files by their view, `node_view`)
FORMAT = 3
#: per partition, what the shared-capacity simulation needs of its workloads (model/occupancy.py)
OCCUPANCY_KIND = "occupancy"

# per file: ((kind, namespace or None) per object, documents skipped); None when unknown
Summary = tuple[tuple[tuple[str, Any], ...], int]


#: a pseudo-object in the summary of a file with `${…}` placeholders: such a file is shared
#: (every run reads it), since what its placeholders stand for depends on the Flux
#: Kustomizations of the whole repo and the run names them all (model/placeholders.py)
PLACEHOLDERS = ("${}", None)


def summarize(result: Any, placeholders: bool = False) -> Summary:
    """What planning needs of a FileResult, without its trees."""
    objects = tuple((m.kind, m.namespace) for m in result.manifests)
    if placeholders:
        objects += (PLACEHOLDERS,)
    return (objects, len(result.skipped))


def object_count(summary: Summary) -> int:
    """The objects a summarized file holds (its pseudo-entries left out)."""
    return sum(1 for kind, _ in summary[0] if kind != PLACEHOLDERS[0])


def valid_summary(summary: Any) -> bool:
    """Whether a cached value has the shape of a Summary (cache entries are checked, never
    trusted to be of the right type; `marshal` makes builtin values only, so each is checked
    by its exact class: an edit run checks one summary per file of the repo)."""
    if summary.__class__ is not tuple or len(summary) != 2:
        return False
    objects, skipped = summary
    if objects.__class__ is not tuple or skipped.__class__ is not int:
        return False
    for obj in objects:
        if obj.__class__ is not tuple or len(obj) != 2 or obj[0].__class__ is not str:
            return False
    return True


#: what stands for a label's string value in a node file's view: `encode_tree` encodes no
#: value as a 1-tuple (a mapping is a 4-tuple, a sequence a list)
_MASKED = ("",)


def node_view(result: Any) -> tuple[str, tuple] | None:
    """What the partitions' findings may depend on in a file of Node objects, with the values
    of their labels apart: (the digest of everything else, the labels whose value is a
    string, as (keys, values) per object); None for any other file.

    Everything else is the file's trees as read (read/codec.py's encoding: every key and
    value, where each key and item is written, the raw texts of typed scalars) with each such
    label value masked, and the file's problems and skipped documents. A label whose value is
    not a string (a number, a list, null: read as text, reported, or dropped) is not masked.
    A run keys the partitions by the view with only the values of the keys the rules read
    (core/label_reads.py): an edit of a label value nothing reads, in place, keeps every
    partition key (`view_values`)."""
    import hashlib
    import marshal

    from gpudrv_check.core.located import encode_tree

    manifests = result.manifests
    # the objects model/inventory.py reads as nodes (whose labels record what is read)
    if not manifests or any(m.kind != "Node" or m.api_version != "v1" for m in manifests):
        return None
    trees = []
    strings = []
    for m in manifests:
        encoded = encode_tree(m.data)  # new containers: masked in place
        keys: list[str] = []
        values: list[str] = []
        labels = _encoded_at(_encoded_at(encoded, "metadata"), "labels")
        if labels is not None:
            items = labels[0]
            for k, v in items.items():
                if k.__class__ is str and v.__class__ is str:
                    keys.append(k)
                    values.append(v)
                    items[k] = _MASKED
        trees.append((m.doc, m.item, encoded))
        strings.append((tuple(keys), tuple(values)))
    rest = (
        FORMAT,
        trees,
        [f.record() for f in result.problems],
        [(s.rel, s.reason) for s in result.skipped],
    )
    try:
        data = marshal.dumps(rest, 2)  # version 2: no references, the same bytes every run
    except ValueError:  # a value marshal does not take: the file is keyed by its bytes
        return None
    digest = hashlib.sha256()
    digest.update(data)
    return (digest.hexdigest(), tuple(strings))


def _encoded_at(encoded: Any, key: str) -> Any:
    """The encoded mapping at `key` of an encoded mapping (`encode_tree`), or None."""
    if encoded.__class__ is not tuple or len(encoded) != 4:
        return None
    value = encoded[0].get(key)
    return value if value.__class__ is tuple and len(value) == 4 else None


def valid_view(view: Any) -> bool:
    """Whether a cached value has the shape of a `node_view` (checked by exact class; each
    object's keys and values as `view_values` reads them)."""
    if view.__class__ is not tuple or len(view) != 2:
        return False
    rest, strings = view
    return rest.__class__ is str and strings.__class__ is tuple


def view_values(view: tuple[str, tuple], reads: frozenset[str], select: dict) -> list | None:
    """A node file's view with the values of the labels read (`reads`) and no other: (the
    digest of the rest, the values kept per object); None when a cached view does not have
    the shape `node_view` gives. `select`: the memo, for one set of reads, of which values
    each tuple of keys keeps (most nodes are labelled alike)."""
    rest, strings = view
    kept: list = [rest]
    for found in strings:
        if found.__class__ is not tuple or len(found) != 2:
            return None
        keys, values = found
        pick = select.get(keys)
        if pick is None:
            if not _valid_reads(keys):
                return None
            at = [i for i, key in enumerate(keys) if key in reads]
            pick = select[keys] = (len(keys), _picker(at))
        if values.__class__ is not tuple or len(values) != pick[0]:
            return None
        kept.append(pick[1](values))
    return kept


def _picker(at: list[int]) -> Any:
    """The values at these indexes, as a tuple (`itemgetter` gives one value for one index)."""
    if len(at) > 1:
        return itemgetter(*at)
    if not at:
        return lambda values: ()
    index = at[0]
    return lambda values: (values[index],)


class PartitionEntry(NamedTuple):
    """What the cache holds for one namespace: the key it was evaluated under, its findings
    (and suppressed findings) as records (`Finding.record`), after severities and exemptions
    were applied, the shared-capacity outcome of its workloads they were found with
    (`Replicas.outcome` by record key, model/occupancy.py), and, when the run wrote a text
    report, each finding's block of it: (width, texts), for a run at that width to take
    rather than wrap every message again (`Run.text_renderer`)."""

    key: str
    findings: list[Any]
    suppressed: list[Any]
    outcome: dict[str, Any]
    texts: tuple[int, list[str]] | None = None

    @classmethod
    def loaded(cls, value: Any) -> PartitionEntry | None:
        """The entry of a stored value, or None when it has not the shape of one."""
        if not (isinstance(value, tuple) and len(value) == 5):
            return None
        key, findings, suppressed, outcome, texts = value
        if not (
            isinstance(key, str)
            and isinstance(findings, list)
            and isinstance(suppressed, list)
            and isinstance(outcome, dict)
        ):
            return None
        return cls(key, findings, suppressed, outcome, texts if _valid_texts(texts) else None)

    def stored(self) -> tuple[str, list[Any], list[Any], dict[str, Any], Any]:
        """As `marshal` stores it: a plain tuple."""
        return (self.key, self.findings, self.suppressed, self.outcome, self.texts)

    def texts_for(self, width: int) -> list[str] | None:
        """The findings' texts at this width, one per finding, if the entry holds them."""
        texts = self.texts
        if texts is None or texts[0] != width or len(texts[1]) != len(self.findings):
            return None
        return texts[1]

    def validated(self) -> tuple[list, list] | None:
        """The (findings, suppressed) as Findings, or None if they do not validate."""
        from gpudrv_check.core.finding import Finding, texts_kept

        refs: dict[tuple, Any] = {}  # a workload's findings share its ObjectRef
        make = Finding.from_record
        try:
            kept = texts_kept(self.findings)
            found = [make(d, refs, kept) for d in self.findings]
            kept = texts_kept(self.suppressed)
            return (found, [make(d, refs, kept) for d in self.suppressed])
        except ValueError:  # not an entry of ours
            return None


def _valid_texts(texts: Any) -> bool:
    """(width, [text, ...]): checked by exact class, as every cached value is."""
    if texts.__class__ is not tuple or len(texts) != 2:
        return False
    width, listed = texts
    return (
        width.__class__ is int
        and listed.__class__ is list
        and all(text.__class__ is str for text in listed)
    )


#: a stored demand record's place in the simulation's order: its file, document and item
_ORDER = itemgetter(0, 1, 2)


def _restored(tables: Any, resolved: list[tuple]) -> list[tuple] | None:
    """Resolved records (model/occupancy.py `resolved_records`) indexed into stored tables
    again, as the run that stored them encoded them; None when an entry is not in them."""
    out = []
    try:
        index = [{entry: at for at, entry in enumerate(table)} for table in tables]
        for r in resolved:
            domains = -1 if r[9] is None else index[2][r[9]]
            out.append((*r[:7], index[0][r[7]], index[1][r[8]], domains, *r[10:]))
    except (KeyError, TypeError, IndexError):  # an entry that is no key: not ours
        return None
    return out


def _namespace(kind: str, namespace: Any) -> str:
    return namespace if isinstance(namespace, str) and namespace else "default"


@record
class Plan:
    """Which files a run decodes, and the cached findings of the partitions it does not."""

    cache: Any
    name: str
    partition_of: dict[str, str] = field(default_factory=dict)  # rel -> namespace
    keys: dict[str, str] = field(default_factory=dict)  # namespace -> key of this run
    stored: dict[str, PartitionEntry] = field(default_factory=dict)  # namespace -> cached entry
    clean: set[str] = field(default_factory=set)  # namespaces taken from the cache
    findings: dict[str, tuple[list, list]] = field(default_factory=dict)  # of the clean ones
    #: the stored simulation inputs (model/occupancy.py `InputTables`): the tables, and the
    #: records of each clean namespace
    tables: Any = None
    inputs: dict[str, tuple] = field(default_factory=dict)
    #: the stored simulation inputs of every namespace, as loaded: namespace -> (its key then,
    #: its records), checked as they are read (`outcomes_if_same`)
    stored_inputs: dict[Any, Any] = field(default_factory=dict)
    #: the view base the stored inputs were taken under (`_take_clean`): a run whose labels
    #: read change its base stores the simulation's memo again (`_store_inputs`)
    taken_base: str = ""
    #: namespaces the cached inputs name that this run has not: their entries go (`merge`)
    gone: list[str] = field(default_factory=list)
    #: the last simulation's digest of its inputs and outcomes (model/occupancy.py
    #: `memo_value`), stored with the inputs; None when there is none
    memo: Any = None
    #: the source the run reads (its `state_of` tells whether a file read outside the key is
    #: as a stored run found it: `_take_clean`, `ClusterFindings`); None: not known
    source: Any = None
    #: the label keys the keys were made with (stored with the simulation's inputs, the
    #: `occupancy` entry); None: every node file by its bytes
    reads: tuple[str, ...] | None = None
    #: the digest of the run's context and shared files, each node file by its view of the
    #: label values read (`view_values`): the base of every partition key, of the simulation's
    #: inputs (what the nodes it fills come from) and of the cluster-wide findings
    view_base: str = ""
    #: what the keys are made of: the context, the shared files (path, how read, and for a
    #: node file (its digest, its `node_view`), else None), each partition's files (`rekey`
    #: makes them again)
    context: str = ""
    #: a cluster rule's findings were taken from the cache (`ClusterFindings.take`), found
    #: under these label keys (None: every value)
    cluster_taken: bool = False
    cluster_reads: tuple[str, ...] | None = None
    #: every partition is clean, under the key the stored simulation inputs name for it, and
    #: those inputs name no other namespace (`known_outcomes`)
    same_inputs: bool = False
    shared: list[tuple[str, str, Any]] = field(default_factory=list)
    members: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    #: the last `inputs_key` made: (view base, tables, records, key)
    last_inputs_key: tuple | None = None

    @property
    def partial(self) -> bool:
        return bool(self.clean)

    def known_outcomes(self) -> dict[str, Any] | None:
        """The last simulation's outcomes by workload (its `memo_value`) when this run's
        simulation inputs are known to be that simulation's: every partition is clean, under
        the key the run that stored the inputs gave it, and no other (each key holds the base:
        the context and the shared files, the nodes by their views and the values of the label
        keys read; and the partition's files: what its demands come from). That run verified
        or evaluated every partition against its own simulation, so their cached outcomes are
        these (`verify` still compares them, from the records alone). None otherwise."""
        if not self.same_inputs:
            return None
        memo = self.memo
        if not (isinstance(memo, tuple) and len(memo) == 2 and isinstance(memo[1], dict)):
            return None
        return memo[1]

    def outcomes_if_same(self, demands: list[Any]) -> dict[str, Any] | None:
        """The last simulation's outcomes by workload when this partial run's simulation
        inputs are known to be that simulation's although it read some partitions again:
        every other partition is clean (under the key the stored inputs name for it, which
        holds the base: the context, the shared files, the nodes), the stored inputs name
        exactly this run's namespaces, and the demands this run made of each partition it read
        (`demands`: the model's, in their order) encode as the records stored for it (an edit
        of what the simulation does not read: an image, an environment variable, a label no
        selector reads). The demands of shared files are made of the shared files and the
        nodes alone, in every key. None otherwise: the cached demands are decoded and the
        simulation's inputs compared whole (`Occupancy._replay`)."""
        from gpudrv_check.engine.cache.store import digest
        from gpudrv_check.model.occupancy import InputTables, resolved_records

        memo, stored = self.memo, self.stored_inputs
        if not self.clean or not (
            isinstance(memo, tuple) and len(memo) == 2 and isinstance(memo[1], dict)
        ):
            return None
        if resolved_records(self.tables, ()) is None:
            return None  # tables not of the shape stored
        if not isinstance(stored, dict) or stored.keys() != self.keys.keys():
            return None
        again: dict[str, list[Any]] = {ns: [] for ns in self.keys if ns not in self.clean}
        of_shared: list[Any] = []  # the shared files' demands
        for demand in demands:
            ns = self.partition_of.get(demand.order[0])
            listed = of_shared if ns is None else again.get(ns)
            if listed is None:
                return None  # a clean partition's workload: never read (not expected)
            listed.append(demand)
        tables = InputTables()
        fresh = {ns: [tables.record(d) for d in listed] for ns, listed in again.items()}
        shared = [tables.record(d) for d in of_shared]
        now = tables.stored()
        for ns, records in fresh.items():
            entry = stored[ns]
            if not (isinstance(entry, tuple) and len(entry) == 2):
                return None
            before = resolved_records(self.tables, entry[1])
            if before is None or before != resolved_records(now, records):
                return None
        # the memo's digest is of every demand as that simulation stored it, the shared
        # files' too, under this base (`inputs_key`): checked, so that a memo that does not
        # fit its inputs (a damaged entry) is never taken
        every = _restored(self.tables, resolved_records(now, shared) or [])
        if every is None:
            return None
        for entry in stored.values():
            every.extend(entry[1])
        try:
            every.sort(key=_ORDER)
        except (TypeError, LookupError):  # a record not of the shape stored: not ours
            return None
        if digest(self.view_base, self.tables, every) != memo[0]:
            return None
        return memo[1]

    def decode(self, rel: str) -> bool:
        """Whether this run needs the file's objects."""
        return self.partition_of.get(rel) not in self.clean

    def inputs_key(self, tables: Any, records: list[tuple]) -> str:
        """The key of a simulation's inputs (model/occupancy.py `InputsKey`): its demands as
        stored, in order, and this run's base (context and shared files: the nodes)."""
        from gpudrv_check.engine.cache.store import digest

        # asked twice of one simulation (its replay, then its memo when stored): its records
        # digested once while the view base stays (10k workloads: 8,000 records, 1 % of an
        # edit run)
        last = self.last_inputs_key
        if (
            last is not None
            and last[0] == self.view_base
            and last[1] is tables
            and last[2] is records
        ):
            return last[3]
        key = digest(self.view_base, tables.stored(), records)
        self.last_inputs_key = (self.view_base, tables, records, key)
        return key

    def rekey(self, reads: tuple[str, ...] | None) -> None:
        """The view base and every partition key, made with these label keys."""
        from gpudrv_check.engine.cache.store import digest

        self.reads = reads
        self.view_base = self.base_for(reads)
        self.keys = {ns: digest(self.view_base, ns, files) for ns, files in self.members.items()}

    def base_for(self, reads: tuple[str, ...] | None) -> str:
        """The view base made with these label keys (None: every node file by its bytes)."""
        from gpudrv_check.engine.cache.store import digest

        read = frozenset(reads) if reads is not None else None
        select: dict = {}
        listed = []
        for rel, how, view in self.shared:
            seen = None
            if view is not None and read is not None:
                seen = view_values(view[1], read, select)
            # how it was read without the digest of its bytes, when the view stands for them
            listed.append((rel, how) if seen is None else (rel, how[len(view[0]) :], seen))
        # marshal version 2 (no references: the same bytes for the same values every run) of
        # builtin values only: strings, tuples, lists, None
        return digest(marshal.dumps((FORMAT, "views", self.context, reads, listed), 2))

    def cached_inputs(self) -> tuple[Any, list[tuple]]:
        """(tables, records) of the workloads of the clean partitions, for `Occupancy`."""
        records = [r for ns in sorted(self.clean) for r in self.inputs[ns]]
        return (self.tables, records)


def plan(
    cache: Any,
    name: str,
    context: str,
    files: list[tuple[str, str, Summary | None, Any]],
    redo: frozenset[str] | None = frozenset(),
    source: Any = None,
) -> Plan:
    """Partition the files (path, how it was read, summary, view; summary None: shared; view:
    (digest, `node_view`) of a node file read as that digest, else None) and find which
    partitions the cache still answers for (`redo`: namespaces it does not answer for, None:
    none). "How it was read" is the content digest with anything else that changes what the
    file yields (Helm template, Kustomize patch, error)."""

    # a file of one namespace's workloads and budgets only: a candidate for that partition
    kinds = partition_kinds()
    candidate = {rel: _single_namespace(summary, kinds) for rel, _, summary, _ in files}
    # a namespace is shared as a whole when it has a DaemonSet, or when any of its workloads
    # or budgets sits in a shared file: that file is evaluated every run, and its findings may
    # involve the namespace's other objects (a budget covering them, an annotation on an object
    # of the same identity), so they must all be read with it
    shared_namespaces: set[str] = set()
    for rel, _, summary, _ in files:
        for kind, ns in summary[0] if summary is not None else ():
            if kind in SHARED_NAMESPACE_KINDS or (kind in kinds and candidate[rel] is None):
                shared_namespaces.add(_namespace(kind, ns))
    out = Plan(cache, name, source=source, context=context)
    members = out.members
    for rel, file_digest, _, view in files:
        namespace = candidate[rel]
        if namespace is None or namespace in shared_namespaces:
            out.shared.append((rel, file_digest, view))
        else:
            out.partition_of[rel] = namespace
            members.setdefault(namespace, []).append((rel, file_digest))
    # the node files by their views of the label values the last run read (kept with the
    # simulation's inputs)
    inputs = None
    if redo is not None:  # else none is taken: keyed by the bytes, then by what it reads
        inputs = cache.load(OCCUPANCY_KIND, name, "", valid=_valid_inputs)
    out.rekey(inputs[4] if inputs is not None else None)
    if redo is not None:
        _take_clean(out, redo, inputs)
    return out


def entry_name(name: str, namespace: str) -> str:
    """The cache name of one namespace's PartitionEntry: an entry of its own, stored under
    the partition's key, so an edit run writes the entries of the namespaces it evaluated
    and no other (one entry for all was 58 MB at 40k workloads, rewritten for every edit)."""
    return f"{name}\0{namespace}"


def store_entry(cache: Any, name: str, namespace: str, entry: PartitionEntry) -> None:
    cache.store(CACHE_KIND, entry_name(name, namespace), entry.key, entry.stored())


def _take_clean(out: Plan, redo: frozenset[str], inputs: Any) -> None:
    """The partitions whose findings and simulation inputs the cache holds under this run's
    key (a partition without its inputs is evaluated again); `inputs`: the stored ones."""
    if inputs is None or not outside_holds(inputs[3], out.source):
        return  # none stored, or a file read outside the key changed since (a `Kustomization`)
    out.tables, by_namespace, out.memo, _, _ = inputs
    out.stored_inputs, out.taken_base = by_namespace, out.view_base
    # the namespaces of the run that stored these inputs which this run has no longer (a
    # preview namespace deleted, say): their entries are dropped when this run stores its own
    out.gone = sorted(ns for ns in by_namespace if isinstance(ns, str) and ns not in out.keys)
    for ns, key in out.keys.items():
        records = by_namespace.get(ns)
        if ns in redo or records is None:
            continue
        if not (isinstance(records, tuple) and len(records) == 2 and records[0] == key):
            continue
        # stored under another key (the namespace changed since): a miss from its first bytes
        entry = PartitionEntry.loaded(out.cache.load(CACHE_KIND, entry_name(out.name, ns), key))
        if entry is None or entry.key != key:
            continue
        findings = entry.validated()
        if findings is not None and isinstance(records[1], tuple):
            out.stored[ns] = entry
            out.findings[ns] = findings
            out.inputs[ns] = records[1]
            out.clean.add(ns)
    # (a clean namespace's stored inputs carry its key, checked above)
    out.same_inputs = bool(out.keys) and out.clean == out.keys.keys() == by_namespace.keys()


def _valid_inputs(value: Any) -> bool:
    """The shape of the stored inputs: (tables, {namespace: (key, records)}, memo, the files
    read outside the key, the label keys the keys were made with); the records are checked
    as they are decoded (model/occupancy.py `decode_inputs`), the memo as it is replayed
    (`Occupancy._replay`)."""
    return (
        isinstance(value, tuple)
        and len(value) == 5
        and isinstance(value[1], dict)
        and valid_outside(value[3])
        and (value[4] is None or _valid_reads(value[4]))
    )


def _valid_reads(reads: Any) -> bool:
    """A tuple of label keys (checked by exact class, as every cached value is)."""
    return reads.__class__ is tuple and all(key.__class__ is str for key in reads)


def _single_namespace(summary: Summary | None, kinds: frozenset[str]) -> str | None:
    """The namespace of a file whose objects are all workloads or budgets (`kinds`: the
    partition kinds) of one namespace."""
    if summary is None or not summary[0]:
        return None
    namespaces = set()
    for kind, ns in summary[0]:
        if kind not in kinds:
            return None
        namespaces.add(_namespace(kind, ns))
    return namespaces.pop() if len(namespaces) == 1 else None


def verify(run: Any) -> frozenset[str] | None:
    """After a partial run's model was built: the clean partitions whose workloads' capacity
    outcome is not the one their cached findings were found with (the run must evaluate them
    again), or None when the cached inputs are unusable (a full run)."""
    from gpudrv_check.model.occupancy import InputsError

    plan_ = run.content.plan
    for ns in plan_.clean:
        if not all(
            isinstance(r, tuple)
            and r
            and isinstance(r[0], str)
            and plan_.partition_of.get(r[0]) == ns
            for r in plan_.inputs[ns]
        ):
            return None  # a record of a file not in its partition
    known = plan_.known_outcomes()
    try:
        # the model's own demands take their known outcomes when the inputs are known to be
        # the last simulation's: every partition clean, or its demands as stored
        occupancy = run.repo.occupancy
        if known is None and occupancy.same_as_stored:
            known = plan_.memo[1]
        if known is not None:
            outcomes = _known_by_namespace(known, plan_.partition_of)
        else:
            outcomes = _outcomes(run, plan_.clean)
    except InputsError:
        return None
    return frozenset(ns for ns in plan_.clean if outcomes.get(ns, {}) != plan_.stored[ns].outcome)


def _known_by_namespace(
    known: dict[str, Any], partition_of: dict[str, str]
) -> dict[str, dict[str, Any]]:
    """The last simulation's outcomes per partition, from the records alone: a workload's
    key starts with its file (model/occupancy.py `record_key`)."""
    out: dict[str, dict[str, Any]] = {}
    for key, outcome in known.items():
        ns = partition_of.get(key.split("\0", 1)[0]) if isinstance(key, str) else None
        if ns is not None:
            out.setdefault(ns, {})[key] = outcome
    return out


def _outcomes(run: Any, namespaces: set[str]) -> dict[str, dict[str, Any]]:
    """Per namespace of these, its workloads' `Replicas.outcome` by record key."""
    occupancy = run.repo.occupancy
    partition_of = run.content.plan.partition_of
    out: dict[str, dict[str, Any]] = {}
    for demand in occupancy.demands:
        ns = partition_of.get(demand.order[0])
        if ns in namespaces:
            out.setdefault(ns, {})[demand.key] = occupancy.outcomes[demand.key].outcome
    return out


def merge(run: Any) -> None:
    """After a run's evaluation: store the partitions it evaluated (with their workloads'
    capacity outcome and simulation inputs), add the cached findings of the others, and sort
    as a full run does."""
    from gpudrv_check.core.finding import Finding

    plan_ = run.content.plan
    if plan_ is None:
        return
    evaluated: dict[str, tuple[list[Any], list[Any]]] = {
        ns: ([], []) for ns in plan_.keys if ns not in plan_.clean
    }
    # the findings' texts of the text report, kept with them from the first run that takes a
    # partition from the cache on: a run that takes none (a cold one) renders its report as
    # it goes, never holding every finding's text with the report (its peak of memory)
    renderer = run.text_renderer if plan_.clean else None
    texts: dict[str, list[str]] = {ns: [] for ns in evaluated} if renderer is not None else {}
    for index, findings in ((0, run.findings), (1, run.suppressed)):
        for finding in findings:
            ns = plan_.partition_of.get(finding.location.file)
            if ns in evaluated:
                # the finding itself: made a record as its entry is stored, one namespace's
                # at a time (a cold 40k run held 52,000 records at its peak of memory)
                evaluated[ns][index].append(finding)
                if renderer is not None and index == 0:
                    # rendered now, for the cache, and taken by this run's report
                    finding.rendered = (renderer[0], renderer[1](finding))
                    texts[ns].append(finding.rendered[1])
    outside = run_outside(run)
    if (evaluated or plan_.gone) and not run.content.unsettled and outside is not None:
        # what is stored reads the labels too (the simulation's demands: eligible nodes,
        # anti-affinity domains): made before the label keys this run read are taken
        outcomes = _outcomes(run, set(evaluated))
        if not run.repo.occupancy.same_as_stored:
            run.repo.occupancy.encoded()
        reads = _reads_now(run, plan_)
        if reads != plan_.reads:
            # stored under keys made with every label value this run read
            plan_.rekey(reads)
        sharing = _sharing_workloads(run, plan_)
        for ns, (found, suppressed) in evaluated.items():
            if ns in sharing:
                continue  # never taken from the cache: see `_sharing_workloads`
            held = (renderer[0], texts[ns]) if renderer is not None else None
            records = [f.record() for f in found], [f.record() for f in suppressed]
            entry = PartitionEntry(plan_.keys[ns], *records, outcomes.get(ns, {}), held)
            store_entry(plan_.cache, plan_.name, ns, entry)
            del entry, records
        _store_inputs(run, plan_, outside)
        for ns in plan_.gone:
            plan_.cache.drop(CACHE_KIND, entry_name(plan_.name, ns))
    if plan_.clean:
        for ns in sorted(plan_.clean):
            found, suppressed = plan_.findings[ns]
            if renderer is not None:
                _texts_of_clean(run, plan_, ns, found, renderer)
            run.findings.extend(found)
            run.suppressed.extend(suppressed)
        run.findings.sort(key=Finding.sort_key)
        run.suppressed.sort(key=Finding.sort_key)


def _reads_now(run: Any, plan_: Plan) -> tuple[str, ...] | None:
    """The label keys this run's stored entries are keyed with: those whose values the run
    read (core/label_reads.py), with those the plan's keys were made with when the run took
    anything made under them without making it again (a clean partition's findings, a cluster
    rule's, the last simulation's outcomes replayed: what they read is among those); None,
    every value, when
    the run read them all, or a custom policy may read a node's tree directly."""
    from gpudrv_check.core.label_reads import snapshot

    read = snapshot()
    if read is None or getattr(run, "custom_policies", None):
        return None
    # a capacity model the run never built replayed nothing (asking would build it)
    occupancy = vars(run.repo).get("occupancy")
    replayed = getattr(occupancy, "replayed", False)
    took = []
    if plan_.clean or replayed:
        took.append(plan_.reads)
    if plan_.cluster_taken:
        took.append(plan_.cluster_reads)
    for reads in took:
        if reads is None:
            return None
        read = tuple(sorted(set(read) | set(reads)))
    return read


#: the name, among a repo's `partitions` entries, of its cluster-wide findings (no namespace
#: holds a NUL, so no partition entry has it)
CLUSTER_ENTRY = "\0cluster"
#: its key: the base it was found under is in the entry, with the label keys it was made with
CLUSTER_KEY = f"cluster {FORMAT}"


class ClusterFindings:
    """The findings of the rules at `scope: cluster`, kept with the label keys the storing run
    read, under the digest of the run's context and shared files made with those keys, each
    node file by its view of those label values (`Plan.base_for`, as the partitions' base: the
    findings point into node files at positions the view holds, and what they say of labels
    is read by key). The entry holds its own keys (not the partitions', kept with the
    simulation's inputs): a repo without partitions stores none of those.

    Those rules read no kind a partition holds (`partition_kinds` is what they do not read), so
    what they find is a function of the context and the shared files: a run whose base is the
    one they were found under (an edit of a namespace's workloads or budgets) takes them
    instead of evaluating the rules again. A rule is kept only when every finding it made lies
    in a shared file: one about a file of a partition (none is known) would be that file's.
    Stored as found, before severities and exemptions, which the run then applies to them as
    to every other finding."""

    def __init__(self, plan_: Plan, rules: frozenset[str]) -> None:
        self.plan = plan_
        self.rules = rules  # the rules at cluster scope
        self.found: dict[str, list[Any]] = {}  # rule -> records, of the rules evaluated now
        self.taken: dict[str, list[Any]] = {}
        self.stale = False  # a rule was evaluated that the entry did not hold
        self.reads: tuple[str, ...] | None = None  # what the entry taken was found reading
        stored = plan_.cache.load(CACHE_KIND, entry_name(plan_.name, CLUSTER_ENTRY), CLUSTER_KEY)
        if (
            isinstance(stored, tuple)
            and len(stored) == 4
            and (stored[0] is None or _valid_reads(stored[0]))
            and stored[1] == plan_.base_for(stored[0])
            and isinstance(stored[2], dict)
            and valid_outside(stored[3])
            and outside_holds(stored[3], plan_.source)
        ):
            self.reads, _, self.taken, _ = stored

    def take(self, rule: str) -> list[Any] | None:
        """The rule's findings under this base, or None (evaluate it)."""
        from gpudrv_check.core.finding import Finding

        if rule not in self.rules:
            return None
        records = self.taken.get(rule)
        if isinstance(records, list):
            try:
                found = [Finding.from_record(r) for r in records]
            except ValueError:  # not an entry of ours
                found = None
            if found is not None:
                self.found[rule] = records
                # found reading the keys the entry names: kept with what this run reads
                self.plan.cluster_taken = True
                self.plan.cluster_reads = self.reads
                return found
        self.stale = True
        return None

    def evaluated(self, rule: str, findings: list[Any]) -> None:
        """What a cluster rule found now: kept if every finding lies in a shared file."""
        if rule not in self.rules:
            return
        partition_of = self.plan.partition_of
        if any(f.location.file in partition_of for f in findings):
            return
        self.found[rule] = [f.record() for f in findings]

    def store(self, outside: dict[str, str] | None, run: Any) -> None:
        """Store the entry when a rule was evaluated now (else it holds what is there), with
        what the run found at the files it read outside the key (None: not known, not stored),
        the label keys the run read (with those of the findings it took) and the base made
        with them."""
        if self.stale and outside is not None:
            plan_ = self.plan
            reads = _reads_now(run, plan_)
            value = (reads, plan_.base_for(reads), self.found, outside)
            name = entry_name(plan_.name, CLUSTER_ENTRY)
            plan_.cache.store(CACHE_KIND, name, CLUSTER_KEY, value)


def _texts_of_clean(
    run: Any, plan_: Plan, ns: str, found: list[Any], renderer: tuple[int, Any]
) -> None:
    """The texts of a clean partition's findings: those its entry holds at this width, or
    rendered now and stored with the entry (its findings, as they were, under its key)."""
    width, render = renderer
    stored = plan_.stored[ns]
    kept = stored.texts_for(width)
    if kept is None:
        kept = [render(finding) for finding in found]
        if not run.content.unsettled:
            store_entry(plan_.cache, plan_.name, ns, stored._replace(texts=(width, kept)))
    for finding, text in zip(found, kept, strict=True):
        finding.rendered = (width, text)


def run_outside(run: Any) -> dict[str, str] | None:
    """What the run found at the files it read or looked for outside the key (the source's
    `outside`, read/tree.py `WorkingTree.watch`), or None when its source does not record
    them (then nothing is stored: what the entries hold could depend on such a file)."""
    outside = getattr(run.source, "outside", None)
    return dict(outside) if isinstance(outside, dict) else None


def _sharing_workloads(run: Any, plan_: Plan) -> set[str]:
    """The namespaces with a workload in a shared file: a kind of the workload table or of the
    config's `workloads:` (PyTorchJob, RayCluster...), which is no partitioned kind (rules/
    plan.py `partition_kinds`), so its file is shared and evaluated on every run. What is
    found about it reads its namespace's budgets (GPU020, GPU024), which may sit in the
    partition's files: the partition is evaluated on every run too, never stored. Which
    objects are workloads is the model's (group and kind, the config's table), known once the
    shared files are read; those files and the config are in every partition key, so a key
    never names a partition a run with the same key found such a workload in."""
    partition_of = plan_.partition_of
    return {
        _namespace(w.kind, w.manifest.namespace)
        for w in run.repo.workloads
        if w.manifest.file not in partition_of
    }


def _store_inputs(run: Any, plan_: Plan, outside: dict[str, str]) -> None:
    """Every partition's simulation inputs under its key (the cached ones encoded again: one
    set of tables for all), and the simulation's outcomes under the digest of all its inputs
    (model/occupancy.py `memo_value`: a later run of the same demands takes them)."""
    occupancy = run.repo.occupancy
    if occupancy.same_as_stored:
        # the demands are those stored (`Plan.outcomes_if_same`): stored again as they were,
        # under this run's keys, none decoded; the memo holds while the base it digests does
        # (the label keys read unchanged), else the next run simulates
        memo = plan_.memo if plan_.view_base == plan_.taken_base else None
        value = {ns: (key, plan_.stored_inputs[ns][1]) for ns, key in plan_.keys.items()}
        stored = (plan_.tables, value, memo, outside, plan_.reads)
        plan_.cache.store(OCCUPANCY_KIND, plan_.name, "", stored)
        return
    tables, encoded = occupancy.encoded()
    records: dict[str, list[tuple]] = {ns: [] for ns in plan_.keys}
    for demand, record_ in zip(occupancy.demands, encoded, strict=True):
        ns = plan_.partition_of.get(demand.order[0])
        if ns is not None:
            records[ns].append(record_)
    value = {ns: (plan_.keys[ns], tuple(listed)) for ns, listed in records.items()}
    memo = occupancy.memo_value(plan_.inputs_key)
    stored = (tables.stored(), value, memo, outside, plan_.reads)
    plan_.cache.store(OCCUPANCY_KIND, plan_.name, "", stored)
