// Package filelatscraper is the filelat source of the disk_health receiver: file read, write and fsync
// latency per mount as cumulative OTLP exponential histograms, and the page-cache hits and misses of
// reads, from the filelat eBPF probe. Off by default: the probe costs every system call of the machine.
//
//go:generate go tool -modfile=../../../../../internal/tools/go.mod mdatagen metadata.yaml
package filelatscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filelatscraper"
