// Package datadog checks what Datadog makes of config/datadog.yaml's output, with Datadog's own OTLP
// mapping (opentelemetry-mapping-go, shared by the Agent's OTLP ingest and the Datadog exporter). A
// module of its own, so that Datadog's dependencies never enter the distribution's go.mod.
package datadog
