// Package nvmesubsys reads the kernel's native NVMe multipath and NVMe over Fabrics state from sysfs: every
// subsystem under <sys>/class/nvme-subsystem, its controllers (each one path to the subsystem's
// namespaces) and its namespaces with the state of each of their paths. It needs no privileges, runs no
// program and writes nothing.
//
// The layout read (drivers/nvme/host/core.c, sysfs.c, multipath.c; the same from 5.x to 6.18):
//
//	class/nvme-subsystem/nvme-subsys<S>/   subsysnqn, model, serial, firmware_rev, iopolicy (multipath only)
//	    nvme<C> -> …/nvme/nvme<C>          one link per controller: state, transport, address
//	        nvme<S>c<C>n<H>/               a path of the multipath head nvme<S>n<H> through this controller:
//	                                       ana_state and ana_grpid where the controller reports ANA
//	        nvme<C>n<N>/                   a namespace without a multipath head (a single-port PCIe drive,
//	                                       nvme_core.multipath=N): this controller is its one path
//	    nvme<S>n<H>/                       a multipath head: the block device the I/O source reports
//
// For the scraper author: NewReader(sys, timeout).Read(ctx) returns every subsystem, each with its own
// error (a bad file costs that subsystem only); Count and Namespaces compute what a metric needs from
// one Subsystem; Tracker keeps each namespace's most live paths since it was first seen and says when
// its live paths drop below that or recover. Every string is sanitized (valid UTF-8, bounded).
package nvmesubsys // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/nvmesubsys"
