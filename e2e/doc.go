// Package e2e holds the end-to-end tests of the otelcol-diskhealth distribution: the built collector
// binary run against fixture roots and compared with real peers (sysstat, ...). The tests find the
// binary through DISKHEALTH_OTELCOL (set by `make test`) and skip, saying so, when it is missing.
package e2e // import "github.com/diskhealth/diskhealth/e2e"
