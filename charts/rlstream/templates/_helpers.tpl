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

{{- define "rlstream.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{- define "rlstream.trainerImage" -}}
{{- $i := .Values.training.image -}}
{{- printf "%s:%s" $i.repository ($i.tag | default .Chart.AppVersion) -}}
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
