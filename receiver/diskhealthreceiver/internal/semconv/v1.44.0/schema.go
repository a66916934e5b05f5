// Package semconv is the one thing the receiver takes from the semantic conventions v1.44.0 in Go: their
// schema URL. go.opentelemetry.io/otel has no semconv/v1.44.0 package yet (v1.47.0 ends at v1.43.0), so
// `make generate` points mdatagen's and emitgen's import of it here; when otel ships it, drop this
// package and that step of the Makefile.
package semconv

// SchemaURL is the schema URL of the semantic conventions v1.44.0, as go.opentelemetry.io/otel's
// semconv packages spell theirs.
const SchemaURL = "https://opentelemetry.io/schemas/1.44.0"
