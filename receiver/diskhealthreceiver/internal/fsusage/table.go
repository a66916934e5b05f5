package fsusage // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"

// DefaultRereadEvery is how many Mounts calls may pass without a change
// being signalled before the file is read anyway.
const DefaultRereadEvery = 30

// TableReload describes one parse of the mount table.
type TableReload struct {
	File   string // the file read
	View   View
	Mounts int   // mounts selected
	Err    error // a *parseerr.Lines, or nil
}
