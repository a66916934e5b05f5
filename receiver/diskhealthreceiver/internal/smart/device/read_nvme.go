package device

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/nvme"
)

// readNVMe reads an NVMe controller: Identify Controller and each
// namespace's Identify Namespace once (on Conn: smart.go's Identify would ask
// for every one of the controller's Nn namespaces on every call), then the
// controller-wide SMART / health log through smart.go. Only those mandatory
// commands are sent: a command the controller does not implement would count
// as an error log entry, which the health rules watch.
func (r *Reader) readNVMe(c *Conn, d Disk, st *diskState, deadline time.Time, res *Result) {
	cache := &st.cache
	fresh := cache.nvme == nil
	if fresh {
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
	if !fresh {
		refreshThin(c, d, cache, data, snap)
	}
	log, err := readNVMeSMART(r.cfg.Library, d.Name, d.Node, deadline)
	if err != nil {
		res.Err = fmt.Errorf("%s: %w", d.Name, err)
		if errors.Is(err, ErrPermission) {
			snap.Hwmon = hwmonReading(d)
		}
		return
	}
	data.Log = log
	readOptional(c, d, cache, snap)
}

// refreshThin sends Identify Namespace again for each thin provisioned namespace (NSFEAT bit 0): its
// NUSE, what it has allocated, changes as it fills, where every other field the source uses is fixed. It
// is the command the identity was read with, no other; a namespace without thin provisioning (NUSE is
// NCAP) gets nothing. A failure keeps the namespace's last data, marked UsageStale, and is a Problem.
func refreshThin(c *Conn, d Disk, cache *identityCache, data *NVMeData, snap *Snapshot) {
	var nss []*nvme.Namespace
	for i, ns := range cache.nvme.Namespaces {
		if ns == nil || !ns.ThinProvisioned() || i >= len(d.Namespaces) {
			continue
		}
		if nss == nil {
			nss = slices.Clone(cache.nvme.Namespaces)
		}
		b, err := c.NVMeIdentify(nvme.CNSNamespace, d.Namespaces[i].NSID)
		var fresh *nvme.Namespace
		if err == nil {
			fresh, err = nvme.ParseIdentifyNamespace(b)
		}
		if err != nil {
			if data.UsageStale == nil {
				data.UsageStale = make([]bool, len(nss))
			}
			data.UsageStale[i] = true
			snap.Problems = append(snap.Problems, fmt.Errorf("%s: namespace %s usage: %w", d.Name, d.Namespaces[i].Name, err))
			continue
		}
		nss[i] = fresh
	}
	if nss != nil {
		// A new slice: a Snapshot handed out before keeps what it was given.
		cache.nvme.Namespaces, data.Namespaces = nss, nss
	}
}

// readOptional reads the logs the controller's plan lists, each on its own:
// a log that fails is a LogRead and a Problem, never the disk's status.
func readOptional(c *Conn, d Disk, cache *identityCache, snap *Snapshot) {
	data := snap.NVMe
	plan := cache.nvmePlan
	if plan == nil {
		p, final := planNVMe(c, data.Controller, snap)
		plan = &p
		if final {
			cache.nvmePlan = plan
		}
	}
	if cache.nvmeErrEntries == 0 {
		cache.nvmeErrEntries = plan.ErrorEntries
	}
	outcome := func(log string, err error) {
		data.Optional = append(data.Optional, LogRead{Log: log, Status: classify(err), Err: err})
		if err != nil {
			snap.Problems = append(snap.Problems, fmt.Errorf("%s: %s log: %w", d.Name, log, err))
		}
	}
	switch {
	case cache.nvmeErrEntries > 0:
		var err error
		data.Errors, err = readErrorLog(c, cache)
		outcome(LogErrorInformation, err)
	case cache.nvmeErrRefused != nil:
		outcome(LogErrorInformation, cache.nvmeErrRefused)
	}
	if plan.Telemetry {
		b, err := c.NVMeGetLogRetain(nvme.LogTelemetryController, nvme.NSIDAll, nvme.TelemetryHeaderSize)
		if err == nil {
			data.Telemetry, err = nvme.ParseTelemetryHeader(b)
		}
		outcome(LogTelemetry, err)
	}
	switch {
	case plan.OCPSMART && cache.nvmeNotOCP != nil:
		outcome(LogOCPSMART, cache.nvmeNotOCP)
	case plan.OCPSMART:
		b, err := c.NVMeGetLog(nvme.LogOCPSMART, nvme.NSIDAll, nvme.OCPLogSize)
		if err == nil {
			data.OCP, err = nvme.ParseOCPSMARTLog(b)
			var notOCP *nvme.ErrNotOCP
			if errors.As(err, &notOCP) {
				err = fmt.Errorf("%w: %w; not asked again", ErrUnsupported, err)
				cache.nvmeNotOCP = err
			}
		}
		outcome(LogOCPSMART, err)
	}
	// The latency monitor exists from OCP 2.0 on: only after C0h proved it.
	if plan.OCPLatency && data.OCP != nil && data.OCP.Version >= nvme.OCPSMARTVersion20 {
		b, err := c.NVMeGetLog(nvme.LogOCPLatency, nvme.NSIDAll, nvme.OCPLogSize)
		if err == nil {
			data.Latency, err = nvme.ParseOCPLatencyLog(b)
		}
		if err == nil {
			// Buckets in no order are no histogram: the reason goes on the log's read status.
			if err = data.Latency.CheckThresholds(); err != nil {
				data.Latency = nil
			}
		}
		outcome(LogOCPLatency, err)
	}
	if plan.Amazon != 0 {
		nsid := uint32(nvme.NSIDAll)
		if len(d.Namespaces) > 0 {
			nsid = d.Namespaces[0].NSID
		}
		b, err := c.NVMeGetLog(nvme.LogAmazon, nsid, nvme.AmazonLogSize)
		if err == nil {
			data.Amazon, err = nvme.ParseAmazonStats(b)
		}
		if err == nil && data.Amazon.Kind != plan.Amazon {
			data.Amazon, err = nil, fmt.Errorf("amazon log: %s layout on a controller whose model says %s", data.Amazon.Kind, plan.Amazon)
		}
		outcome(LogAmazon, err)
	}
}

// planNVMe decides the controller's plan. final is false when the
// Supported Log Pages log exists but could not be read this time (a
// timeout, say): the plan then leaves out what only the list can allow.
func planNVMe(c *Conn, ctrl *nvme.Controller, snap *Snapshot) (nvme.Plan, bool) {
	if !ctrl.HasSupportedLogs() {
		return nvme.PlanLogs(ctrl, nil), true
	}
	b, err := c.NVMeGetLog(nvme.LogSupportedLogs, nvme.NSIDAll, nvme.SupportedLogsSize)
	var sup *nvme.SupportedLogs
	if err == nil {
		sup, err = nvme.ParseSupportedLogs(b)
	}
	if err != nil {
		snap.Problems = append(snap.Problems, fmt.Errorf("supported log pages: %w", err))
		// A controller that refuses the list (or returns no such list) will
		// not have it next time either; a timeout may pass.
		return nvme.PlanLogs(ctrl, nil), !errors.Is(err, ErrTimeout) && !errors.Is(err, ErrPermission)
	}
	return nvme.PlanLogs(ctrl, sup), true
}

// errorLogFallbacks are the entry counts tried after the controller
// refuses a read of its whole error log: some refuse sizes they claim to
// support (a 16-entry read failing "PRP Offset Invalid" where 64 work).
var errorLogFallbacks = []int{64, 16, 1}

// readErrorLog reads the Error Information log: all ELPE+1 entries, or,
// when the controller refuses that, the first size of errorLogFallbacks
// it accepts, remembered for the next reads.
func readErrorLog(c *Conn, cache *identityCache) ([]nvme.ErrorEntry, error) {
	sizes := []int{cache.nvmeErrEntries}
	for _, n := range errorLogFallbacks {
		if n < sizes[len(sizes)-1] {
			sizes = append(sizes, n)
		}
	}
	var last error
	for _, n := range sizes {
		b, err := c.NVMeGetLogRetain(nvme.LogError, nvme.NSIDAll, n*nvme.ErrorEntrySize)
		var st *NVMeStatusError
		if errors.As(err, &st) {
			last = err
			continue
		}
		if err != nil {
			return nil, err
		}
		cache.nvmeErrEntries = n
		return nvme.ParseErrorLog(b)
	}
	cache.nvmeErrEntries = -1
	cache.nvmeErrRefused = fmt.Errorf("%w: every read size refused (%v), not asked again: %w", ErrUnsupported, sizes, last)
	return nil, cache.nvmeErrRefused
}
