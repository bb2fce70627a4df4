{{- define "rlstream.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "rlstream.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* selectorLabels: dict "root" $ "component" name */}}
{{- define "rlstream.selectorLabels" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* serviceAccount: dict "root" $ "role" name -> <fullname>-<role> */}}
{{- define "rlstream.serviceAccount" -}}
{{- printf "%s-%s" (include "rlstream.fullname" .root) .role | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* imageRef: dict "root" $ "image" {repository, tag, digest}: [registry/]repo@digest or
[registry/]repo:tag (tag defaults to the appVersion; a digest pins and wins). */}}
{{- define "rlstream.imageRef" -}}
{{- $reg := ((.root.Values.global).imageRegistry) | default "" | trimSuffix "/" -}}
{{- $repo := ternary (printf "%s/%s" $reg .image.repository) .image.repository (ne $reg "") -}}
{{- if .image.digest -}}
{{- printf "%s@%s" $repo .image.digest -}}
{{- else -}}
{{- printf "%s:%s" $repo (.image.tag | default .root.Chart.AppVersion) -}}
{{- end -}}
{{- end -}}

{{- define "rlstream.image" -}}
{{- include "rlstream.imageRef" (dict "root" . "image" .Values.image) -}}
{{- end -}}

{{- define "rlstream.trainerImage" -}}
{{- include "rlstream.imageRef" (dict "root" . "image" .Values.training.image) -}}
{{- end -}}

{{/* The Secret's name, whether existingSecret is a string (old form: envFrom, keys named
RLSTREAM_*) or an object {name, keys} (per-key references). */}}
{{- define "rlstream.secretName" -}}
{{- with .Values.existingSecret -}}{{- if kindIs "map" . -}}{{ .name }}{{- else -}}{{ . }}{{- end -}}{{- end -}}
{{- end -}}

{{/* secretEnv: env entries for the per-key form (RLSTREAM_* <- the named keys). */}}
{{- define "rlstream.secretEnv" -}}
{{- if kindIs "map" .Values.existingSecret -}}
{{- $s := .Values.existingSecret -}}
{{- $keys := $s.keys | default dict -}}
{{- $vars := dict "postgresDsn" "RLSTREAM_POSTGRES_DSN" "piiKey" "RLSTREAM_PII_KEY" "redisUrl" "RLSTREAM_REDIS_URL" "kafkaUsername" "RLSTREAM_KAFKA_SASL_USERNAME" "kafkaPassword" "RLSTREAM_KAFKA_SASL_PASSWORD" -}}
{{- $keys = merge (dict) $keys (dict "postgresDsn" "RLSTREAM_POSTGRES_DSN" "piiKey" "RLSTREAM_PII_KEY") -}}
{{- range $k := list "postgresDsn" "piiKey" "redisUrl" "kafkaUsername" "kafkaPassword" }}
{{- if get $keys $k }}
- name: {{ get $vars $k }}
  valueFrom:
    secretKeyRef:
      name: {{ $s.name | quote }}
      key: {{ get $keys $k | quote }}
{{- end }}
{{- end }}
{{- end -}}
{{- end -}}

{{/* The RLSTREAM_* settings every pod shares (the -config ConfigMap; the hook Jobs get the
same values inline, as they run before the ConfigMap exists on install). */}}
{{- define "rlstream.configData" -}}
{{- $c := .Values.config -}}
{{- $k := .Values.kafka.security -}}
RLSTREAM_KAFKA_BOOTSTRAP: {{ $c.kafkaBootstrap | quote }}
RLSTREAM_TOPIC_PREFIX: {{ $c.topicPrefix | quote }}
RLSTREAM_LOG_LEVEL: {{ $c.logLevel | quote }}
RLSTREAM_LOG_JSON: {{ $c.logJson | quote }}
RLSTREAM_DATA_DIR: {{ $c.dataDir | quote }}
{{- if and $c.tracing (ne $c.tracing "off") }}
RLSTREAM_TRACING: {{ $c.tracing | quote }}
{{- if $c.otlpEndpoint }}
RLSTREAM_OTLP_ENDPOINT: {{ $c.otlpEndpoint | quote }}
{{- end }}
{{- end }}
{{- if ne $k.protocol "PLAINTEXT" }}
RLSTREAM_KAFKA_SECURITY_PROTOCOL: {{ $k.protocol | quote }}
{{- if $k.saslMechanism }}
RLSTREAM_KAFKA_SASL_MECHANISM: {{ $k.saslMechanism | quote }}
{{- end }}
{{- if $k.saslUsername }}
RLSTREAM_KAFKA_SASL_USERNAME: {{ $k.saslUsername | quote }}
{{- end }}
{{- $ca := include "rlstream.kafkaCafile" . }}
{{- if $ca }}
RLSTREAM_KAFKA_SSL_CAFILE: {{ $ca | quote }}
{{- end }}
{{- if $k.clientCertSecret }}
RLSTREAM_KAFKA_SSL_CERTFILE: {{ printf "%s/tls.crt" $k.clientCertMountPath | quote }}
RLSTREAM_KAFKA_SSL_KEYFILE: {{ printf "%s/tls.key" $k.clientCertMountPath | quote }}
{{- end }}
{{- if not $k.checkHostname }}
RLSTREAM_KAFKA_SSL_CHECK_HOSTNAME: "false"
{{- end }}
{{- end }}
{{- range $key, $v := $c.extraEnv }}
{{ $key }}: {{ $v | quote }}
{{- end }}
{{- end -}}

{{/* The Kafka CA file: kafka.security.sslCafile, else the tls.caSecret bundle. */}}
{{- define "rlstream.kafkaCafile" -}}
{{- if .Values.kafka.security.sslCafile -}}
{{ .Values.kafka.security.sslCafile }}
{{- else if .Values.tls.caSecret -}}
{{ printf "%s/%s" .Values.tls.mountPath .Values.tls.caKey }}
{{- end -}}
{{- end -}}

{{/* Volumes every pod gets (services, hook Jobs, the training Job): the CA, the Kafka
client certificate, extraVolumes. A YAML list. */}}
{{- define "rlstream.commonVolumes" -}}
{{- if .Values.tls.caSecret }}
- name: rlstream-ca
  secret:
    secretName: {{ .Values.tls.caSecret | quote }}
    items: [{key: {{ .Values.tls.caKey | quote }}, path: {{ .Values.tls.caKey | quote }}}]
{{- end }}
{{- if .Values.kafka.security.clientCertSecret }}
- name: rlstream-kafka-client
  secret:
    secretName: {{ .Values.kafka.security.clientCertSecret | quote }}
    items: [{key: tls.crt, path: tls.crt}, {key: tls.key, path: tls.key}]
{{- end }}
{{- with .Values.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "rlstream.commonVolumeMounts" -}}
{{- if .Values.tls.caSecret }}
- name: rlstream-ca
  mountPath: {{ .Values.tls.mountPath | quote }}
  readOnly: true
{{- end }}
{{- if .Values.kafka.security.clientCertSecret }}
- name: rlstream-kafka-client
  mountPath: {{ .Values.kafka.security.clientCertMountPath | quote }}
  readOnly: true
{{- end }}
{{- with .Values.extraVolumeMounts }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Pod-level scheduling and registry settings shared by the services and the hooks. */}}
{{- define "rlstream.podExtras" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . | quote }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{- define "rlstream.artifactsClaim" -}}
{{- .Values.artifacts.persistence.existingClaim | default (printf "%s-artifacts" (include "rlstream.fullname" .)) -}}
{{- end -}}

{{/* Roles whose pods call the API server (and so mount a token). */}}
{{- define "rlstream.apiRole" -}}
{{- if or (eq . "curator") (eq . "evaluator") -}}true{{- end -}}
{{- end -}}

{{/* Roles that read or write datasets and run outputs. */}}
{{- define "rlstream.artifactRole" -}}
{{- if or (eq . "curator") (eq . "evaluator") -}}true{{- end -}}
{{- end -}}

{{/* hookPod: dict "root" $ "component" name "command" list "env" list "resources" map:
the pod of a pre-install/pre-upgrade hook Job. It runs before the chart's ConfigMaps and
ServiceAccounts exist on install, so it carries its settings inline and runs as the
namespace's default account without a token. */}}
{{- define "rlstream.hookPod" -}}
{{- $root := .root -}}
metadata:
  labels:
    {{- with $root.Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
    {{- include "rlstream.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ .component }}
  {{- with $root.Values.podAnnotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  restartPolicy: Never
  automountServiceAccountToken: false
  enableServiceLinks: false
  securityContext:
    {{- toYaml $root.Values.podSecurityContext | nindent 4 }}
  {{- with include "rlstream.podExtras" $root }}{{ . | nindent 2 }}{{- end }}
  containers:
    - name: {{ .component }}
      image: {{ include "rlstream.image" $root | quote }}
      imagePullPolicy: {{ $root.Values.image.pullPolicy }}
      command: {{ toJson .command }}
      {{- $envFrom := $root.Values.extraEnvFrom | default list }}
      {{- if and $root.Values.existingSecret (not (kindIs "map" $root.Values.existingSecret)) }}
      {{- $envFrom = prepend $envFrom (dict "secretRef" (dict "name" $root.Values.existingSecret)) }}
      {{- end }}
      {{- with $envFrom }}
      envFrom:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      env:
        {{- range $k, $v := (include "rlstream.configData" $root | fromYaml) }}
        - name: {{ $k }}
          value: {{ $v | quote }}
        {{- end }}
        {{- if include "rlstream.secretName" $root }}
        - name: RLSTREAM_REQUIRE_POSTGRES_DSN
          value: "true"
        {{- end }}
        {{- with include "rlstream.secretEnv" $root }}{{ . | nindent 8 }}{{- end }}
        {{- with .env }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
        {{- with $root.Values.extraEnv }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      resources:
        {{- toYaml .resources | nindent 8 }}
      securityContext:
        {{- toYaml $root.Values.containerSecurityContext | nindent 8 }}
      volumeMounts:
        - name: tmp
          mountPath: /tmp
        {{- with include "rlstream.commonVolumeMounts" $root }}{{ . | nindent 8 }}{{- end }}
  volumes:
    - name: tmp
      emptyDir: {}
    {{- with include "rlstream.commonVolumes" $root }}{{ . | nindent 4 }}{{- end }}
{{- end -}}

{{/* The `rlstream serve` Deployment and Service name. */}}
{{- define "rlstream.serveName" -}}
{{- printf "%s-serve" (include "rlstream.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* "true" when the evaluator's deploy target is the chart's `rlstream serve`. */}}
{{- define "rlstream.serveHotSwap" -}}
{{- if and .Values.serve.enabled .Values.serve.hotSwap -}}true{{- end -}}
{{- end -}}

{{/* RLSTREAM_SERVE_ADMIN_TOKEN from serve.adminToken's Secret key (server and evaluator). */}}
{{- define "rlstream.serveTokenEnv" -}}
{{- with .Values.serve.adminToken }}{{ if .secretName }}
- name: RLSTREAM_SERVE_ADMIN_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ .secretName | quote }}
      key: {{ .key | quote }}
{{- end }}{{ end }}
{{- end -}}
