// Package netfsscraper is the netfs source of the disk_health receiver: the client health of shared
// filesystems per mount - NFS from mountstats (operations, round trips, retransmissions per class),
// FUSE from its connection's waiting requests - and a client state (ok, slow, unresponsive, stale)
// with a log event on each change.
//
//go:generate go tool -modfile=../../../../../internal/tools/go.mod mdatagen metadata.yaml
package netfsscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/netfsscraper"
