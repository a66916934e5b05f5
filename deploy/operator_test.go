package deploy

import (
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

const (
	operatorCR = "operator/opentelemetrycollector.yaml"
	// The OpenTelemetry Operator's CRD (v0.158.0, unchanged), beside the checkout like the Helm chart.
	operatorCRD = "../../shared/reference/otel-operator/config/crd/bases/opentelemetry.io_opentelemetrycollectors.yaml"
)

// crdSchema compiles the openAPIV3Schema of one served version of the OpenTelemetryCollector CRD into a
// JSON schema that rejects what the API server would drop: structural pruning removes every field a
// schema does not declare, unless it says x-kubernetes-preserve-unknown-fields, so here an undeclared
// field is an error (a misspelt or misplaced field would otherwise vanish silently in the cluster).
// What it does not check: the CEL rules (x-kubernetes-validations, about sidecar mode only) and the
// uniqueness of list-map keys.
func crdSchema(t *testing.T, version string) *jsonschema.Schema {
	t.Helper()
	data, err := os.ReadFile(operatorCRD)
	if err != nil {
		unavailable(t, "the OpenTelemetry Operator's CRD is not beside the checkout (%s): %v", operatorCRD, err)
	}
	var crd struct {
		Spec struct {
			Group string `json:"group"`
			Names struct {
				Kind string `json:"kind"`
			} `json:"names"`
			Versions []struct {
				Name   string `json:"name"`
				Served bool   `json:"served"`
				Schema struct {
					OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(data, &crd))
	require.Equal(t, "OpenTelemetryCollector", crd.Spec.Names.Kind)
	for _, v := range crd.Spec.Versions {
		if v.Name != version {
			continue
		}
		require.True(t, v.Served, "%s is not served", version)
		require.NotEmpty(t, v.Schema.OpenAPIV3Schema)
		c := jsonschema.NewCompiler()
		root := structural(v.Schema.OpenAPIV3Schema).(map[string]any)
		// The API server checks metadata against ObjectMeta itself (the test decodes it strictly).
		root["properties"].(map[string]any)["metadata"] = map[string]any{"type": "object"}
		require.NoError(t, c.AddResource("crd.json", root))
		s, err := c.Compile("crd.json")
		require.NoError(t, err)
		return s
	}
	t.Fatalf("the CRD has no version %s", version)
	return nil
}

// structural turns an OpenAPI v3 schema of a CRD into JSON Schema with the API server's pruning as
// errors: every object schema that neither preserves unknown fields nor declares additionalProperties
// (a map) gets additionalProperties: false. OpenAPI's other keywords here (format int32/int64,
// x-kubernetes-*) mean nothing to JSON Schema and are ignored by it; int-or-string fields carry their
// anyOf.
func structural(node any) any {
	switch n := node.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, v := range n {
			switch k {
			case "properties", "patternProperties", "definitions":
				// A map of schemas: its keys are field names, not keywords.
				props := map[string]any{}
				for name, s := range v.(map[string]any) {
					props[name] = structural(s)
				}
				out[k] = props
			case "default", "enum", "example", "required":
				out[k] = v
			default:
				out[k] = structural(v)
			}
		}
		_, isMap := n["additionalProperties"]
		preserve, _ := n["x-kubernetes-preserve-unknown-fields"].(bool)
		if n["type"] == "object" && !isMap && !preserve {
			out["additionalProperties"] = false
		}
		return out
	case []any:
		out := make([]any, len(n))
		for i, v := range n {
			out[i] = structural(v)
		}
		return out
	}
	return node
}

// TestOperatorCollectorMatchesCRD validates deploy/operator/opentelemetrycollector.yaml against the
// CRD's schema for its apiVersion, unknown fields refused.
func TestOperatorCollectorMatchesCRD(t *testing.T) {
	cr := loadYAML(t, operatorCR)
	apiVersion, _ := cr["apiVersion"].(string)
	group, version, ok := strings.Cut(apiVersion, "/")
	require.True(t, ok, "apiVersion %q", apiVersion)
	assert.Equal(t, "opentelemetry.io", group)
	assert.Equal(t, "OpenTelemetryCollector", cr["kind"])
	schema := crdSchema(t, version)
	require.NoError(t, schema.Validate(cr))
	var meta metav1.ObjectMeta
	mdata, err := yaml.Marshal(cr["metadata"])
	require.NoError(t, err)
	require.NoError(t, yaml.UnmarshalStrict(mdata, &meta))
	assert.NotEmpty(t, meta.Name)

	// The check has teeth: a misspelt field anywhere in the spec (outside the collector config, which
	// the schema leaves open), a misplaced one, or a value of the wrong type is refused.
	for _, c := range []struct {
		name, want string // want: in the error, where the schema refuses it
		mutate     func(spec map[string]any)
	}{
		{"unknown spec field", "'/spec': additional properties 'volumeMount'", func(s map[string]any) { s["volumeMount"] = s["volumeMounts"] }},
		{"unknown nested field", "'/spec/securityContext': additional properties 'readonlyRootFilesystem'",
			func(s map[string]any) { s["securityContext"].(map[string]any)["readonlyRootFilesystem"] = true }},
		{"unknown list item field", "'/spec/tolerations/0': additional properties 'effects'",
			func(s map[string]any) { s["tolerations"].([]any)[0].(map[string]any)["effects"] = "NoSchedule" }},
		{"wrong type", "'/spec/terminationGracePeriodSeconds'", func(s map[string]any) { s["terminationGracePeriodSeconds"] = "10" }},
		{"mode outside its enum", "'/spec/mode'", func(s map[string]any) { s["mode"] = "DaemonSet" }},
	} {
		bad := loadYAML(t, operatorCR)
		c.mutate(bad["spec"].(map[string]any))
		err := schema.Validate(bad)
		if assert.Error(t, err, c.name) {
			assert.Contains(t, err.Error(), c.want, c.name)
		}
	}
}

// TestOperatorCollectorIsTheShippedDaemonSet: the CR runs what deploy/kubernetes/ ships (the collector
// config, image, host mounts, security context, resources, environment) and the Helm values'
// tolerations.
func TestOperatorCollectorIsTheShippedDaemonSet(t *testing.T) {
	data, err := os.ReadFile(operatorCR)
	require.NoError(t, err)
	var cr struct {
		Spec struct {
			Mode            string                      `json:"mode"`
			Image           string                      `json:"image"`
			ServiceAccount  string                      `json:"serviceAccount"`
			Config          map[string]any              `json:"config"`
			Env             []corev1.EnvVar             `json:"env"`
			Volumes         []corev1.Volume             `json:"volumes"`
			VolumeMounts    []corev1.VolumeMount        `json:"volumeMounts"`
			SecurityContext *corev1.SecurityContext     `json:"securityContext"`
			Resources       corev1.ResourceRequirements `json:"resources"`
			Tolerations     []corev1.Toleration         `json:"tolerations"`
		} `json:"spec"`
	}
	// Not strict: the other fields are the schema test's.
	require.NoError(t, yaml.Unmarshal(data, &cr))
	assert.Equal(t, "daemonset", cr.Spec.Mode)
	assert.Equal(t, defaultImage(t), cr.Spec.Image, "the image `make image` builds")

	var shipped appsv1.DaemonSet
	decodeStrict(t, "kubernetes/daemonset.yaml", &shipped)
	pod := shipped.Spec.Template.Spec
	c := pod.Containers[0]
	// The CR's args are a map (one --config), so it carries the shipped args in its config.
	assert.Equal(t, normalizeConfig(shippedConfig(t, c)), normalizeConfig(cr.Spec.Config),
		"the CR's config differs from config/kubernetes.yaml with the shipped DaemonSet's args")
	var sa corev1.ServiceAccount
	decodeStrict(t, "kubernetes/serviceaccount.yaml", &sa)
	assert.Equal(t, sa.Name, cr.Spec.ServiceAccount, "the shipped ServiceAccount, bound to the shipped ClusterRole")
	assert.Equal(t, c.SecurityContext, cr.Spec.SecurityContext, "the shipped DaemonSet's security context")
	assert.Equal(t, c.Resources, cr.Spec.Resources, "the shipped DaemonSet's requests and limits")
	assert.Equal(t, hostMounts(t, pod), hostMounts(t, corev1.PodSpec{
		Volumes:    cr.Spec.Volumes,
		Containers: []corev1.Container{{VolumeMounts: cr.Spec.VolumeMounts}},
	}), "the shipped DaemonSet's host mounts")

	// The same variables as the shipped DaemonSet, so every ${env:X} of the config is set.
	assert.Equal(t, c.Env, cr.Spec.Env)

	var values struct {
		Tolerations []corev1.Toleration `json:"tolerations"`
	}
	vdata, err := os.ReadFile(helmValues)
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(vdata, &values))
	assert.Equal(t, values.Tolerations, cr.Spec.Tolerations, "the Helm values' tolerations")
	require.NotEmpty(t, cr.Spec.Tolerations)
}

// shippedConfig is the config the shipped DaemonSet's container c runs: config/kubernetes.yaml (its
// ConfigMap) with its --config=yaml: args applied.
func shippedConfig(t *testing.T, c corev1.Container) map[string]any {
	t.Helper()
	config := loadYAML(t, collectorConfig)
	require.Equal(t, "--config=/etc/otelcol/config.yaml", c.Args[0])
	for _, arg := range c.Args[1:] {
		applyYAMLArg(t, config, arg)
	}
	return config
}

// applyYAMLArg applies one --config=yaml:a::b::c: value argument (the collector's yaml: provider,
// a path of keys and a scalar) to config.
func applyYAMLArg(t *testing.T, config map[string]any, arg string) {
	t.Helper()
	spec, ok := strings.CutPrefix(arg, "--config=yaml:")
	require.True(t, ok, "%q is no --config=yaml: argument", arg)
	path, value, ok := strings.Cut(spec, ": ")
	require.True(t, ok, "%q has no value", arg)
	var v any
	require.NoError(t, yaml.Unmarshal([]byte(value), &v))
	keys := strings.Split(path, "::")
	m := config
	for _, k := range keys[:len(keys)-1] {
		next, _ := m[k].(map[string]any)
		if next == nil {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[keys[len(keys)-1]] = v
}
