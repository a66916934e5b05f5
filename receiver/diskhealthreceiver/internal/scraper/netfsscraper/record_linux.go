package netfsscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/netfsscraper"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/clientstate"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/mountstats"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/netfsscraper/internal/metadata"
)

// recorder records one mount's points, its identity on every one.
type recorder struct {
	s            *netfsScraper
	ts           pcommon.Timestamp
	dev, mp, typ string
}

var classAttrs = [mountstats.NumClasses]metadata.AttributeDiskHealthNfsOperationClass{
	mountstats.ClassRead:     metadata.AttributeDiskHealthNfsOperationClassRead,
	mountstats.ClassWrite:    metadata.AttributeDiskHealthNfsOperationClassWrite,
	mountstats.ClassMetadata: metadata.AttributeDiskHealthNfsOperationClassMetadata,
	mountstats.ClassOther:    metadata.AttributeDiskHealthNfsOperationClassOther,
}

var stateAttrs = map[clientstate.State]metadata.AttributeClientState{
	clientstate.OK:           metadata.AttributeClientStateOk,
	clientstate.Slow:         metadata.AttributeClientStateSlow,
	clientstate.Unresponsive: metadata.AttributeClientStateUnresponsive,
	clientstate.Stale:        metadata.AttributeClientStateStale,
}

// state records the mount's client state v at n: 1 for the current one, 0 for the one just left.
func (r *recorder) state(v clientstate.State, n int64) {
	r.s.mb.RecordDiskHealthFilesystemClientStateDataPoint(r.ts, n, r.dev, r.mp, r.typ, stateAttrs[v])
}

// nfs records an NFS mount's counters and, when there is a previous reading of the same instance
// (last: nil when none), the interval's means (nfsiostat's: Δ time / Δ operations).
func (r *recorder) nfs(cur, last *mountstats.Mount) {
	mb, ts, dev, mp, typ := r.s.mb, r.ts, r.dev, r.mp, r.typ
	classes := cur.Classes()
	var prev [mountstats.NumClasses]mountstats.Op
	interval := last != nil
	if interval {
		prev = last.Classes()
	}
	for c, o := range classes {
		attr := classAttrs[c]
		mb.RecordDiskHealthNfsClientMountOperationCountDataPoint(ts, emit.Int(o.Ops), dev, mp, typ, attr)
		if !interval {
			continue
		}
		m := mountstats.Interval(prev[c], o)
		if !m.OK {
			continue
		}
		if mountstats.Class(c) != mountstats.ClassOther {
			mb.RecordDiskHealthNfsClientMountOperationRoundTripTimeDataPoint(ts, m.RTT, dev, mp, typ, attr)
		}
		mb.RecordDiskHealthNfsClientMountOperationExecuteTimeDataPoint(ts, m.Execute, dev, mp, typ, attr)
		mb.RecordDiskHealthNfsClientMountOperationQueueTimeDataPoint(ts, m.Queue, dev, mp, typ, attr)
	}
	total := cur.Total()
	mb.RecordDiskHealthNfsClientMountRPCRetransmitCountDataPoint(ts, emit.Int(total.Retransmissions()), dev, mp, typ)
	mb.RecordDiskHealthNfsClientMountRPCMajorTimeoutCountDataPoint(ts, emit.Int(total.MajorTimeouts), dev, mp, typ)
	t := &cur.Transport
	mb.RecordDiskHealthNfsClientMountRPCCountDataPoint(ts, emit.Int(t.Sends), dev, mp, typ, metadata.AttributeNetworkIoDirectionTransmit)
	mb.RecordDiskHealthNfsClientMountRPCCountDataPoint(ts, emit.Int(t.Receives), dev, mp, typ, metadata.AttributeNetworkIoDirectionReceive)
	mb.RecordDiskHealthNfsClientMountTransportConnectCountDataPoint(ts, emit.Int(t.Connects), dev, mp, typ)
	if interval && t.Sends > last.Transport.Sends && t.Backlog >= last.Transport.Backlog {
		mb.RecordDiskHealthNfsClientMountRPCBacklogDataPoint(ts, float64(t.Backlog-last.Transport.Backlog)/float64(t.Sends-last.Transport.Sends), dev, mp, typ)
	}
	mb.RecordDiskHealthNfsClientMountIoDataPoint(ts, emit.Int(cur.Bytes.ServerRead), dev, mp, typ, metadata.AttributeNetworkIoDirectionReceive)
	mb.RecordDiskHealthNfsClientMountIoDataPoint(ts, emit.Int(cur.Bytes.ServerWrite), dev, mp, typ, metadata.AttributeNetworkIoDirectionTransmit)
	r.procedures(cur, last)
}

// procedures records the per-operation detail, when enabled (it is opt-in: ~60 series per mount).
func (r *recorder) procedures(cur, last *mountstats.Mount) {
	cfg := &r.s.cfg.MetricsBuilderConfig.Metrics
	if !cfg.DiskHealthNfsClientMountProcedureCount.Enabled && !cfg.DiskHealthNfsClientMountProcedureRoundTripTime.Enabled {
		return
	}
	var prev map[string]mountstats.Op
	if last != nil {
		prev = make(map[string]mountstats.Op, len(last.Ops))
		for _, o := range last.Ops {
			prev[o.Name] = o
		}
	}
	// semconv's nfs.client.procedure.count attributes: onc_rpc.procedure.name, and onc_rpc.version
	// where mountstats says it.
	var opts []metadata.MetricAttributeOption
	if cur.Version != 0 {
		opts = append(opts, metadata.WithOncRPCVersionMetricAttribute(int64(cur.Version)))
	}
	for _, o := range cur.Ops {
		r.s.mb.RecordDiskHealthNfsClientMountProcedureCountDataPoint(r.ts, emit.Int(o.Ops), r.dev, r.mp, r.typ, o.Name, opts...)
		if p, ok := prev[o.Name]; ok {
			if m := mountstats.Interval(p, o); m.OK {
				r.s.mb.RecordDiskHealthNfsClientMountProcedureRoundTripTimeDataPoint(r.ts, m.RTT, r.dev, r.mp, r.typ, o.Name, opts...)
			}
		}
	}
}

// fuse records a FUSE mount's connection.
func (r *recorder) fuse(f *clientstate.FUSE) {
	connected := int64(0)
	if f.Connected {
		connected = 1
	}
	r.s.mb.RecordFuseConnectionConnectedDataPoint(r.ts, connected, r.dev, r.mp, r.typ)
	r.s.mb.RecordFuseConnectionWaitingDataPoint(r.ts, emit.Int(f.Waiting), r.dev, r.mp, r.typ)
}

// plogSeverity: back to ok is INFO, slow a warning, unresponsive and stale errors.
func plogSeverity(s clientstate.State) plog.SeverityNumber {
	switch s {
	case clientstate.OK:
		return plog.SeverityNumberInfo
	case clientstate.Slow:
		return plog.SeverityNumberWarn
	}
	return plog.SeverityNumberError
}
