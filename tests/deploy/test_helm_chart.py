"""The Helm chart in helm/kts and the sidecar example beside it.

``helm-python-sdk`` binds Helm's own Go SDK (no helm binary), so lint, schema validation and rendering are
Helm's; ``kubernetes-validate`` checks every rendered object against the Kubernetes OpenAPI schemas
(strict: unknown fields are errors). The rendered server.properties is read back by kts's own settings
loader, so the ConfigMap is known to start ``kts serve --config``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest
import yaml

from app.settings import load_settings

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "kts"
SIDECAR_EXAMPLE = CHART / "examples" / "job-with-sidecar.yaml"
# Native sidecars (restartPolicy on an init container) are GA from 1.33; kubernetes-validate ships it.
KUBERNETES_VERSION = "1.33.0"
RELEASE = "kts"
NAMESPACE = "kafka"
EVERYTHING_ENABLED: dict[str, Any] = {
    "serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}},
    "networkPolicy": {
        "enabled": True,
        "ingressFrom": [{"podSelector": {"matchLabels": {"kts-client": "true"}}}],
        "egress": [{"ports": [{"port": 53, "protocol": "UDP"}, {"port": 2181}, {"port": 5432}]}],
    },
    "config": {"superUsers": "User:admin;User:ops", "extraProperties": {"service.id": "kts-eu"}},
    "extraEnv": [{"name": "PYTHONFAULTHANDLER", "value": "1"}],
    "image": {"repository": "registry.example.com/kts", "tag": "0.1.0-rc1"},
}
# Objects of custom resource definitions: kubernetes-validate has schemas for built-in kinds only.
CUSTOM_KINDS = {"ServiceMonitor"}
POD_TMP = "/tmp"  # noqa: S108 - a path inside the pod, not on this machine


@pytest.fixture(scope="module")
def chart() -> Iterator[helm.Chart]:
    with helm.Chart.load(CHART) as loaded:
        yield loaded


def render(chart: helm.Chart, values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Every object the chart renders (NOTES.txt and templates that render nothing left out)."""
    rendered = chart.render(values, name=RELEASE, namespace=NAMESPACE, is_install=True)
    return [
        document
        for path, text in sorted(rendered.items())
        if not path.endswith("NOTES.txt")
        for document in yaml.safe_load_all(text)
        if document
    ]


def by_kind(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    kinds = [item["kind"] for item in objects]
    assert len(kinds) == len(set(kinds)), f"one object of each kind expected, got {kinds}"
    return {item["kind"]: item for item in objects}


def validate_strictly(item: dict[str, Any]) -> None:
    kubernetes_validate.validate(item, KUBERNETES_VERSION, strict=True)


@pytest.fixture(scope="module")
def defaults(chart: helm.Chart) -> dict[str, dict[str, Any]]:
    return by_kind(render(chart))


@pytest.fixture(scope="module")
def everything(chart: helm.Chart) -> dict[str, dict[str, Any]]:
    return by_kind(render(chart, EVERYTHING_ENABLED))


def container(objects: dict[str, dict[str, Any]]) -> dict[str, Any]:
    (only,) = objects["Deployment"]["spec"]["template"]["spec"]["containers"]
    return only


def test_kubernetes_validate_ships_the_version_used() -> None:
    assert KUBERNETES_VERSION in kubernetes_validate.utils.all_versions()


@pytest.mark.parametrize("values", [None, EVERYTHING_ENABLED], ids=["defaults", "everything-enabled"])
def test_helm_lint_is_clean(values: dict[str, Any] | None) -> None:
    report = helm.lint(CHART, values, strict=True, kube_version=f"v{KUBERNETES_VERSION}")
    assert report["errors"] == []
    # 1 is INFO (only "icon is recommended"); 2 WARNING and 3 ERROR must not appear.
    assert [message for message in report["messages"] if message["severity"] >= 2] == []


def test_defaults_render_the_core_objects_and_no_secret(defaults: dict[str, dict[str, Any]]) -> None:
    assert set(defaults) == {"ConfigMap", "Deployment", "Service", "PodDisruptionBudget"}


def test_everything_enabled_adds_service_monitor_and_network_policy(everything: dict[str, dict[str, Any]]) -> None:
    assert set(everything) == {
        "ConfigMap",
        "Deployment",
        "Service",
        "PodDisruptionBudget",
        "ServiceMonitor",
        "NetworkPolicy",
    }


@pytest.mark.parametrize("values", [None, EVERYTHING_ENABLED], ids=["defaults", "everything-enabled"])
def test_every_built_in_object_validates_strictly(chart: helm.Chart, values: dict[str, Any] | None) -> None:
    objects = render(chart, values)
    checked = [item for item in objects if item["kind"] not in CUSTOM_KINDS]
    assert checked
    for item in checked:
        validate_strictly(item)


def test_service_monitor_is_a_crd_object_and_scrapes_metrics(everything: dict[str, dict[str, Any]]) -> None:
    monitor = everything["ServiceMonitor"]
    # No built-in schema exists for it, so it is checked by hand here.
    with pytest.raises(kubernetes_validate.SchemaNotFoundError):
        validate_strictly(monitor)
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    assert monitor["spec"]["selector"]["matchLabels"] == everything["Service"]["spec"]["selector"]
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] == everything["Service"]["spec"]["ports"][0]["name"] == "http"
    assert endpoint["path"] == "/metrics"
    assert endpoint["interval"] == "30s" and endpoint["scrapeTimeout"] == "10s"


def test_schema_rejects_a_value_of_the_wrong_type(chart: helm.Chart) -> None:
    with pytest.raises(helm.HelmValuesError, match="/replicaCount"):
        chart.validate_schema({"replicaCount": "three"})
    with pytest.raises(helm.HelmValuesError, match="/replicaCount"):
        chart.render({"replicaCount": "three"}, name=RELEASE)
    report = helm.lint(CHART, {"replicaCount": "three"}, strict=True)
    assert any("/replicaCount" in error for error in report["errors"])


@pytest.mark.parametrize(
    ("values", "where"),
    [
        ({"replicas": 3}, "additional properties 'replicas'"),
        ({"config": {"tokenZnodeVersion": 2}}, "/config/tokenZnodeVersion"),
        ({"config": {"zookeeperSessionTimeoutMs": 999}}, "/config/zookeeperSessionTimeoutMs"),
        ({"secretKey": {"secretName": ""}}, "/secretKey/secretName"),
        ({"serviceMonitor": {"enabled": "yes"}}, "/serviceMonitor/enabled"),
        ({"config": {"extraProperties": {"bad key": "x"}}}, "'bad key' does not match pattern"),
    ],
)
def test_schema_rejects_unknown_keys_and_bad_values(chart: helm.Chart, values: dict[str, Any], where: str) -> None:
    with pytest.raises(helm.HelmValuesError, match=where):
        chart.validate_schema(values)


def test_schema_accepts_the_defaults_and_everything_enabled(chart: helm.Chart) -> None:
    chart.validate_schema(None)
    chart.validate_schema(EVERYTHING_ENABLED)


def test_deployment_runs_three_locked_down_replicas(defaults: dict[str, dict[str, Any]]) -> None:
    deployment = defaults["Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    kts = container(defaults)
    assert deployment["spec"]["replicas"] == 3
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 10001  # the image's USER
    assert pod["automountServiceAccountToken"] is False
    assert kts["securityContext"] == {
        "runAsNonRoot": True,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert kts["resources"]["requests"] and kts["resources"]["limits"]
    assert {"cpu", "memory"} <= set(kts["resources"]["limits"])


def test_deployment_probes_liveness_and_readiness(defaults: dict[str, dict[str, Any]]) -> None:
    kts = container(defaults)
    (port,) = kts["ports"]
    assert port == {"name": "http", "containerPort": 8080, "protocol": "TCP"}
    assert kts["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert kts["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert kts["startupProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}


def test_deployment_has_a_writable_tmp_only(defaults: dict[str, dict[str, Any]]) -> None:
    pod = defaults["Deployment"]["spec"]["template"]["spec"]
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    mounts = {mount["mountPath"]: mount for mount in container(defaults)["volumeMounts"]}
    assert "emptyDir" in volumes[mounts[POD_TMP]["name"]]
    writable = [path for path, mount in mounts.items() if not mount.get("readOnly")]
    assert writable == [POD_TMP]


def test_deployment_prefers_spreading_replicas_over_nodes(defaults: dict[str, dict[str, Any]]) -> None:
    pod = defaults["Deployment"]["spec"]["template"]["spec"]
    anti = pod["affinity"]["podAntiAffinity"]
    assert "requiredDuringSchedulingIgnoredDuringExecution" not in anti
    (preferred,) = anti["preferredDuringSchedulingIgnoredDuringExecution"]
    term = preferred["podAffinityTerm"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchLabels"] == defaults["Deployment"]["spec"]["selector"]["matchLabels"]


def test_secrets_come_from_existing_secrets_by_reference(chart: helm.Chart) -> None:
    values = {
        "secretKey": {"secretName": "kafka-delegation", "key": "secret"},
        "auditDatabase": {"secretName": "kts-postgres", "key": "url"},
    }
    env = {entry["name"]: entry for entry in container(by_kind(render(chart, values)))["env"]}
    assert env["KTS_DELEGATION_TOKEN_SECRET_KEY"] == {
        "name": "KTS_DELEGATION_TOKEN_SECRET_KEY",
        "valueFrom": {"secretKeyRef": {"name": "kafka-delegation", "key": "secret"}},
    }
    assert env["KTS_AUDIT_DB_URL"] == {
        "name": "KTS_AUDIT_DB_URL",
        "valueFrom": {"secretKeyRef": {"name": "kts-postgres", "key": "url"}},
    }


def test_the_config_map_starts_kts_serve(defaults: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    kts = container(defaults)
    assert kts["args"][:2] == ["serve", "--config"]
    config_path = Path(kts["args"][2])
    (mount,) = [mount for mount in kts["volumeMounts"] if mount["mountPath"] == str(config_path.parent)]
    volumes = defaults["Deployment"]["spec"]["template"]["spec"]["volumes"]
    (volume,) = [volume for volume in volumes if volume["name"] == mount["name"]]
    config_map = defaults["ConfigMap"]
    assert volume["configMap"]["name"] == config_map["metadata"]["name"]

    properties = tmp_path / config_path.name
    properties.write_text(config_map["data"][config_path.name], encoding="utf-8")
    env = {entry["name"]: entry.get("value") for entry in kts["env"]}
    settings = load_settings(properties, delegation_token_secret_key="from-the-secret")
    assert settings.zookeeper_connect == "zookeeper:2181"
    assert settings.delegation_token_max_lifetime_ms == 604_800_000
    assert settings.delegation_token_expiry_time_ms == 86_400_000
    assert settings.delegation_token_expiry_check_interval_ms == 3_600_000
    assert settings.zookeeper_session_timeout_ms == 18_000
    assert settings.token_znode_version == 3
    assert settings.audit_db_auto_migrate is True
    # The environment overrides the file, so the Deployment repeats the file's listener in KTS_LISTENERS.
    assert settings.listeners == env["KTS_LISTENERS"] == "http://0.0.0.0:8080"
    assert settings.listener_port == kts["ports"][0]["containerPort"]


def test_config_values_reach_kts_as_written(chart: helm.Chart, tmp_path: Path) -> None:
    rules = r"RULE:^CN=([a-z]+)\.example\.com$/$1/L,DEFAULT"
    values = {
        "containerPort": 9090,
        "config": {
            "zookeeperConnect": "zk-0.zk:2181,zk-1.zk:2181/kafka",
            "delegationTokenMaxLifetimeMs": 1_209_600_000,
            "superUsers": "User:admin;User:CN=ops,O=Example",
            "allowEveryoneIfNoAclFound": True,
            "sslPrincipalMappingRules": rules,
            "tokenZnodeVersion": 1,
            "auditDbAutoMigrate": False,
            "extraProperties": {"service.id": "kts-eu"},
        },
    }
    objects = by_kind(render(chart, values))
    properties = tmp_path / "server.properties"
    properties.write_text(objects["ConfigMap"]["data"]["server.properties"], encoding="utf-8")
    settings = load_settings(properties, delegation_token_secret_key="from-the-secret")
    assert settings.zookeeper_connect == "zk-0.zk:2181,zk-1.zk:2181/kafka"
    assert settings.delegation_token_max_lifetime_ms == 1_209_600_000
    assert [str(principal) for principal in settings.super_user_principals] == ["User:admin", "User:CN=ops,O=Example"]
    assert settings.allow_everyone_if_no_acl_found is True
    assert settings.ssl_principal_mapping_rules == rules
    assert settings.token_znode_version == 1
    assert settings.audit_db_auto_migrate is False
    assert settings.service_id == "kts-eu"
    assert settings.listener_port == 9090
    kts = container(objects)
    assert kts["ports"][0]["containerPort"] == 9090
    assert {"name": "KTS_LISTENERS", "value": "http://0.0.0.0:9090"} in kts["env"]


def test_selectors_match_the_pods(everything: dict[str, dict[str, Any]]) -> None:
    pod_labels = everything["Deployment"]["spec"]["template"]["metadata"]["labels"]
    selectors = [
        everything["Deployment"]["spec"]["selector"]["matchLabels"],
        everything["Service"]["spec"]["selector"],
        everything["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"],
        everything["NetworkPolicy"]["spec"]["podSelector"]["matchLabels"],
    ]
    for selector in selectors:
        assert selector.items() <= pod_labels.items()
    assert everything["PodDisruptionBudget"]["spec"]["maxUnavailable"] == 1
    assert everything["Service"]["metadata"]["name"] == "kts"  # what the sidecar example calls


def test_network_policy_admits_the_listed_clients_on_http(everything: dict[str, dict[str, Any]]) -> None:
    spec = everything["NetworkPolicy"]["spec"]
    assert spec["policyTypes"] == ["Ingress", "Egress"]
    (rule,) = spec["ingress"]
    assert rule["ports"] == [{"port": "http", "protocol": "TCP"}]
    assert rule["from"] == EVERYTHING_ENABLED["networkPolicy"]["ingressFrom"]
    assert spec["egress"] == EVERYTHING_ENABLED["networkPolicy"]["egress"]


def test_notes_say_which_secrets_to_create(chart: helm.Chart) -> None:
    notes = next(
        text for path, text in chart.render(name=RELEASE, namespace=NAMESPACE).items() if path.endswith("NOTES.txt")
    )
    assert "http://kts.kafka.svc:8080" in notes
    assert "kubectl -n kafka create secret generic kts" in notes


def test_sidecar_example_validates_strictly() -> None:
    documents = [document for document in yaml.safe_load_all(SIDECAR_EXAMPLE.read_text(encoding="utf-8")) if document]
    assert [document["kind"] for document in documents] == ["Job"]
    validate_strictly(documents[0])


def test_sidecar_example_shares_client_properties_with_the_job() -> None:
    (job,) = [document for document in yaml.safe_load_all(SIDECAR_EXAMPLE.read_text(encoding="utf-8")) if document]
    pod = job["spec"]["template"]["spec"]
    (sidecar,) = pod["initContainers"]
    (client,) = pod["containers"]
    assert sidecar["restartPolicy"] == "Always"  # a native sidecar: runs beside the job, stopped after it
    assert sidecar["args"] == [
        "sidecar",
        "--server",
        "http://kts:8080",
        "--command-config",
        "/etc/kts/command.properties",
        "--owner-principal",
        "User:joe",
        "--output-file",
        "/var/run/kafka/client.properties",
        "--format",
        "properties",
        "--expire-on-exit",
    ]
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    sidecar_mounts = {mount["mountPath"]: mount["name"] for mount in sidecar["volumeMounts"]}
    client_mounts = {mount["mountPath"]: mount["name"] for mount in client["volumeMounts"]}
    shared = sidecar_mounts["/var/run/kafka"]
    assert client_mounts["/var/run/kafka"] == shared
    assert "emptyDir" in volumes[shared]
    assert "/var/run/kafka/client.properties" in client["command"]
    command_config = volumes[sidecar_mounts["/etc/kts"]]
    assert command_config["secret"]["items"] == [{"key": "command.properties", "path": "command.properties"}]
