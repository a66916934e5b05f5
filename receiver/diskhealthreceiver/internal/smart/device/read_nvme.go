package device

import (
	"errors"
	"fmt"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/nvme"
)

// readNVMe reads an NVMe controller: Identify Controller and each
// namespace's Identify Namespace once, then the controller-wide SMART /
// health log. Only those mandatory commands are sent: a command the
// controller does not implement would count as an error log entry, which
// the health rules watch.
func readNVMe(c *Conn, d Disk, st *diskState, res *Result) {
	cache := &st.cache
	if cache.nvme == nil {
		b, err := c.NVMeIdentify(nvme.CNSController, 0)
		if err != nil {
			res.Err = fmt.Errorf("%s: %w", d.Name, err)
			if errors.Is(err, ErrPermission) {
				res.Snapshot = hwmonFallback(d)
			}
			return
		}
		ctrl, err := nvme.ParseIdentifyController(b)
		if err != nil {
			res.Status, res.Err = StatusError, fmt.Errorf("%s: Identify Controller: %w", d.Name, err)
			return
		}
		data := &NVMeData{Controller: ctrl, Namespaces: make([]*nvme.Namespace, len(d.Namespaces))}
		for i, ns := range d.Namespaces {
			b, err := c.NVMeIdentify(nvme.CNSNamespace, ns.NSID)
			if err != nil {
				// Retried on the next read: the cache is only kept whole.
				res.Err = fmt.Errorf("%s: namespace %s: %w", d.Name, ns.Name, err)
				return
			}
			if data.Namespaces[i], err = nvme.ParseIdentifyNamespace(b); err != nil {
				res.Status, res.Err = StatusError, fmt.Errorf("%s: Identify Namespace %d: %w", d.Name, ns.NSID, err)
				return
			}
		}
		cache.nvme = data
	}
	data := &NVMeData{Controller: cache.nvme.Controller, Namespaces: cache.nvme.Namespaces}
	snap := &Snapshot{NVMe: data}
	res.Snapshot = snap
	b, err := c.NVMeGetLog(nvme.LogSMART, nvme.NSIDAll, nvme.SMARTLogSize)
	if err != nil {
		res.Err = fmt.Errorf("%s: %w", d.Name, err)
		if errors.Is(err, ErrPermission) {
			snap.Hwmon = hwmonFallback(d).Hwmon
		}
		return
	}
	if data.Log, err = nvme.ParseSMARTLog(b); err != nil {
		res.Status, res.Err = StatusError, fmt.Errorf("%s: SMART log: %w", d.Name, err)
	}
}
