// Package latencyscraper is the latency source of the disk_health receiver: per-device block request
// latency as cumulative OTLP exponential histograms and the I/O errors the kernel sees on completion,
// both from the biolat eBPF probe.
//
//go:generate go tool -modfile=../../../../../internal/tools/go.mod mdatagen metadata.yaml
package latencyscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/latencyscraper"
