{{/* Names, labels and values shared by the templates. */}}

{{- define "kts.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release name alone when it already contains the chart name, so release "kts" gives Service "kts". */}}
{{- define "kts.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "kts.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "kts.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kts.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "kts.labels" -}}
helm.sh/chart: {{ include "kts.chart" . }}
{{ include "kts.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "kts.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* kts's listener setting: its key in server.properties, the KTS_* variable derived from it, and its value (the
one listener, on every interface of the pod). The Deployment sets the variable as well as the file because the
image's default variable would otherwise win over server.properties. The key is named here and nowhere else. */}}
{{- define "kts.listenerKey" -}}
http.listeners
{{- end }}

{{- define "kts.listenerEnv" -}}
{{- include "kts.listenerKey" . | upper | replace "." "_" | printf "KTS_%s" }}
{{- end }}

{{- define "kts.listener" -}}
{{- printf "%s://0.0.0.0:%d" (include "kts.scheme" .) (int .Values.containerPort) }}
{{- end }}

{{- define "kts.scheme" -}}
{{- ternary "https" "http" .Values.tls.enabled }}
{{- end }}

{{/* The management listener (http.management.listeners): /healthz, /readyz and /metrics only, outside the main
listener's connection caps, with the main listener's scheme and certificate. The probes and the ServiceMonitor use
it when management.enabled. */}}
{{- define "kts.managementListenerKey" -}}
http.management.listeners
{{- end }}

{{- define "kts.managementListener" -}}
{{- printf "%s://0.0.0.0:%d" (include "kts.scheme" .) (int .Values.management.port) }}
{{- end }}

{{/* Whether the Service carries the management port: only for metrics scraping through the Service (the
ServiceMonitor, or management.onService), never for the probes, which the kubelet sends to the pod. */}}
{{- define "kts.managementOnService" -}}
{{- and .Values.management.enabled (or .Values.serviceMonitor.enabled (default false .Values.management.onService)) -}}
{{- end }}

{{/* The port the probes and the ServiceMonitor use: the management port when it is on, else the main one. */}}
{{- define "kts.probePort" -}}
{{- if .Values.management.enabled }}management{{ else }}{{ include "kts.portName" . }}{{ end }}
{{- end }}

{{/* The name of the container and Service port: what it speaks. */}}
{{- define "kts.portName" -}}
{{- include "kts.scheme" . }}
{{- end }}

{{/* Where Secrets are mounted in the pod, one directory per purpose; file names are fixed by the volumes' items. */}}
{{- define "kts.tlsDir" -}}
/var/run/secrets/kts/tls
{{- end }}

{{- define "kts.zookeeperDir" -}}
/var/run/secrets/kts/zookeeper
{{- end }}

{{- define "kts.jwtDir" -}}
/var/run/kts/jwt
{{- end }}

{{- define "kts.kafkaDir" -}}
/var/run/secrets/kts/kafka
{{- end }}

{{/* Where the SQLite audit database lives with auditDatabase.type=sqlite: the claim's mount, and the file in it. */}}
{{- define "kts.sqliteDir" -}}
/var/lib/kts/audit
{{- end }}

{{- define "kts.sqliteUrl" -}}
{{- printf "sqlite:///%s/kts-audit.db" (include "kts.sqliteDir" .) }}
{{- end }}

{{/* Whether kts reaches the cluster through the Kafka protocol (config.bootstrapServers) rather than ZooKeeper. */}}
{{- define "kts.kafkaMode" -}}
{{- if .Values.config.bootstrapServers }}true{{ end }}
{{- end }}

{{/* kts's login to the brokers: SASL (admin.sasl.*) and TLS (admin.ssl.*) by admin.securityProtocol. */}}
{{- define "kts.adminSasl" -}}
{{- if hasPrefix "SASL_" .Values.admin.securityProtocol }}true{{ end }}
{{- end }}

{{- define "kts.adminTls" -}}
{{- if hasSuffix "SSL" .Values.admin.securityProtocol }}true{{ end }}
{{- end }}

{{/* Whether the admin.ssl Secret is mounted: with TLS to the brokers and a file to take from it. */}}
{{- define "kts.adminTlsFiles" -}}
{{- $ssl := .Values.admin.ssl }}
{{- if and (include "kts.kafkaMode" .) (include "kts.adminTls" .) $ssl.secretName (or $ssl.truststoreKey $ssl.keystoreKey) }}true{{ end }}
{{- end }}

{{/* Whether workload JWTs are on: a JWKS endpoint URL or a JWK set ConfigMap. */}}
{{- define "kts.jwtEnabled" -}}
{{- if or .Values.jwt.jwksEndpointUrl .Values.jwt.jwksConfigMap.name }}true{{ end }}
{{- end }}

{{/* Combinations the schema cannot express, refused with a sentence naming the values to set. kts would refuse
them at start-up too, but only after the pods were scheduled. */}}
{{- define "kts.validate" -}}
{{- $config := .Values.config }}
{{- if and $config.zookeeperConnect $config.bootstrapServers }}
{{- fail "config: set zookeeperConnect (a cluster in ZooKeeper mode) or bootstrapServers (a KRaft cluster, through the Kafka protocol), not both" }}
{{- end }}
{{- if not (or $config.zookeeperConnect $config.bootstrapServers) }}
{{- fail "config: set zookeeperConnect (a cluster in ZooKeeper mode) or bootstrapServers (a KRaft cluster, through the Kafka protocol)" }}
{{- end }}
{{- $admin := .Values.admin }}
{{- if include "kts.kafkaMode" . }}
{{- $zk := .Values.zookeeper }}
{{- if or $zk.setAcl $zk.sasl.username $zk.sasl.passwordSecret.name $zk.sasl.jaasSecret.name $zk.tls.enabled }}
{{- fail "zookeeper: kts reaches the cluster through the Kafka protocol (config.bootstrapServers), so it has no ZooKeeper login: remove the zookeeper values, or log in to the brokers with the admin values" }}
{{- end }}
{{- if and (include "kts.adminSasl" .) (not $admin.sasl.jaasConfigSecret.name) }}
{{- fail (printf "admin.sasl.jaasConfigSecret.name: name the Secret holding kts's admin.sasl.jaas.config (admin.securityProtocol is %s)" $admin.securityProtocol) }}
{{- end }}
{{- if and (not (include "kts.adminSasl" .)) $admin.sasl.jaasConfigSecret.name }}
{{- fail (printf "admin.sasl.jaasConfigSecret: set, but admin.securityProtocol is %s (no SASL login)" $admin.securityProtocol) }}
{{- end }}
{{- if and (not (include "kts.adminTls" .)) $admin.ssl.secretName }}
{{- fail (printf "admin.ssl.secretName: set, but admin.securityProtocol is %s (no TLS to the brokers)" $admin.securityProtocol) }}
{{- end }}
{{- if and (or $admin.ssl.keystoreKey $admin.ssl.keyPasswordKey) (not $admin.ssl.secretName) }}
{{- fail "admin.ssl: keystoreKey and keyPasswordKey are keys of admin.ssl.secretName: set it" }}
{{- end }}
{{- if and $admin.ssl.keyPasswordKey (not $admin.ssl.keystoreKey) }}
{{- fail "admin.ssl.keyPasswordKey: set admin.ssl.keystoreKey too, the client key it unlocks" }}
{{- end }}
{{- else if or $admin.sasl.jaasConfigSecret.name $admin.ssl.secretName }}
{{- fail "admin: kts logs in to the brokers only with config.bootstrapServers; with config.zookeeperConnect it talks to ZooKeeper alone: remove the admin Secrets" }}
{{- end }}
{{- $audit := .Values.auditDatabase }}
{{- if eq $audit.type "sqlite" }}
{{- if gt (int .Values.replicaCount) 1 }}
{{- if include "kts.kafkaMode" . }}
{{- fail "auditDatabase.type: SQLite serves one replica only, and through the Kafka protocol the replicas share account locks, quota turns and leadership through the audit database: use PostgreSQL (auditDatabase.type=postgresql) for replicaCount above 1" }}
{{- else }}
{{- fail "auditDatabase.type: SQLite keeps the audit trail in one pod's file: use PostgreSQL (auditDatabase.type=postgresql) for replicaCount above 1" }}
{{- end }}
{{- end }}
{{- if not $audit.sqlite.claimName }}
{{- fail "auditDatabase.sqlite.claimName: name the PersistentVolumeClaim that keeps the SQLite file (the audit trail must outlive the pod)" }}
{{- end }}
{{- end }}
{{- $tls := .Values.tls }}
{{- if and $tls.enabled (not $tls.secretName) }}
{{- fail "tls.enabled: set tls.secretName to the Secret holding the listener's certificate and private key" }}
{{- end }}
{{- if and (ne $tls.clientAuth "none") (not $tls.enabled) }}
{{- fail "tls.clientAuth: client certificates need tls.enabled=true" }}
{{- end }}
{{- $sasl := .Values.zookeeper.sasl }}
{{- if and $sasl.username (not $sasl.passwordSecret.name) }}
{{- fail "zookeeper.sasl.username: set zookeeper.sasl.passwordSecret.name to the Secret holding its password" }}
{{- end }}
{{- if and $sasl.passwordSecret.name (not $sasl.username) }}
{{- fail "zookeeper.sasl.passwordSecret: set zookeeper.sasl.username too" }}
{{- end }}
{{- if and $sasl.jaasSecret.name $sasl.username }}
{{- fail "zookeeper.sasl: give either jaasSecret or username and passwordSecret, not both" }}
{{- end }}
{{- if and .Values.management.enabled (eq (int .Values.management.port) (int .Values.containerPort)) }}
{{- fail "management.port: give the management listener a port other than containerPort" }}
{{- end }}
{{- if and .Values.jwt.jwksEndpointUrl .Values.jwt.jwksConfigMap.name }}
{{- fail "jwt: give either jwksEndpointUrl or jwksConfigMap.name, not both" }}
{{- end }}
{{- $zkTls := .Values.zookeeper.tls }}
{{- if and $zkTls.enabled (not $zkTls.secretName) }}
{{- fail "zookeeper.tls.enabled: set zookeeper.tls.secretName to the Secret holding the PEM files" }}
{{- end }}
{{- if ne (empty $zkTls.certificateKey) (empty $zkTls.privateKeyKey) }}
{{- fail "zookeeper.tls: give certificateKey and privateKeyKey together, or neither" }}
{{- end }}
{{- if and .Values.zookeeper.setAcl (not (or $sasl.username $sasl.jaasSecret.name (and $zkTls.enabled $zkTls.certificateKey))) }}
{{- fail "zookeeper.setAcl: needs a ZooKeeper identity: zookeeper.sasl (username or jaasSecret) or a zookeeper.tls client certificate" }}
{{- end }}
{{- end }}

{{/* A value as a Java properties file reads it back: backslashes and line breaks escaped. */}}
{{- define "kts.propertyValue" -}}
{{- toString . | replace "\\" "\\\\" | replace "\r" "\\r" | replace "\n" "\\n" }}
{{- end }}
