// Package deploy holds the container build file and the Kubernetes manifests of otelcol-diskhealth, and
// the structural tests that keep them loadable: the manifests decode strictly into the Kubernetes API
// types, carry what a kubelet needs, and the ConfigMap carries config/kubernetes.yaml byte for byte.
// It is a module of its own so that the receiver's module never depends on the Kubernetes API packages.
package deploy // import "github.com/diskhealth/diskhealth/deploy"
