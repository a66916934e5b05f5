// Package bounded runs blocking reads of kernel interfaces (sysfs
// attributes, device-mapper ioctls, block-device superblocks) with a
// deadline, so that one stuck call never holds up a scrape.
//
// A system call cannot be cancelled. Guard.Do runs the call in its own
// goroutine and waits for it at most the timeout (or until the context
// ends); a call that overruns is abandoned and reported as ErrTimeout. Its
// goroutine stays blocked in the kernel until the call returns, and until
// then every later Do with the same key returns ErrInFlight at once
// instead of piling up another blocked goroutine. A scraper therefore
// holds at most one goroutine per key, however long a device hangs.
//
// Keys name what can hang independently: an md array, the device-mapper
// control node, one block device.
package bounded // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/bounded"
