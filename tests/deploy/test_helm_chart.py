"""The Helm chart in helm/kts, its production values example, and the sidecar example beside it.

``helm-python-sdk`` binds Helm's own Go SDK (no helm binary), so lint, schema validation and rendering are
Helm's; ``kubernetes-validate`` checks every rendered object against the Kubernetes OpenAPI schemas
(strict: unknown fields are errors). What a pod would see (server.properties, its environment with the
Secrets' values, the files mounted from Secrets) is recreated under a temporary directory and read by kts's
own settings loader, so the rendered objects are known to start ``kts serve --config`` as intended.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest
import yaml

from app.backends import load_settings
from app.settings import ENV_PREFIX, Settings
from app.storage.kafka.client_config import SaslLogin
from app.storage.kafka.settings import KafkaSettings
from app.storage.zk.client_security import DigestLogin
from app.storage.zk.settings import ZooKeeperSettings

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "kts"
SIDECAR_EXAMPLE = CHART / "examples" / "job-with-sidecar.yaml"
PRODUCTION_VALUES = CHART / "values-production.yaml"
KRAFT_PRODUCTION_VALUES = CHART / "values-production-kraft.yaml"
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
# Every TLS and ZooKeeper security option at once, with extra volumes and variables.
SECURED: dict[str, Any] = {
    "containerPort": 8443,
    "tls": {
        "enabled": True,
        "secretName": "kts-tls",
        "certificateKey": "server.pem",
        "privateKeyKey": "server-key.pem",
        "clientAuth": "required",
        "clientCA": {"secretName": "clients-ca", "key": "bundle.pem"},
    },
    "zookeeper": {
        "setAcl": True,
        "sasl": {"jaasSecret": {"name": "kafka-jaas", "key": "kafka_server_jaas.conf"}, "jaasSection": "ZkClient"},
        "tls": {
            "enabled": True,
            "secretName": "zookeeper-client",
            "caKey": "ca.pem",
            "certificateKey": "client.pem",
            "privateKeyKey": "client-key.pem",
            "verifyHostname": False,
        },
    },
    "extraVolumes": [{"name": "policies", "configMap": {"name": "kts-policies"}}],
    "extraVolumeMounts": [{"name": "policies", "mountPath": "/etc/kts-policies", "readOnly": True}],
    "extraEnv": [{"name": "KTS_SERVICE_ID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
    "serviceMonitor": {"enabled": True, "tlsConfig": {"insecureSkipVerify": True}},
    "networkPolicy": {"enabled": True},
}
PRODUCTION: dict[str, Any] = yaml.safe_load(PRODUCTION_VALUES.read_text(encoding="utf-8"))
KRAFT_PRODUCTION: dict[str, Any] = yaml.safe_load(KRAFT_PRODUCTION_VALUES.read_text(encoding="utf-8"))
# A KRaft cluster through the Kafka protocol with every admin.* option: a client certificate with an encrypted key,
# a JAAS login, no host name check, one replica on SQLite.
KAFKA_SECURED: dict[str, Any] = {
    "replicaCount": 1,
    "config": {"zookeeperConnect": "", "bootstrapServers": "kafka-0:9093,kafka-1:9093"},
    "admin": {
        "securityProtocol": "SASL_SSL",
        "sasl": {"mechanism": "SCRAM-SHA-256", "jaasConfigSecret": {"name": "kts-kafka", "key": "jaas"}},
        "ssl": {
            "secretName": "kafka-client",
            "truststoreKey": "ca.pem",
            "keystoreKey": "kts.pem",
            "keyPasswordKey": "kts.password",
            "verifyHostname": False,
        },
        "requestTimeoutMs": 15000,
    },
    "auditDatabase": {"type": "sqlite", "sqlite": {"claimName": "kts-audit"}},
}
VALUE_SETS = [None, EVERYTHING_ENABLED, SECURED, PRODUCTION, KRAFT_PRODUCTION, KAFKA_SECURED]
VALUE_SET_IDS = ["defaults", "everything-enabled", "secured", "production", "kraft-production", "kafka-secured"]
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


@pytest.mark.parametrize("values", VALUE_SETS, ids=VALUE_SET_IDS)
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


@pytest.mark.parametrize("values", VALUE_SETS, ids=VALUE_SET_IDS)
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
    # the management listener: Prometheus scrapes outside the connection caps clients may fill
    assert endpoint["port"] == everything["Service"]["spec"]["ports"][1]["name"] == "management"
    assert endpoint["scheme"] == "http"
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
        ({"tls": {"enable": True}}, "additional properties 'enable'"),
        ({"tls": {"clientAuth": "optional"}}, "/tls/clientAuth"),
        ({"tls": {"clientCA": {"secret": "x"}}}, "additional properties 'secret'"),
        ({"zookeeper": {"sasl": {"password": "in-the-values"}}}, "additional properties 'password'"),
        ({"zookeeper": {"tls": {"verifyHostname": "no"}}}, "/zookeeper/tls/verifyHostname"),
        ({"zookeeper": {"jaas": {}}}, "additional properties 'jaas'"),
        ({"extraVolumeMounts": [{"name": "x"}]}, "missing property 'mountPath'"),
        ({"extraVolumes": [{"secret": {"secretName": "x"}}]}, "missing property 'name'"),
        ({"serviceMonitor": {"enabled": True, "tls": {}}}, "additional properties 'tls'"),
        ({"management": {"enabled": True, "port": 0}}, "/management/port"),
        ({"management": {"enabled": "yes", "port": 9090}}, "/management/enabled"),
        ({"jwt": {"principalPrefix": "jwt *"}}, "/jwt/principalPrefix"),
        ({"jwt": {"maxLifetimeSeconds": 0}}, "/jwt/maxLifetimeSeconds"),
    ],
)
def test_schema_rejects_unknown_keys_and_bad_values(chart: helm.Chart, values: dict[str, Any], where: str) -> None:
    with pytest.raises(helm.HelmValuesError, match=where):
        chart.validate_schema(values)


@pytest.mark.parametrize("values", VALUE_SETS, ids=VALUE_SET_IDS)
def test_schema_accepts_every_example(chart: helm.Chart, values: dict[str, Any] | None) -> None:
    chart.validate_schema(values)


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


def test_deployment_probes_liveness_and_readiness_on_the_management_listener(
    defaults: dict[str, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kts = container(defaults)
    assert kts["ports"] == [
        {"name": "http", "containerPort": 8080, "protocol": "TCP"},
        {"name": "management", "containerPort": 9090, "protocol": "TCP"},
    ]
    assert kts["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "management", "scheme": "HTTP"}
    assert kts["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "management", "scheme": "HTTP"}
    assert kts["startupProbe"]["httpGet"] == {"path": "/healthz", "port": "management", "scheme": "HTTP"}
    # the kubelet probes the pod's port: the Service leaves the management port off (nothing scrapes it)
    assert [port["name"] for port in defaults["Service"]["spec"]["ports"]] == ["http"]
    settings, _ = settings_in_pod(defaults, tmp_path, monkeypatch)
    assert settings.http_management_listeners == "http://0.0.0.0:9090"
    assert settings.management_port == kts["ports"][1]["containerPort"]


@pytest.mark.parametrize(
    ("values", "on_service"),
    [
        ({}, False),
        ({"serviceMonitor": {"enabled": True}}, True),
        ({"management": {"enabled": True, "port": 9090, "onService": True}}, True),
        ({"management": {"enabled": True, "port": 9090, "onService": False}}, False),
    ],
    ids=["defaults", "service-monitor", "on-service", "off"],
)
def test_the_service_carries_the_management_port_only_for_metrics_scraping(
    chart: helm.Chart, values: dict[str, Any], on_service: bool
) -> None:
    """The management listener answers /readyz and /metrics to anyone who reaches it: the Service, which every pod
    of the cluster may reach when the NetworkPolicy is off, carries its port only when a scraper goes through it."""
    objects = by_kind(render(chart, values))
    ports = {port["name"]: port for port in objects["Service"]["spec"]["ports"]}
    assert ("management" in ports) is on_service
    if on_service:
        expected = {"name": "management", "port": 9090, "targetPort": "management", "protocol": "TCP"}
        assert ports["management"] == expected
    assert container(objects)["readinessProbe"]["httpGet"]["port"] == "management"  # the probes, either way


def test_without_the_management_listener_the_probes_and_scrapes_use_the_main_port(
    chart: helm.Chart, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    objects = by_kind(render(chart, {**EVERYTHING_ENABLED, "management": {"enabled": False, "port": 9090}}))
    kts = container(objects)
    assert [port["name"] for port in kts["ports"]] == ["http"]
    assert {probe["port"] for probe in probes(objects)} == {"http"}
    assert [port["name"] for port in objects["Service"]["spec"]["ports"]] == ["http"]
    assert objects["ServiceMonitor"]["spec"]["endpoints"][0]["port"] == "http"
    assert objects["NetworkPolicy"]["spec"]["ingress"][0]["ports"] == [{"port": "http", "protocol": "TCP"}]
    settings, _ = settings_in_pod(objects, tmp_path, monkeypatch)
    assert settings.http_management_listeners is None


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
    assert settings.group(ZooKeeperSettings).connect == "zookeeper:2181"
    assert settings.delegation_token_max_lifetime_ms == 604_800_000
    assert settings.delegation_token_expiry_time_ms == 86_400_000
    assert settings.delegation_token_expiry_check_interval_ms == 3_600_000
    assert settings.group(ZooKeeperSettings).session_timeout_ms == 18_000
    assert settings.group(ZooKeeperSettings).token_znode_version == 3
    assert settings.audit_db_auto_migrate is True
    assert not settings.lockout_exempt_addresses  # no address is a way around the lockout
    # The environment overrides the file, so the Deployment repeats the file's listener in KTS_HTTP_LISTENERS.
    assert settings.http_listeners == env["KTS_HTTP_LISTENERS"] == "http://0.0.0.0:8080"
    assert settings.listeners_deprecation is None
    assert settings.listener_port == kts["ports"][0]["containerPort"]


def test_config_values_reach_kts_as_written(chart: helm.Chart, tmp_path: Path) -> None:
    rules = r"RULE:^CN=([a-z]+)\.example\.com$/$1/L,DEFAULT"
    values = {
        "containerPort": 9090,
        "management": {"enabled": True, "port": 9091},
        "config": {
            "zookeeperConnect": "zk-0.zk:2181,zk-1.zk:2181/kafka",
            "delegationTokenMaxLifetimeMs": 1_209_600_000,
            "superUsers": "User:admin;User:CN=ops,O=Example",
            "allowEveryoneIfNoAclFound": True,
            "sslPrincipalMappingRules": rules,
            "tokenZnodeVersion": 1,
            "auditDbAutoMigrate": False,
            "authLockoutExemptAddresses": "203.0.113.0/24,2001:db8::7",
            "extraProperties": {"service.id": "kts-eu"},
        },
    }
    objects = by_kind(render(chart, values))
    properties = tmp_path / "server.properties"
    properties.write_text(objects["ConfigMap"]["data"]["server.properties"], encoding="utf-8")
    settings = load_settings(properties, delegation_token_secret_key="from-the-secret")
    assert settings.group(ZooKeeperSettings).connect == "zk-0.zk:2181,zk-1.zk:2181/kafka"
    assert settings.delegation_token_max_lifetime_ms == 1_209_600_000
    assert [str(principal) for principal in settings.super_user_principals] == ["User:admin", "User:CN=ops,O=Example"]
    assert settings.allow_everyone_if_no_acl_found is True
    assert settings.ssl_principal_mapping_rules == rules
    assert settings.group(ZooKeeperSettings).token_znode_version == 1
    assert settings.audit_db_auto_migrate is False
    assert settings.auth_lockout_exempt_addresses == "203.0.113.0/24,2001:db8::7"
    assert settings.service_id == "kts-eu"
    assert settings.listener_port == 9090
    assert settings.management_port == 9091
    kts = container(objects)
    assert kts["ports"][0]["containerPort"] == 9090
    assert {"name": "KTS_HTTP_LISTENERS", "value": "http://0.0.0.0:9090"} in kts["env"]


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
    assert rule["ports"] == [{"port": "http", "protocol": "TCP"}, {"port": "management", "protocol": "TCP"}]
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
        "--jwt-file",
        "/var/run/secrets/tokens/kts",
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
    token = volumes[sidecar_mounts["/var/run/secrets/tokens"]]
    assert token["projected"]["sources"] == [
        {"serviceAccountToken": {"audience": "kts", "expirationSeconds": 3600, "path": "kts"}}
    ]
    assert not any("secret" in volume for volume in volumes.values())  # no password anywhere
    assert pod["serviceAccountName"] == "spark"


# -------------------- production: TLS, ZooKeeper security, extra volumes, as a pod sees them

JAAS = """KafkaServer { org.apache.kafka.common.security.plain.PlainLoginModule required; };
ZkClient {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    username="kafka"
    password="from-the-jaas-file";
};
"""
KAFKA_JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="kts" password="kts-pw";'
KAFKA_JAAS_256 = KAFKA_JAAS.replace("kts-pw", "kts-pw-256")
# What the Secrets hold, by (Secret, key). The certificates need only exist for kts's settings to accept them.
SECRET_DATA = {
    ("kts", "delegation-token-secret-key"): "the-brokers-secret",
    ("kts", "audit-db-url"): "postgresql://kts:pw@postgres:5432/kts",
    ("kts-delegation-token", "secret"): "the-brokers-secret",
    ("kts-postgres", "url"): "postgresql://kts:pw@postgres.db:5432/kts",
    ("kts-zookeeper", "password"): "zk-password",
    ("kafka-jaas", "kafka_server_jaas.conf"): JAAS,
    ("kts-tls", "tls.crt"): "listener certificate",
    ("kts-tls", "tls.key"): "listener key",
    ("kts-tls", "ca.crt"): "clients' CA",
    ("kts-tls", "server.pem"): "listener certificate",
    ("kts-tls", "server-key.pem"): "listener key",
    ("clients-ca", "bundle.pem"): "clients' CA bundle",
    ("zookeeper-client", "ca.pem"): "ZooKeeper's CA",
    ("zookeeper-client", "client.pem"): "ZooKeeper client certificate",
    ("zookeeper-client", "client-key.pem"): "ZooKeeper client key",
    ("kts-kafka", "sasl.jaas.config"): KAFKA_JAAS,
    ("kts-kafka", "jaas"): KAFKA_JAAS_256,
    ("kafka-cluster-ca-cert", "ca.crt"): "the brokers' CA",
    ("kafka-client", "ca.pem"): "the brokers' CA bundle",
    ("kafka-client", "ca.crt"): "the brokers' CA",
    ("kafka-client", "kts.pem"): "kts's client certificate and key",
    ("kafka-client", "kts.password"): "key-password",
}

# What the ConfigMaps the chart refers to hold (public material), by (ConfigMap, key).
CONFIG_MAP_DATA = {
    ("kube-root-ca.crt", "ca.crt"): "the cluster's CA",
    ("cluster-jwks", "keys.json"): '{"keys": []}',
}


def settings_in_pod(
    objects: dict[str, dict[str, Any]], root: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Settings, dict[str, str]]:
    """The settings ``kts serve`` would load in the pod: its mounted files recreated under ``root`` (paths in the
    file and the environment moved there too), its environment with the Secrets' values."""
    pod = objects["Deployment"]["spec"]["template"]["spec"]
    kts = container(objects)
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    moved: dict[str, str] = {}
    for mount in kts["volumeMounts"]:
        directory = root / mount["mountPath"].lstrip("/")
        directory.mkdir(parents=True, exist_ok=True)
        moved[mount["mountPath"]] = str(directory)
        volume = volumes[mount["name"]]
        config_map = objects["ConfigMap"]
        if volume.get("configMap", {}).get("name") == config_map["metadata"]["name"]:
            for file_name, text in config_map["data"].items():
                (directory / file_name).write_text(text, encoding="utf-8")
        for source in volume.get("projected", {}).get("sources", []):
            kind, data = ("secret", SECRET_DATA) if "secret" in source else ("configMap", CONFIG_MAP_DATA)
            for item in source[kind]["items"]:
                (directory / item["path"]).write_text(data[(source[kind]["name"], item["key"])], encoding="utf-8")

    # One pass over all mount paths, longest first, so a path already moved under ``root`` is not moved again.
    mounted = re.compile(
        "|".join(rf"(?<![\w/]){re.escape(path)}(?=/|$|\n)" for path in sorted(moved, key=len, reverse=True))
    )

    def relocated(text: str) -> str:
        return mounted.sub(lambda match: moved[match.group(0)], text)

    environment: dict[str, str] = {}
    for entry in kts["env"]:
        if "value" in entry:
            environment[entry["name"]] = relocated(entry["value"])
        elif "secretKeyRef" in entry["valueFrom"]:
            reference = entry["valueFrom"]["secretKeyRef"]
            environment[entry["name"]] = SECRET_DATA[(reference["name"], reference["key"])]
    for variable in [variable for variable in os.environ if variable.startswith(ENV_PREFIX)]:
        monkeypatch.delenv(variable)
    for variable, value in environment.items():
        monkeypatch.setenv(variable, value)
    assert kts["args"][:2] == ["serve", "--config"]
    config = Path(relocated(kts["args"][2]))
    config.write_text(relocated(config.read_text(encoding="utf-8")), encoding="utf-8")
    return load_settings(config), environment


def probes(objects: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    kts = container(objects)
    return [kts[probe]["httpGet"] for probe in ("startupProbe", "livenessProbe", "readinessProbe")]


def test_defaults_start_an_http_listener_without_zookeeper_security(
    defaults: dict[str, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings, environment = settings_in_pod(defaults, tmp_path, monkeypatch)
    assert settings.http_listeners == "http://0.0.0.0:8080"
    assert settings.ssl_certfile is None and settings.ssl_client_auth == "none"
    zookeeper = settings.group(ZooKeeperSettings).security
    assert zookeeper.login is None and zookeeper.tls is None
    assert not settings.group(ZooKeeperSettings).set_acl
    assert settings.secret_key == "the-brokers-secret"
    assert not [name for name in environment if name.startswith("KTS_SSL") or "ZOOKEEPER" in name]


def test_tls_listener_serves_the_certificate_secret(
    chart: helm.Chart, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    objects = by_kind(render(chart, {"tls": {"enabled": True, "secretName": "kts-tls"}, "containerPort": 8443}))
    settings, _ = settings_in_pod(objects, tmp_path, monkeypatch)
    assert settings.http_listeners == "https://0.0.0.0:8443"
    assert settings.ssl_certfile is not None and settings.ssl_keyfile is not None
    assert settings.ssl_certfile.read_text() == "listener certificate"
    assert settings.ssl_keyfile.read_text() == "listener key"
    assert settings.ssl_client_auth == "none" and settings.ssl_cafile is None
    assert [probe["scheme"] for probe in probes(objects)] == ["HTTPS"] * 3
    assert {probe["port"] for probe in probes(objects)} == {"management"}
    assert settings.http_management_listeners == "https://0.0.0.0:9090"  # the same certificate as the main one
    kts = container(objects)
    assert kts["ports"] == [
        {"name": "https", "containerPort": 8443, "protocol": "TCP"},
        {"name": "management", "containerPort": 9090, "protocol": "TCP"},
    ]
    assert objects["Service"]["spec"]["ports"][0]["targetPort"] == "https"
    (tls,) = [
        volume for volume in objects["Deployment"]["spec"]["template"]["spec"]["volumes"] if volume["name"] == "tls"
    ]
    assert tls["projected"]["defaultMode"] == 0o440  # the pod's group (fsGroup) reads the key, nobody else


def test_client_certificates_with_their_own_ca_secret(
    chart: helm.Chart, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    objects = by_kind(render(chart, SECURED))
    settings, environment = settings_in_pod(objects, tmp_path, monkeypatch)
    assert settings.ssl_client_auth == "required"
    assert settings.ssl_cafile is not None and settings.ssl_cafile.read_text() == "clients' CA bundle"
    assert settings.ssl_certfile is not None and settings.ssl_certfile.read_text() == "listener certificate"
    assert environment["KTS_SSL_CLIENT_AUTH"] == "required"
    # The kubelet sends no client certificate; the probed paths need none.
    assert {probe["path"] for probe in probes(objects)} == {"/healthz", "/readyz"}


def test_zookeeper_sasl_password_comes_from_a_secret(
    chart: helm.Chart, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    values = {"zookeeper": {"setAcl": True, "sasl": {"username": "kafka", "passwordSecret": {"name": "kts-zookeeper"}}}}
    objects = by_kind(render(chart, values))
    settings, environment = settings_in_pod(objects, tmp_path, monkeypatch)
    assert settings.group(ZooKeeperSettings).set_acl is True
    assert settings.group(ZooKeeperSettings).security.login == DigestLogin("kafka", "zk-password")
    assert environment["KTS_ZOOKEEPER_SASL_PASSWORD"] == "zk-password"
    env = {entry["name"]: entry for entry in container(objects)["env"]}
    assert env["KTS_ZOOKEEPER_SASL_PASSWORD"]["valueFrom"] == {
        "secretKeyRef": {"name": "kts-zookeeper", "key": "password"}
    }
    assert "zk-password" not in objects["ConfigMap"]["data"]["server.properties"]


def test_zookeeper_login_and_tls_come_from_mounted_secrets(
    chart: helm.Chart, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    objects = by_kind(render(chart, SECURED))
    settings, environment = settings_in_pod(objects, tmp_path, monkeypatch)
    security = settings.group(ZooKeeperSettings).security
    assert security.set_acl is True
    assert security.login == DigestLogin("kafka", "from-the-jaas-file")  # the ZkClient section of the JAAS Secret
    assert security.tls is not None and security.tls.check_hostname is False
    assert security.tls.cafile is not None and security.tls.cafile.read_text() == "ZooKeeper's CA"
    assert security.tls.certfile is not None and security.tls.certfile.read_text() == "ZooKeeper client certificate"
    assert security.tls.keyfile is not None and security.tls.keyfile.read_text() == "ZooKeeper client key"
    assert "KTS_ZOOKEEPER_SASL_PASSWORD" not in environment


def test_no_jwt_settings_by_default(defaults: dict[str, dict[str, Any]]) -> None:
    assert "sasl.oauthbearer" not in defaults["ConfigMap"]["data"]["server.properties"]
    assert "jwt" not in {volume["name"] for volume in defaults["Deployment"]["spec"]["template"]["spec"]["volumes"]}


def test_jwt_values_reach_kts_with_the_cluster_ca_from_a_config_map(
    chart: helm.Chart, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    values = {
        "jwt": {
            "jwksEndpointUrl": "https://kubernetes.default.svc/openid/v1/jwks",
            "caConfigMap": {"name": "kube-root-ca.crt", "key": "ca.crt"},
            "expectedIssuer": "https://kubernetes.default.svc.cluster.local",
            "clockSkewSeconds": 10,
            "principalPrefix": "k8s:",
            "maxLifetimeSeconds": 7200,
        }
    }
    objects = by_kind(render(chart, values))
    validate_strictly(objects["Deployment"])
    settings, _ = settings_in_pod(objects, tmp_path, monkeypatch)
    assert settings.sasl_oauthbearer_jwks_endpoint_url == "https://kubernetes.default.svc/openid/v1/jwks"
    assert settings.sasl_oauthbearer_jwks_endpoint_cafile is not None
    assert settings.sasl_oauthbearer_jwks_endpoint_cafile.read_text() == "the cluster's CA"
    assert settings.sasl_oauthbearer_expected_issuer == "https://kubernetes.default.svc.cluster.local"
    assert settings.jwt_audiences == ("kts",)
    assert (settings.sasl_oauthbearer_sub_claim_name, settings.sasl_oauthbearer_clock_skew_seconds) == ("sub", 10)
    assert settings.sasl_oauthbearer_principal_prefix == "k8s:"
    assert settings.sasl_oauthbearer_max_lifetime_seconds == 7200


def test_jwt_defaults_keep_no_prefix_and_a_day_of_lifetime(
    chart: helm.Chart, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    objects = by_kind(render(chart, {"jwt": {"jwksConfigMap": {"name": "cluster-jwks", "key": "keys.json"}}}))
    settings, _ = settings_in_pod(objects, tmp_path, monkeypatch)
    assert settings.sasl_oauthbearer_principal_prefix == ""
    assert settings.sasl_oauthbearer_max_lifetime_seconds == 86_400


def test_the_jwk_set_can_come_from_a_config_map(
    chart: helm.Chart, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    objects = by_kind(render(chart, {"jwt": {"jwksConfigMap": {"name": "cluster-jwks", "key": "keys.json"}}}))
    settings, _ = settings_in_pod(objects, tmp_path, monkeypatch)
    url = settings.sasl_oauthbearer_jwks_endpoint_url
    assert url is not None and url.startswith("file:") and url.endswith("/var/run/kts/jwt/jwks.json")
    assert settings.sasl_oauthbearer_jwks_endpoint_cafile is None


def test_extra_volumes_mounts_and_environment_are_added(chart: helm.Chart) -> None:
    objects = by_kind(render(chart, SECURED))
    pod = objects["Deployment"]["spec"]["template"]["spec"]
    kts = container(objects)
    assert SECURED["extraVolumes"][0] in pod["volumes"]
    assert SECURED["extraVolumeMounts"][0] in kts["volumeMounts"]
    assert SECURED["extraEnv"][0] in kts["env"]
    # Still nothing writable but /tmp.
    assert [mount["mountPath"] for mount in kts["volumeMounts"] if not mount.get("readOnly")] == [POD_TMP]


def test_service_monitor_scrapes_https_with_its_tls_config(chart: helm.Chart) -> None:
    monitor = by_kind(render(chart, SECURED))["ServiceMonitor"]
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["scheme"] == "https" and endpoint["port"] == "management"
    assert endpoint["tlsConfig"] == {"insecureSkipVerify": True}


def test_production_values_run_three_https_replicas_on_postgresql_with_a_zookeeper_login(
    chart: helm.Chart, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    objects = by_kind(render(chart, PRODUCTION))
    assert set(objects) == {
        "ConfigMap",
        "Deployment",
        "Service",
        "PodDisruptionBudget",
        "ServiceMonitor",
        "NetworkPolicy",
    }
    assert objects["Deployment"]["spec"]["replicas"] == 3
    settings, _ = settings_in_pod(objects, tmp_path, monkeypatch)
    assert settings.listener_scheme == "https" and settings.ssl_client_auth == "requested"
    assert settings.audit_db_url.startswith("postgresql://")
    zookeeper = settings.group(ZooKeeperSettings)
    assert zookeeper.set_acl and zookeeper.security.login == DigestLogin("kafka", "zk-password")
    assert [probe["scheme"] for probe in probes(objects)] == ["HTTPS"] * 3
    report = helm.lint(CHART, PRODUCTION, strict=True, kube_version=f"v{KUBERNETES_VERSION}")
    assert report["errors"] == []


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"tls": {"enabled": True}}, "set tls.secretName"),
        ({"tls": {"clientAuth": "required"}}, "client certificates need tls.enabled=true"),
        ({"zookeeper": {"sasl": {"username": "kafka"}}}, "set zookeeper.sasl.passwordSecret.name"),
        ({"zookeeper": {"sasl": {"passwordSecret": {"name": "kts-zookeeper"}}}}, "set zookeeper.sasl.username"),
        (
            {"zookeeper": {"sasl": {"jaasSecret": {"name": "j"}, "username": "u", "passwordSecret": {"name": "p"}}}},
            "either jaasSecret or username",
        ),
        ({"zookeeper": {"tls": {"enabled": True}}}, "set zookeeper.tls.secretName"),
        ({"zookeeper": {"tls": {"enabled": True, "secretName": "z", "certificateKey": "c"}}}, "together, or neither"),
        ({"zookeeper": {"setAcl": True}}, "zookeeper.setAcl: needs a ZooKeeper identity"),
        (
            {"jwt": {"jwksEndpointUrl": "https://issuer.example/jwks", "jwksConfigMap": {"name": "cluster-jwks"}}},
            "give either jwksEndpointUrl or jwksConfigMap.name",
        ),
        ({"management": {"enabled": True, "port": 8080}}, "management.port: give the management listener a port"),
    ],
)
def test_inconsistent_values_are_refused_with_a_sentence(
    chart: helm.Chart, values: dict[str, Any], message: str
) -> None:
    chart.validate_schema(values)  # each value is fine on its own; the combination is not
    with pytest.raises(helm.HelmRenderError, match=re.escape(message)):
        chart.render(values, name=RELEASE, namespace=NAMESPACE)


def test_the_listener_key_is_named_in_one_helper_only() -> None:
    templates = CHART / "templates"
    mentions = {
        path.name: len(re.findall(r"listeners", path.read_text(encoding="utf-8"), flags=re.IGNORECASE))
        for path in templates.iterdir()
    }
    assert {name: count for name, count in mentions.items() if count and name != "_helpers.tpl"} == {}
    helpers = (templates / "_helpers.tpl").read_text(encoding="utf-8")
    (definition,) = re.findall(r'define "kts\.listenerKey" -}}\n(\S+)\n', helpers)
    assert definition == "http.listeners"
    (management,) = re.findall(r'define "kts\.managementListenerKey" -}}\n(\S+)\n', helpers)
    assert management == "http.management.listeners"


def test_the_listener_is_kts_own_key_not_the_brokers(defaults: dict[str, dict[str, Any]]) -> None:
    """kts's listener is http.listeners (KTS_HTTP_LISTENERS); ``listeners`` is left to the brokers' syntax."""
    env = {entry["name"]: entry.get("value") for entry in container(defaults)["env"]}
    assert env["KTS_HTTP_LISTENERS"] == "http://0.0.0.0:8080" and "KTS_LISTENERS" not in env
    properties = defaults["ConfigMap"]["data"]["server.properties"]
    assert "\nhttp.listeners=http://0.0.0.0:8080\n" in properties
    assert not re.search(r"^listeners=", properties, flags=re.MULTILINE)


# -------------------- a KRaft cluster through the Kafka protocol (config.bootstrapServers, admin.*)


def test_kraft_production_values_reach_the_brokers_through_the_kafka_protocol(
    chart: helm.Chart, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    objects = by_kind(render(chart, KRAFT_PRODUCTION))
    assert set(objects) == {
        "ConfigMap",
        "Deployment",
        "Service",
        "PodDisruptionBudget",
        "ServiceMonitor",
        "NetworkPolicy",
    }
    assert objects["Deployment"]["spec"]["replicas"] == 3
    assert "strategy" not in objects["Deployment"]["spec"]  # rolling updates: PostgreSQL takes any number
    settings, environment = settings_in_pod(objects, tmp_path, monkeypatch)
    assert settings.backend == "kafka" and not isinstance(settings.cluster, ZooKeeperSettings)
    assert settings.group(KafkaSettings).bootstrap_servers == KRAFT_PRODUCTION["config"]["bootstrapServers"]
    security = settings.group(KafkaSettings).security
    assert security.protocol == "SASL_SSL"
    assert security.login == SaslLogin("SCRAM-SHA-512", "kts", "kts-pw")
    assert security.tls is not None and security.tls.check_hostname is True and security.tls.certfile is None
    assert security.tls.cafile is not None and security.tls.cafile.read_text() == "the brokers' CA"
    assert settings.audit_db_url.startswith("postgresql://")
    assert settings.listener_scheme == "https" and settings.ssl_client_auth == "requested"
    properties = objects["ConfigMap"]["data"]["server.properties"]
    assert "zookeeper." not in properties and "token.znode.version" not in properties
    assert "kts-pw" not in properties  # the JAAS login comes from its Secret only
    env = {entry["name"]: entry for entry in container(objects)["env"]}
    assert env["KTS_ADMIN_SASL_JAAS_CONFIG"]["valueFrom"] == {
        "secretKeyRef": {"name": "kts-kafka", "key": "sasl.jaas.config"}
    }
    assert not [name for name in environment if "ZOOKEEPER" in name]
    egress_ports = [port["port"] for rule in objects["NetworkPolicy"]["spec"]["egress"] for port in rule["ports"]]
    assert 9093 in egress_ports and 2181 not in egress_ports
    report = helm.lint(CHART, KRAFT_PRODUCTION, strict=True, kube_version=f"v{KUBERNETES_VERSION}")
    assert report["errors"] == []


def test_every_admin_option_reaches_kts_with_one_replica_on_sqlite(
    chart: helm.Chart, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    objects = by_kind(render(chart, KAFKA_SECURED))
    settings, environment = settings_in_pod(objects, tmp_path, monkeypatch)
    security = settings.group(KafkaSettings).security
    assert security.login == SaslLogin("SCRAM-SHA-256", "kts", "kts-pw-256")
    assert security.tls is not None and security.tls.check_hostname is False
    assert security.tls.cafile is not None and security.tls.cafile.read_text() == "the brokers' CA bundle"
    assert security.tls.certfile is not None and security.tls.certfile.read_text() == "kts's client certificate and key"
    assert security.tls.key_password == environment["KTS_ADMIN_SSL_KEY_PASSWORD"] == "key-password"
    assert settings.group(KafkaSettings).request_timeout_ms == 15_000
    # SQLite: one replica, the file on the claim, never two pods writing it at once, no database Secret.
    deployment = objects["Deployment"]
    assert deployment["spec"]["replicas"] == 1 and deployment["spec"]["strategy"] == {"type": "Recreate"}
    assert settings.audit_db_url == "sqlite:////var/lib/kts/audit/kts-audit.db"
    assert "KTS_AUDIT_DB_URL" not in environment
    volumes = {volume["name"]: volume for volume in deployment["spec"]["template"]["spec"]["volumes"]}
    mounts = {mount["mountPath"]: mount for mount in container(objects)["volumeMounts"]}
    assert volumes[mounts["/var/lib/kts/audit"]["name"]]["persistentVolumeClaim"] == {"claimName": "kts-audit"}
    writable = sorted(path for path, mount in mounts.items() if not mount.get("readOnly"))
    assert writable == [POD_TMP, "/var/lib/kts/audit"]
    assert volumes[mounts["/var/run/secrets/kts/kafka"]["name"]]["projected"]["defaultMode"] == 0o440
    notes = next(text for path, text in chart.render(KAFKA_SECURED, name=RELEASE).items() if path.endswith("NOTES.txt"))
    assert "kts-kafka / jaas: admin.sasl.jaas.config" in notes and "audit-db-url" not in notes


@pytest.mark.parametrize(
    ("admin", "login", "tls"),
    [
        ({"securityProtocol": "SASL_PLAINTEXT", "sasl": {"jaasConfigSecret": {"name": "kts-kafka"}}}, True, False),
        ({"securityProtocol": "SASL_SSL", "sasl": {"jaasConfigSecret": {"name": "kts-kafka"}}}, True, True),
        ({"securityProtocol": "SSL", "ssl": {"secretName": "kafka-client", "keystoreKey": "kts.pem"}}, False, True),
    ],
    ids=["sasl-plaintext", "sasl-ssl-system-cas", "ssl-client-certificate"],
)
def test_the_security_protocol_decides_which_admin_keys_are_written(
    chart: helm.Chart,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    admin: dict[str, Any],
    login: bool,
    tls: bool,
) -> None:
    values = {"config": {"zookeeperConnect": "", "bootstrapServers": "kafka:9093"}, "admin": admin}
    objects = by_kind(render(chart, values))
    validate_strictly(objects["Deployment"])
    properties = objects["ConfigMap"]["data"]["server.properties"]
    assert ("admin.sasl.mechanism=" in properties) is login
    assert ("admin.ssl.endpoint.identification.algorithm=" in properties) is tls
    settings, environment = settings_in_pod(objects, tmp_path, monkeypatch)
    assert (settings.group(KafkaSettings).security.login is not None) is login
    assert ("KTS_ADMIN_SASL_JAAS_CONFIG" in environment) is login
    assert (settings.group(KafkaSettings).security.tls is not None) is tls
    if tls and "secretName" not in admin.get("ssl", {}):
        assert (
            settings.group(KafkaSettings).security.tls is not None
            and settings.group(KafkaSettings).security.tls.cafile is None
        )  # system CAs
        pod = objects["Deployment"]["spec"]["template"]["spec"]
        assert "kafka" not in {volume["name"] for volume in pod["volumes"]}


KAFKA_MODE = {"zookeeperConnect": "", "bootstrapServers": "kafka:9093"}
KAFKA_LOGIN = {"sasl": {"jaasConfigSecret": {"name": "kts-kafka"}}}
SQLITE_CLAIM = {"claimName": "kts-audit"}


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {"config": KAFKA_MODE, "admin": KAFKA_LOGIN, "zookeeper": {"setAcl": True}},
            "zookeeper: kts reaches the cluster through the Kafka protocol",
        ),
        (
            {"config": KAFKA_MODE, "admin": KAFKA_LOGIN, "zookeeper": {"tls": {"enabled": True, "secretName": "z"}}},
            "so it has no ZooKeeper login: remove the zookeeper values",
        ),
        ({"config": KAFKA_MODE}, "admin.sasl.jaasConfigSecret.name: name the Secret holding kts's admin.sasl.jaas"),
        (
            {"config": KAFKA_MODE, "admin": {**KAFKA_LOGIN, "securityProtocol": "SSL"}},
            "admin.sasl.jaasConfigSecret: set, but admin.securityProtocol is SSL",
        ),
        (
            {
                "config": KAFKA_MODE,
                "admin": {**KAFKA_LOGIN, "securityProtocol": "SASL_PLAINTEXT", "ssl": {"secretName": "ca"}},
            },
            "admin.ssl.secretName: set, but admin.securityProtocol is SASL_PLAINTEXT",
        ),
        (
            {"config": KAFKA_MODE, "admin": {**KAFKA_LOGIN, "ssl": {"keystoreKey": "kts.pem"}}},
            "keystoreKey and keyPasswordKey are keys of admin.ssl.secretName",
        ),
        (
            {"config": KAFKA_MODE, "admin": {**KAFKA_LOGIN, "ssl": {"secretName": "ca", "keyPasswordKey": "pw"}}},
            "admin.ssl.keyPasswordKey: set admin.ssl.keystoreKey too",
        ),
        ({"admin": KAFKA_LOGIN}, "admin: kts logs in to the brokers only with config.bootstrapServers"),
        (
            {"config": KAFKA_MODE, "admin": KAFKA_LOGIN, "auditDatabase": {"type": "sqlite", "sqlite": SQLITE_CLAIM}},
            "SQLite serves one replica only, and through the Kafka protocol the replicas share account locks, quota "
            "turns and leadership through the audit database: use PostgreSQL",
        ),
        (
            {"replicaCount": 2, "auditDatabase": {"type": "sqlite", "sqlite": {"claimName": "a"}}},
            "auditDatabase.type: SQLite keeps the audit trail in one pod's file: use PostgreSQL",
        ),
        (
            {"replicaCount": 1, "auditDatabase": {"type": "sqlite"}},
            "auditDatabase.sqlite.claimName: name the PersistentVolumeClaim",
        ),
    ],
)
def test_inconsistent_kafka_and_database_values_are_refused_with_a_sentence(
    chart: helm.Chart, values: dict[str, Any], message: str
) -> None:
    chart.validate_schema(values)
    with pytest.raises(helm.HelmRenderError, match=re.escape(message)):
        chart.render(values, name=RELEASE, namespace=NAMESPACE)


@pytest.mark.parametrize(
    "config",
    [{"bootstrapServers": "kafka:9093"}, {"zookeeperConnect": ""}, {"zookeeperConnect": "", "bootstrapServers": ""}],
    ids=["both", "neither", "both-empty"],
)
def test_the_schema_wants_zookeeper_or_the_brokers_never_both_or_neither(
    chart: helm.Chart, config: dict[str, Any], tmp_path: Path
) -> None:
    with pytest.raises(helm.HelmValuesError, match="/config/zookeeperConnect"):
        chart.validate_schema({"config": config})
    # Rendered without the schema (helm --skip-schema-validation), the templates refuse with a sentence.
    unchecked = tmp_path / "kts"
    shutil.copytree(CHART, unchecked)
    (unchecked / "values.schema.json").unlink()
    expected = "not both" if config.get("bootstrapServers") else "or bootstrapServers"
    with helm.Chart.load(unchecked) as loaded, pytest.raises(helm.HelmRenderError, match=expected):
        loaded.render({"config": config}, name=RELEASE, namespace=NAMESPACE)


@pytest.mark.parametrize(
    ("values", "where"),
    [
        ({"config": {**KAFKA_MODE, "bootstrapServers": "kafka"}}, "/config/bootstrapServers"),
        ({"admin": {"securityProtocol": "PLAINTEXT"}}, "/admin/securityProtocol"),
        ({"admin": {"sasl": {"mechanism": "GSSAPI"}}}, "/admin/sasl/mechanism"),
        ({"admin": {"sasl": {"jaasConfig": "in-the-values"}}}, "additional properties 'jaasConfig'"),
        ({"admin": {"ssl": {"keyPassword": "in-the-values"}}}, "additional properties 'keyPassword'"),
        ({"admin": {"requestTimeoutMs": 999}}, "/admin/requestTimeoutMs"),
        ({"auditDatabase": {"type": "mysql"}}, "/auditDatabase/type"),
        ({"auditDatabase": {"sqlite": {"claimName": "Not A Name"}}}, "/auditDatabase/sqlite/claimName"),
    ],
)
def test_schema_rejects_bad_kafka_and_database_values(chart: helm.Chart, values: dict[str, Any], where: str) -> None:
    with pytest.raises(helm.HelmValuesError, match=where):
        chart.validate_schema(values)


def test_the_kraft_example_of_the_deployment_guide_renders_and_starts_kts(
    chart: helm.Chart, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/deployment.md's KRaft values, as printed, pass the schema and give kts a Kafka-protocol login."""
    guide = (ROOT / "docs" / "deployment.md").read_text(encoding="utf-8")
    section = guide.split("### A cluster without ZooKeeper (KRaft)", 1)[1].split("\n### ", 1)[0]
    (block,) = re.findall(r"```yaml\n(.*?)```", section, flags=re.DOTALL)
    values = yaml.safe_load(block)
    settings, _ = settings_in_pod(by_kind(render(chart, values)), tmp_path, monkeypatch)
    assert settings.backend == "kafka"
    assert settings.group(KafkaSettings).security.login == SaslLogin("SCRAM-SHA-512", "kts", "kts-pw")
    assert (
        settings.group(KafkaSettings).security.tls is not None
        and settings.group(KafkaSettings).security.tls.cafile is not None
    )
