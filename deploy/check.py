"""Validates every deploy file (run by scripts/deploy-check.sh).

- Each SpinApp in deploy/kubernetes/ against the SpinKube operator's CRD
  schema (deploy/kubernetes/crd/), strictly: a field the schema does not
  name is an error, as with `kubectl apply --validate=strict`.
- Every other Kubernetes object against the Kubernetes API's own schema
  (kubernetes-validate), strictly.
- Across files: each variable a SpinApp binds is one its manifest declares,
  and a required one is bound; each Secret key referenced is one that
  deploy/kubernetes/create-secrets.sh creates; a split SpinApp runs exactly
  its manifest's component; the runtime configuration Secret is made from
  deploy/runtime-config/libsql.toml, which maps every SQLite label the
  components use.
- No usable secret is shipped: no Secret object under deploy/kubernetes/
  (create-secrets.sh makes them from random values); every pod a manifest
  here defines runs as non-root on a read-only root filesystem without a
  service account token.
- Behind the front proxy (deploy/kubernetes/front-proxy/): a SpinApp with
  `admission = proxy` trusts the proxy's stamp, and the proxy's ConfigMap
  names deploy/haproxy/'s own files.
- Each runtime configuration under deploy/runtime-config/ and the root
  runtime-config.toml parses and maps every label.

Exit status 0 only when everything holds; each problem is one line.
"""

import copy
import pathlib
import re
import sys
import tomllib

import jsonschema
import kubernetes_validate
import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
KUBE = ROOT / "deploy" / "kubernetes"
K8S_VERSION = "1.31.0"
LABELS = {"identity", "community", "billing"}
# The variants beside the base manifests: on PostgreSQL, behind a front proxy.
VARIANTS = ["postgres", "front-proxy"]
HAPROXY = ROOT / "deploy" / "haproxy"
problems: list[str] = []


def problem(where: str, what: str) -> None:
    problems.append(f"{where}: {what}")


def strict(schema):
    """The schema with unknown properties refused wherever it lists them."""
    schema = copy.deepcopy(schema)

    def walk(node):
        if isinstance(node, dict):
            if "properties" in node and "additionalProperties" not in node:
                node["additionalProperties"] = False
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return schema


def spinapp_schema():
    crd = yaml.safe_load((KUBE / "crd" / "core.spinkube.dev_spinapps.yaml").read_text())
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1")
    schema = strict(version["schema"]["openAPIV3Schema"])
    # apiVersion/kind/metadata are the API server's; the CRD leaves them open.
    schema["properties"]["metadata"] = {"type": "object"}
    return schema


def manifest_of(app: dict) -> pathlib.Path:
    components = app["spec"].get("components")
    if components:
        return ROOT / "deploy" / "split" / components[0] / "spin.toml"
    return ROOT / "spin.toml"


def check_variables(where: str, app: dict, secrets: dict) -> None:
    manifest = tomllib.loads(manifest_of(app).read_text())
    declared = manifest.get("variables", {})
    bound = set()
    for var in app["spec"].get("variables", []):
        name = var["name"]
        bound.add(name)
        if name not in declared:
            problem(where, f"variable {name} is not declared in {manifest_of(app).relative_to(ROOT)}")
        ref = var.get("valueFrom", {}).get("secretKeyRef")
        if ref and ref.get("key") not in secrets.get(ref.get("name"), {}):
            problem(where, f"variable {name} reads {ref.get('name')}/{ref.get('key')}, which no Secret here has")
    for name, decl in declared.items():
        if decl.get("required") and name not in bound:
            problem(where, f"required variable {name} is not bound")
    components = app["spec"].get("components")
    if components:
        own = set(manifest.get("component", {}))
        if set(components) != own:
            problem(where, f"components {components} are not its manifest's {sorted(own)}")


def labels_used(manifest: pathlib.Path) -> set:
    components = tomllib.loads(manifest.read_text()).get("component", {})
    return {label for c in components.values() for label in c.get("sqlite_databases", [])}


def check_runtime_config(where: str, text: str, needed: set) -> None:
    try:
        config = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        problem(where, f"not TOML: {e}")
        return
    mapped = set(config.get("sqlite_database", {}))
    if not needed <= mapped:
        problem(where, f"labels {sorted(needed - mapped)} are not mapped")
    for label, store in config.get("key_value_store", {}).items():
        kind = store.get("type")
        keys = {"spin": {"type", "path"}, "redis": {"type", "url"}}.get(kind)
        if keys is None:
            problem(where, f"key-value store {label}: unknown type {kind!r}")
        elif set(store) - keys or (kind == "redis" and "url" not in store):
            problem(where, f"key-value store {label}: a {kind} store takes {sorted(keys)}, not {sorted(store)}")
    if "default" not in config.get("key_value_store", {}):
        problem(where, "the failure memory's key-value store `default` is not mapped")
    for label, db in config.get("sqlite_database", {}).items():
        kind = db.get("type")
        keys = {"spin": {"type", "path"}, "libsql": {"type", "url", "token"}}.get(kind)
        if keys is None:
            problem(where, f"{label}: unknown type {kind!r}")
        elif set(db) - keys or (kind == "libsql" and not {"url", "token"} <= set(db)):
            problem(where, f"{label}: a {kind} database takes {sorted(keys)}, not {sorted(db)}")


def created_secrets() -> dict:
    """The Secrets create-secrets.sh makes, by name, with their keys."""
    script = (KUBE / "create-secrets.sh").read_text()
    made: dict = {}
    for name, args in re.findall(r"create secret generic (\S+)((?:[^\n]*\\\n)*[^\n]*)", script):
        made[name] = {key: "" for key in re.findall(r"--from-(?:literal|file)=([\w.-]+)=", args)}
    for config in ["libsql.toml", "postgres.toml"]:
        if f"deploy/runtime-config/{config}" not in script:
            problem("deploy/kubernetes/create-secrets.sh", f"does not make the runtime configuration from {config}")
    return made


def check_pod(where: str, pod: dict) -> None:
    """A pod that runs as nobody in particular, reads only, and holds no token."""
    if pod.get("automountServiceAccountToken") is not False:
        problem(where, "automountServiceAccountToken is not false")
    if not pod.get("securityContext", {}).get("runAsNonRoot"):
        problem(where, "the pod does not run as non-root")
    for container in pod.get("containers", []):
        context = container.get("securityContext", {})
        if not context.get("readOnlyRootFilesystem") or context.get("allowPrivilegeEscalation", True):
            problem(where, f"container {container.get('name')}: writable root or privilege escalation")


def behind_proxy(doc: dict) -> dict | None:
    """A SpinApp's plain variables when its admission is the front proxy's."""
    if doc.get("kind") != "SpinApp":
        return None
    values = {v.get("name"): v.get("value") for v in doc["spec"].get("variables", [])}
    return values if values.get("admission") == "proxy" else None


def check_front_proxy(where: str, doc: dict) -> None:
    """A SpinApp behind the proxy trusts its stamp; the proxy's ConfigMap
    is made of deploy/haproxy/'s own files."""
    if doc.get("kind") == "SpinApp":
        values = behind_proxy(doc)
        if values is not None and values.get("trust_request_start") != "on":
            problem(where, "admission = proxy without trust_request_start = on: time queued would not count")
        return
    pod = doc.get("spec", {}).get("template", {}).get("spec", {})
    for volume in pod.get("volumes", []):
        config = volume.get("configMap", {})
        if config.get("name") != "meridian-front-proxy":
            continue
        for item in config.get("items", []):
            if not (HAPROXY / item.get("key", "")).is_file():
                problem(where, f"the proxy's ConfigMap key {item.get('key')} is no file of deploy/haproxy/")


def selects(selector: dict, labels: dict) -> bool:
    """Whether a podSelector's matchLabels select pods with `labels`."""
    wanted = selector.get("matchLabels", {})
    return bool(wanted) and all(labels.get(k) == v for k, v in wanted.items())


def check_proxy_only(documents: list) -> None:
    """A SpinApp whose admission is the proxy's is reachable only through
    the proxy: a NetworkPolicy selects its pods and admits nothing but the
    proxy's pods and the admin's jobs (the relay, the migrate call); and
    HAProxy bounds slow request heads."""
    policies = [d for _, d in documents if d.get("kind") == "NetworkPolicy"]
    proxy_labels = {"app.kubernetes.io/name": "meridian-front-proxy"}
    admin_callers = [{"app.kubernetes.io/name": name} for name in ("meridian-outbox-relay", "meridian-migrate")]
    behind = False
    for where, doc in documents:
        if behind_proxy(doc) is None:
            continue
        behind = True
        pods = dict(doc["spec"].get("podLabels", {}))
        pods["core.spinkube.dev/app-name"] = doc["metadata"]["name"]
        covering = [p for p in policies if selects(p["spec"].get("podSelector", {}), pods)
                    and "Ingress" in p["spec"].get("policyTypes", [])]
        if not covering:
            problem(where, "admission = proxy, but no NetworkPolicy keeps clients from its pods past the proxy")
        for policy in covering:
            for rule in policy["spec"].get("ingress", []):
                sources = rule.get("from", [])
                if not sources:
                    problem(where, f"NetworkPolicy {policy['metadata']['name']} admits any source")
                for source in sources:
                    selector = source.get("podSelector")
                    if selector is None or set(source) != {"podSelector"} or not (
                        selects(selector, proxy_labels) or any(selects(selector, c) for c in admin_callers)
                    ):
                        problem(where, f"NetworkPolicy {policy['metadata']['name']} admits {source}, not only the proxy")
    if behind:
        config = (HAPROXY / "haproxy.cfg").read_text()
        lines = [line.split("#")[0].split() for line in config.splitlines()]
        if not any(words[:2] == ["timeout", "http-request"] for words in lines):
            problem("deploy/haproxy/haproxy.cfg", "no `timeout http-request`: slow request heads can hold every connection")


def main() -> int:
    schema = spinapp_schema()
    documents = []
    for path in [*sorted(KUBE.glob("*.yaml")), *(p for d in VARIANTS for p in sorted((KUBE / d).glob("*.yaml")))]:
        for i, doc in enumerate(yaml.safe_load_all(path.read_text())):
            if doc is not None:
                documents.append((f"{path.relative_to(ROOT)}#{i}", doc))
    if not documents:
        problem("deploy/kubernetes", "no manifests")
    for where, doc in documents:
        check_front_proxy(where, doc)
        if doc.get("kind") == "Secret":
            problem(where, "a Secret with values is shipped: create-secrets.sh makes them")
    check_proxy_only(documents)
    secrets = created_secrets()
    spinapps = 0
    for where, doc in documents:
        if doc.get("kind") == "SpinApp":
            spinapps += 1
            if doc.get("apiVersion") != "core.spinkube.dev/v1alpha1":
                problem(where, f"apiVersion {doc.get('apiVersion')}")
            for error in jsonschema.Draft7Validator(schema).iter_errors(doc):
                path = "/".join(str(p) for p in error.absolute_path)
                problem(where, f"{path}: {error.message}")
            check_variables(where, doc, secrets)
            source = doc["spec"].get("runtimeConfig", {}).get("loadFromSecret")
            if source and "runtime-config.toml" not in secrets.get(source, {}):
                problem(where, f"runtime config Secret {source} has no runtime-config.toml")
        else:
            template = doc.get("spec", {}).get("template", {})
            if doc.get("kind") == "CronJob":
                template = doc["spec"]["jobTemplate"]["spec"]["template"]
            if "spec" in template:
                check_pod(where, template["spec"])
            try:
                kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
            except kubernetes_validate.ValidationError as e:
                problem(where, f"{doc.get('kind')}: {e.message}")
            except kubernetes_validate.SchemaNotFoundError:
                problem(where, f"no Kubernetes schema for {doc.get('apiVersion')} {doc.get('kind')}")
    if spinapps == 0:
        problem("deploy/kubernetes", "no SpinApp")

    every_label = labels_used(ROOT / "spin.toml")
    if every_label != LABELS:
        problem("spin.toml", f"SQLite labels {sorted(every_label)}")
    for path in [ROOT / "runtime-config.toml", *sorted((ROOT / "deploy" / "runtime-config").glob("*.toml"))]:
        check_runtime_config(str(path.relative_to(ROOT)), path.read_text(), every_label)

    for line in problems:
        print(line)
    print(f"deploy check: {len(documents)} Kubernetes objects ({spinapps} SpinApps), "
          f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
