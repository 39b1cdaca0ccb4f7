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

{{/* The one listener, on every interface of the pod. The Deployment sets KTS_LISTENERS to the same URL
because the image's default KTS_LISTENERS would otherwise win over server.properties. */}}
{{- define "kts.listeners" -}}
{{- printf "http://0.0.0.0:%d" (int .Values.containerPort) }}
{{- end }}

{{/* A value as a Java properties file reads it back: backslashes and line breaks escaped. */}}
{{- define "kts.propertyValue" -}}
{{- toString . | replace "\\" "\\\\" | replace "\r" "\\r" | replace "\n" "\\n" }}
{{- end }}
