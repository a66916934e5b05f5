// Package deploy holds the container build file and the Kubernetes manifests of otelcol-diskhealth, and
// the structural tests that keep them loadable: the manifests decode strictly into the Kubernetes API
// types, carry what a kubelet needs, and the ConfigMap carries config/kubernetes.yaml byte for byte. The
// Helm values for the upstream opentelemetry-collector chart (helm/) and the OpenTelemetry Operator's
// OpenTelemetryCollector (operator/) are held to the same manifests: rendered with helm and run under
// containerd, and validated against the operator's CRD schema.
// It is a module of its own so that the receiver's module never depends on the Kubernetes API packages.
package deploy // import "github.com/diskhealth/diskhealth/deploy"
