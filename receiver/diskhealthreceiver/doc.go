// Package diskhealthreceiver implements the disk_health receiver. Each source is one folder,
// internal/scraper/<source>scraper, declared once in the registry (registry.go); its config section is
// the key of its name, and it runs in its own scraper controller, so a slow source never delays another.
// The sources are the lines of the registry, in the order the receiver starts them; CONTRIBUTING.md "Layout"
// says what each reads, README "Sources at a glance" links each one's documentation.md (TestDocsNameEverySource),
// so adding a source touches only its folder, its registry line, README, CONTRIBUTING and CHANGELOG.
//
// Everything is read under root_path when the collector runs in a container.
//
//go:generate go tool -modfile=../../internal/tools/go.mod mdatagen metadata.yaml
package diskhealthreceiver // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver"
