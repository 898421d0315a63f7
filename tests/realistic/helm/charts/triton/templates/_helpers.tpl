{{/* helpers */}}
{{- define "triton.fullname" -}}{{ .Release.Name }}{{- end }}
